"""The element-rows pass: an element-by-element store whose pointer block does not fit is done a few
rows at a time -- its IR, and block-pointer matmuls at 128x128 whose offsets the compiler cannot
bound (before: "the kernel needs 312960 bytes of Unified Buffer ... the addresses of an
element-by-element store"), results against numpy with offsets that run off the matrix."""
import re

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


def test_a_load_whose_pointers_do_not_fit_is_read_in_chunks_into_its_block():
    # the same addresses read: 8 chunks of 16 rows, each written into the result in row order,
    # starting from zeros; what read the load reads the last insert_slice
    text = SCATTER.replace("  %vs = splat %v : tensor<128x128xf32>\n  store %yp, %vs, %mb\n",
                           "  %ld = load %yp, %mb : tensor<128x128xf32>\n"
                           "  %sum = reduce %ld {axis = 1, op = \"sum\"} : tensor<128xf32>\n")
    out = run_text(text, ["element-rows"])
    checks = "CHECK: = constant {value = 0.0} : f32\nCHECK-NEXT: = splat %\n" + "\n".join(f"""
        CHECK: slice %r {{offsets = [{c}]}} : tensor<16xi32>
        CHECK: = load %
        CHECK-NEXT: = insert_slice %""" for c in range(0, 128, 16))
    filecheck(out, checks + "\nCHECK-NEXT: %sum = reduce %ld_")
    assert out.count(" = load ") == 8 and "{offsets = [112, 0]}" in out, out


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


