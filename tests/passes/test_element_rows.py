"""The element-rows pass: an element-by-element store whose pointer block does not fit is done a few
rows at a time -- its IR, and block-pointer matmuls at 128x128 whose offsets the compiler cannot
bound (before: "the kernel needs 312960 bytes of Unified Buffer ... the addresses of an
element-by-element store"), results against numpy with offsets that run off the matrix."""
import numpy as np
import pytest
from test_npu_passes import run_text

import tritonpu
import tritonpu.language as tl
from tritonpu.testing import filecheck

# a 128x128 store with a lower-bound mask on its columns (element by element): its offsets (64 KiB),
# pointers (128 KiB) and value (64 KiB) do not fit UB at once
SCATTER = """
func @k(%y: ptr<f32>, %v: f32) {
  %r = arange {end = 128, start = 0} : tensor<128xi32>
  %rc = expand_dims %r {axis = 1} : tensor<128x1xi32>
  %c128 = constant {value = 128} : i32
  %s = splat %c128 : tensor<128x1xi32>
  %rs = mul %rc, %s : tensor<128x1xi32>
  %cc = expand_dims %r {axis = 0} : tensor<1x128xi32>
  %rb = broadcast %rs : tensor<128x128xi32>
  %cb = broadcast %cc : tensor<128x128xi32>
  %offs = add %rb, %cb : tensor<128x128xi32>
  %ys = splat %y : tensor<128x128xptr<f32>>
  %yp = addptr %ys, %offs : tensor<128x128xptr<f32>>
  %c1 = constant {value = 1} : i32
  %ones = splat %c1 : tensor<1x128xi32>
  %m = cmp %cc, %ones {pred = "ge"} : tensor<1x128xi1>
  %mb = broadcast %m : tensor<128x128xi1>
  %vs = splat %v : tensor<128x128xf32>
  store %yp, %vs, %mb
  return
}
"""


def test_a_store_whose_pointers_do_not_fit_is_done_sixteen_rows_at_a_time():
    # 16 rows of 128 pointers = 16 KiB (CHUNK_BYTES): 8 chunks in row order, each on its rows of
    # the row vector; the column vector and the mask of one row are shared
    out = run_text(SCATTER, ["element-rows"])
    checks = "\n".join(f"""
        CHECK: slice %r {{offsets = [{c}]}} : tensor<16xi32>
        CHECK-NEXT: expand_dims %{{}}
        CHECK: splat %v : tensor<16x128xf32>
        CHECK-NEXT: store """.replace("%{}", "") for c in range(0, 128, 16))
    filecheck(out, checks + "\n CHECK-NOT: store")
    assert out.count("cmp %cc") == 1 and "tensor<128x128" not in out, out


def test_a_store_that_fits_is_left_as_it_is():
    small = SCATTER.replace("128", "32").replace("{value = 32}", "{value = 32}")
    out = run_text(small, ["element-rows"])
    assert out.count("store ") == 1 and "slice" not in out, out


@tritonpu.jit
def _mm_from_starts(a_ptr, b_ptr, c_ptr, starts, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # MoE-style: each program's tile offsets come from a list in memory (the compiler cannot bound them)
    pid = tl.program_id(0)
    row0 = tl.load(starts + 2 * pid)
    col0 = tl.load(starts + 2 * pid + 1)
    a_bp = tl.make_block_ptr(a_ptr, (M, K), (K, 1), (row0, 0), (BM, BK), (1, 0))
    b_bp = tl.make_block_ptr(b_ptr, (K, N), (N, 1), (0, col0), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a_bp, boundary_check=(0, 1), padding_option="zero"),
                      tl.load(b_bp, boundary_check=(0, 1), padding_option="zero"))
        a_bp = tl.advance(a_bp, (0, BK))
        b_bp = tl.advance(b_bp, (BK, 0))
    c_bp = tl.make_block_ptr(c_ptr, (M, N), (N, 1), (row0, col0), (BM, BN), (1, 0))
    tl.store(c_bp, acc.to(tl.float16), boundary_check=(0, 1))


@pytest.mark.parametrize("starts", [[-64, 0, 64, 0, -64, 128, 64, 128], [0, 0, 128, 0, 0, 128, 128, 128]])
def test_block_pointer_matmul_at_128x128_with_offsets_from_memory(starts):
    """Negative row offsets take the guard's other branch (element by element, the store 16 rows
    at a time, FIX draining the accumulator's rows); in-bounds ones the tile transfers, C stored by
    FIX straight from L0C."""
    M = N = 256
    K = 64
    rng = np.random.default_rng(abs(starts[0]))
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    h = _mm_from_starts[(4,)](a, b, c, np.array(starts, np.int32), M, N, K, BM=128, BN=128, BK=32)
    full = a.astype(np.float64) @ b.astype(np.float64)
    want = np.zeros((M, N))
    for p in range(4):
        r0, c0 = starts[2 * p], starts[2 * p + 1]
        rows, cols = slice(max(r0, 0), min(r0 + 128, M)), slice(max(c0, 0), min(c0 + 128, N))
        want[rows, cols] = full[rows, cols]
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=1e-2, atol=2e-2)
    paths = h.stats.bytes_by_path
    negative = sum(1 for r0 in starts[::2] if r0 < 0)
    # each program whose rows start above the matrix drains its 64 KiB accumulator 16 rows at a time
    assert paths.get("l0c->ub", 0) == negative * 128 * 128 * 4, paths
    assert paths["l0c->gm"] == (4 - negative) * 128 * 128 * 2, paths


@tritonpu.jit
def _mm_grouped_block_ptr(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                          GROUP_M: tl.constexpr):
    # the triton-ascend habit: Triton's grouped ordering with block pointers
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (pid % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    a_bp = tl.make_block_ptr(a_ptr, (M, K), (K, 1), (pid_m * BM, 0), (BM, BK), (1, 0))
    b_bp = tl.make_block_ptr(b_ptr, (K, N), (N, 1), (0, pid_n * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(tl.load(a_bp, boundary_check=(0, 1)), tl.load(b_bp, boundary_check=(0, 1)), acc)
        a_bp = tl.advance(a_bp, (0, BK))
        b_bp = tl.advance(b_bp, (BK, 0))
    c_bp = tl.make_block_ptr(c_ptr, (M, N), (N, 1), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    tl.store(c_bp, acc.to(tl.float16), boundary_check=(0, 1))


def test_grouped_block_pointer_matmul_at_128x128_compiles_and_stores_c_from_l0c():
    M, N, K = 384, 256, 128
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    h = _mm_grouped_block_ptr[(6,)](a, b, c, M, N, K, BM=128, BN=128, BK=32, GROUP_M=8)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2,
                               atol=2e-2)
    assert "l0c->ub" not in h.stats.bytes_by_path and h.stats.bytes_by_path["l0c->gm"] == M * N * 2
    assert 'slice %' in h.asm["element-rows"]
    # the emitter's notes about element-by-element code, once each with how many places
    stores = [n for n in h.stats.notes if "store of tensor<16x128xf16> moves one element per segment" in n]
    assert len(stores) == 1 and stores[0].endswith("(8 places in the assembly)"), h.stats.notes
