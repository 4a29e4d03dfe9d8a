"""Matmuls at 128x128 blocks whose accumulator or epilogue tiles live in UB: they fit when the
buffers that are never live together share one (buffer planning, codegen/coalesce.py) and when
elementwise work is planned over the loaded tile it reads (codegen/pipeline.py)."""
import re

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl


@tritonpu.jit
def _mm_from_bias(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.load(bias_ptr + rm[:, None] * N + rn[None, :])
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def _run_from_bias(K, **opts):
    M = N = 256
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    bias = rng.standard_normal((M, N)).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    h = _mm_from_bias[(2, 2)](a, b, c, bias, M, N, K, BM=128, BN=128, BK=32, **opts)
    np.testing.assert_allclose(c, bias + a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)
    return c, h


def test_an_accumulator_loaded_from_memory_fits_at_128x128x32():
    """``acc = tl.load(bias)`` then ``acc = tl.dot(a, b, acc)`` in the K loop: the accumulator
    starts in UB (only the cube writes L0C).  ``unswitch`` makes versions of the K loop, each
    starting from the loaded tile; they run in exclusive branches, so the first one carries the
    accumulator in the loaded tile's own buffer.  It needed 200704 bytes of UB before (three 64 KiB
    tiles and the product's drain); now 131072, and the results are the same bits with double
    buffering off."""
    c, h = _run_from_bias(224)
    ir = h.asm["buffer-planning"]
    bias_at = re.search(r"load_tile [^\n]*\{ub = (\d+)\} : tensor<128x128xf32>", ir).group(1)
    carried = re.findall(r"= for [^\n]*ub = \[(\d+), -1", ir)
    assert bias_at in carried, (bias_at, carried)
    assert int(re.search(r"ub_peak = (\d+)", ir).group(1)) <= 131072
    c_off, _ = _run_from_bias(224, double_buffer=False)
    assert c.tobytes() == c_off.tobytes()


@tritonpu.jit
def _mm_beta_c(a_ptr, b_ptr, c_ptr, M, N, K, scm, scn, beta,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    cp = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    tl.store(cp, acc + beta * tl.load(cp))


def test_beta_times_a_column_major_c_fits_at_128x128x64():
    """``C = A @ B + beta * C`` with C column-major: loading and storing C transposed takes a 64 KiB
    scratch tile at emission, which did not fit beside the accumulator, C and ``beta * C``
    (262144 bytes).  The compile is tried again with ``beta * C`` written over C's tile."""
    M = N = 256
    K = 192
    rng = np.random.default_rng(4)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c0 = rng.standard_normal((M, N)).astype(np.float32)
    c = np.asfortranarray(c0)
    h = _mm_beta_c[(2, 2)](a, b, c, M, N, K, 1, M, 0.5, BM=128, BN=128, BK=64)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64) + 0.5 * c0, rtol=1e-4, atol=1e-4)
    assert "reuse_loaded_tiles = true" in h.asm["buffer-planning"]


