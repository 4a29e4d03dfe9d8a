"""Language features triton-ascend kernels use beyond (or before) upstream Triton, each in the style
of a real kernel, on all three backends: compile-time ``is None`` on arguments, pointer truth,
dtype queries, ``tl.pointer_type``, ``logical_and``/``logical_or`` and ``and``/``or`` on blocks,
``tl.topk``, fp16/bf16/integer inputs to math functions, ``tl.cdiv`` on floats, constexpr
arithmetic on the host, and an out-of-range ``other``."""
import ml_dtypes
import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl

BACKENDS = ["ref", "cpu", "npu"]
rng = np.random.default_rng(7)


@tritonpu.jit
def bias_act(x_ptr, b_ptr, y_ptr, res_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if b_ptr is not None:
        x += tl.load(b_ptr + offs, mask=m)
    y = x if res_ptr is None else x + tl.load(res_ptr + offs, mask=m)
    if y_ptr:                                   # Triton: ptr != 0 — always true for an argument
        tl.store(y_ptr + offs, tl.where(y > 0, y, 0.0), mask=m)


@pytest.mark.parametrize("backend", BACKENDS)
def test_optional_pointers_are_decided_at_compile_time(backend):
    x, b, r = (rng.standard_normal(300).astype(np.float32) for _ in range(3))
    for bias, res in ((b, r), (None, r), (b, None), (None, None)):
        y = np.zeros_like(x)
        bias_act[(3,)](x, bias, y, res, 300, BLOCK=128, backend=backend)
        expect = x + (0 if bias is None else bias) + (0 if res is None else res)
        np.testing.assert_array_equal(y, np.maximum(expect, 0))


@tritonpu.jit
def dtype_dispatch(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if x.dtype.is_floating():
        y = x * 0.5
    elif x.dtype.is_int_signed() and x_ptr.dtype.element_ty.primitive_bitwidth == 8:
        y = x // 2
    else:
        y = x >> 1
    if x_ptr.dtype.element_ty == tl.float16 or x.dtype.is_fp8():
        y = y + 1
    tl.store(y_ptr + offs, y)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint8, np.int32])
def test_dtype_queries_inside_kernels(backend, dtype):
    x = (np.arange(32) * 3 - 40).astype(dtype)
    y = np.zeros_like(x)
    dtype_dispatch[(1,)](x, y, BLOCK=32, backend=backend)
    if np.dtype(dtype).kind == "f":
        expect = x * dtype(0.5) + (1 if dtype == np.float16 else 0)
    elif dtype == np.int8:
        expect = np.trunc(x / 2).astype(dtype)          # Triton's // truncates toward zero
    else:
        expect = x >> 1
    np.testing.assert_array_equal(y, expect.astype(dtype))


