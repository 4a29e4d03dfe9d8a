"""Block pointers (tl.make_block_ptr / tl.advance / boundary_check / padding_option) on every backend."""
import numpy as np
import pytest

import tritonpu as triton
import tritonpu.language as tl

BACKENDS = ["ref", "npu", "cpu"]


@triton.jit
def bp_tile(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, off_m, off_n,
            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C[off_m:, off_n:] = A[off_m:, :] @ B[:, off_n:], one BM x BN tile through block pointers."""
    a_bp = tl.make_block_ptr(a_ptr, (M, K), (sam, sak), (off_m, 0), (BM, BK), (1, 0))
    b_bp = tl.make_block_ptr(b_ptr, (K, N), (sbk, sbn), (0, off_n), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_bp, boundary_check=(0, 1), padding_option="zero")
        acc += tl.dot(a, b)
        a_bp = tl.advance(a_bp, (0, BK))
        b_bp = tl.advance(b_bp, (BK, 0))
    c_bp = tl.make_block_ptr(c_ptr, (M, N), (scm, scn), (off_m, off_n), (BM, BN), (1, 0))
    tl.store(c_bp, acc.to(tl.float16), boundary_check=(0, 1))


@triton.jit
def bp_matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    bp_tile(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
            tl.program_id(0) * BM, tl.program_id(1) * BN, BM, BN, BK)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("M,N,K", [(128, 128, 64), (200, 136, 100)])
def test_block_pointer_matmul(backend, M, N, K):
    rng = np.random.default_rng(M)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    h = bp_matmul[(triton.cdiv(M, 64), triton.cdiv(N, 64))](a, b, c, M, N, K, K, 1, N, 1, N, 1,
                                                           BM=64, BN=64, BK=32, backend=backend)
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32),
                               rtol=2e-2, atol=5e-2)
    if backend == "npu":     # structured: operands straight into L1, the accumulator stays in L0C
        assert "gm->ub" not in h.stats.bytes_by_path and h.stats.bytes_by_path["gm->l1"] > 0
        programs = triton.cdiv(M, 64) * triton.cdiv(N, 64)
        # FIX converts the accumulator to fp16 on its way to GM, once per program (the valid part)
        assert "l0c->ub" not in h.stats.bytes_by_path and "ub->gm" not in h.stats.bytes_by_path
        assert h.stats.bytes_by_path["l0c->gm"] == M * N * 2


@triton.jit
def bp_copy(x_ptr, y_ptr, M, N, shift, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    src = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (tl.program_id(0) * BM + shift, -shift), (BM, BN), (1, 0))
    v = tl.load(src, boundary_check=(0, 1), padding_option=PAD)
    dst = tl.make_block_ptr(y_ptr, (M + BM, N + BN), (N + BN, 1), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    tl.store(dst, v, boundary_check=(0,))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pad", ["zero", "nan"])
@pytest.mark.parametrize("shift", [0, 3])
def test_boundary_check_covers_both_ends_and_pads(backend, pad, shift):
    M, N, BM, BN = 20, 13, 8, 16
    x = np.arange(M * N, dtype=np.float32).reshape(M, N) + 1
    y = np.full((M + BM, N + BN), -5.0, np.float32)
    bp_copy[(triton.cdiv(M, BM),)](x, y, M, N, shift, BM=BM, BN=BN, PAD=pad, backend=backend)
    fill = 0.0 if pad == "zero" else np.nan
    want = np.full_like(y, -5.0)
    for p in range(triton.cdiv(M, BM)):
        for i in range(BM):
            for j in range(BN):
                r, c = p * BM + i + shift, j - shift
                want[p * BM + i, j] = x[r, c] if 0 <= r < M and 0 <= c < N else fill
    np.testing.assert_array_equal(y, want)


@triton.jit
def bp_bad(x_ptr, BM: tl.constexpr):
    p = tl.make_block_ptr(x_ptr, (16,), (1,), (0,), (BM,), (0,))
    tl.store(p, tl.load(p, boundary_check=(1,)))


def test_a_bad_boundary_dimension_is_a_compilation_error():
    with pytest.raises(triton.CompilationError, match="boundary_check dimension 1 out of range for a rank-1 block"):
        bp_bad[(1,)](np.zeros(16, np.float32), BM=16)


@triton.jit
def _offsets_of(x, offs_n: tl.constexpr):
    # the fused-attention tutorial passes tl.arange blocks to parameters annotated tl.constexpr
    return x + offs_n[None, :]


@triton.jit
def bp_row_sums(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    bp = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    acc = tl.zeros((BM, BN), tl.float32)
    for _ in range(0, N, BN):
        acc += tl.load(bp, boundary_check=(0, 1))
        bp = bp.advance((0, BN))                  # Triton's member form of tl.advance
    acc = _offsets_of(acc, tl.arange(0, BN))
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    tl.store(out_ptr + rows, tl.sum(acc, axis=1), mask=rows < M)


@pytest.mark.parametrize("backend", BACKENDS)
def test_member_advance_and_constexpr_annotated_helper_arguments(backend):
    M, N, BM, BN = 40, 100, 16, 32
    x = np.random.default_rng(2).standard_normal((M, N)).astype(np.float32)
    out = np.zeros(M, np.float32)
    bp_row_sums[(triton.cdiv(M, BM),)](x, out, M, N, BM=BM, BN=BN, backend=backend)
    np.testing.assert_allclose(out, x.sum(1) + np.arange(BN).sum(), rtol=1e-5, atol=1e-4)


@triton.jit
def bp_rows_copy(X, Y, N, R, D: tl.constexpr, BM: tl.constexpr):
    off = tl.program_id(1) * N + tl.program_id(0) * BM        # tutorial 06's per-head row offset
    bx = tl.make_block_ptr(X, (R, D), (D, 1), (off, 0), (BM, D), (1, 0))
    by = tl.make_block_ptr(Y, (R, D), (D, 1), (off, 0), (BM, D), (1, 0))
    tl.store(by, tl.load(bx, boundary_check=(0,)), boundary_check=(0,))


def test_a_row_offset_from_a_scalar_argument_needs_no_lower_bound_check_on_the_npu():
    """``pid1 * N + pid0 * BM`` is >= 0 when the launch's N is (a guard recompiles otherwise): the
    boundary check's lower bound holds for every row, so the block moves as one transfer -- it was
    loaded element by element, its 64x128 int64 offsets alone 64 KiB of UB (tutorial 06 with
    tensor descriptors at HEAD_DIM 128 did not compile)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 128)).astype(np.float16)
    y = np.zeros_like(x)
    h = bp_rows_copy[(2, 2)](x, y, 128, 256, D=128, BM=64, backend="npu")
    np.testing.assert_array_equal(y, x)
    assert "mov.gm.ub.f16" in h.asm["isa"] and "tensor<64x128xi64>" not in h.asm["buffer-planning"]
    # a negative N breaks the guard: recompiled with the check (small blocks, element by element)
    x = rng.standard_normal((64, 16)).astype(np.float16)
    y = np.zeros_like(x)
    bp_rows_copy[(2, 2)](x, y, -64, 64, D=16, BM=32, backend="npu")     # programs (*, 1) start at -64, -32
    np.testing.assert_array_equal(y, x)