@pytest.mark.parametrize("bm,bn,bk", [(128, 128, 32), (128, 128, 64), (128, 256, 64)])
def test_grouped_block_pointer_matmul_compiles_and_stores_c_from_l0c(bm, bn, bk):
    """Before: 312960 / 207104 bytes of UB at 128x128 (the guard's other branch held the store's and
    the loads' pointer blocks whole); at 128x256 tiling rejected the store's 256 KiB offsets."""
    M, N, K = 384, 256, 128
    rng = np.random.default_rng(bk)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    h = _mm_grouped_block_ptr[((M // bm) * (N // bn),)](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk, GROUP_M=8)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2,
                               atol=2e-2)
    assert "l0c->ub" not in h.stats.bytes_by_path and h.stats.bytes_by_path["l0c->gm"] == M * N * 2
    assert 'slice %' in h.asm["element-rows"]
    # the emitter's notes about element-by-element code, once each with how many places
    t = 16 * 1024 // (bn * 8)
    stores = [n for n in h.stats.notes if f"store of tensor<{t}x{bn}xf16> moves one element per segment" in n]
    assert len(stores) == 1 and stores[0].endswith(f"({bm // t} places in the assembly)"), h.stats.notes


def test_grouped_block_pointer_matmul_keeps_its_k_loop_buffers():
    """A block pointer carries its shape and strides through the K loop unchanged (tl.advance moves
    the offsets only): those carries are gone before emission, so the pipelined loop's trips in
    flight fit the scalar registers.  Before, "out of scalar registers with 8" halved them to 4
    (1024^3 at 64x64x32: 27761 cycles against 20327 with pointers and masks; now 20695)."""
    M, N, K = 256, 256, 512
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    # (on 4 cores a core's next program reads the same rows of A: the K loop gets panel versions)
    h = _mm_grouped_block_ptr[((M // 64) * (N // 64),)](a, b, c, M, N, K, BM=64, BN=64, BK=32, GROUP_M=8,
                                                         cores=4)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2,
                               atol=5e-2)
    assert not [n for n in h.stats.notes if "scalar registers" in n], h.stats.notes
    assert 'double_buffer = "on: 8 buffers"' in h.asm["double-buffer"]
    # the K loops carry the accumulator, the offset they advance and their prefetched tiles only
    for args in re.findall(r"\^bb\(%k\w*: i32, ([^)]*)\)", h.asm["cleanup"]):
        assert not [x for x in args.split(", ") if x.endswith("i64")], args


def test_tiling_leaves_a_block_only_stored_element_by_element_to_this_pass():
    # a 64x1024 fp32 block (256 KiB, more than UB) computed only for an element-by-element store:
    # tiling used to reject it ("larger than the Unified Buffer"); it is computed and stored two
    # rows (16 KiB of pointers) at a time, and the function fits
    text = """
func @k(%x: ptr<f32>, %y: ptr<f32>) {
  %xs = splat %x : tensor<1024xptr<f32>>
  %v = load %xs : tensor<1024xf32>
  %ve = expand_dims %v {axis = 0} : tensor<1x1024xf32>
  %vb = broadcast %ve : tensor<64x1024xf32>
  %w = add %vb, %vb : tensor<64x1024xf32>
  %ys = splat %y : tensor<64x1024xptr<f32>>
  store %ys, %w
  return
}
"""
    out = run_text(text, ["tiling", "element-rows", "buffer-planning"])
    assert out.count("store ") == 32 and out.count(" = add ") == 32 and "tensor<64x1024" not in out, out
    assert "ub_peak" in out


@tritonpu.jit
def _attention_varlen(Q, K, V, O, cu, sm_scale, stride_s, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      D: tl.constexpr):
    # variable-length sequences packed one after another (cu_seqlens), block pointers from memory offsets
    pid_m = tl.program_id(0)
    b = tl.program_id(1)
    start = tl.load(cu + b)
    end = tl.load(cu + b + 1)
    seq = end - start
    if pid_m * BLOCK_M >= seq:
        return
    qp = tl.make_block_ptr(Q, (end, D), (stride_s, 1), (start + pid_m * BLOCK_M, 0), (BLOCK_M, D), (1, 0))
    kp = tl.make_block_ptr(K, (end, D), (stride_s, 1), (start, 0), (BLOCK_N, D), (1, 0))
    vp = tl.make_block_ptr(V, (end, D), (stride_s, 1), (start, 0), (BLOCK_N, D), (1, 0))
    q = tl.load(qp, boundary_check=(0, 1), padding_option="zero")
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    offs_n = tl.arange(0, BLOCK_N)
    for n0 in range(0, seq, BLOCK_N):
        k = tl.load(kp, boundary_check=(0, 1), padding_option="zero")
        v = tl.load(vp, boundary_check=(0, 1), padding_option="zero")
        s = tl.where((n0 + offs_n)[None, :] < seq, tl.dot(q, tl.trans(k)) * sm_scale, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
        kp = tl.advance(kp, (BLOCK_N, 0))
        vp = tl.advance(vp, (BLOCK_N, 0))
    op = tl.make_block_ptr(O, (end, D), (stride_s, 1), (start + pid_m * BLOCK_M, 0), (BLOCK_M, D), (1, 0))
    tl.store(op, (acc / l_i[:, None]).to(tl.float16), boundary_check=(0, 1))


def _varlen_reference(q, k, v, cu):
    out = np.zeros(q.shape)
    for s0, s1 in zip(cu[:-1], cu[1:]):
        qq, kk, vv = (x[s0:s1].astype(np.float64) for x in (q, k, v))
        s = qq @ kk.T / np.sqrt(q.shape[1])
        p = np.exp(s - s.max(1, keepdims=True))
        out[s0:s1] = (p / p.sum(1, keepdims=True)) @ vv
    return out


def test_varlen_attention_with_block_pointers_at_128x64():
    """cu_seqlens offsets the compiler cannot bound: every q / k / v load and the store is guarded,
    the other branches element by element -- at 128x64 blocks, head dim 128, that did not fit UB
    ("needs 201728 bytes"); the accesses' addresses now come a few rows at a time."""
    lens = [200, 77, 129]
    cu = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    T, D = int(cu[-1]), 128
    rng = np.random.default_rng(11)
    q, k, v = ((rng.standard_normal((T, D)) * 0.5).astype(np.float16) for _ in range(3))
    o = np.zeros_like(q)
    h = _attention_varlen[(2, len(lens))](q, k, v, o, cu, D ** -0.5, D, BLOCK_M=128, BLOCK_N=64, D=D)
    # q, the result of its guard's if (a tile or elements, in UB), goes to L1 once per program and
    # its UB is free for the key loop; p goes UB -> L1 on each trip
    assert re.search(r"= if %\w+ \{l1_stage = \d+", h.asm["buffer-planning"])
    programs, trips = sum(-(-n // 128) for n in lens), sum(-(-n // 128) * -(-n // 64) for n in lens)
    assert h.stats.bytes_by_path["ub->l1"] == programs * 128 * D * 2 + trips * 128 * 64 * 2, h.stats.bytes_by_path
    np.testing.assert_allclose(o.astype(np.float64), _varlen_reference(q, k, v, cu), rtol=2e-2, atol=2e-2)


def test_varlen_attention_k_and_v_go_straight_to_l1_when_the_offset_they_start_from_is_in_bounds():
    """k and v's block pointers start at a loaded offset and advance by BLOCK_N: the guard is on the
    offset they start from (they never go below it), so it leaves the key loop, and the loop's
    version for ``start >= 0`` loads them GM -> L1 as tiles; the second access guarded alike takes
    that version's branch (no version inside a version).  Only q, guarded before the loop and
    joined in UB, still comes GM -> UB (before: k and v too, element by element: 2.6x the cycles
    of the same kernel with pointers and masks at 64x64)."""
    lens = [200, 77, 129]
    cu = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    T, D, B = int(cu[-1]), 128, 64
    rng = np.random.default_rng(12)
    q, k, v = ((rng.standard_normal((T, D)) * 0.5).astype(np.float16) for _ in range(3))
    o = np.zeros_like(q)
    h = _attention_varlen[(4, len(lens))](q, k, v, o, cu, D ** -0.5, D, BLOCK_M=B, BLOCK_N=B, D=D)
    assert h.stats.bytes_by_path["gm->ub"] == T * D * 2, h.stats.bytes_by_path     # each q row once
    assert h.stats.bytes_by_path["gm->l1"] >= 2 * T * D * 2, h.stats.bytes_by_path
    assert h.asm["unswitch"].count(" = if ") <= 4, h.asm["unswitch"]
    np.testing.assert_allclose(o.astype(np.float64), _varlen_reference(q, k, v, cu), rtol=2e-2, atol=2e-2)


def test_a_guarded_store_that_fits_stores_c_from_l0c_in_its_tile_branch():
    """64x64 fits without element-rows: the store's other branch reads the accumulator through a
    view of all its rows, so FIX drains it there alone and stores it straight from L0C in the tile
    branch (before: drained to UB and stored by MTE3 in both -- 1653 cycles at 256^3 on 16 programs
    against 1490 with pointers and masks; now 1427)."""
    M = N = K = 256
    rng = np.random.default_rng(64)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    h = _mm_grouped_block_ptr[(16,)](a, b, c, M, N, K, BM=64, BN=64, BK=32, GROUP_M=8)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2,
                               atol=2e-2)
    assert "l0c->ub" not in h.stats.bytes_by_path and h.stats.bytes_by_path["l0c->gm"] == M * N * 2
    assert "slice %acc" in h.asm["memory-analysis"], h.asm["memory-analysis"]
