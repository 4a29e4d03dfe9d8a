"""Numeric helpers emitted inline: bf16 <-> f32, f16/bf16 widening, float math functions.

Guarantees:

* bf16 is an i16 bit pattern; ``f32_to_bf16`` rounds to nearest even and keeps NaNs quiet NaNs,
  as ml_dtypes does; ``bf16_to_f32`` is exact.
* ``exp`` on f32 is an inline Cephes-style polynomial (range reduction by ln 2 in two parts,
  degree-6 polynomial with FMAs, scaling by 2^n in two steps so subnormal results round once):
  within 1 ulp of the correctly rounded result, NaN/inf/underflow as IEEE, and vectorisable
  (LLVM would otherwise call ``expf`` once per element). Other functions are LLVM intrinsics
  (sqrt, floor, ceil, fabs, maxnum, minnum, fma) or libm calls through intrinsics (sin, cos,
  log, log2, exp2, f64 exp) and ``pow`` and the ``LIBM_F64`` functions (``erf``, ``tanh``,
  ``asin``, …: libm, computed in f64 and rounded once).
"""
from __future__ import annotations

from llvmlite import ir

from tritonpu.cpu.codegen import F16, F32, F64, I16, I32, I64, const, is_bf16, is_low_float, reg_type


def bf16_to_f32(b: ir.IRBuilder, v):
    return b.bitcast(b.shl(b.zext(v, I32), const(I32, 16)), F32)


def f32_to_bf16(b: ir.IRBuilder, v):
    bits = b.bitcast(v, I32)
    lsb = b.and_(b.lshr(bits, const(I32, 16)), const(I32, 1))
    rounded = b.lshr(b.add(b.add(bits, const(I32, 0x7FFF)), lsb), const(I32, 16))
    nan = b.fcmp_unordered("uno", v, v)
    quiet = b.or_(b.lshr(bits, const(I32, 16)), const(I32, 0x40))
    return b.trunc(b.select(nan, quiet, rounded), I16)


def widen(b: ir.IRBuilder, v, s):
    """Register value of a float type -> its compute type (f16/bf16 -> f32; others unchanged)."""
    if is_bf16(s):
        return bf16_to_f32(b, v)
    if is_low_float(s):
        return b.fpext(v, F32)
    return v


def narrow(b: ir.IRBuilder, v, s):
    """Compute-type value -> the register value of float type ``s`` (rounds to nearest even)."""
    if is_bf16(s):
        if v.type == F64:
            v = f64_to_f32_odd(b, v)
        return f32_to_bf16(b, v)
    if is_low_float(s):
        if v.type == F64:
            v = f64_to_f32_odd(b, v)
        return b.fptrunc(v, F16) if v.type != F16 else v
    t = reg_type(s)
    if v.type == t:
        return v
    return b.fptrunc(v, t) if v.type == F64 else b.fpext(v, t)


def f64_to_f32_odd(b: ir.IRBuilder, v):
    """f64 -> f32 rounding to odd, so a second rounding (to bf16) is correct."""
    r = b.fptrunc(v, F32)
    back = b.fpext(r, F64)
    inexact = b.fcmp_ordered("one", back, v)
    bits = b.bitcast(r, I32)
    # towards zero: if |r| > |v| step one ulp back
    too_big = b.fcmp_ordered(">", b.call(_decl(b, "llvm.fabs.f64", F64, [F64]), [back]),
                             b.call(_decl(b, "llvm.fabs.f64", F64, [F64]), [v]))
    bits = b.select(b.and_(inexact, too_big), b.sub(bits, const(I32, 1)), bits)
    bits = b.select(inexact, b.or_(bits, const(I32, 1)), bits)
    return b.bitcast(bits, F32)


def fadd_odd_f64(b: ir.IRBuilder, p, c):
    """``p + c`` in f64 rounded to odd (TwoSum's exact error moves an inexact even sum one ulp
    toward the exact one), so that a second rounding to f32 or narrower is correct; ``tl.fma``
    computes ``a * b`` exactly in f64 and adds with this (as ``tritonpu.dtypes.fma``)."""
    s = b.fadd(p, c)
    bb = b.fsub(s, p)
    err = b.fadd(b.fsub(p, b.fsub(s, bb)), b.fsub(c, bb))
    zero = ir.Constant(F64, 0.0)
    bits = b.bitcast(s, I64)
    even = b.icmp_signed("==", b.and_(bits, const(I64, 1)), const(I64, 0))
    fix = b.and_(b.fcmp_ordered("one", err, zero), even)      # NaN errors (inf sums) fix nothing
    away = b.icmp_unsigned("==", b.fcmp_ordered(">", err, zero), b.fcmp_ordered(">", s, zero))
    step = b.select(away, const(I64, 1), const(I64, -1))
    return b.bitcast(b.select(fix, b.add(bits, step), bits), F64)


