"""Each tl elementwise / memory / creation op against numpy through the reference evaluator.

Tolerances per dtype are in tests/tpu_util.py (fp32 1e-5, fp16 1e-3/2e-3, bf16 1e-2/1.6e-2,
integers exact). Sizes: 1-D blocks of 16 and 128 elements with masked tails (n not a multiple of
BLOCK), 2-D tiles of 32x64 / 16x16.
"""
from __future__ import annotations

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tpu_util import TL_OF, assert_close, bf16, rand
from tritonpu.errors import CompilationError

FLOATS = [np.float32, np.float16, bf16]
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8]


# ---------------------------------------------------------------------------------------------
# program ids
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def pid_kernel(out_ptr):
    x = tl.program_id(0)
    y = tl.program_id(1)
    z = tl.program_id(2)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    nz = tl.num_programs(2)
    lin = (z * ny + y) * nx + x
    tl.store(out_ptr + lin * 6 + 0, x)
    tl.store(out_ptr + lin * 6 + 1, y)
    tl.store(out_ptr + lin * 6 + 2, z)
    tl.store(out_ptr + lin * 6 + 3, nx)
    tl.store(out_ptr + lin * 6 + 4, ny)
    tl.store(out_ptr + lin * 6 + 5, nz)


@pytest.mark.parametrize("grid", [(5,), (3, 2), (2, 3, 2)])
def test_program_id_num_programs(grid):
    g = tuple(grid) + (1,) * (3 - len(grid))
    out = np.full(g[0] * g[1] * g[2] * 6, -1, np.int32)
    pid_kernel[grid](out)
    expect = [[x, y, z, *g] for z in range(g[2]) for y in range(g[1]) for x in range(g[0])]
    assert_close(out.reshape(-1, 6), np.array(expect, np.int32))


# ---------------------------------------------------------------------------------------------
# creation
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def creation_kernel(out_ptr, KIND: tl.constexpr, BLOCK: tl.constexpr, DT: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if KIND == "arange":
        v = tl.arange(0, BLOCK)
    elif KIND == "arange_offset":
        v = tl.arange(BLOCK, 2 * BLOCK)
    elif KIND == "zeros":
        v = tl.zeros((BLOCK,), dtype=DT)
    elif KIND == "zeros_like":
        v = tl.zeros_like(tl.load(out_ptr + offs)) + 0
    elif KIND == "full":
        v = tl.full((BLOCK,), 3, DT)
    tl.store(out_ptr + offs, v)


@pytest.mark.parametrize("block", [16, 128])
@pytest.mark.parametrize("kind,dtype", [("arange", np.int32), ("arange_offset", np.int32), ("zeros", np.float32),
                                        ("zeros", np.int8), ("zeros_like", np.float16), ("full", np.int64),
                                        ("full", bf16), ("full", np.uint8)])
def test_creation(kind, dtype, block):
    out = np.full(block, 7, dtype)
    creation_kernel[(1,)](out, KIND=kind, BLOCK=block, DT=TL_OF[np.dtype(dtype)])
    expect = {"arange": np.arange(block), "arange_offset": np.arange(block, 2 * block),
              "zeros": np.zeros(block), "zeros_like": np.zeros(block), "full": np.full(block, 3)}[kind]
    assert_close(out, expect.astype(dtype))


@tritonpu.jit
def full_2d_kernel(out_ptr, value, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    v = tl.full((M, N), value, tl.float32) + tl.zeros((M, 1), dtype=tl.float32)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], v)


def test_full_2d_runtime_value():
    out = np.zeros((32, 64), np.float32)
    full_2d_kernel[(1,)](out, 2.5, M=32, N=64)
    assert_close(out, np.full((32, 64), 2.5, np.float32))