@triton.jit
def bp_matmul_1d_grid(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BN)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    a_bp = tl.make_block_ptr(a_ptr, (M, K), (K, 1), (pid_m * BM, 0), (BM, BK), (1, 0))
    b_bp = tl.make_block_ptr(b_ptr, (K, N), (N, 1), (0, pid_n * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_bp, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_bp = tl.advance(a_bp, (0, BK))
        b_bp = tl.advance(b_bp, (BK, 0))
    c_bp = tl.make_block_ptr(c_ptr, (M, N), (N, 1), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    tl.store(c_bp, acc.to(tl.float16), boundary_check=(0, 1))


@pytest.mark.parametrize("M,N,K,BM,BN,BK", [(256, 256, 256, 128, 128, 64), (200, 136, 100, 64, 64, 32)])
def test_block_offsets_from_a_one_dimensional_grid_need_no_lower_bound_check(M, N, K, BM, BN, BK):
    """triton-ascend's usual 1-D grid, ``pid_m = pid // tl.cdiv(N, BN)``: cdiv's ``(N + BN - 1)``
    minus one is >= 0 when N is, so the offsets are and the boundary checks' lower bounds hold: the
    tiles go straight to L1.  They were gathered element by element (64x64x32: 15x the cycles;
    128x128x64 needed 206464 bytes of UB and did not compile)."""
    rng = np.random.default_rng(K)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    h = bp_matmul_1d_grid[(triton.cdiv(M, BM) * triton.cdiv(N, BN),)](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK)
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32),
                               rtol=2e-2, atol=5e-2)
    assert "element-by-element" not in h.asm["isa"] and "gm->ub" not in h.stats.bytes_by_path
    assert h.stats.bytes_by_path["l0c->gm"] == M * N * 2


@triton.jit
def bp_matmul_persistent(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    num_pid_n = tl.cdiv(N, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * num_pid_n, tl.num_programs(0)):
        pid_m = tile // num_pid_n
        pid_n = tile % num_pid_n
        a_bp = tl.make_block_ptr(a_ptr, (M, K), (K, 1), (pid_m * BM, 0), (BM, BK), (1, 0))
        b_bp = tl.make_block_ptr(b_ptr, (K, N), (N, 1), (0, pid_n * BN), (BK, BN), (1, 0))
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            acc = tl.dot(tl.load(a_bp, boundary_check=(0, 1), padding_option="zero"),
                         tl.load(b_bp, boundary_check=(0, 1), padding_option="zero"), acc)
            a_bp = tl.advance(a_bp, (0, BK))
            b_bp = tl.advance(b_bp, (BK, 0))
        c_bp = tl.make_block_ptr(c_ptr, (M, N), (N, 1), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
        tl.store(c_bp, acc.to(tl.float16), boundary_check=(0, 1))


def test_block_offsets_from_a_persistent_tile_loop_need_no_lower_bound_check():
    """Tutorial 09's persistent form, ``for tile in range(pid, num_tiles, tl.num_programs(0))``: the
    tile index starts >= 0 and steps by a count >= 0, so it is >= 0 (only a constant step was
    known), and the block pointers' lower bounds hold: tiles, not element-by-element gathers
    (128x128x64 needed a 128x128 int64 offset block in UB and did not compile)."""
    M, N, K = 256, 256, 200
    rng = np.random.default_rng(9)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    h = bp_matmul_persistent[(3,)](a, b, c, M, N, K, BM=128, BN=128, BK=64)
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32),
                               rtol=2e-2, atol=5e-2)
    assert "element-by-element" not in h.asm["isa"] and "gm->ub" not in h.stats.bytes_by_path


@triton.jit
def bp_matmul_listed(a_ptr, b_ptr, c_ptr, offs, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    # a tile list in memory (MoE-style kernels)
    bp_tile(a_ptr, b_ptr, c_ptr, M, N, K, K, 1, N, 1, N, 1, tl.load(offs + 2 * pid), tl.load(offs + 2 * pid + 1),
            BM, BN, BK)


@pytest.mark.parametrize("lists", ["tiles", "tiles and a negative offset"])
def test_block_offsets_the_compiler_cannot_bound_are_guarded_not_moved_element_by_element(lists):
    """Tile offsets loaded from memory (or computed by Triton's grouped ordering, a division by
    ``min(...)``): the boundary check's lower bound ``offset >= 0`` cannot be proved, so each load
    and store is guarded by it -- the block moves as one transfer when it holds, element by
    element when it does not (before, always element by element: 64x64x32 took 12396 cycles
    against 1835 with pointers and masks).  A negative offset takes the other branch and reads
    and writes only the rows in bounds."""
    M = N = K = 128
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    if lists == "tiles":
        offs = np.array([[m, n] for m in (64, 0) for n in (0, 64)], np.int32).reshape(-1)
    else:                                   # rows -32..31, 32..95, 96..159: each C row written once
        offs = np.array([[m, n] for m in (-32, 32, 96) for n in (64, 0)], np.int32).reshape(-1)
    c = np.zeros((M, N), np.float16)
    h = bp_matmul_listed[(len(offs) // 2,)](a, b, c, offs, M, N, K, BM=64, BN=64, BK=32, backend="npu",
                                            trace=True)
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2, atol=5e-2)
    ran = {e["args"]["text"].split()[0] for e in h.stats.trace_events if e["ph"] == "X"}
    if lists == "tiles":        # every offset >= 0: tiles straight into L1, no pointer arithmetic ran
        elementwise = {t for t in ran if t.startswith("mov.gm.ub") or (t.startswith("v") and t.endswith(".i64"))}
        assert "mov.gm.l1.f16" in ran and not elementwise, elementwise


def test_block_offsets_from_memory_at_128x128_compile_and_are_right():
    """At 128x128 the guard's other branch (element by element) needed the loads' and the store's
    int64 addresses in UB at once and the kernel did not compile ("the addresses of an
    element-by-element store ... alone takes 131072 bytes"); element-rows now does those accesses
    16 KiB of addresses at a time (tests/passes/test_element_rows.py)."""
    M = N = K = 256
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    offs = np.array([[m, n] for m in (0, 128) for n in (128, 0)], np.int32).reshape(-1)
    c = np.zeros((M, N), np.float16)
    bp_matmul_listed[(4,)](a, b, c, offs, M, N, K, BM=128, BN=128, BK=32, backend="npu")
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2, atol=5e-2)


@triton.jit
def bump_from_column_one(x_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    p = x_ptr + r[:, None] * N + r[None, :]
    m = r[None, :] >= 1                 # a lower bound: element by element
    tl.store(p, tl.load(p, mask=m) + 1, mask=m)


def test_an_element_by_element_access_that_overflows_ub_is_named_as_such():
    """One block of addresses read and written element by element (it cannot be split by rows:
    both accesses use it): the error names it as such -- not "a tensor<128x128xptr<f32>> value",
    nothing the kernel wrote -- with the block's own type, and points at the pointer's line."""
    with pytest.raises(triton.CompilationError) as e:
        bump_from_column_one[(1,)](np.zeros((128, 128), np.float32), N=128, backend="npu")
    msg = str(e.value)
    assert "the addresses of an element-by-element load and store (not a tile the compiler moves whole) " \
           "(tensor<128x128xptr<f32>>) alone takes 131072 bytes; use smaller blocks" in msg, msg
    assert "p = x_ptr + r[:, None] * N + r[None, :]" in msg.splitlines()[-2], msg
