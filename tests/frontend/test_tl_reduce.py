"""tl reductions, scans, dot, shape ops, casts and atomics against numpy (reference evaluator).

Tolerances: see tests/tpu_util.py (fp32 1e-5, fp16 1e-3/2e-3, bf16 1e-2/1.6e-2, ints exact); fp32
sums of up to 2048 values use rtol 1e-5 against a float64 numpy sum rounded to fp32.
"""
from __future__ import annotations

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tpu_util import TL_OF, assert_close, bf16, ir_result_types, rand


# ---------------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def reduce_kernel(x_ptr, out_ptr, M, N, OP: tl.constexpr, AXIS: tl.constexpr, KEEP: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    ptrs = x_ptr + rm[:, None] * N + rn[None, :]
    if OP == "sum":
        x = tl.load(ptrs, mask=mask, other=0)
        r = tl.sum(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "max":
        x = tl.load(ptrs, mask=mask, other=-100)
        r = tl.max(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "min":
        x = tl.load(ptrs, mask=mask, other=100)
        r = tl.min(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "argmax":
        x = tl.load(ptrs, mask=mask, other=-100)
        r = tl.argmax(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "argmin":
        x = tl.load(ptrs, mask=mask, other=100)
        r = tl.argmin(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "method_sum":
        x = tl.load(ptrs, mask=mask, other=0)
        r = x.sum(axis=AXIS, keep_dims=KEEP)
    if AXIS is None:
        if KEEP:
            tl.store(out_ptr + rm[:, None] * 0 + rn[None, :] * 0, r, mask=(rm[:, None] == 0) & (rn[None, :] == 0))
        else:
            tl.store(out_ptr, r)
    elif AXIS == 0:
        if KEEP:
            tl.static_assert(len(r.shape) == 2)
            tl.store(out_ptr + rn[None, :], r, mask=rn[None, :] < N)
        else:
            tl.store(out_ptr + rn, r, mask=rn < N)
    else:
        if KEEP:
            tl.store(out_ptr + rm[:, None], r, mask=rm[:, None] < M)
        else:
            tl.store(out_ptr + rm, r, mask=rm < M)


def _np_reduce(op, x, axis):
    if op in ("sum", "method_sum"):
        return np.sum(x.astype(np.float64) if x.dtype.kind not in "iu" else x.astype(np.int64), axis=axis)
    return {"max": np.max, "min": np.min, "argmax": np.argmax, "argmin": np.argmin}[op](x, axis=axis)


REDUCE_DTYPE = {  # (input, result) dtypes per Triton: sums of <32-bit ints give int32, max/min of <32 bit widen
    ("sum", np.int8): np.int32, ("sum", np.int32): np.int32, ("sum", np.float32): np.float32,
    ("sum", np.float16): np.float16, ("max", np.float16): np.float32, ("max", np.int8): np.int32,
    ("max", np.float32): np.float32, ("min", np.int32): np.int32, ("min", bf16): np.float32,
    ("argmax", np.float32): np.int32, ("argmin", np.int8): np.int32, ("method_sum", np.float32): np.float32,
}


@pytest.mark.parametrize("op,dtype", list(REDUCE_DTYPE), ids=[f"{o}-{np.dtype(d).name}" for o, d in REDUCE_DTYPE])
@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("M,N,BM,BN", [(32, 64, 32, 64), (13, 50, 16, 64)])
def test_reduce(op, dtype, axis, keep, M, N, BM, BN):
    if op.startswith("arg") and axis is None:
        pytest.skip("argmax/argmin need an axis")
    x = rand((M, N), dtype, seed=M * N, lo=-20, hi=20)
    out_dt = REDUCE_DTYPE[(op, dtype)]
    size = 1 if axis is None else (N if axis == 0 else M)
    out = np.zeros(size, out_dt)
    reduce_kernel[(1,)](x, out, M, N, OP=op, AXIS=axis, KEEP=keep, BM=BM, BN=BN)
    expect = np.asarray(_np_reduce(op, x, axis)).reshape(-1)
    if np.dtype(out_dt).kind == "f":
        rtol = 2e-3 if np.dtype(dtype).itemsize == 2 and op in ("sum",) else None
        assert_close(out, expect.astype(out_dt), rtol=rtol, atol=None if rtol is None else 0.5)
    else:
        np.testing.assert_array_equal(out, expect.astype(out_dt))


@tritonpu.jit
def argmax_1d_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(out_ptr, tl.argmax(x, 0))
    tl.store(out_ptr + 1, tl.argmin(x, 0))
    v, i = tl.max(x, 0, return_indices=True)
    tl.store(out_ptr + 2, i)
    tl.store(out_ptr + 3, v.to(tl.int32))


def test_argmax_first_index_on_ties():
    x = np.array([1, 5, 3, 5, 0, 0, 5, 2, 1, 0, 4, 4, 3, 2, 1, 0], np.float32)
    out = np.zeros(4, np.int32)
    argmax_1d_kernel[(1,)](x, out, BLOCK=16)
    assert out.tolist() == [1, 4, 1, 5]


@tritonpu.jit
def sum_dtype_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    s = tl.sum(x, axis=0)
    tl.static_assert(s.dtype == tl.int32)
    tl.store(out_ptr, s)
    s8 = tl.sum(x, axis=0, dtype=tl.int8)           # explicit dtype: wraps in int8
    tl.static_assert(s8.dtype == tl.int8)
    tl.store(out_ptr + 1, s8.to(tl.int32))


def test_sum_int8_accumulates_in_int32():
    x = np.full(128, 100, np.int8)
    out = np.zeros(2, np.int32)
    sum_dtype_kernel[(1,)](x, out, BLOCK=128)
    assert out.tolist() == [12800, np.int8(np.int64(12800).astype(np.int8))]


# ---------------------------------------------------------------------------------------------
# scans
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def cumsum_kernel(x_ptr, out_ptr, n, AXIS: tl.constexpr, REVERSE: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    offs = rm[:, None] * N + rn[None, :]
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=AXIS, reverse=REVERSE), mask=offs < n)


@pytest.mark.parametrize("dtype,out_dt", [(np.float32, np.float32), (np.int32, np.int32), (np.int8, np.int32),
                                          (np.float16, np.float16)])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(dtype, out_dt, axis, reverse):
    M, N, n = 16, 32, 16 * 32 - 7
    x = rand(M * N, dtype, seed=3, lo=-5, hi=5)
    x[n:] = 0
    out = np.zeros(M * N, out_dt)
    cumsum_kernel[(1,)](x, out, n, AXIS=axis, REVERSE=reverse, M=M, N=N)
    x2 = x.reshape(M, N).astype(np.float64 if np.dtype(dtype).kind == "f" else np.int64)
    if reverse:
        expect = np.flip(np.cumsum(np.flip(x2, axis), axis=axis), axis)
    else:
        expect = np.cumsum(x2, axis=axis)
    expect = expect.reshape(-1).astype(out_dt)
    expect[n:] = 0
    assert_close(out, expect, atol=0.05 if dtype == np.float16 else None)


@tritonpu.jit
def cumprod_kernel(x_ptr, out_ptr, AXIS: tl.constexpr, REVERSE: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).cumprod(axis=AXIS, reverse=REVERSE))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int8])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_cumprod(dtype, axis, reverse, backend):
    # the product stays in the input's dtype (ints wrap, as Triton's); fp16 is computed in fp32
    M, N = 8, 16
    rng = np.random.default_rng(4)
    if np.dtype(dtype).kind == "f":
        x = (rng.random((M, N)) * 1.5 + 0.3).astype(dtype)
    else:
        x = rng.integers(-3, 4, (M, N)).astype(dtype)
    out = np.zeros_like(x)
    cumprod_kernel[(1,)](x, out, AXIS=axis, REVERSE=reverse, M=M, N=N, backend=backend)
    src = x.astype(np.float32) if dtype == np.float16 else x
    expect = np.flip(np.cumprod(np.flip(src, axis), axis=axis, dtype=src.dtype), axis) if reverse \
        else np.cumprod(src, axis=axis, dtype=src.dtype)
    assert_close(out, expect.astype(dtype), rtol=1e-5 if dtype == np.float32 else None)


@tritonpu.jit
def bf16_widening_kernel(x_ptr, y_ptr, s_ptr, p_ptr, m_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(s_ptr + offs, tl.cumsum(x, 0))
    tl.store(p_ptr + offs, tl.cumprod(tl.load(y_ptr + offs), 0))
    v, i = tl.max(x, 0, return_indices=True)
    tl.store(m_ptr + offs, v + tl.load(y_ptr + offs) * 0 + 1)      # v + 1 in v's type


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_bf16_scans_and_max_with_indices_compute_in_fp32(backend):
    """As Triton's cumsum, cumprod and max/min (with indices too) promote bfloat16 to float32:
    256 + 1 is 257, not bf16's 256."""
    N = 8
    x = np.array([256] + [1] * (N - 1), bf16)
    y = np.full(N, 1.0078125, bf16)
    s, p, m = (np.zeros(N, np.float32) for _ in range(3))
    bf16_widening_kernel[(1,)](x, y, s, p, m, N=N, backend=backend)
    np.testing.assert_array_equal(s, np.cumsum(x.astype(np.float32)))
    np.testing.assert_allclose(p, np.cumprod(y.astype(np.float32)), rtol=1e-6)
    np.testing.assert_array_equal(m, np.full(N, 257, np.float32))


@tritonpu.jit
def int_to_low_float_kernel(x_ptr, b_ptr, h_ptr, s_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(b_ptr + offs, x.to(tl.bfloat16))
    tl.store(h_ptr + offs, x.to(tl.float16))
    tl.store(s_ptr, tl.load(x_ptr).to(tl.bfloat16))                 # the scalar path


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint64])
def test_an_integer_converts_to_bf16_and_fp16_with_one_rounding(backend, dtype):
    """Through f32 (or f64 for 64-bit integers) the nearest value can sit exactly between two
    bf16 values the integer is not between, and the second rounding then goes the wrong way."""
    big = {np.int32: [2**24 + 2**16 + 1, -(2**24 + 2**16 + 1), 2**24 + 2**16 - 1, 3],
           np.int64: [2**62 + 2**54 + 1, -(2**62 + 2**54 + 1), -2**63, 2**53 + 1],
           np.uint64: [2**63 + 2**55 + 1, 2**64 - 1, 2**62 + 2**54 + 1, 65519]}[dtype]
    x = np.array(big, dtype)
    b, h, s = np.zeros(4, bf16), np.zeros(4, np.float16), np.zeros(1, bf16)
    int_to_low_float_kernel[(1,)](x, b, h, s, N=4, backend=backend)
    exact = [int(v) for v in x]
    want_b = np.array([_round_int(v, 8) for v in exact], np.float64)
    np.testing.assert_array_equal(b.astype(np.float64), want_b)
    with np.errstate(over="ignore"):
        want_h = np.array([_round_int(v, 11) if abs(v) < 65520 else np.copysign(np.inf, v) for v in exact])
    np.testing.assert_array_equal(h.astype(np.float64), want_h)
    assert s[0].astype(np.float64) == want_b[0]


def _round_int(v: int, bits: int) -> float:
    """``v`` rounded to ``bits`` significant bits, to nearest even (Python integers: exact)."""
    m = abs(v)
    e = max(m.bit_length() - bits, 0)
    q, rest, unit = m >> e, m & ((1 << e) - 1), 1 << e
    if 2 * rest > unit or (2 * rest == unit and q & 1):
        q += 1
    return float(q << e) * (1 if v >= 0 else -1)


# ---------------------------------------------------------------------------------------------
# dot
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, ACC: tl.constexpr,
               OUT: tl.constexpr, PREC: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if ACC:
        acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
        c = tl.dot(a, b, acc=acc, input_precision=PREC, out_dtype=OUT)
    else:
        c = tl.dot(a, b, out_dtype=OUT, input_precision=PREC)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@pytest.mark.parametrize("M,N,K", [(16, 16, 16), (32, 16, 64), (16, 32, 32)])
@pytest.mark.parametrize("dtype,out_dt", [(np.float32, np.float32), (np.float16, np.float32),
                                          (np.float16, np.float16), (np.int8, np.int32), (bf16, np.float32)])
@pytest.mark.parametrize("acc", [False, True])
def test_dot(M, N, K, dtype, out_dt, acc):
    a = rand((M, K), dtype, seed=1, lo=-3, hi=3)
    b = rand((K, N), dtype, seed=2, lo=-3, hi=3)
    c0 = rand((M, N), out_dt, seed=3, lo=-3, hi=3)
    c = c0.copy() if acc else np.zeros((M, N), out_dt)
    out_tl = TL_OF[np.dtype(out_dt)] if np.dtype(dtype).kind == "f" else tl.float32
    prec = "ieee" if dtype == np.float32 else None
    h = dot_kernel[(1,)](a, b, c, M=M, N=N, K=K, ACC=acc, OUT=out_tl, PREC=prec)
    wide = np.int64 if np.dtype(dtype).kind == "i" else np.float64
    expect = a.astype(wide) @ b.astype(wide) + (c0.astype(wide) if acc else 0)
    tol = {np.float16: dict(atol=0.1, rtol=4e-3)}.get(out_dt, {})
    assert_close(c, expect.astype(out_dt), **tol)
    assert ir_result_types(h, "dot") == [f"tensor<{M}x{N}x{ {np.float32: 'f32', np.float16: 'f16', np.int32: 'i32'}[out_dt]}>"
                                         .replace("{ ", "{")]


def test_dot_tf32_precision_attr():
    a = rand((16, 16), np.float32)
    c = np.zeros((16, 16), np.float32)
    h = dot_kernel[(1,)](a, a, c, M=16, N=16, K=16, ACC=False, OUT=tl.float32, PREC="tf32")
    assert 'input_precision = "tf32"' in h.asm["ir"]
    assert_close(c, a.astype(np.float64) @ a, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------------
# shapes
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def shape_kernel(x_ptr, out_ptr, OP: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    if OP == "trans":
        y = tl.trans(x)
        ro, rc = rn, rm
    elif OP == "T":
        y = x.T
        ro, rc = rn, rm
    elif OP == "permute":
        y = tl.permute(x, (1, 0))
        ro, rc = rn, rm
    elif OP == "reshape":
        y = tl.reshape(x, (N, M))
        ro, rc = rn, rm
    elif OP == "view":
        y = x.reshape(N, M)
        ro, rc = rn, rm
    elif OP == "broadcast_to":
        y = tl.broadcast_to(tl.sum(x, axis=0, keep_dims=True), (M, N))
        ro, rc = rm, rn
    elif OP == "expand_dims":
        y = tl.expand_dims(tl.sum(x, axis=1), 1) + tl.zeros((M, N), dtype=x.dtype)
        ro, rc = rm, rn
    elif OP == "ravel":
        y = tl.reshape(tl.ravel(x), (M, N))
        ro, rc = rm, rn
    elif OP == "broadcast":
        a, b = tl.broadcast(rm[:, None].to(x.dtype), x)
        y = a + b
        ro, rc = rm, rn
    tl.store(out_ptr + ro[:, None] * y.shape[1] + rc[None, :], y)


@pytest.mark.parametrize("op", ["trans", "T", "permute", "reshape", "view", "broadcast_to", "expand_dims", "ravel",
                                "broadcast"])
@pytest.mark.parametrize("M,N", [(32, 64), (16, 16)])
def test_shape_ops(op, M, N):
    x = rand((M, N), np.float32)
    out = np.zeros(M * N, np.float32)
    shape_kernel[(1,)](x, out, OP=op, M=M, N=N)
    expect = {"trans": x.T, "T": x.T, "permute": x.T, "reshape": x.reshape(N, M), "view": x.reshape(N, M),
              "broadcast_to": np.broadcast_to(x.sum(0, keepdims=True), (M, N)),
              "expand_dims": np.broadcast_to(x.sum(1, keepdims=True), (M, N)), "ravel": x,
              "broadcast": np.arange(M, dtype=np.float32)[:, None] + x}[op]
    assert_close(out, np.ascontiguousarray(expect).reshape(-1), rtol=1e-5, atol=1e-4)


@tritonpu.jit
def permute3_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    ra = tl.arange(0, A)[:, None, None]
    rb = tl.arange(0, B)[None, :, None]
    rc = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + ra * (B * C) + rb * C + rc)
    y = tl.permute(x, 2, 0, 1)           # shape (C, A, B)
    tl.static_assert(y.shape[0] == C and y.shape[1] == A and y.shape[2] == B)
    rc2 = tl.arange(0, C)[:, None, None]
    ra2 = tl.arange(0, A)[None, :, None]
    rb2 = tl.arange(0, B)[None, None, :]
    tl.store(out_ptr + rc2 * (A * B) + ra2 * B + rb2, y)
    z = tl.trans(x, 1, 0, 2)
    tl.store(out_ptr + A * B * C + tl.arange(0, B)[:, None, None] * (A * C) + tl.arange(0, A)[None, :, None] * C
             + tl.arange(0, C)[None, None, :], z)


def test_permute_3d():
    x = rand((2, 4, 8), np.int32, lo=-100, hi=100)
    out = np.zeros(2 * 64, np.int32)
    permute3_kernel[(1,)](x, out, A=2, B=4, C=8, backend="ref")   # rank-3 broadcasts: not on the NPU yet
    np.testing.assert_array_equal(out[:64], np.transpose(x, (2, 0, 1)).reshape(-1))
    np.testing.assert_array_equal(out[64:], np.transpose(x, (1, 0, 2)).reshape(-1))


# ---------------------------------------------------------------------------------------------
# casts
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def cast_kernel(x_ptr, y_ptr, DST: tl.constexpr, BITCAST: tl.constexpr, METHOD: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if METHOD:
        y = x.to(DST, bitcast=BITCAST)
    else:
        y = tl.cast(x, DST, bitcast=BITCAST)
    tl.static_assert(y.dtype == DST)
    tl.store(y_ptr + offs, y)


CASTS = [(np.float32, np.int32), (np.float32, np.float16), (np.float32, bf16), (np.float16, np.float32),
         (np.int32, np.float32), (np.int64, np.int8), (np.int8, np.int64), (np.int32, np.bool_),
         (np.bool_, np.float32), (np.uint8, np.int32), (np.int32, np.uint8), (bf16, np.float16),
         (np.float32, np.int8), (np.float64, np.float32)]


@pytest.mark.parametrize("src,dst", CASTS, ids=[f"{np.dtype(s).name}-{np.dtype(d).name}" for s, d in CASTS])
@pytest.mark.parametrize("method", [False, True])
def test_cast(src, dst, method):
    x = rand(16, src, seed=7, lo=-100, hi=100)
    if np.dtype(src).kind == "f":
        x = (x.astype(np.float32) + np.float32(0.37)).astype(src)   # fractional values: float->int truncates
    y = np.zeros(16, dst)
    cast_kernel[(1,)](x, y, DST=TL_OF[np.dtype(dst)], BITCAST=False, METHOD=method, BLOCK=16)
    if np.dtype(dst).kind in "iu" and np.dtype(src).kind in "fV":
        expect = np.trunc(x.astype(np.float64)).astype(np.int64).astype(dst)
    elif np.dtype(dst) == np.bool_:
        expect = x != 0
    else:
        with np.errstate(all="ignore"):
            expect = x.astype(np.float32).astype(dst) if np.dtype(src) == bf16 else x.astype(dst)
    assert_close(y, expect, dtype=dst)


@pytest.mark.parametrize("src,dst", [(np.float32, np.int32), (np.int32, np.float32), (np.float16, np.int16),
                                     (np.uint8, np.int8), (bf16, np.int16)])
def test_bitcast(src, dst):
    x = rand(16, src, seed=8, lo=-100, hi=100)
    y = np.zeros(16, dst)
    cast_kernel[(1,)](x, y, DST=TL_OF[np.dtype(dst)], BITCAST=True, METHOD=True, BLOCK=16)
    np.testing.assert_array_equal(y.view(np.uint8), x.view(np.uint8))


# ---------------------------------------------------------------------------------------------
# atomics
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def atomic_kernel(ptr, old_ptr, val_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    v = tl.load(val_ptr + pid * BLOCK + offs)
    if OP == "add":
        old = tl.atomic_add(ptr + offs, v)
    elif OP == "max":
        old = tl.atomic_max(ptr + offs, v)
    elif OP == "min":
        old = tl.atomic_min(ptr + offs, v, sem="relaxed", scope="gpu")
    elif OP == "xchg":
        old = tl.atomic_xchg(ptr + offs, v)
    elif OP == "and":
        old = tl.atomic_and(ptr + offs, v)
    elif OP == "or":
        old = tl.atomic_or(ptr + offs, v)
    elif OP == "xor":
        old = tl.atomic_xor(ptr + offs, v)
    tl.store(old_ptr + pid * BLOCK + offs, old)


@pytest.mark.parametrize("op", ["add", "max", "min", "xchg", "and", "or", "xor"])
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.int64])
def test_atomic_rmw_many_programs(op, dtype):
    if op in ("and", "or", "xor") and np.dtype(dtype).kind == "f":
        pytest.skip("bitwise atomics need integers")
    G, B = 4, 16
    vals = rand((G, B), dtype, seed=5, lo=0 if op in ("and", "or", "xor") else -50, hi=50)
    init = rand(B, dtype, seed=6, lo=0, hi=50)
    target = init.copy()
    old = np.zeros((G, B), dtype)
    atomic_kernel[(G,)](target, old, vals, OP=op, BLOCK=B)
    fn = {"add": np.add, "max": np.maximum, "min": np.minimum, "xchg": lambda a, b: b, "and": np.bitwise_and,
          "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
    final = init.copy()
    for g in range(G):
        final = fn(final, vals[g])
    assert_close(target, final.astype(dtype))
    # old values: each program saw the target after some subset of the others; with one program at a time
    # they are the running results in program order
    running = init.copy()
    for g in range(G):
        assert_close(old[g], running)
        running = fn(running, vals[g])


@tritonpu.jit
def counter_kernel(counter_ptr, old_ptr, hist_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    old = tl.atomic_add(counter_ptr, 1)
    tl.store(old_ptr + pid, old)
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(hist_ptr + offs % 4, 1, mask=offs < 10)   # lanes of one op hitting the same address


def test_atomic_add_same_address_returns_distinct_old_values():
    G = 7
    counter = np.zeros(1, np.int32)
    old = np.full(G, -1, np.int32)
    hist = np.zeros(4, np.int32)
    counter_kernel[(G,)](counter, old, hist, BLOCK=16)
    assert counter[0] == G
    assert sorted(old.tolist()) == list(range(G))
    assert hist.tolist() == [3 * G, 3 * G, 2 * G, 2 * G]


@tritonpu.jit
def cas_kernel(lock_ptr, order_ptr, fail_ptr):
    pid = tl.program_id(0)
    # each program waits for its turn: the lock holds the id of the program allowed to go
    while tl.atomic_cas(lock_ptr, pid, pid + 1) != pid:
        pass
    tl.store(order_ptr + pid, pid * 10)
    # a failing cas returns the current value and does not write
    seen = tl.atomic_cas(fail_ptr, -5, 99)
    tl.store(order_ptr + 8 + pid, seen)


def test_atomic_cas():
    lock = np.zeros(1, np.int32)
    order = np.zeros(16, np.int32)
    fail = np.array([3], np.int32)
    cas_kernel[(5,)](lock, order, fail)
    assert lock[0] == 5
    assert order[:5].tolist() == [0, 10, 20, 30, 40]
    assert order[8:13].tolist() == [3] * 5 and fail[0] == 3


@tritonpu.jit
def atomic_fp16_kernel(ptr):
    tl.atomic_add(ptr + tl.arange(0, 16), 0.5)


def test_atomic_add_fp16():
    x = np.ones(16, np.float16)
    atomic_fp16_kernel[(3,)](x)
    assert_close(x, np.full(16, 2.5, np.float16))