def int64_to_f64_odd(b: ir.IRBuilder, v, signed: bool):
    """A 64-bit integer as f64 rounded to odd (an inexact even result moved one ulp toward the
    integer), so that narrowing it to f16/bf16 rounds once, as a direct conversion does (the
    nearest f64 can sit exactly between two bf16 values the integer is not between: 2^62 + 2^54 + 1)."""
    r = b.sitofp(v, F64) if signed else b.uitofp(v, F64)
    kind = "fptosi" if signed else "fptoui"
    back = b.call(_decl(b, f"llvm.{kind}.sat.i64.f64", I64, [F64]), [r])     # 2^63 and up saturate
    bits = b.bitcast(r, I64)
    even = b.icmp_signed("==", b.and_(bits, const(I64, 1)), const(I64, 0))
    fix = b.and_(b.icmp_unsigned("!=", v, back), even)
    above = b.icmp_signed(">", v, back) if signed else b.icmp_unsigned(">", v, back)
    up = b.icmp_unsigned("==", above, b.fcmp_ordered(">=", r, ir.Constant(F64, 0.0)))
    step = b.select(up, const(I64, 1), const(I64, -1))
    return b.bitcast(b.select(fix, b.add(bits, step), bits), F64)


def _decl(b: ir.IRBuilder, name: str, ret, args):
    module = b.module
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name=name)
    return fn


def intr(b: ir.IRBuilder, base: str, v, *more):
    """Call ``llvm.<base>.<f32|f64>`` on float values."""
    suffix = {F32: "f32", F64: "f64", F16: "f16"}[v.type]
    return b.call(_decl(b, f"llvm.{base}.{suffix}", v.type, [v.type] * (1 + len(more))), [v, *more])


def expf(b: ir.IRBuilder, x):
    """Inline vectorisable e**x for f32 ``x``."""
    fma = lambda a, c, d: intr(b, "fma", a, c, d)  # noqa: E731
    xc = intr(b, "minnum", intr(b, "maxnum", x, const(F32, -104.0)), const(F32, 89.0))
    n = intr(b, "rint", b.fmul(xc, const(F32, 1.44269504088896341)))
    r = fma(n, const(F32, -0.693359375), xc)
    r = fma(n, const(F32, 2.12194440e-4), r)
    p = const(F32, 1.9875691500e-4)
    for c in (1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1):
        p = fma(p, r, const(F32, c))
    y = b.fadd(fma(p, b.fmul(r, r), r), const(F32, 1.0))
    ni = b.fptosi(n, I32)
    n1 = b.ashr(ni, const(I32, 1))
    n2 = b.sub(ni, n1)
    s1 = b.bitcast(b.shl(b.add(n1, const(I32, 127)), const(I32, 23)), F32)
    s2 = b.bitcast(b.shl(b.add(n2, const(I32, 127)), const(I32, 23)), F32)
    res = b.fmul(b.fmul(y, s1), s2)
    return b.select(b.fcmp_unordered("uno", x, x), x, res)


# libm functions called in f64 (an f32 argument widened, the result rounded once); the op name is
# the libm name
LIBM_F64 = ("erf", "tanh", "asin", "acos", "atan", "tan", "sinh", "cosh", "log1p", "expm1", "log10", "rint")
_LIBM_INTRINSIC = {"exp2": "exp2", "log": "log", "log2": "log2", "sin": "sin", "cos": "cos",
                   "sqrt": "sqrt", "floor": "floor", "ceil": "ceil", "abs": "fabs"}


def unary_float(b: ir.IRBuilder, name: str, x):
    """A float math function on a compute-type value (f32 or f64)."""
    if name == "exp":
        return expf(b, x) if x.type == F32 else intr(b, "exp", x)
    if name in _LIBM_INTRINSIC:
        return intr(b, _LIBM_INTRINSIC[name], x)
    if name == "rsqrt":
        return b.fdiv(const(x.type, 1.0), intr(b, "sqrt", x))
    if name == "neg":
        return b.fneg(x)
    if name in LIBM_F64:
        wide = b.fpext(x, F64) if x.type == F32 else x
        r = b.call(_decl(b, name, F64, [F64]), [wide])
        return b.fptrunc(r, F32) if x.type == F32 else r
    raise KeyError(name)


def pow_(b: ir.IRBuilder, x, y):
    """libm ``pow`` computed in f64 (an f32 result rounded once)."""
    wx = b.fpext(x, F64) if x.type == F32 else x
    wy = b.fpext(y, F64) if y.type == F32 else y
    r = b.call(_decl(b, "pow", F64, [F64, F64]), [wx, wy])
    return b.fptrunc(r, F32) if x.type == F32 else r


def float_const(ty: ir.Type, value: float):
    return ir.Constant(ty, float(value))


def i64(v: int):
    return const(I64, v)
