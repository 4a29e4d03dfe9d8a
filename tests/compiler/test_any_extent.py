"""Blocks of any extent (triton-ascend accepts them; upstream Triton wants powers of two) and rank-3..5
tiles whose slices are not 32-byte aligned, on every backend, against numpy: elementwise work,
reductions, scans, dots, block pointers, reshapes and permutes, custom ``tl.reduce`` /
``tl.associative_scan``, ``sort`` / ``flip`` / ``topk`` / ``gather``.  ``TRITONPU_STRICT_TRITON=1``
brings Triton's power-of-two rule back."""
import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl

BACKENDS = ["ref", "cpu", "npu"]
rng = np.random.default_rng(11)


@tritonpu.jit
def add(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("block", [3, 24, 100, 1000])
def test_elementwise(backend, block):
    n = 1234
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    o = np.zeros_like(x)
    add[(tritonpu.cdiv(n, block),)](x, y, o, n, BLOCK=block, backend=backend)
    np.testing.assert_array_equal(o, x + y)


@tritonpu.jit
def softmax_rows(x_ptr, o_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    m = (rows < M) & (cols < N)
    x = tl.load(x_ptr + rows * N + cols, mask=m, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    tl.store(o_ptr + rows * N + cols, e / tl.sum(e, axis=1)[:, None], mask=m)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bm,bn", [(5, 7), (6, 50), (3, 100), (1, 781)])
def test_reductions_along_odd_rows(backend, bm, bn):
    M = 13
    x = rng.standard_normal((M, bn)).astype(np.float32)
    o = np.zeros_like(x)
    softmax_rows[(tritonpu.cdiv(M, bm),)](x, o, M, bn, BM=bm, BN=bn, backend=backend)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(o, e / e.sum(1, keepdims=True), rtol=2e-6, atol=1e-7)


@tritonpu.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bm,bn,bk", [(48, 80, 40), (20, 24, 17)])
def test_dot_with_odd_blocks(backend, bm, bn, bk):
    M, N, K = 100, 130, 90
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    matmul[(tritonpu.cdiv(M, bm), tritonpu.cdiv(N, bn))](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk, backend=backend)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)


@tritonpu.jit
def block_ptr_scale(x_ptr, o_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    q = tl.make_block_ptr(o_ptr, (M, N), (N, 1), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    tl.store(q, tl.load(p, boundary_check=(0, 1)) * 2, boundary_check=(0, 1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_block_pointers_with_odd_blocks(backend):
    x = rng.standard_normal((50, 30)).astype(np.float32)
    o = np.zeros_like(x)
    block_ptr_scale[(tritonpu.cdiv(50, 12),)](x, o, 50, 30, BM=12, BN=30, backend=backend)
    np.testing.assert_array_equal(o, 2 * x)


@tritonpu.jit
def scans(x_ptr, s_ptr, r_ptr, BM: tl.constexpr, BN: tl.constexpr):
    off = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    x = tl.load(x_ptr + off)
    tl.store(s_ptr + off, tl.cumsum(x, axis=1))
    tl.store(r_ptr + tl.arange(0, BN), tl.sum(tl.reshape(x, (BN, BM)), axis=1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_scans_and_reshapes(backend):
    x = rng.integers(-5, 5, (5, 37)).astype(np.int32)
    s, r = np.zeros_like(x), np.zeros(37, np.int32)
    scans[(1,)](x, s, r, BM=5, BN=37, backend=backend)
    np.testing.assert_array_equal(s, np.cumsum(x, 1))
    np.testing.assert_array_equal(r, x.reshape(37, 5).sum(1))


@tritonpu.jit
def permute3(x_ptr, o_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    off = tl.arange(0, A)[:, None, None] * B * C + tl.arange(0, B)[None, :, None] * C + tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + off)
    y = tl.permute(x, (2, 0, 1))
    ooff = tl.arange(0, C)[:, None, None] * A * B + tl.arange(0, A)[None, :, None] * B + tl.arange(0, B)[None, None, :]
    tl.store(o_ptr + ooff, y + 1)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,dtype", [((3, 5, 7), np.float32), ((2, 3, 4), np.int8), ((4, 2, 6), np.float16)])
def test_rank3_unaligned_permute(backend, shape, dtype):
    A, B, C = shape
    x = rng.integers(-50, 50, shape).astype(dtype)
    o = np.zeros((C, A, B), dtype)
    permute3[(1,)](x, o, A=A, B=B, C=C, backend=backend)
    np.testing.assert_array_equal(o, np.transpose(x, (2, 0, 1)) + 1)


@tritonpu.jit
def outer3(x_ptr, y_ptr, o_ptr, s_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, A)[:, None] * C + tl.arange(0, C)[None, :])       # (A, C)
    y = tl.load(y_ptr + tl.arange(0, B))                                               # (B,)
    z = tl.expand_dims(x, 1) * tl.expand_dims(tl.expand_dims(y, 0), 2)                 # (A, B, C)
    off = tl.arange(0, A)[:, None, None] * B * C + tl.arange(0, B)[None, :, None] * C + tl.arange(0, C)[None, None, :]
    tl.store(o_ptr + off, z)
    tl.store(s_ptr + tl.arange(0, A)[:, None] * C + tl.arange(0, C)[None, :], tl.sum(z, axis=1))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,dtype", [((3, 5, 7), np.float32), ((2, 3, 5), np.int16)])
def test_rank3_unaligned_broadcast_and_middle_reduction(backend, shape, dtype):
    A, B, C = shape
    x = rng.integers(-5, 5, (A, C)).astype(dtype)
    y = rng.integers(-5, 5, B).astype(dtype)
    o, s = np.zeros(shape, dtype), np.zeros((A, C), dtype)
    outer3[(1,)](x, y, o, s, A=A, B=B, C=C, backend=backend)
    np.testing.assert_array_equal(o, x[:, None, :] * y[None, :, None])
    np.testing.assert_array_equal(s, (x[:, None, :] * y[None, :, None]).sum(1).astype(dtype))


@tritonpu.jit
def _offsets5(D0: tl.constexpr, D1: tl.constexpr, D2: tl.constexpr, D3: tl.constexpr, D4: tl.constexpr):
    """Row-major offsets of a (D0, .., D4) block."""
    i0 = tl.arange(0, D0)[:, None, None, None, None]
    i1 = tl.arange(0, D1)[None, :, None, None, None]
    i2 = tl.arange(0, D2)[None, None, :, None, None]
    i3 = tl.arange(0, D3)[None, None, None, :, None]
    i4 = tl.arange(0, D4)[None, None, None, None, :]
    return (((i0 * D1 + i1) * D2 + i2) * D3 + i3) * D4 + i4


@tritonpu.jit
def sum5(x_ptr, o_ptr, D0: tl.constexpr, D1: tl.constexpr, D2: tl.constexpr, D3: tl.constexpr, D4: tl.constexpr,
         AX: tl.constexpr, OUT: tl.constexpr):
    x = tl.load(x_ptr + _offsets5(D0, D1, D2, D3, D4))
    tl.store(o_ptr + tl.arange(0, OUT), tl.reshape(tl.sum(x, axis=AX), (OUT,)))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("axis", range(5))
def test_rank5_reductions_over_small_dims(backend, axis):
    dims = (2, 3, 2, 2, 3)
    x = rng.integers(-9, 9, dims).astype(np.float32)
    out = x.size // dims[axis]
    o = np.zeros(out, np.float32)
    sum5[(1,)](x, o, *dims, AX=axis, OUT=out, backend=backend)
    np.testing.assert_array_equal(o, x.sum(axis).reshape(-1))


@tritonpu.jit
def swap_middle4(x_ptr, y_ptr, o_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, D: tl.constexpr):
    a = tl.arange(0, A)[:, None, None, None]
    b = tl.arange(0, B)[None, :, None, None]
    c = tl.arange(0, C)[None, None, :, None]
    d = tl.arange(0, D)[None, None, None, :]
    x = tl.load(x_ptr + ((a * B + b) * C + c) * D + d)              # (A, B, C, D)
    y = tl.load(y_ptr + ((a * C + c) * B + b) * D + d)              # the same shape, another layout
    z = tl.permute(x, (0, 2, 1, 3)) * 2 + tl.permute(y, (0, 2, 1, 3))   # (A, C, B, D): views that do not merge
    tl.store(o_ptr + ((a * C + c) * B + b) * D + d, tl.permute(z, (0, 2, 1, 3)))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,dtype", [((2, 3, 5, 7), np.float32), ((3, 2, 3, 9), np.int16), ((2, 2, 2, 3), np.int8)])
def test_rank4_elementwise_on_unaligned_views_that_do_not_merge(backend, shape, dtype):
    """Each (B, D) slice of the permuted operands starts off 32-byte alignment and the two leading
    dimensions do not merge into one: the slices move block by block into aligned scratch
    (a CompilationError "reshape to 2D" before)."""
    A, B, C, D = shape
    x = rng.integers(-20, 20, shape).astype(dtype)
    y = rng.integers(-20, 20, (A, C, B, D)).astype(dtype)
    o = np.zeros((A, C, B, D), dtype)
    swap_middle4[(1,)](x, y, o, A=A, B=B, C=C, D=D, backend=backend)
    np.testing.assert_array_equal(o, (x.transpose(0, 2, 1, 3) * 2 + y).astype(dtype))


@tritonpu.jit
def mix5(x_ptr, o_ptr, D0: tl.constexpr, D1: tl.constexpr, D2: tl.constexpr, D3: tl.constexpr, D4: tl.constexpr):
    x = tl.load(x_ptr + _offsets5(D0, D1, D2, D3, D4))
    z = tl.permute(x, (2, 0, 3, 1, 4)) + tl.permute(x, (2, 0, 3, 1, 4)) * 3 - 1
    tl.store(o_ptr + _offsets5(D2, D0, D3, D1, D4), z)


@pytest.mark.parametrize("backend", BACKENDS)
def test_rank5_elementwise_on_an_unaligned_permuted_view(backend):
    dims = (2, 3, 2, 2, 5)
    x = rng.integers(-9, 9, dims).astype(np.float32)
    o = np.zeros((2, 2, 2, 3, 5), np.float32)
    mix5[(1,)](x, o, *dims, backend=backend)
    np.testing.assert_array_equal(o, np.transpose(x, (2, 0, 3, 1, 4)) * 4 - 1)


@tritonpu.jit
def _add(a, b):
    return a + b


@tritonpu.jit
def _max(a, b):
    return tl.maximum(a, b)


@tritonpu.jit
def combine_fns(x_ptr, s_ptr, r_ptr, t_ptr, BN: tl.constexpr):
    c = tl.arange(0, BN)
    x = tl.load(x_ptr + c)
    tl.store(s_ptr + c, tl.associative_scan(x, 0, _add))
    tl.store(r_ptr + c, tl.associative_scan(x, 0, _max, reverse=True))
    tl.store(t_ptr, tl.reduce(x, 0, _add))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [3, 12, 25, 100])
def test_custom_reduce_and_scan_of_any_size(backend, n):
    x = rng.integers(-9, 9, n).astype(np.int32)
    s, r, t = np.zeros_like(x), np.zeros_like(x), np.zeros(1, np.int32)
    combine_fns[(1,)](x, s, r, t, BN=n, backend=backend)
    np.testing.assert_array_equal(s, np.cumsum(x))
    np.testing.assert_array_equal(r, np.maximum.accumulate(x[::-1])[::-1])
    assert t[0] == x.sum()


@tritonpu.jit
def reorders(x_ptr, s_ptr, d_ptr, f_ptr, t_ptr, R: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + r * N + c)
    tl.store(s_ptr + r * N + c, tl.sort(x, dim=1))
    tl.store(d_ptr + r * N + c, tl.sort(x, dim=1, descending=True))
    tl.store(f_ptr + r * N + c, tl.flip(x, 1))
    tl.store(t_ptr + r * K + tl.arange(0, K)[None, :], tl.topk(x, K))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n,k", [(5, 5), (12, 3), (16, 3), (24, 7)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_sort_flip_topk_of_any_size(backend, n, k, dtype):
    x = rng.integers(-9, 9, (3, n)).astype(dtype)       # ties included
    if dtype != np.int32:
        x[0, :3] = [-0.0, np.inf, -np.inf]
    s, d, f = (np.zeros_like(x) for _ in range(3))
    t = np.zeros((3, k), dtype)
    reorders[(1,)](x, s, d, f, t, R=3, N=n, K=k, backend=backend)
    np.testing.assert_array_equal(s, np.sort(x, 1))
    np.testing.assert_array_equal(d, np.sort(x, 1)[:, ::-1])
    np.testing.assert_array_equal(f, x[:, ::-1])
    np.testing.assert_array_equal(t, np.sort(x, 1)[:, ::-1][:, :k])


def test_strict_triton_brings_back_the_power_of_two_rule(monkeypatch):
    monkeypatch.setenv("TRITONPU_STRICT_TRITON", "1")
    x = np.zeros(100, np.float32)

    @tritonpu.jit
    def strict_add(x_ptr, o_ptr, n, BLOCK: tl.constexpr):     # (a new kernel: not in the cache)
        offs = tl.arange(0, BLOCK)
        tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    with pytest.raises(tritonpu.CompilationError, match=r"tl.arange needs constexpr bounds whose range is a power "
                                                        r"of 2; got 100 \(TRITONPU_STRICT_TRITON is set\)"):
        strict_add[(1,)](x, x, 100, BLOCK=100, backend="ref")


# -- a silent NPU wrong result found while building the above ----------------------------------------

@tritonpu.jit
def _rank_by_select(x_ptr, t_ptr, R: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    x = tl.load(x_ptr + r * N + tl.arange(0, N)[None, :])
    ki, kj = tl.expand_dims(x, 2), tl.expand_dims(x, 1)
    pos = tl.arange(0, N)
    before = (kj > ki) | ((kj == ki) & (tl.expand_dims(pos, 0) < tl.expand_dims(pos, 1)))
    rank = tl.sum(before.to(tl.int32), 2)
    at = tl.expand_dims(rank, 1) == tl.expand_dims(tl.expand_dims(pos, 0), 2)
    tl.store(t_ptr + r * N + tl.arange(0, N)[None, :],
             tl.sum(tl.where(at, tl.broadcast_to(tl.expand_dims(x, 1), (R, N, N)), 0), 2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_rank3_select_does_not_overwrite_its_mask_in_place(backend):
    """The (4, 16, 16) i32 select took its u8 mask's buffer and ran one instruction per leading
    index: slice 0's result landed on the mask's slices 1-3 before they were read."""
    x = rng.integers(-9, 9, (4, 16)).astype(np.int32)
    t = np.zeros_like(x)
    _rank_by_select[(1,)](x, t, R=4, N=16, backend=backend)
    np.testing.assert_array_equal(t, np.sort(x, 1)[:, ::-1])
