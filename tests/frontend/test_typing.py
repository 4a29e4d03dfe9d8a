"""Implicit type promotion, checked against Triton's rules (``computation_type_impl``):

1. a Python number of a kind (bool < int < float) no higher than the tensor's does not take part
   (but fp16/bf16 `/` and `%` still compute in fp32);
2. fp64 > fp32 > fp16 (fp32 for `/`, `%`) ; fp16 with bf16 is fp16; bf16 with bf16 stays bf16, bf16 with anything else is fp32;
3. ints: same signedness -> the wider; mixed -> the unsigned one if at least as wide, else the signed;
   `/` on ints is fp32, `//` and `%` keep the int type.
Each case asserts the result dtype inside the kernel (tl.static_assert) and in the IR text, and the
value against numpy (exact for ints, tpu_util tolerances for floats).
"""
from __future__ import annotations

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tpu_util import TL_OF, assert_close, bf16, rand

F16, F32, F64, BF = np.float16, np.float32, np.float64, bf16
I8, I16, I32, I64, U8 = np.int8, np.int16, np.int32, np.int64, np.uint8
IR = {np.dtype(F16): "f16", np.dtype(F32): "f32", np.dtype(F64): "f64", bf16: "bf16", np.dtype(I8): "i8",
      np.dtype(I16): "i16", np.dtype(I32): "i32", np.dtype(I64): "i64", np.dtype(U8): "u8",
      np.dtype(np.uint32): "u32", np.dtype(np.bool_): "i1"}


@tritonpu.jit
def promo_kernel(a_ptr, b_ptr, out_ptr, OP: tl.constexpr, EXPECT: tl.constexpr, B_SCALAR: tl.constexpr):
    offs = tl.arange(0, 16)
    a = tl.load(a_ptr + offs)
    if B_SCALAR is None:
        b = tl.load(b_ptr + offs)
    else:
        b: tl.constexpr = B_SCALAR      # a number (`b = B_SCALAR` would make it a scalar tensor, as in Triton)
    if OP == "+":
        c = a + b
    elif OP == "*":
        c = a * b
    elif OP == "/":
        c = a / b
    elif OP == "//":
        c = a // b
    elif OP == "%":
        c = a % b
    elif OP == "r-":
        c = b - a
    elif OP == "where":
        c = tl.where(a > 0, a, b)
    tl.static_assert(c.dtype == EXPECT, f"got {c.dtype}, expected {EXPECT}")
    tl.store(out_ptr + offs, c)


TENSOR_CASES = [  # a dtype, b dtype, op, result dtype
    (F16, F32, "+", F32), (F32, F16, "*", F32), (F16, F16, "+", F16), (F16, F16, "/", F32), (F16, F16, "%", F32),
    (BF, BF, "+", BF), (BF, BF, "/", F32), (BF, F16, "+", F16), (F64, F32, "+", F64), (F16, F64, "*", F64),
    (I8, I32, "+", I32), (I8, I16, "*", I16), (I32, I64, "+", I64), (U8, I8, "+", U8), (U8, I16, "+", I16),
    (I32, I32, "//", I32), (I8, I8, "//", I8), (I32, I32, "/", F32), (I8, I8, "/", F32), (I64, I64, "%", I64),
    (I32, F16, "+", F16), (I64, F16, "+", F16), (I32, BF, "*", F32), (I8, F32, "/", F32), (np.bool_, I8, "+", I8),
    (F16, F32, "where", F32), (I8, I32, "where", I32),
]


@pytest.mark.parametrize("a_dt,b_dt,op,res", TENSOR_CASES,
                         ids=[f"{np.dtype(a).name}{o}{np.dtype(b).name}" for a, b, o, _ in TENSOR_CASES])
def test_tensor_tensor_promotion(a_dt, b_dt, op, res):
    a = rand(16, a_dt, seed=1, lo=1, hi=9)
    b = rand(16, b_dt, seed=2, lo=1, hi=9)
    out = np.zeros(16, res)
    h = promo_kernel[(1,)](a, b, out, OP=op, EXPECT=TL_OF[np.dtype(res)], B_SCALAR=None)
    assert f": tensor<16x{IR[np.dtype(res)]}>" in h.asm["ir"]
    _check_value(out, a, b, op, res)