@tritonpu.jit
def _linear_gelu_persistent(x_ptr, w_ptr, y_ptr, M, N, K, NUM_SMS: tl.constexpr,
                            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    start = tl.program_id(0)
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    for tile in range(start, num_m * num_n, NUM_SMS):
        pid_m = tile // num_n
        pid_n = tile % num_n
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(x_ptr + rm[:, None] * K + (k + rk)[None, :],
                        mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
            b = tl.load(w_ptr + (k + rk)[:, None] * N + rn[None, :],
                        mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
        acc = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
        tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("K", [64, 192])
def test_the_epilogue_of_a_dot_in_a_persistent_tile_loop_is_done_a_few_rows_at_a_time(K):
    """A persistent kernel (its own loop over the output tiles, as in Triton's tutorial 09) with a
    GELU epilogue at 128x256: the 128 KiB accumulator and the epilogue's temporaries needed 262144
    bytes of UB.  ``epilogue-rows`` now takes a dot loop in a loop's body as it takes one at the top
    level; the results are the same bits as at 128x128, which fits without it."""
    M, N = 256, 600
    rng = np.random.default_rng(5)
    x = rng.standard_normal((M, K)).astype(np.float16)
    w = rng.standard_normal((K, N)).astype(np.float16)
    ys = {}
    for BN in (256, 128):
        ys[BN] = np.zeros((M, N), np.float32)
        h = _linear_gelu_persistent[(8,)](x, w, ys[BN], M, N, K, NUM_SMS=8, BM=128, BN=BN, BK=64)
        if BN == 256:
            rows = re.findall(r"= slice %\w+ \{offsets = \[(\d+), 0\][^}]*\} : tensor<(\d+)x256xf32>",
                              h.asm["epilogue-rows"])
            assert len(rows) >= 2 and rows[0][0] == "0" and int(rows[1][0]) == int(rows[0][1]), rows
    r = x.astype(np.float64) @ w.astype(np.float64)
    erf = np.vectorize(__import__("math").erf)
    np.testing.assert_allclose(ys[256], 0.5 * r * (1 + erf(r / np.sqrt(2))), rtol=1e-4, atol=1e-4)
    assert ys[256].tobytes() == ys[128].tobytes()


@tritonpu.jit
def _two_loops_in_branches(a_ptr, b_ptr, c_ptr, bias_ptr, N, K, f,
                           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    bias = tl.load(bias_ptr + rm[:, None] * N + rn[None, :])
    if f > 0:
        acc = bias
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=rk[None, :] < K - k, other=0.0)
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=rk[:, None] < K - k, other=0.0)
            acc = tl.dot(a, b, acc)
        out = acc
    else:
        out = bias * 2.0
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=rk[None, :] < K - k, other=0.0)
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=rk[:, None] < K - k, other=0.0)
            out = out + tl.dot(a, b) + bias
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], out)


@pytest.mark.parametrize("f", [1, -1])
@pytest.mark.parametrize("db", [True, False])
def test_a_tile_one_branch_starts_a_loop_from_is_not_overwritten_while_the_other_reads_it(f, db):
    """The then-branch's K loop carries its accumulator in the loaded ``bias`` tile's buffer (the
    tile is not read after it there); the if's result takes that buffer, and so did the
    else-branch's loop, which reads ``bias`` in every trip: its accumulator overwrote ``bias``
    (a silent wrong result, max error ~200, found by a probe).  Coalescing now checks that no value
    of one buffer is live where another is made, on paths where both run."""
    M = N = 64
    K, BK = 96, 32
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    bias = rng.standard_normal((M, N)).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    _two_loops_in_branches[(1, 1)](a, b, c, bias, N, K, f, BM=64, BN=64, BK=BK, double_buffer=db)
    A, B = a.astype(np.float64), b.astype(np.float64)
    if f > 0:
        want = bias + A @ B
    else:
        want = bias * 2.0
        for k in range(0, K, BK):
            want = want + A[:, k:k + BK] @ B[k:k + BK] + bias
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)


@tritonpu.jit
def _mm_any_c_layout(a_ptr, b_ptr, c_ptr, M, N, K, stride_cm, stride_cn,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, INT: tl.constexpr):
    pid = tl.program_id(0)
    pid_m = pid // tl.cdiv(N, BN)
    pid_n = pid % tl.cdiv(N, BN)
    am = (pid_m * BM + tl.arange(0, BM)) % M        # Triton's tutorial: wrapped offsets
    bn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    if INT:
        acc = tl.zeros((BM, BN), dtype=tl.int32)
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptr + am[:, None] * K + (k * BK + rk)[None, :], mask=rk[None, :] < K - k * BK, other=0)
        b = tl.load(b_ptr + (k * BK + rk)[:, None] * N + bn[None, :], mask=rk[:, None] < K - k * BK, other=0)
        acc = tl.dot(a, b, acc)
    c = acc.to(c_ptr.dtype.element_ty)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, c, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("BM,BN", [(128, 256), (256, 128)])
