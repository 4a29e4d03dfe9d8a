"""Lowering of the elementwise, cast, constant and shape ops.

Guarantees (matching ``tritonpu/ref/evaluator.py``):

* integers wrap; ``div``/``rem`` truncate toward zero, give 0 for a zero divisor and never trap
  (INT_MIN / -1 wraps to INT_MIN); shifts by the width or more give 0 (``shl``, logical ``shr``)
  or the sign fill (arithmetic ``shr``), as numpy does; bools: add/sub are xor, mul is and,
  maximum is or, minimum is and.
* f16/bf16 arithmetic and math are computed in f32 and rounded once; ``maximum``/``minimum``
  ignore NaNs (fmax/fmin); ``fma`` is rounded once (f64 product, round-to-odd f64 sum), as the reference does.
* float -> int casts truncate and saturate (NaN -> 0), as the reference's clip; -> i1 is ``!= 0``.
* Results of block ops are ``Expr``s (fused into their consumer's loop); rank-0 ops emit code
  directly. Shape ops are views of ``Buf``s or index remaps of ``Expr``s, never copies, except a
  reshape of a non-contiguous value.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
from llvmlite import ir

from tritonpu.cpu import mathlib as M
from tritonpu.cpu.codegen import (F32, F64, I32, I64, Buf, Expr, Scalar, compute_type, const, is_bf16, is_low_float,
                                  mem_type, reg_type, row_major, signed, splat, view_broadcast, view_expand,
                                  view_permute)
from tritonpu.ir.ops import slice_geometry

CHEAP_LIMIT = 24


def make(ctx, op, ins, elem, cheap=True):
    """Apply ``elem(builder, values)`` elementwise: a Scalar for rank-0 results, else an Expr."""
    ty = op.results[0].type
    s = ty.scalar
    if not ty.is_block:
        return Scalar(elem(ctx.b, [x.value for x in ins]), s)
    cost = 1 + sum(x.cost for x in ins if isinstance(x, Expr))
    cheap = cheap and all(x.cheap for x in ins if isinstance(x, Expr))
    return Expr(ty.shape, s, lambda c, idx: elem(c.b, [c.get(x, idx) for x in ins]), cost, cheap)


def _is_float(s) -> bool:
    return not s.is_ptr and s.is_float


# -- binary --------------------------------------------------------------------------------------
def _float_binary(name):
    def f(b, a, c, s):
        x, y = M.widen(b, a, s), M.widen(b, c, s)
        if name == "add":
            r = b.fadd(x, y)
        elif name == "sub":
            r = b.fsub(x, y)
        elif name == "mul":
            r = b.fmul(x, y)
        elif name == "div":
            r = b.fdiv(x, y)
        elif name == "rem":
            r = b.frem(x, y)
        elif name == "maximum":
            r = M.intr(b, "maxnum", x, y)
        elif name == "minimum":
            r = M.intr(b, "minnum", x, y)
        elif name == "pow":
            r = M.pow_(b, x, y)
        else:
            raise NotImplementedError(f"'{name}' on floats")
        return M.narrow(b, r, s)
    return f


def _int_div(b, a, c, s, rem):
    t = a.type
    zero, one = const(t, 0), const(t, 1)
    is_zero = b.icmp_unsigned("==", c, zero)
    if signed(s):
        minus1 = b.icmp_signed("==", c, const(t, -1))
        if rem:
            safe = b.select(b.or_(is_zero, minus1), one, c)
            r = b.srem(a, safe)
        else:
            overflow = b.and_(minus1, b.icmp_signed("==", a, const(t, -(1 << (t.width - 1)))))
            safe = b.select(b.or_(is_zero, overflow), one, c)
            r = b.sdiv(a, safe)
            r = b.select(overflow, a, r)
        return b.select(is_zero, zero, r)
    safe = b.select(is_zero, one, c)
    r = b.urem(a, safe) if rem else b.udiv(a, safe)
    return b.select(is_zero, zero, r)


def _shift(b, a, c, s, left):
    t = a.type
    big = b.icmp_unsigned(">=", c, const(t, t.width))
    amt = b.select(big, const(t, 0), c)
    if left:
        return b.select(big, const(t, 0), b.shl(a, amt))
    if signed(s):
        return b.select(big, b.ashr(a, const(t, t.width - 1)), b.ashr(a, amt))
    return b.select(big, const(t, 0), b.lshr(a, amt))


def _int_binary(name):
    def f(b, a, c, s):
        is_bool = not s.is_ptr and s.is_bool
        if is_bool:
            if name in ("add", "sub", "xor"):
                return b.xor(a, c)
            if name in ("mul", "and", "minimum"):
                return b.and_(a, c)
            if name in ("or", "maximum"):
                return b.or_(a, c)
            if name == "div":
                return a
            if name == "rem":
                return const(a.type, 0)
        if name == "add":
            return b.add(a, c)
        if name == "sub":
            return b.sub(a, c)
        if name == "mul":
            return b.mul(a, c)
        if name in ("div", "rem"):
            return _int_div(b, a, c, s, name == "rem")
        if name == "and":
            return b.and_(a, c)
        if name == "or":
            return b.or_(a, c)
        if name == "xor":
            return b.xor(a, c)
        if name in ("shl", "shr"):
            return _shift(b, a, c, s, name == "shl")
        if name in ("maximum", "minimum"):
            pred = ">" if name == "maximum" else "<"
            gt = b.icmp_signed(pred, a, c) if signed(s) else b.icmp_unsigned(pred, a, c)
            return b.select(gt, a, c)
        raise NotImplementedError(name)
    return f


def lower_binary(ctx, op, ins):
    s = op.results[0].type.scalar
    f = _float_binary(op.name) if _is_float(s) else _int_binary(op.name)
    return [make(ctx, op, ins, lambda b, v: f(b, v[0], v[1], s), cheap=not _is_float(s))]


# -- unary ---------------------------------------------------------------------------------------
def lower_unary(ctx, op, ins):
    s = op.results[0].type.scalar
    name = op.name
    if _is_float(s):
        if name == "not":
            raise NotImplementedError("'not' on floats")

        def f(b, v):
            return M.narrow(b, M.unary_float(b, name, M.widen(b, v[0], s)), s)
        return [make(ctx, op, ins, f, cheap=False)]

    def g(b, v):
        a = v[0]
        if name == "not":
            return b.not_(a)
        if s.is_bool:
            return a
        if name == "neg":
            return b.neg(a)
        if name == "abs":
            return b.select(b.icmp_signed("<", a, const(a.type, 0)), b.neg(a), a) if signed(s) else a
        raise NotImplementedError(f"'{name}' on integers")
    return [make(ctx, op, ins, g)]


# -- compare / select / fma ------------------------------------------------------------------------
_FCMP = {"lt": ("<", True), "le": ("<=", True), "gt": (">", True), "ge": (">=", True), "eq": ("==", True),
         "ne": ("!=", False)}
_ICMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def lower_cmp(ctx, op, ins):
    s = op.operands[0].type.scalar
    pred = op.attrs["pred"]

    def f(b, v):
        a, c = v
        if _is_float(s):
            a, c = M.widen(b, a, s), M.widen(b, c, s)
            p, ordered = _FCMP[pred]
            return b.fcmp_ordered(p, a, c) if ordered else b.fcmp_unordered(p, a, c)
        if signed(s):
            return b.icmp_signed(_ICMP[pred], a, c)
        return b.icmp_unsigned(_ICMP[pred], a, c)
    return [make(ctx, op, ins, f, cheap=not _is_float(s))]


def lower_select(ctx, op, ins):
    s = op.results[0].type.scalar
    return [make(ctx, op, ins, lambda b, v: b.select(v[0], v[1], v[2]), cheap=not _is_float(s))]


def lower_fma(ctx, op, ins):
    s = op.results[0].type.scalar

    def f(b, v):
        if not _is_float(s):
            return b.add(b.mul(v[0], v[1]), v[2])
        w = [M.widen(b, x, s) for x in v]
        w = [x if x.type == F64 else b.fpext(x, F64) for x in w]
        if s.bits == 64:        # f64: a * b, then + c (two roundings)
            return b.fadd(b.fmul(w[0], w[1]), w[2])
        return M.narrow(b, M.fadd_odd_f64(b, b.fmul(w[0], w[1]), w[2]), s)
    return [make(ctx, op, ins, f, cheap=not _is_float(s))]


# -- casts ---------------------------------------------------------------------------------------
def cast_value(b: ir.IRBuilder, v, src, dst):
    """Convert one register value of IR scalar type ``src`` to ``dst`` (value conversion)."""
    if src == dst:
        return v
    if dst.is_bool:
        if _is_float(src):
            return b.fcmp_unordered("!=", M.widen(b, v, src), const(compute_type(src), 0.0))
        return b.icmp_unsigned("!=", v, const(v.type, 0))
    dt = reg_type(dst)
    if _is_float(src) and _is_float(dst):
        if is_low_float(src) and dst.kind.name in ("f16", "bf16"):
            return M.narrow(b, M.widen(b, v, src), dst)          # exact widening, one rounding
        wide = M.widen(b, v, src)
        return M.narrow(b, wide, dst)
    if _is_float(src):                                           # float -> int: truncate, saturate
        x = M.widen(b, v, src)
        suffix = {F32: "f32", F64: "f64"}[x.type]
        kind = "fptosi" if signed(dst) else "fptoui"
        name = f"llvm.{kind}.sat.i{dt.width}.{suffix}"
        fn = b.module.globals.get(name) or ir.Function(b.module, ir.FunctionType(dt, [x.type]), name=name)
        return b.call(fn, [x])
    if _is_float(dst):                                           # int -> float
        if is_low_float(dst) and v.type.width == 64:
            return M.narrow(b, M.int64_to_f64_odd(b, v, signed(src)), dst)
        ct = F64 if (dst.kind.name == "f64" or is_low_float(dst)) else dt
        r = b.sitofp(v, ct) if signed(src) else b.uitofp(v, ct)
        return M.narrow(b, r, dst) if is_low_float(dst) else r
    # int -> int
    sw, dw = v.type.width, dt.width
    if dw < sw:
        return b.trunc(v, dt)
    if dw > sw:
        return b.sext(v, dt) if signed(src) else b.zext(v, dt)
    return v


def lower_cast(ctx, op, ins):
    src, dst = op.operands[0].type.scalar, op.results[0].type.scalar
    cheap = not (_is_float(src) or _is_float(dst))
    return [make(ctx, op, ins, lambda b, v: cast_value(b, v[0], src, dst), cheap=cheap)]


def lower_bitcast(ctx, op, ins):
    st, dt = reg_type(op.operands[0].type.scalar), reg_type(op.results[0].type.scalar)
    return [make(ctx, op, ins, lambda b, v: v[0] if st == dt else b.bitcast(v[0], dt))]


def lower_addptr(ctx, op, ins):
    osrc = op.operands[1].type.scalar
    size = op.results[0].type.scalar.pointee.kind.bytes

    def f(b, v):
        p, off = v
        if off.type.width < 64:
            off = b.sext(off, I64) if signed(osrc) else b.zext(off, I64)
        return b.add(p, off if size == 1 else b.mul(off, const(I64, size)))
    return [make(ctx, op, ins, f)]


# -- constants and shapes --------------------------------------------------------------------------
def constant_value(s, value):
    t = reg_type(s)
    if s.is_ptr:
        return const(I64, int(value))
    if s.is_float:
        if is_bf16(s):
            return const(t, int(np.asarray(float(value), ml_dtypes.bfloat16).view(np.uint16)))
        if is_low_float(s):
            return ir.Constant(t, float(np.float16(float(value))))
        if s.kind.name == "f32":
            return ir.Constant(t, float(np.float32(float(value))))
        return ir.Constant(t, float(value))
    v = int(value)
    w = t.width
    v &= (1 << w) - 1
    if w > 1 and v >= 1 << (w - 1):
        v -= 1 << w
    return const(t, v)


def lower_constant(ctx, op, ins):
    ty = op.results[0].type
    c = constant_value(ty.scalar, op.attrs["value"])
    return [splat(c, ty.scalar, ty.shape) if ty.is_block else Scalar(c, ty.scalar)]


def lower_arange(ctx, op, ins):
    ty = op.results[0].type
    start = op.attrs["start"]

    def f(c, idx):
        i = c.b.trunc(idx[0], I32)
        return c.b.add(i, const(I32, start)) if start else i
    return [Expr(ty.shape, ty.scalar, f, 1, True)]


def lower_splat(ctx, op, ins):
    ty = op.results[0].type
    return [splat(ins[0].value, ty.scalar, ty.shape)]


def _as_block(x, shape):
    return splat(x.value, x.s, shape) if isinstance(x, Scalar) else x


def lower_broadcast(ctx, op, ins):
    ty = op.results[0].type
    return [view_broadcast(_as_block(ins[0], ty.shape), ty.shape) if ty.is_block else ins[0]]


def lower_expand_dims(ctx, op, ins):
    ty = op.results[0].type
    x = ins[0]
    if isinstance(x, Scalar):
        return [splat(x.value, x.s, ty.shape)]
    return [view_expand(x, op.attrs["axis"], ty.shape)]


def lower_permute(ctx, op, ins):
    ty = op.results[0].type
    x = ins[0]
    if isinstance(x, Scalar):
        return [x]
    return [view_permute(x, list(op.attrs["order"]), ty.shape)]


def lower_slice(ctx, op, ins):
    """A sub-block (a view): element ``idx`` is the operand's ``offsets + idx * steps``."""
    ty = op.results[0].type
    x = ins[0]
    if isinstance(x, Scalar):
        return [x]
    offsets, steps = slice_geometry(op)
    if isinstance(x, Buf):
        first = sum(o * st for o, st in zip(offsets, x.strides))
        ptr = ctx.b.gep(x.ptr, [const(I64, first)], source_etype=mem_type(x.s)) if first else x.ptr
        return [Buf(ptr, ty.shape, [st * s for st, s in zip(x.strides, steps)], x.s)]
    if not any(offsets) and all(s == 1 for s in steps):
        return [Expr(ty.shape, x.s, x.fn, x.cost, x.cheap)]
    fn = x.fn

    def get(c, idx):
        at = [i if s == 1 else c.b.mul(i, const(I64, s)) for i, s in zip(idx, steps)]
        return fn(c, [i if o == 0 else c.b.add(i, const(I64, o)) for i, o in zip(at, offsets)])
    return [Expr(ty.shape, x.s, get, x.cost, x.cheap)]


