"""Sorts and top-k of rows of any length on every backend (issue 15): rows whose size is not a power
of two are sorted by their order keys -- by rank while the rows are small, else padded to a power
of two, through the bitonic network and cut back with the IR's ``slice`` (a leading sub-block)."""
import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.ir import parse_function, print_function, verify
from tritonpu.ir.verifier import VerifyError

BACKENDS = ["ref", "cpu", "npu"]
rng = np.random.default_rng(15)
_BITS = {2: np.int16, 4: np.int32, 8: np.int64}


def _keyed(x, descending=False):
    """numpy's model of the result: floats ordered by their bits (negatives flipped: -NaN < -inf <
    ... < -0.0 < 0.0 < ... < inf < NaN), so the check is bit for bit."""
    if x.dtype.kind != "f":
        s = np.sort(x, 1)
        return s[:, ::-1] if descending else s
    ity = _BITS[x.dtype.itemsize]
    bits = x.view(ity)
    flip = np.array(np.iinfo(ity).max, ity)
    key = np.where(bits < 0, bits ^ flip, bits)
    key = np.sort(key, 1)
    if descending:
        key = key[:, ::-1]
    return np.ascontiguousarray(np.where(key < 0, key ^ flip, key)).view(x.dtype)


@tritonpu.jit
def sorts(x_ptr, s_ptr, d_ptr, t_ptr, R: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + r * N + c)
    tl.store(s_ptr + r * N + c, tl.sort(x, dim=1))
    tl.store(d_ptr + r * N + c, tl.sort(x, dim=1, descending=True))
    tl.store(t_ptr + r * K + tl.arange(0, K)[None, :], tl.topk(x, K))


@tritonpu.jit
def sort_rows(x_ptr, s_ptr, R: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, N)[None, :]
    tl.store(s_ptr + r * N + c, tl.sort(tl.load(x_ptr + r * N + c), dim=1))


def _rows(dtype, n):
    if dtype == np.uint8:
        x = rng.integers(0, 256, (2, n)).astype(dtype)
    else:
        x = rng.integers(-50, 50, (2, n)).astype(dtype)
    if x.dtype.kind == "f":
        x[0, :5] = [np.nan, -0.0, np.inf, -np.inf, 0.0]
        x[1, :2] = [-np.nan, np.nan]
    return x


def _same_bits(got, want):
    view = _BITS.get(got.itemsize, np.uint8) if got.dtype.kind == "f" else got.dtype
    np.testing.assert_array_equal(got.view(view), want.view(view))


@pytest.mark.parametrize("backend", ["ref", "npu"])
@pytest.mark.parametrize("dtype,n,k", [(np.float32, 300, 7), (np.uint8, 300, 12), (np.float16, 1000, 100),
                                       (np.int32, 1000, 3)])
def test_long_rows_of_any_size_sort_exactly(backend, dtype, n, k):
    """(2, 1000) rows took (2, 1000, 1000) comparisons on chip: no NPU could hold them."""
    x = _rows(dtype, n)
    s, d = np.zeros_like(x), np.zeros_like(x)
    t = np.zeros((2, k), dtype)
    sorts[(1,)](x, s, d, t, R=2, N=n, K=k, backend=backend)
    _same_bits(s, _keyed(x))
    _same_bits(d, _keyed(x, True))
    _same_bits(t, _keyed(x, True)[:, :k])


def test_a_long_row_sorts_on_the_cpu_backend_too():
    x = _rows(np.float32, 300)
    s = np.zeros_like(x)
    sort_rows[(1,)](x, s, R=2, N=300, backend="cpu")
    _same_bits(s, _keyed(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_sorted_row_cut_to_the_top_k_feeds_more_work(backend):
    """topk of a power-of-two row with another k is the network's first k columns (a slice view):
    later reshapes and arithmetic read just those."""
    @tritonpu.jit
    def top_then_scale(x_ptr, o_ptr, N: tl.constexpr, K: tl.constexpr):
        r = tl.arange(0, 4)[:, None]
        x = tl.load(x_ptr + r * N + tl.arange(0, N)[None, :])
        t = tl.reshape(tl.topk(x, K) * 2.0, (4 * K,))
        tl.store(o_ptr + tl.arange(0, 4 * K), t + 1.0)

    x = rng.standard_normal((4, 64)).astype(np.float32)
    o = np.zeros(4 * 5, np.float32)
    top_then_scale[(1,)](x, o, N=64, K=5, backend=backend)
    np.testing.assert_array_equal(o, (np.sort(x, 1)[:, ::-1][:, :5] * 2.0 + 1.0).reshape(-1))


def test_slice_prints_parses_and_is_verified():
    text = ('#f0 = "k.py"\n'
            "func @k(%x: ptr<f32>) {\n"
            "  %a = arange {end = 8, start = 0} : tensor<8xi32> loc(#f0:1:0)\n"
            "  %b = reshape %a : tensor<2x4xi32> loc(#f0:2:0)\n"
            "  %c = slice %b : tensor<2x3xi32> loc(#f0:3:0)\n"
            "  return loc(#f0:4:0)\n"
            "}\n")
    fn = parse_function(text)
    verify(fn)
    assert print_function(fn) == text
    bad = parse_function(text.replace("tensor<2x3xi32>", "tensor<2x5xi32>"))
    with pytest.raises(VerifyError, match=r"takes a sub-block of values of one rank and type, got "
                                          r"tensor<2x4xi32> -> tensor<2x5xi32>"):
        verify(bad)
    strided = text.replace("slice %b : tensor<2x3xi32>", "slice %b {offsets = [0, 1], steps = [1, 2]} : tensor<2x2xi32>")
    fn = parse_function(strided)
    verify(fn)
    assert print_function(fn) == strided
    with pytest.raises(VerifyError, match=r"takes elements at offsets \[0, 2\] with steps \[1, 2\]: they must be "
                                          r"elements of its operand \(one constant offset >= 0 and step >= 1 per "
                                          r"dimension\), got tensor<2x4xi32> -> tensor<2x2xi32>"):
        verify(parse_function(strided.replace("offsets = [0, 1]", "offsets = [0, 2]")))