@pytest.mark.parametrize("tin,tout", [(np.float16, np.float16), (np.int8, np.int32)])
def test_a_column_major_c_at_128x256_is_stored_a_few_rows_at_a_time(BM, BN, tin, tout):
    """C column-major at 128x256 / 256x128 (the tutorial's first configs, storing ``C.T`` of a
    row-major array): the accumulator passes through UB to be stored transposed, and with the
    emitter's temporaries it needed 200320 bytes of 196608 (265856 for int8 -> int32) -- a
    CompilationError ("use smaller blocks").  The compile is tried again with the plan leaving the temporaries' UB free, and
    ``epilogue-rows`` (which now takes stores of any column stride) stores the accumulator a few
    rows at a time: the same bits as the row-major store, which never needed it."""
    M, N, K = 300, 520, 100
    rng = np.random.default_rng(6)
    if tin is np.int8:
        a = rng.integers(-8, 8, (M, K)).astype(tin)
        b = rng.integers(-8, 8, (K, N)).astype(tin)
    else:
        a = (rng.random((M, K)) - 0.5).astype(tin)
        b = (rng.random((K, N)) - 0.5).astype(tin)
    grid = (-(-M // BM) * -(-N // BN),)
    row = np.zeros((M, N), tout)
    _mm_any_c_layout[grid](a, b, row, M, N, K, N, 1, BM=BM, BN=BN, BK=64, INT=tin is np.int8)
    col = np.zeros((N, M), tout).T
    h = _mm_any_c_layout[grid](a, b, col, M, N, K, 1, M, BM=BM, BN=BN, BK=64, INT=tin is np.int8)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    if tin is np.int8:
        assert (col == ref).all()
    else:
        np.testing.assert_allclose(col.astype(np.float64), ref, rtol=1e-2, atol=2e-3)
    assert np.ascontiguousarray(col).tobytes() == row.tobytes()
    rows = re.findall(r"= slice %\w+ \{offsets = \[(\d+), 0\][^}]*\} : tensor<(\d+)x" + str(BN) + "x", h.asm["epilogue-rows"])
    assert len(rows) >= 2 and rows[0][0] == "0" and int(rows[1][0]) == int(rows[0][1]), rows


@tritonpu.jit
def _one_block_gelu(a_ptr, b_ptr, c_ptr, N: tl.constexpr, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    rm = pid // (N // BN) * BM + tl.arange(0, BM)
    rn = pid % (N // BN) * BN + tl.arange(0, BN)
    rk = tl.arange(0, K)
    acc = tl.dot(tl.load(a_ptr + rm[:, None] * K + rk[None, :]), tl.load(b_ptr + rk[:, None] * N + rn[None, :]))
    acc = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def _ub_addr(operand):
    """The address A of a UB operand ``ub[A]``."""
    return int(re.match(r"ub\[(\d+)\]", operand).group(1))


def test_the_chunks_of_an_epilogue_are_planned_apart_so_fix_v_and_mte3_overlap():
    """A 128x256 GELU epilogue done a few rows at a time: each chunk's rows drained from L0C go to
    UB clear of the chunk before, and its stored tile clear of the chunk after (buffer planning,
    ``rows_chunk``).  Before, every chunk reused the last one's buffers: FIX drained chunk i+1 only
    after MTE3 had stored chunk i, and the vector unit waited for both (1024x1024x64: 13837
    cycles, 8797 now).  The chunks are 16 rows (at most 8 chunks) when two fit at once."""
    n, k = 256, 64
    rng = np.random.default_rng(7)
    a = (rng.random((n, k)) - 0.5).astype(np.float16)
    b = (rng.random((k, n)) - 0.5).astype(np.float16)
    c = np.zeros((n, n), np.float32)
    h = _one_block_gelu[(2,)](a, b, c, N=n, K=k, BM=128, BN=256)
    p = a.astype(np.float64) @ b.astype(np.float64)
    erf = np.vectorize(__import__("math").erf)
    np.testing.assert_allclose(c, 0.5 * p * (1 + erf(p / np.sqrt(2))), rtol=1e-5, atol=1e-5)
    isa = h.asm["isa"]
    drains = [_ub_addr(m) for m in re.findall(r"mov\.l0c\.ub\.f32\.f32 (ub\[\d+\])", isa)]
    stores = [_ub_addr(m) for m in re.findall(r"mov\.ub\.gm\.f32 c_ptr\[\w+\], (ub\[\d+\])", isa)]
    rows = 16 * 256 * 4
    assert len(drains) == len(stores) == 8, (drains, stores)
    for q in range(1, 8):
        # the rows drained for chunk q lie clear of what chunk q-1 stores, and of its drained rows
        assert drains[q] >= stores[q - 1] + rows or stores[q - 1] >= drains[q] + rows, (q, drains, stores)
        assert drains[q] >= drains[q - 1] + rows or drains[q - 1] >= drains[q] + rows, (q, drains)
