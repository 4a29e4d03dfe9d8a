"""``tl.reduce`` and ``tl.associative_scan`` with a ``@jit`` combine function
(tritonpu/frontend/combine.py), on every backend: one tensor or a tuple (argmax with Triton-style
tie-breaking on the index; a running (sum, count)), along either axis of a 2-D block or over all
elements, ``keep_dims``, reverse scans, a non-commutative combine seeing its operands in element
order; errors name the kernel's line."""
import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.errors import CompilationError


@tritonpu.jit
def _add(a, b):
    return a + b


@tritonpu.jit
def _argmax(v0, i0, v1, i1):
    right = (v1 > v0) | ((v1 == v0) & (i1 < i0))
    return tl.where(right, v1, v0), tl.where(right, i1, i0)


@tritonpu.jit
def _reduce_kernel(x_ptr, s_ptr, m_ptr, i_ptr, a_ptr, k_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    L: tl.constexpr = M if AXIS == 1 else N
    tl.store(s_ptr + tl.arange(0, L), tl.reduce(x, AXIS, _add))
    idx = (tl.arange(0, N)[None, :] if AXIS == 1 else tl.arange(0, M)[:, None]) + tl.zeros((M, N), tl.int32)
    v, i = tl.reduce((x, idx), AXIS, _argmax)
    tl.store(m_ptr + tl.arange(0, L), v)
    tl.store(i_ptr + tl.arange(0, L), i)
    tl.store(a_ptr, tl.reduce(x, None, _add))
    kept = tl.reduce(x, AXIS, _add, keep_dims=True)                      # (M, 1) or (1, N)
    tl.store(k_ptr + tl.arange(0, L), tl.reshape(kept, (L,)))


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_reduce_with_a_combine_function(axis, backend):
    M, N = 8, 16
    x = np.random.default_rng(axis).integers(-4, 4, (M, N)).astype(np.int32)   # ties for argmax
    L = M if axis == 1 else N
    s, m, i, k = (np.zeros(L, np.int32) for _ in range(4))
    a = np.zeros(1, np.int32)
    _reduce_kernel[(1,)](x, s, m, i, a, k, M=M, N=N, AXIS=axis, backend=backend)
    np.testing.assert_array_equal(s, x.sum(axis))
    np.testing.assert_array_equal(m, x.max(axis))
    np.testing.assert_array_equal(i, x.argmax(axis))                # the first of equal maxima
    np.testing.assert_array_equal(k, x.sum(axis))
    assert a[0] == x.sum()


@tritonpu.jit
def _float_sum(x_ptr, o_ptr, N: tl.constexpr):
    tl.store(o_ptr, tl.reduce(tl.load(x_ptr + tl.arange(0, N)), 0, _add))


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_a_float_reduction_is_a_pairwise_tree(backend):
    x = np.random.default_rng(7).standard_normal(64).astype(np.float32)
    o = np.zeros(1, np.float32)
    _float_sum[(1,)](x, o, N=64, backend=backend)
    tree = x.copy()
    while tree.size > 1:                                           # neighbours 2i and 2i+1, in fp32
        tree = tree[0::2] + tree[1::2]
    assert o[0] == tree[0]


def _not_jit(a, b):
    return a + b


@tritonpu.jit
def _bad_combine(x_ptr, N: tl.constexpr):
    tl.store(x_ptr, tl.reduce(tl.load(x_ptr + tl.arange(0, N)), 0, _not_jit))


@tritonpu.jit
def _two_for_one(a, b):
    return a + b, a - b


@tritonpu.jit
def _wrong_arity(x_ptr, N: tl.constexpr):
    tl.store(x_ptr, tl.reduce(tl.load(x_ptr + tl.arange(0, N)), 0, _two_for_one))


@tritonpu.jit
def _centered(x_ptr, y_ptr, s_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    s = tl.reduce(x, 0, _add)                   # a scalar read again after other block work
    y = x - s
    tl.store(y_ptr + tl.arange(0, N), y + s * 2)
    tl.store(s_ptr, s)


@tritonpu.jit
def _welford(m_a, v_a, n_a, m_b, v_b, n_b):
    n = n_a + n_b
    d = m_b - m_a
    w = tl.where(n == 0, 0.0, n_b / tl.where(n == 0, 1.0, n))
    return m_a + d * w, v_a + v_b + d * d * n_a * w, n


@tritonpu.jit
def _normalize(x_ptr, y_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    mean, m2, n = tl.reduce((x, tl.zeros_like(x), tl.full((N,), 1.0, tl.float32)), 0, _welford)
    tl.store(y_ptr + tl.arange(0, N), (x - mean) / tl.sqrt(m2 / n + 1e-5))


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_a_full_reduction_stays_live_while_it_is_read(backend):
    # regression: on the NPU the scalar viewed out of the last one-element tile was not live, so the
    # next block op took its UB address and every later read of `s` saw that op's first element
    x = np.arange(8, dtype=np.float32)
    y, s = np.zeros(8, np.float32), np.zeros(1, np.float32)
    _centered[(1,)](x, y, s, N=8, backend=backend)
    np.testing.assert_array_equal(y, x + 28)
    assert s[0] == 28
    x = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    y = np.zeros_like(x)
    _normalize[(1,)](x, y, N=64, backend=backend)
    np.testing.assert_allclose(y, (x - x.mean()) / np.sqrt(x.var() + 1e-5), rtol=1e-4, atol=1e-5)


def test_reduce_errors_name_the_line():
    with pytest.raises(CompilationError, match="must be a @tritonpu.jit function") as e:
        _bad_combine[(1,)](np.zeros(16, np.float32), N=16)
    assert "test_reduce_combine.py" in str(e.value)
    with pytest.raises(CompilationError, match="returns 2 values for 1 inputs"):
        _wrong_arity[(1,)](np.zeros(16, np.float32), N=16)


@tritonpu.jit
def _left_unless_zero(a, b):            # associative, not commutative
    return tl.where(a != 0, a, b)


@tritonpu.jit
def _sum_count(s0, c0, s1, c1):
    return s0 + s1, c0 + c1


@tritonpu.jit
def _scan_kernel(x_ptr, f_ptr, r_ptr, z_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(f_ptr + offs, tl.associative_scan(x, AXIS, _add))
    tl.store(r_ptr + offs, tl.associative_scan(x, AXIS, _add, reverse=True))
    tl.store(z_ptr + offs, tl.associative_scan(x, AXIS, _left_unless_zero))
    _, count = tl.associative_scan((x, (x > 0).to(tl.int32)), AXIS, _sum_count)
    tl.store(c_ptr + offs, count)


def _left_unless_zero_ref(x, axis):
    out = np.moveaxis(x.copy(), axis, -1)
    for idx in np.ndindex(out.shape[:-1]):
        acc = out[idx][0]
        for j in range(out.shape[-1]):
            acc = acc if acc != 0 else out[idx][j]
            out[idx][j] = acc
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_associative_scan_with_a_combine_function(axis, backend):
    x = np.random.default_rng(axis + 10).integers(-1, 2, (8, 16)).astype(np.int32)     # many zeros
    f, r, z, c = (np.zeros_like(x) for _ in range(4))
    _scan_kernel[(1,)](x, f, r, z, c, M=8, N=16, AXIS=axis, backend=backend)
    np.testing.assert_array_equal(f, np.cumsum(x, axis))
    np.testing.assert_array_equal(r, np.flip(np.cumsum(np.flip(x, axis), axis), axis))
    np.testing.assert_array_equal(z, _left_unless_zero_ref(x, axis))
    np.testing.assert_array_equal(c, np.cumsum(x > 0, axis))


@tritonpu.jit
def _scan_wrong_arity(x_ptr, N: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, N), tl.associative_scan(tl.load(x_ptr + tl.arange(0, N)), 0, _two_for_one))


def test_associative_scan_errors_name_the_line():
    with pytest.raises(CompilationError, match="returns 2 values for 1 inputs") as e:
        _scan_wrong_arity[(1,)](np.zeros(16, np.float32), N=16)
    assert "test_reduce_combine.py" in str(e.value)


@tritonpu.jit
def _first(a, b):
    return a


@tritonpu.jit
def _affine(a1, b1, a2, b2):        # h -> a*h + b, (a1, b1) applied first
    return a1 * a2, b1 * a2 + b2


@tritonpu.jit
def _reverse_scan_kernel(X, A, B, Z, H, N: tl.constexpr, REV: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(Z + offs, tl.associative_scan(tl.load(X + offs), 0, _first, reverse=REV))
    _, h = tl.associative_scan((tl.load(A + offs), tl.load(B + offs)), 0, _affine, reverse=REV)
    tl.store(H + offs, h)


@pytest.mark.parametrize("backend", ["ref", "npu", "cpu"])
@pytest.mark.parametrize("n", [7, 8, 16])
@pytest.mark.parametrize("reverse", [False, True])
def test_a_reverse_scan_is_the_flipped_blocks_scan_flipped_back(backend, n, reverse):
    """Triton's reverse scan (test_core's test_scan2d): the accumulated part from the end is the
    combine function's first operand. Element order was kept instead, so a non-commutative function
    (``first``, a linear recurrence) gave another result."""
    def scan(vals, comb):
        seq = vals[::-1] if reverse else vals
        out, acc = [], None
        for v in seq:
            acc = v if acc is None else comb(acc, v)
            out.append(acc)
        return out[::-1] if reverse else out

    rng = np.random.default_rng(n)
    x = np.arange(n, dtype=np.int32)
    a = rng.uniform(0.5, 1.5, n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    z, h = np.zeros(n, np.int32), np.zeros(n, np.float32)
    _reverse_scan_kernel[(1,)](x, a, b, z, h, N=n, REV=reverse, backend=backend)
    assert z.tolist() == scan(x.tolist(), lambda p, q: p)          # reverse: all x[-1]
    expect = [t[1] for t in scan(list(zip(a.astype(np.float64), b.astype(np.float64))),
                                 lambda p, q: (p[0] * q[0], p[1] * q[0] + q[1]))]
    np.testing.assert_allclose(h, expect, rtol=1e-5, atol=1e-5)
