"""Triton's standard helpers: ``tl.swizzle2d`` (Triton's documented example and a ragged last band,
on every backend), ``tl.xor_sum``, ``tl.histogram``, ``tl.assume`` (a hint: no effect) and
``tl.TRITON_MAX_TENSOR_NUMEL``."""
import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl


@tritonpu.jit
def _swizzle(out_ptr, SI: tl.constexpr, SJ: tl.constexpr, SG: tl.constexpr):
    i = tl.arange(0, SI)[:, None] + tl.zeros((SI, SJ), tl.int32)
    j = tl.arange(0, SJ)[None, :] + tl.zeros((SI, SJ), tl.int32)
    tl.assume(SI > 0)
    ni, nj = tl.swizzle2d(i, j, SI, SJ, SG)
    tl.store(out_ptr + ni * SJ + nj, i * SJ + j)       # the value of (i, j) lands at (ni, nj)


def _expected(si, sj, sg):
    out = np.empty((si, sj), np.int32)
    for i in range(si):
        for j in range(sj):
            lin = i * sj + j
            first = lin // (sg * sj) * sg
            rows = min(si - first, sg)
            k = lin % (sg * sj)
            out[first + k % rows, k // rows] = lin
    return out


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_swizzle2d(backend):
    out = np.full((4, 4), -1, np.int32)
    _swizzle[(1,)](out, SI=4, SJ=4, SG=2, backend=backend)
    # Triton's documented example: bands of 2 rows read column-major
    assert out.tolist() == [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]]
    ragged = np.full((8, 4), -1, np.int32)
    _swizzle[(1,)](ragged, SI=8, SJ=4, SG=3, backend=backend)         # bands of 3, 3, 2 rows
    assert ragged.tolist() == _expected(8, 4, 3).tolist()
    assert sorted(ragged.ravel().tolist()) == list(range(32))


def test_max_tensor_numel_is_tritons():
    assert tl.TRITON_MAX_TENSOR_NUMEL == 1 << 20


@tritonpu.jit
def _xor_sums(x_ptr, all_ptr, rows_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(all_ptr, tl.xor_sum(x))
    tl.store(rows_ptr + tl.arange(0, M), tl.xor_sum(x, axis=1))


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_xor_sum(backend):
    x = np.random.default_rng(9).integers(0, 1 << 30, (8, 16)).astype(np.int32)
    every, rows = np.zeros(1, np.int32), np.zeros(8, np.int32)
    _xor_sums[(1,)](x, every, rows, M=8, N=16, backend=backend)
    assert every[0] == np.bitwise_xor.reduce(x.ravel())
    np.testing.assert_array_equal(rows, np.bitwise_xor.reduce(x, axis=1))


@tritonpu.jit
def _histograms(x_ptr, h_ptr, m_ptr, N: tl.constexpr, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(h_ptr + tl.arange(0, B), tl.histogram(x, B))
    tl.store(m_ptr + tl.arange(0, B), x.histogram(B, mask=tl.arange(0, N) < N // 2))


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_histogram(backend):
    # bins of width 1 from 0; values outside [0, B) are not counted; masked-off lanes are left out
    x = np.random.default_rng(11).integers(-2, 20, 256).astype(np.int32)
    h, m = np.zeros(16, np.int32), np.zeros(16, np.int32)
    _histograms[(1,)](x, h, m, N=256, B=16, backend=backend)

    def counts(v):
        return np.bincount(v[(v >= 0) & (v < 16)], minlength=16)[:16]
    np.testing.assert_array_equal(h, counts(x))
    np.testing.assert_array_equal(m, counts(x[:128]))