@tritonpu.jit
def float_bits(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    bits_ptr = x_ptr.to(tl.pointer_type(tl.int32))
    tl.store(y_ptr + offs, tl.load(bits_ptr + offs) & 0x7FFFFFFF)


@pytest.mark.parametrize("backend", BACKENDS)
def test_pointer_type_cast(backend):
    x = rng.standard_normal(64).astype(np.float32)
    y = np.zeros(64, np.int32)
    float_bits[(1,)](x, y, BLOCK=64, backend=backend)
    np.testing.assert_array_equal(y, np.abs(x).view(np.int32))


@tritonpu.jit
def in_range(x_ptr, y_ptr, lo, hi, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    keep = (x >= lo).logical_and(x < hi).logical_or(x == 0)
    also = (x > hi) and (x < 2 * hi) or (x == -1)           # Triton: elementwise on blocks
    tl.store(y_ptr + offs, tl.where(keep, 1, 0) + tl.where(also, 2, 0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_logical_and_or_on_blocks(backend):
    x = rng.integers(-5, 30, 64).astype(np.float32)
    y = np.zeros(64, np.int32)
    in_range[(1,)](x, y, 3.0, 10.0, BLOCK=64, backend=backend)
    keep = ((x >= 3) & (x < 10)) | (x == 0)
    also = ((x > 10) & (x < 20)) | (x == -1)
    np.testing.assert_array_equal(y, keep * 1 + also * 2)


@tritonpu.jit
def row_topk(x_ptr, y_ptr, N: tl.constexpr, K: tl.constexpr, ROWS: tl.constexpr):
    rows = tl.arange(0, ROWS)[:, None]
    x = tl.load(x_ptr + rows * N + tl.arange(0, N)[None, :])
    tl.store(y_ptr + rows * K + tl.arange(0, K)[None, :], tl.topk(x, K))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k", [1, 4, 32])
def test_topk(backend, k):
    x = rng.standard_normal((8, 32)).astype(np.float32)
    y = np.zeros((8, k), np.float32)
    row_topk[(1,)](x, y, N=32, K=k, ROWS=8, backend=backend)
    np.testing.assert_array_equal(y, -np.sort(-x, axis=1)[:, :k])


def test_topk_k_must_fit_the_extent():
    x = np.zeros((8, 32), np.float32)
    with pytest.raises(tritonpu.CompilationError, match=r"tl.topk needs k from 1 to 32 \(the size along dim\), "
                                                        r"got 64"):
        row_topk[(1,)](x, np.zeros((8, 64), np.float32), N=32, K=64, ROWS=8, backend="ref")


@tritonpu.jit
def activations(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.exp(x) + tl.sqrt(tl.abs(x)) + tl.sin(x) + tl.log(tl.abs(x) + 1) + tl.ceil(x))


def _ulps(a, b, dtype):
    """Distance in units of ``dtype``'s last place (by bit pattern; same sign assumed)."""
    bits = {2: np.int16, 4: np.int32}[np.dtype(dtype).itemsize]
    return np.abs(a.astype(dtype).view(bits).astype(np.int64) - b.astype(dtype).view(bits).astype(np.int64))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_precision_math_is_computed_in_fp32(backend, dtype):
    x = rng.uniform(-3, 3, 64).astype(dtype)
    y = np.zeros_like(x)
    activations[(1,)](x, y, BLOCK=64, backend=backend)
    # every function rounded once to the half type, then the sums in the half type, as the kernel does
    def half(v):
        return np.asarray(v, np.float32).astype(dtype).astype(np.float32)
    f = x.astype(np.float32)
    parts = [np.exp(f), np.sqrt(np.abs(f)), np.sin(f), np.log(half(np.abs(f) + 1)), np.ceil(f)]
    expect = half(parts[0])
    for p in parts[1:]:
        expect = half(expect + half(p))
    expect = expect.astype(dtype)
    assert _ulps(y, expect, dtype).max() <= 1          # fp32 math functions within 1 fp32 ulp of numpy


@tritonpu.jit
def int_math(x_ptr, y_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.exp(x) + tl.sqrt(x))           # integers in: fp32 out
    tl.store(c_ptr + offs, tl.ceil(x) + tl.floor(x))         # rounding an integer is the integer


@pytest.mark.parametrize("backend", BACKENDS)
def test_integer_inputs_to_math_functions(backend):
    x = np.arange(32, dtype=np.int32) % 9
    y, c = np.zeros(32, np.float32), np.zeros(32, np.int32)
    int_math[(1,)](x, y, c, BLOCK=32, backend=backend)
    np.testing.assert_allclose(y, np.exp(x.astype(np.float32)) + np.sqrt(x.astype(np.float32)), rtol=2e-7)
    np.testing.assert_array_equal(c, 2 * x)


@tritonpu.jit
def float_cdiv(x_ptr, y_ptr, d, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.cdiv(tl.load(x_ptr + offs), d))


@pytest.mark.parametrize("backend", BACKENDS)
def test_cdiv_on_floats_is_the_ceiling_of_the_quotient(backend):
    x = np.array([4.5, 5.0, 5.5, -3.0, -3.5, 0.0, 7.0, 8.25], np.float32)
    y = np.zeros_like(x)
    float_cdiv[(1,)](x, y, 2.0, BLOCK=8, backend=backend)
    np.testing.assert_array_equal(y, np.ceil(x / np.float32(2)))


def test_constexpr_arithmetic_on_the_host():
    BLOCK = tl.constexpr(64)
    assert (BLOCK * 2, BLOCK // tl.constexpr(4), 3 + BLOCK, -BLOCK, BLOCK ** 2, BLOCK > 32) == \
        (128, 16, 67, -64, 4096, True)
    assert isinstance(BLOCK * 2, tl.constexpr) and (BLOCK * 2).value == 128
    x = np.ones(300, np.float32)
    y = np.zeros_like(x)
    bias_act[(tritonpu.cdiv(300, BLOCK * 2),)](x, None, y, None, 300, BLOCK=BLOCK * 2, backend="ref")
    assert y.sum() == 300


@tritonpu.jit
def padded_load(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, other=-float("inf")))


@pytest.mark.parametrize("backend", BACKENDS)
def test_out_of_range_other_is_converted_like_a_cast(backend):
    x = np.arange(16, dtype=np.int8)
    y = np.zeros_like(x)
    padded_load[(1,)](x, y, 10, BLOCK=16, backend=backend)
    np.testing.assert_array_equal(y, np.where(np.arange(16) < 10, x, -128))   # saturating, as every cast