def lower_insert_slice(ctx, op, ins):
    """``ful`` with ``part`` at ``offsets + idx * steps``: element ``idx`` is ``part``'s where it is
    one of those positions, else ``ful``'s (computed on demand)."""
    ty = op.results[0].type
    ful, part = ins
    offsets, steps = slice_geometry(op)
    sizes = op.operands[1].type.shape

    def get(c, idx):
        b, inside, at = c.b, None, []
        for i, o, s, n in zip(idx, offsets, steps, sizes):
            rel = b.sub(i, const(I64, o)) if o else i
            hit = b.icmp_unsigned("<=", rel, const(I64, (n - 1) * s))      # 0 <= rel <= last
            if s != 1:
                hit = b.and_(hit, b.icmp_unsigned("==", b.urem(rel, const(I64, s)), const(I64, 0)))
                rel = b.udiv(rel, const(I64, s))
            inside = hit if inside is None else b.and_(inside, hit)
            at.append(b.select(hit, rel, const(I64, 0)))
        return b.select(inside, c.get(part, at), c.get(ful, idx))
    cost = sum(getattr(x, "cost", 1) for x in ins) + 4 * len(sizes)
    return [Expr(ty.shape, ty.scalar, get, cost, False)]


def lower_reshape(ctx, op, ins):
    ty = op.results[0].type
    x = ins[0]
    if not ty.is_block:                   # tensor<1x..x1> -> scalar
        if isinstance(x, Scalar):
            return [x]
        return [Scalar(ctx.get(x, [const(I64, 0)] * len(x.shape)), ty.scalar)]
    if isinstance(x, Scalar):
        return [splat(x.value, x.s, ty.shape)]
    if isinstance(x, Expr) and all(d == 1 for d in x.shape):
        fn = x.fn
        n = len(x.shape)
        return [Expr(ty.shape, x.s, lambda c, idx: fn(c, [const(I64, 0)] * n), x.cost, x.cheap)]
    buf = ctx.materialize(x)
    return [Buf(buf.ptr, ty.shape, row_major(ty.shape), buf.s)]


LOWER = {
    **{n: lower_binary for n in ("add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "maximum",
                                 "minimum", "pow")},
    **{n: lower_unary for n in ("neg", "not", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos",
                                "floor", "ceil", "erf", "tanh", *M.LIBM_F64)},
    "cmp": lower_cmp, "select": lower_select, "fma": lower_fma, "cast": lower_cast, "bitcast": lower_bitcast,
    "addptr": lower_addptr, "constant": lower_constant, "arange": lower_arange, "splat": lower_splat,
    "broadcast": lower_broadcast, "expand_dims": lower_expand_dims, "permute": lower_permute,
    "reshape": lower_reshape, "slice": lower_slice, "insert_slice": lower_insert_slice,
}