SCALAR_CASES = [  # a dtype, Python number, op, result dtype
    (F16, 2.0, "*", F16), (F16, 2, "+", F16), (BF, 1.5, "+", BF), (F16, 2.0, "/", F32), (BF, 3, "%", F32),
    (I32, 1.5, "+", F32), (I8, 3, "+", I8), (I8, 3.0, "*", F32), (U8, 3, "+", U8), (I16, 2, "//", I16),
    (I64, 5, "%", I64), (I32, 2, "/", F32), (F32, True, "+", F32), (I8, True, "+", I8), (U8, 7, "r-", U8),
    (F16, 1.0, "where", F16), (I8, 2, "where", I8), (I32, 2**31 - 1, "+", I32), (np.bool_, True, "+", np.bool_),
]


@pytest.mark.parametrize("a_dt,num,op,res", SCALAR_CASES,
                         ids=[f"{np.dtype(a).name}{o}{num!r}" for a, num, o, _ in SCALAR_CASES])
def test_tensor_scalar_promotion(a_dt, num, op, res):
    a = rand(16, a_dt, seed=3, lo=1, hi=9)
    out = np.zeros(16, res)
    h = promo_kernel[(1,)](a, a, out, OP=op, EXPECT=TL_OF[np.dtype(res)], B_SCALAR=num)
    assert f": tensor<16x{IR[np.dtype(res)]}>" in h.asm["ir"]
    if np.dtype(a_dt) != np.bool_:
        _check_value(out, a, np.full(16, num), op, res)


def _check_value(out, a, b, op, res):
    wide = np.float64 if np.dtype(res).kind not in "iub" else np.int64
    A, B = a.astype(np.float64).astype(wide), b.astype(np.float64).astype(wide)
    with np.errstate(all="ignore"):
        expect = {"+": lambda: A + B, "*": lambda: A * B, "/": lambda: A.astype(np.float64) / B,
                  "//": lambda: np.trunc(A / B), "%": lambda: np.fmod(A, B), "r-": lambda: B - A,
                  "where": lambda: np.where(A > 0, A, B)}[op]()
    if np.dtype(res).kind in "iu":
        expect = expect.astype(np.int64).astype(res)
    assert_close(out, np.asarray(expect).astype(res), dtype=res)


@tritonpu.jit
def runtime_scalar_kernel(x_ptr, out_ptr, f, i, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = x * f                           # f is a runtime fp32 scalar, not a Python number: fp16 * fp32 -> fp32
    tl.static_assert(y.dtype == tl.float32)
    z = x + i                           # i is a runtime int32 scalar: fp16 + int32 -> fp16
    tl.static_assert(z.dtype == tl.float16)
    tl.static_assert(f.dtype == tl.float32 and i.dtype == tl.int32)
    k = i * 2 + 1
    tl.static_assert(k.dtype == tl.int32)
    tl.store(out_ptr + offs, y + z.to(tl.float32) + k)


def test_runtime_scalar_arguments_take_part_in_promotion():
    x = rand(16, np.float16)
    out = np.zeros(16, np.float32)
    runtime_scalar_kernel[(1,)](x, out, 1.5, 3, BLOCK=16)
    expect = x.astype(np.float32) * 1.5 + (x.astype(np.float32) + 3).astype(np.float16).astype(np.float32) + 7
    assert_close(out, expect, rtol=1e-3, atol=1e-3)


@tritonpu.jit
def arg_types_kernel(a, b, c, d, e, out_ptr):
    tl.static_assert(a.dtype == tl.int32)
    tl.static_assert(b.dtype == tl.int64)
    tl.static_assert(c.dtype == tl.float32)
    tl.static_assert(d.dtype == tl.int1)
    tl.static_assert(e.dtype == tl.int8)
    tl.store(out_ptr, (a + b + c.to(tl.int64) + d + e).to(tl.float32))


def test_argument_specialization_types():
    out = np.zeros(1, np.float32)
    h = arg_types_kernel[(1,)](5, 2**40, 2.5, True, np.int8(-3), out)
    assert "%a: i32, %b: i64, %c: f32, %d: i1, %e: i8, %out_ptr: ptr<f32>" in h.asm["ir"]
    assert out[0] == float(5 + 2**40 + 2 + 1 - 3)


@tritonpu.jit
def compare_types_kernel(x_ptr, out_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    m = x < 1.5                      # int32 vs float: compared in fp32
    tl.static_assert(m.dtype == tl.int1)
    tl.store(out_ptr + offs, m)


def test_compare_int_with_float_number():
    x = np.arange(16, dtype=np.int32) - 4
    out = np.zeros(16, np.bool_)
    h = compare_types_kernel[(1,)](x, out)
    assert "cast" in h.asm["ir"] and "tensor<16xf32>" in h.asm["ir"]
    np.testing.assert_array_equal(out, x < 1.5)