# ---------------------------------------------------------------------------------------------
# load / store: masks, other, hints
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def copy_kernel(x_ptr, y_ptr, n, OTHER: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if OTHER is None:
        x = tl.load(x_ptr + offs, mask=mask, cache_modifier=".ca", eviction_policy="evict_last")
    else:
        x = tl.load(x_ptr + offs, mask=mask, other=OTHER, volatile=True)
    tl.store(y_ptr + offs, x, mask=mask, cache_modifier=".wb", eviction_policy="evict_first")


@pytest.mark.parametrize("dtype", FLOATS + INTS + [np.bool_])
@pytest.mark.parametrize("n,block", [(16, 16), (100, 16), (300, 128)])
def test_load_store_masked_tail(dtype, n, block):
    x = rand(n, dtype, seed=n)
    y = np.zeros(n + 5, dtype)   # elements past n must stay untouched
    h = copy_kernel[(tritonpu.cdiv(n, block),)](x, y, n, OTHER=None, BLOCK=block)
    assert_close(y[:n], x)
    assert not y[n:].any()
    assert 'cache = ".ca"' in h.asm["ir"] and 'evict = "evict_last"' in h.asm["ir"]


@tritonpu.jit
def load_other_kernel(x_ptr, y_ptr, n, OTHER: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=OTHER)
    tl.store(y_ptr + offs, x)


@pytest.mark.parametrize("dtype,other", [(np.float32, -1.5), (np.float16, 2.0), (np.int32, -7), (np.uint8, 9),
                                         (np.int8, 0)])
def test_load_other_fills_masked_lanes(dtype, other):
    x = rand(16, dtype)
    y = np.zeros(16, dtype)
    load_other_kernel[(1,)](x, y, 10, OTHER=other, BLOCK=16)
    expect = x.copy()
    expect[10:] = other
    assert_close(y, expect)


@tritonpu.jit
def scalar_ptr_kernel(x_ptr, y_ptr, k):
    v = tl.load(x_ptr + k)
    tl.store(y_ptr, v * 3)
    tl.store(y_ptr + 1, v, mask=k > 100)   # masked-off scalar store


def test_scalar_load_store():
    x = np.arange(10, dtype=np.int64)
    y = np.zeros(2, np.int64)
    scalar_ptr_kernel[(1,)](x, y, 4)
    assert y.tolist() == [12, 0]


@tritonpu.jit
def tile_kernel(x_ptr, y_ptr, M, N, sxm, sxn, sym, syn, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * sxm + rn[None, :] * sxn, mask=mask, other=-1.0)
    tl.store(y_ptr + rm[:, None] * sym + rn[None, :] * syn, x * 2, mask=mask)


@pytest.mark.parametrize("M,N,BM,BN", [(32, 64, 32, 64), (50, 70, 32, 64), (17, 5, 16, 16)])
def test_2d_tile_strides(M, N, BM, BN):
    x = rand((M, N), np.float32)
    y = np.zeros((M, N), np.float32)
    grid = (tritonpu.cdiv(M, BM), tritonpu.cdiv(N, BN))
    tile_kernel[grid](x, y, M, N, N, 1, N, 1, BM=BM, BN=BN)
    assert_close(y, 2 * x)
    # transposed write: y is N x M, addressed through strides (1, M)
    yt = np.zeros((N, M), np.float32)
    tile_kernel[grid](x, yt, M, N, N, 1, 1, M, BM=BM, BN=BN)
    assert_close(yt, 2 * x.T)


# ---------------------------------------------------------------------------------------------
# binary operators
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def binary_kernel(x_ptr, y_ptr, z_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    if OP == "add":
        z = x + y
    elif OP == "sub":
        z = x - y
    elif OP == "mul":
        z = x * y
    elif OP == "truediv":
        z = x / y
    elif OP == "floordiv":
        z = x // y
    elif OP == "mod":
        z = x % y
    elif OP == "and":
        z = x & y
    elif OP == "or":
        z = x | y
    elif OP == "xor":
        z = x ^ y
    elif OP == "shl":
        z = x << y
    elif OP == "shr":
        z = x >> y
    elif OP == "lt":
        z = x < y
    elif OP == "le":
        z = x <= y
    elif OP == "gt":
        z = x > y
    elif OP == "ge":
        z = x >= y
    elif OP == "eq":
        z = x == y
    elif OP == "ne":
        z = x != y
    elif OP == "maximum":
        z = tl.maximum(x, y)
    elif OP == "minimum":
        z = tl.minimum(x, y)
    tl.store(z_ptr + offs, z, mask=m)


def _c_div(a, b):
    q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
    return np.where((a < 0) != (b < 0), -q, q)


def _np_binary(op, x, y):
    if x.dtype in (np.dtype(np.float16), bf16):     # fp16/bf16 computed in fp32, rounded once
        x32, y32 = x.astype(np.float32), y.astype(np.float32)
    else:
        x32, y32 = x, y
    return {
        "add": lambda: x32 + y32, "sub": lambda: x32 - y32, "mul": lambda: x32 * y32,
        "truediv": lambda: x.astype(np.float32) / y.astype(np.float32) if x.dtype.kind in "iu" else x32 / y32,
        "floordiv": lambda: _c_div(x, y), "mod": lambda: np.fmod(x32, y32),
        "and": lambda: x & y, "or": lambda: x | y, "xor": lambda: x ^ y,
        "shl": lambda: np.left_shift(x, y), "shr": lambda: np.right_shift(x, y),
        "lt": lambda: x < y, "le": lambda: x <= y, "gt": lambda: x > y, "ge": lambda: x >= y,
        "eq": lambda: x == y, "ne": lambda: x != y,
        "maximum": lambda: np.maximum(x, y), "minimum": lambda: np.minimum(x, y),
    }[op]()


def _out_dtype(op, dt):
    if op in ("lt", "le", "gt", "ge", "eq", "ne"):
        return np.dtype(np.bool_)
    if op == "truediv" and (dt.kind in "iu" or dt in (np.dtype(np.float16), bf16)):   # ints and fp16/bf16 divide in fp32
        return np.dtype(np.float32)
    return dt


ARITH = ["add", "sub", "mul", "truediv", "lt", "le", "gt", "ge", "eq", "ne", "maximum", "minimum"]


def _run_binary(op, x, y, block=16):
    n = x.size
    z = np.zeros(n, _out_dtype(op, x.dtype))
    binary_kernel[(tritonpu.cdiv(n, block),)](x, y, z, n, OP=op, BLOCK=block)
    return z


@pytest.mark.parametrize("op", ARITH + ["mod"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_binary_float(op, dtype):
    x = rand(37, dtype, seed=1)
    y = rand(37, dtype, seed=2)
    y[np.abs(y.astype(np.float32)) < 0.25] = 0.5
    z = _run_binary(op, x, y)
    assert_close(z, _np_binary(op, x, y).astype(z.dtype))


@pytest.mark.parametrize("op", ARITH + ["floordiv", "mod", "and", "or", "xor"])
@pytest.mark.parametrize("dtype", INTS)
def test_binary_int(op, dtype):
    dt = np.dtype(dtype)
    lo = 0 if dt.kind == "u" else -100
    x = rand(37, dtype, seed=3, lo=lo, hi=100)
    y = rand(37, dtype, seed=4, lo=lo, hi=100)
    y[y == 0] = 3
    z = _run_binary(op, x, y)
    with np.errstate(over="ignore"):
        expect = _np_binary(op, x, y)
    if z.dtype.kind == "f":
        assert_close(z, expect.astype(z.dtype))
    else:
        np.testing.assert_array_equal(z, expect.astype(z.dtype))


def test_int_overflow_wraps():
    x = np.array([127, -128, 100, 5] * 4, np.int8)
    y = np.array([1, -1, 100, 5] * 4, np.int8)
    assert _run_binary("add", x, y).tolist() == [-128, 127, -56, 10] * 4
    assert _run_binary("mul", x, y).tolist() == [127, -128, 16, 25] * 4


def test_c_style_div_mod_on_negative_ints():
    # Triton: // truncates toward zero, % has the sign of the dividend (C semantics, not Python's)
    x = np.array([-7, 7, -7, 7, -1, 0, -8, 9] * 2, np.int32)
    y = np.array([2, -2, -2, 2, 3, -5, 3, -4] * 2, np.int32)
    assert _run_binary("floordiv", x, y).tolist() == [-3, -3, 3, 3, 0, 0, -2, -2] * 2
    assert _run_binary("mod", x, y).tolist() == [-1, 1, -1, 1, -1, 0, -2, 1] * 2


def test_float_mod_is_fmod():
    x = np.array([-7.5, 7.5, -7.5, 7.5] * 4, np.float32)
    y = np.array([2.0, -2.0, -2.0, 2.0] * 4, np.float32)
    assert _run_binary("mod", x, y).tolist() == [-1.5, 1.5, -1.5, 1.5] * 4


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8])
def test_shifts(dtype):
    dt = np.dtype(dtype)
    bits = dt.itemsize * 8
    lo = 0 if dt.kind == "u" else -50
    x = rand(16, dtype, seed=5, lo=lo, hi=50)
    y = rand(16, dtype, seed=6, lo=0, hi=bits - 1)
    np.testing.assert_array_equal(_run_binary("shl", x, y), np.left_shift(x, y))
    np.testing.assert_array_equal(_run_binary("shr", x, y), np.right_shift(x, y))   # arithmetic for signed
    if dt.kind == "i":
        neg = np.full(16, -64, dtype)
        assert _run_binary("shr", neg, np.full(16, 2, dtype)).tolist() == [-16] * 16


def test_bool_bitwise():
    x = np.array([True, False, True, False] * 4)
    y = np.array([True, True, False, False] * 4)
    assert _run_binary("and", x, y).tolist() == (x & y).tolist()
    assert _run_binary("or", x, y).tolist() == (x | y).tolist()
    assert _run_binary("xor", x, y).tolist() == (x ^ y).tolist()


def test_maximum_minimum_nan():
    x = np.array([np.nan, 1.0, 2.0, np.nan] * 4, np.float32)
    y = np.array([1.0, np.nan, 3.0, np.nan] * 4, np.float32)
    # Triton's default propagate_nan=NONE: the result for a NaN operand is either operand (we give the other)
    zmax = _run_binary("maximum", x, y)
    assert zmax[2] == 3.0 and np.isnan(zmax[3])


# ---------------------------------------------------------------------------------------------
# unary operators and math
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def unary_kernel(x_ptr, y_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    if FN == "neg":
        y = -x
    elif FN == "invert":
        y = ~x
    elif FN == "not":
        y = not x
    else:
        y = FN(x)
    tl.store(y_ptr + offs, y, mask=m)


MATH = [
    (tl.exp, np.exp, (-4, 4)), (tl.exp2, np.exp2, (-4, 4)), (tl.log, np.log, (0.1, 8)), (tl.log2, np.log2, (0.1, 8)),
    (tl.sqrt, np.sqrt, (0, 8)), (tl.rsqrt, lambda v: 1 / np.sqrt(v), (0.1, 8)), (tl.abs, np.abs, (-4, 4)),
    (tl.sigmoid, lambda v: 1 / (1 + np.exp(-v)), (-6, 6)), (tl.sin, np.sin, (-4, 4)), (tl.cos, np.cos, (-4, 4)),
    (tl.floor, np.floor, (-4, 4)), (tl.ceil, np.ceil, (-4, 4)),
    (tl.erf, lambda v: np.vectorize(__import__("math").erf)(v), (-3, 3)),
    (tl.math.exp, np.exp, (-2, 2)), (tl.math.sqrt, np.sqrt, (0, 4)), (tl.math.log2, np.log2, (0.5, 4)),
    (tl.sqrt_rn, np.sqrt, (0, 4)),
]


@pytest.mark.parametrize("fn,ref,rng", MATH, ids=[f"{m[0].__module__.split('.')[-1]}.{m[0].__name__}" for m in MATH])
@pytest.mark.parametrize("n,block", [(16, 16), (200, 128)])
def test_math_fp32(fn, ref, rng, n, block):
    x = rand(n, np.float32, lo=rng[0], hi=rng[1])
    y = np.zeros(n, np.float32)
    unary_kernel[(tritonpu.cdiv(n, block),)](x, y, n, FN=fn, BLOCK=block)
    assert_close(y, ref(x.astype(np.float64)).astype(np.float32))


@pytest.mark.parametrize("fn,ref", [(tl.exp, np.exp), (tl.sqrt, np.sqrt), (tl.log, np.log)])
def test_math_fp64(fn, ref):
    x = rand(16, np.float64, lo=0.5, hi=3)
    y = np.zeros(16, np.float64)
    unary_kernel[(1,)](x, y, 16, FN=fn, BLOCK=16)
    assert_close(y, ref(x))


@pytest.mark.parametrize("dtype", FLOATS + [np.int8, np.int32, np.int64])
def test_abs_and_neg(dtype):
    x = rand(16, dtype, lo=-50, hi=50)
    y = np.zeros(16, dtype)
    unary_kernel[(1,)](x, y, 16, FN=tl.abs, BLOCK=16)
    assert_close(y, np.abs(x))
    unary_kernel[(1,)](x, y, 16, FN="neg", BLOCK=16)
    assert_close(y, -x)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8])
def test_invert(dtype):
    x = rand(16, dtype, lo=0, hi=100)
    y = np.zeros(16, dtype)
    unary_kernel[(1,)](x, y, 16, FN="invert", BLOCK=16)
    np.testing.assert_array_equal(y, ~x)


def test_invert_and_not_bool():
    x = np.array([True, False] * 8)
    y = np.zeros(16, np.bool_)
    unary_kernel[(1,)](x, y, 16, FN="invert", BLOCK=16)
    np.testing.assert_array_equal(y, ~x)


@tritonpu.jit
def ternary_kernel(c_ptr, x_ptr, y_ptr, z_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    c = tl.load(c_ptr + offs, mask=m, other=0) > 0
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    z = tl.load(z_ptr + offs, mask=m)
    if OP == "where":
        r = tl.where(c, x, y)
    elif OP == "where_scalar":
        r = tl.where(c, x, 0.5)
    elif OP == "clamp":
        r = tl.clamp(x, -1.0, 1.0)
    elif OP == "clamp_tensor":
        r = tl.clamp(x, y, z)
    elif OP == "fma":
        r = tl.fma(x, y, z)
    elif OP == "math_fma":
        r = tl.math.fma(x, y, z)
    tl.store(out_ptr + offs, r, mask=m)


@pytest.mark.parametrize("op", ["where", "where_scalar", "clamp", "clamp_tensor", "fma", "math_fma"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_ternary(op, dtype):
    n = 40
    c = rand(n, np.int32, seed=9, lo=-1, hi=1)
    x, y = rand(n, dtype, seed=10), rand(n, dtype, seed=11)
    z = np.maximum(y, rand(n, dtype, seed=12))
    out = np.zeros(n, dtype)
    ternary_kernel[(tritonpu.cdiv(n, 16),)](c, x, y, z, out, n, OP=op, BLOCK=16)
    f = lambda a: a.astype(np.float32)  # noqa: E731
    expect = {"where": lambda: np.where(c > 0, x, y), "where_scalar": lambda: np.where(c > 0, f(x), 0.5),
              "clamp": lambda: np.clip(f(x), -1, 1), "clamp_tensor": lambda: np.minimum(np.maximum(x, y), z),
              "fma": lambda: f(x) * f(y) + f(z), "math_fma": lambda: f(x) * f(y) + f(z)}[op]()
    assert_close(out, expect.astype(dtype))


@pytest.mark.parametrize("dtype", [np.int32, np.int8])
def test_where_ints(dtype):
    c = rand(16, np.int32, seed=1, lo=-1, hi=1)
    x, y, z = rand(16, dtype, seed=2), rand(16, dtype, seed=3), rand(16, dtype, seed=4)
    out = np.zeros(16, dtype)
    ternary_kernel[(1,)](c, x, y, z, out, 16, OP="where", BLOCK=16)
    np.testing.assert_array_equal(out, np.where(c > 0, x, y))


# ---------------------------------------------------------------------------------------------
# cdiv
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def cdiv_kernel(out_ptr, a, b, C: tl.constexpr):
    tl.store(out_ptr, tl.cdiv(a, b))
    tl.store(out_ptr + 1, tl.math.cdiv(a, 4))
    tl.static_assert(tl.cdiv(C, 8) == 3)
    tl.store(out_ptr + 2, tl.cdiv(C, 8))


def test_cdiv():
    out = np.zeros(3, np.int32)
    cdiv_kernel[(1,)](out, 17, 5, C=17)
    assert out.tolist() == [4, 5, 3]
    assert tritonpu.cdiv(17, 5) == 4 and tritonpu.cdiv(16, 4) == 4
    assert [tritonpu.next_power_of_2(v) for v in (0, 1, 2, 3, 17, 64, 65)] == [0, 1, 2, 4, 32, 64, 128]  # 0: Triton's bit trick


@tritonpu.jit
def pointer_select_kernel(x_ptr, y_ptr, out_ptr, n):
    offs = tl.max_contiguous(tl.multiple_of(tl.arange(0, 16), 16), 16)
    p = tl.where(offs < n, x_ptr + offs, y_ptr + offs)      # a block of pointers chosen per lane
    q = (out_ptr + 16) - 16                                  # pointer minus an int
    tl.debug_barrier()
    tl.store(q + offs, tl.load(p))
    tl.store(out_ptr + 16 + offs, 5.0)                       # a scalar stored through a block of pointers
    tl.store(out_ptr + 32, (p == x_ptr + offs).to(tl.float32).sum())
    tl.store(out_ptr + 33, (not (n > 3)).to(tl.float32))


def test_pointer_where_compare_and_sub():
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(34, np.float32)
    pointer_select_kernel[(1,)](x, -x, out, 8, backend="ref")   # lanes point into two arguments: not on the NPU
    assert out[:16].tolist() == list(range(8)) + [-v for v in range(8, 16)]
    assert out[16:32].tolist() == [5.0] * 16 and out[32] == 8 and out[33] == 0.0


@tritonpu.jit
def _float_to_ints(x_ptr, i8, u8, i16, i32, i64, s32, su8, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + o)
    tl.store(i8 + o, x.to(tl.int8))
    tl.store(u8 + o, x.to(tl.uint8))
    tl.store(i16 + o, x.to(tl.int16))
    tl.store(i32 + o, x.to(tl.int32))
    tl.store(i64 + o, x.to(tl.int64))
    for i in range(BLOCK):                      # the scalar unit's conversions too
        v = tl.load(x_ptr + i)
        tl.store(s32 + i, v.to(tl.int32))
        tl.store(su8 + i, v.to(tl.uint8))


@pytest.mark.parametrize("dt", ["fp32", "fp16", "bf16", "fp64"])
@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_float_to_int_truncates_and_saturates_on_every_backend(dt, backend):
    import math

    import ml_dtypes
    npdt = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16, "fp64": np.float64}[dt]
    vals = [3e9, -3e9, -1.5, 300.0, math.nan, math.inf, -math.inf, 1.0, 1e5, 6e4, -6e4, 2.5, -2.5, 127.9, -128.9, -0.0]
    with np.errstate(over="ignore"):
        x = np.array(vals, np.float64).astype(npdt)

    def expect(t):                            # trunc toward zero, clamp to the type, NaN -> 0
        lo, hi = np.iinfo(t).min, np.iinfo(t).max
        return np.array([0 if math.isnan(v) else max(lo, min(hi, math.trunc(v) if math.isfinite(v) else
                                                               (hi if v > 0 else lo))) for v in x.astype(np.float64)], t)
    types = (np.int8, np.uint8, np.int16, np.int32, np.int64, np.int32, np.uint8)
    outs = [np.zeros(16, t) for t in types]
    _float_to_ints[(1,)](x, *outs, BLOCK=16, backend=backend)
    for out, t in zip(outs, types):
        np.testing.assert_array_equal(out, expect(t), err_msg=f"{dt} -> {np.dtype(t).name}")


@tritonpu.jit
def _half_literals(z_ptr, w_ptr, x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    tl.store(z_ptr + tl.arange(0, 4), x == 0.1)
    tl.store(w_ptr + tl.arange(0, 4), x - 0.1)


@pytest.mark.parametrize("dt", ["fp16", "bf16"])
@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_a_float_literal_is_a_value_of_the_tensors_half_type(dt, backend):
    # Triton casts the literal to the tensor's type: x == 0.1 holds for x = fp16(0.1)
    import ml_dtypes
    npdt = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16}[dt]
    x = np.full(4, 0.1, npdt)
    z, w = np.zeros(4, np.bool_), np.ones(4, npdt)
    _half_literals[(1,)](z, w, x, backend=backend)
    assert z.all()
    assert (w.astype(np.float32) == 0).all()


@tritonpu.jit
def _shr(z_ptr, x_ptr, y_ptr):
    o = tl.arange(0, 4)
    tl.store(z_ptr + o, tl.load(x_ptr + o) >> tl.load(y_ptr + o))


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_right_shift_is_arithmetic_for_a_signed_left_operand_even_when_the_result_is_unsigned(backend):
    x, y = np.array([-16, -3, 100, -128], np.int8), np.array([2, 1, 1, 7], np.uint8)
    z = np.zeros(4, np.uint8)                               # int8 >> uint8 promotes to uint8
    _shr[(1,)](z, x, y, backend=backend)
    np.testing.assert_array_equal(z, (x >> y.astype(np.int8)).astype(np.uint8))     # [252 254 50 255]


@tritonpu.jit
def _dot_types(a_ptr, c_ptr, OUT: tl.constexpr):
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    d = tl.dot(a, a, out_dtype=OUT)
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], d)


@pytest.mark.parametrize("backend", ["ref", "cpu"])
def test_an_fp64_dot_is_fp64(backend):
    a = np.full((16, 16), 1 + 2 ** -30)
    c = np.zeros((16, 16))
    _dot_types[(1,)](a, c, OUT=tl.float32, backend=backend)        # fp64 whatever out_dtype says
    np.testing.assert_array_equal(c, a @ a)


def test_dot_result_types_follow_triton():
    a32 = np.ones((16, 16), np.float32)
    c = np.zeros((16, 16), np.float32)
    _dot_types[(1,)](a32, c, OUT=tl.float16, backend="ref")         # fp32 operands give fp32
    np.testing.assert_array_equal(c, a32 @ a32)
    with pytest.raises(CompilationError, match="out_dtype=bfloat16 is unsupported"):
        _dot_types[(1,)](a32, c, OUT=tl.bfloat16, backend="ref")
    with pytest.raises(CompilationError, match="the cube multiplies f16, bf16, f32 or i8, not f64"):
        _dot_types[(1,)](np.ones((16, 16)), np.zeros((16, 16)), OUT=tl.float32, backend="npu")


@tritonpu.jit
def _rtz(z_ptr, x_ptr):
    o = tl.arange(0, 4)
    tl.store(z_ptr + o, tl.load(x_ptr + o).to(tl.float16, fp_downcast_rounding="rtz"))


def test_an_unsupported_rounding_mode_is_an_error_not_ignored():
    with pytest.raises(CompilationError, match="fp_downcast_rounding='rtz' is not supported by tritonpu yet"):
        _rtz[(1,)](np.zeros(4, np.float16), np.zeros(4, np.float32), backend="ref")


@tritonpu.jit
def _expand_dims_kernel(x_ptr, o_ptr, AX: tl.constexpr):
    offs = tl.arange(0, 8)
    r = tl.expand_dims(tl.load(x_ptr + offs), AX)
    tl.store(o_ptr + tl.reshape(offs, r.shape), r)


@pytest.mark.parametrize("axis,msg", [
    (2, "tl.expand_dims: axis 2 out of range for a result of rank 2 (from -2 to 1)"),
    (-3, "tl.expand_dims: axis -3 out of range for a result of rank 2 (from -2 to 1)"),
    ((0, 3), "tl.expand_dims: axis (0, 3) out of range for a result of rank 3 (from -3 to 2)"),
    ((0, 0), "tl.expand_dims: axis (0, 0) names a dimension twice"),
    ((1, -2), "tl.expand_dims: axis (1, -2) names a dimension twice"),
])
def test_expand_dims_rejects_an_axis_out_of_range_or_named_twice(axis, msg):
    """As Triton: not wrapped around into another shape (axis 2 of a 1-D block gave [1, 8])."""
    with pytest.raises(CompilationError) as e:
        _expand_dims_kernel[(1,)](np.arange(8, dtype=np.int32), np.zeros(8, np.int32), AX=axis, backend="ref")
    assert e.value.message == msg and e.value.line is not None


@pytest.mark.parametrize("axis", [0, -1, (0, -1), (0, 1)])
def test_expand_dims_in_range(axis):
    o = np.zeros(8, np.int32)
    _expand_dims_kernel[(1,)](np.arange(8, dtype=np.int32), o, AX=axis, backend="ref")
    np.testing.assert_array_equal(o, np.arange(8))


@tritonpu.jit
def _atomic_order_kernel(x_ptr, SEM: tl.constexpr, SCOPE: tl.constexpr):
    tl.atomic_add(x_ptr + tl.arange(0, 4), 1, sem=SEM, scope=SCOPE)
    tl.atomic_cas(x_ptr + 4, 0, 1, sem=SEM, scope=SCOPE)


@pytest.mark.parametrize("sem,scope,msg", [
    ("bogus", "gpu", "tl.atomic_add: memory semantic 'bogus' not supported (one of acquire, release, acq_rel, relaxed)"),
    ("relaxed", "warp", "tl.atomic_add: memory scope 'warp' not supported (one of gpu, cta, sys)"),
])
def test_an_atomics_order_must_be_one_triton_knows(sem, scope, msg):
    with pytest.raises(CompilationError) as e:
        _atomic_order_kernel[(1,)](np.zeros(8, np.int32), SEM=sem, SCOPE=scope, backend="ref")
    assert e.value.message == msg


@pytest.mark.parametrize("backend", ["npu", "ref"])
@pytest.mark.parametrize("sem,scope", [("acquire", "gpu"), ("release", "cta"), ("acq_rel", "sys"), ("relaxed", None)])
def test_every_atomic_order_triton_knows_is_accepted(sem, scope, backend):
    x = np.zeros(8, np.int32)
    _atomic_order_kernel[(1,)](x, SEM=sem, SCOPE=scope, backend=backend)
    np.testing.assert_array_equal(x, [1, 1, 1, 1, 1, 0, 0, 0])


@tritonpu.jit
def _saturate(z_ptr, x_ptr, N: tl.constexpr, TO: tl.constexpr, MODE: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(z_ptr + o, tl.load(x_ptr + o).cast(TO, overflow_mode=MODE))


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_overflow_mode_saturate_clamps_to_the_integer_range(backend):
    """triton-ascend's ``cast(..., overflow_mode="saturate")``: out-of-range values become the
    target's bound, NaN becomes 0; in range, the cast truncates toward zero as the default does."""
    x = np.array([-1e9, -128.5, -127.6, -0.5, 0.4, 126.7, 127.6, 300, np.inf, -np.inf, np.nan, 3.5,
                  -3.5, 2.5, 1e30, 5e9], np.float32)
    z = np.zeros(16, np.int8)
    _saturate[(1,)](z, x, N=16, TO=tl.int8, MODE="saturate", backend=backend)
    assert z.tolist() == [-128, -128, -127, 0, 0, 126, 127, 127, 127, -128, 0, 3, -3, 2, 127, 127]
    z32 = np.zeros(16, np.int32)
    _saturate[(1,)](z32, x, N=16, TO=tl.int32, MODE="saturate", backend=backend)
    top = 2 ** 31 - 128                      # the largest fp32 below 2**31
    assert z32.tolist() == [-10 ** 9, -128, -127, 0, 0, 126, 127, 300, top, -2 ** 31, 0, 3, -3, 2, top, top]
    i = np.array([-40000, -129, -128, 127, 128, 255, 256, 70000] * 2, np.int32)
    u = np.zeros(16, np.uint8)
    _saturate[(1,)](u, i, N=16, TO=tl.uint8, MODE="saturate", backend=backend)
    assert u.tolist() == [0, 0, 0, 127, 128, 255, 255, 255] * 2
    _saturate[(1,)](z, i, N=16, TO=tl.int8, MODE="trunc", backend=backend)     # the default: wraps
    assert z.tolist() == i.astype(np.int8).tolist()


def test_an_unknown_overflow_mode_is_an_error():
    with pytest.raises(CompilationError, match="overflow_mode='wrap': triton-ascend's modes are 'trunc'"):
        _saturate[(1,)](np.zeros(4, np.int8), np.zeros(4, np.float32), N=4, TO=tl.int8, MODE="wrap",
                        backend="ref")
