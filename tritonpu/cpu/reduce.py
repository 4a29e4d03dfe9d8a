"""Lowering of reductions, scans and ``dot``.

Guarantees (matching the reference evaluator):

* ``reduce``: sum / max / min / argmax / argmin along one axis. f16/bf16 are reduced in f32 and
  rounded once; integer sums wrap in their type; bool sum/max are ``or``, min is ``and``; float
  max/min ignore NaNs unless every element is NaN (numpy's fmax/fmin reduce); argmax/argmin give
  the first index of the extreme, a NaN counting as the extreme (numpy's argmax). Float sums may
  be reassociated (so they vectorise): results differ from numpy's pairwise sum by rounding only.
* Reducing the last axis keeps a scalar accumulator per output (a vectorised reduction loop);
  reducing another axis accumulates into a buffer with the innermost loop over the last axis.
* ``scan`` (cumsum, optionally reversed) adds in order, in f32 for f16/bf16, rounding each output.
* ``dot``: operands converted to the accumulation type (f32 for f16/bf16/f32, f64 for f64, the
  result integer type for integers, wrapping), accumulated in that type into a contiguous buffer
  initialised with ``acc`` (or 0), rounded to the result type at the end.
"""
from __future__ import annotations

from tritonpu.cpu import mathlib as M
from tritonpu.cpu.codegen import (F32, I32, I64, Buf, Expr, Scalar, compute_type, const, mem_type, numel, reg_type,
                                  row_major, signed)
from tritonpu.cpu.elementwise import cast_value
from tritonpu.ir import types as T


def _is_float(s):
    return not s.is_ptr and s.is_float


def _combine(b, kind, s, acc, v, reassoc):
    if s.is_bool and not _is_float(s):
        return b.and_(acc, v) if kind in ("min", "prod") else b.or_(acc, v)
    if kind == "sum":
        if _is_float(s):
            return b.fadd(acc, v, flags=("reassoc", "nsz") if reassoc else ())
        return b.add(acc, v)
    if kind == "prod":
        return b.fmul(acc, v) if _is_float(s) else b.mul(acc, v)
    if _is_float(s):
        # fmax/fmin as compare+select, not llvm.maxnum: LLVM 20's vectoriser miscompiles maxnum
        # reductions whose trip count is not a multiple of the vector width (it skips the tail).
        better = b.fcmp_ordered(">" if kind == "max" else "<", v, acc)
        return b.select(b.or_(better, b.fcmp_unordered("uno", acc, acc)), v, acc)
    pred = ">" if kind == "max" else "<"
    better = b.icmp_signed(pred, v, acc) if signed(s) else b.icmp_unsigned(pred, v, acc)
    return b.select(better, v, acc)


def _better(b, kind, s, best, v):
    """i1: ``v`` replaces ``best`` in argmax/argmin (strictly better, or the first NaN)."""
    pred = ">" if kind == "argmax" else "<"
    if _is_float(s):
        strict = b.fcmp_ordered(pred, v, best)
        first_nan = b.and_(b.fcmp_unordered("uno", v, v), b.fcmp_ordered("ord", best, best))
        return b.or_(strict, first_nan)
    if signed(s):
        return b.icmp_signed(pred, v, best)
    return b.icmp_unsigned(pred, v, best)


def _with(idx, axis, j):
    idx = list(idx)
    idx.insert(axis, j)
    return idx


def lower_reduce(ctx, op, ins):
    x = ins[0]
    kind, axis = op.attrs["op"], op.attrs["axis"]
    s = op.operands[0].type.scalar
    rty = op.results[0].type
    shape = tuple(x.shape)
    n = shape[axis]
    rshape = rty.shape
    b = ctx.b
    ct = compute_type(s)
    arg = kind in ("argmax", "argmin")

    def elem(ridx, j):
        return M.widen(b, ctx.get(x, _with(ridx, axis, j)), s) if _is_float(s) else ctx.get(x, _with(ridx, axis, j))

    def finish(v):
        return v if arg or not _is_float(s) else M.narrow(b, v, s)

    out_s = rty.scalar
    if axis == len(shape) - 1:
        res = ctx.buffer(numel(rshape), mem_type(out_s), "red") if rshape else None
        rstr = row_major(rshape)
        scalar_out = []

        def per_output(ridx):
            acc = ctx.var(ct, elem(ridx, const(I64, 0)))
            if arg:
                best_i = ctx.var(I32, const(I32, 0))

                def step(j):
                    v, best = elem(ridx, j), b.load(acc)
                    better = _better(b, kind, s, best, v)
                    b.store(b.select(better, v, best), acc)
                    b.store(b.select(better, b.trunc(j, I32), b.load(best_i)), best_i)
                ctx.loop(n, step, start=1)
                out = b.load(best_i)
            else:
                ctx.loop(n, lambda j: b.store(_combine(b, kind, s, b.load(acc), elem(ridx, j), True), acc), start=1)
                out = finish(b.load(acc))
            if rshape:
                ctx.put(res, out, out_s, ctx.offset(ridx, rstr))
            else:
                scalar_out.append(out)
        ctx.nest(rshape, per_output)
        if not rshape:
            return [Scalar(scalar_out[0], out_s)]
        return [Buf(res, rshape, rstr, out_s)]

    # reduce a non-last axis: accumulate into buffers, innermost loop over the last axis
    rstr = row_major(rshape)
    acc_s = T.f32 if ct == F32 and _is_float(s) else s
    accb = ctx.buffer(numel(rshape), mem_type(acc_s), "acc")
    idxb = ctx.buffer(numel(rshape), I32, "arg") if arg else None

    def init(ridx):
        off = ctx.offset(ridx, rstr)
        ctx.put(accb, elem(ridx, const(I64, 0)), acc_s, off)
        if arg:
            ctx.put(idxb, const(I32, 0), T.i32, off)
    ctx.nest(rshape, init)

    def outer(j):
        def inner(ridx):
            off = ctx.offset(ridx, rstr)
            cur = ctx.get(Buf(accb, rshape, rstr, acc_s), ridx)
            v = elem(ridx, j)
            if arg:
                better = _better(b, kind, s, cur, v)
                ctx.put(accb, b.select(better, v, cur), acc_s, off)
                old = ctx.get(Buf(idxb, rshape, rstr, T.i32), ridx)
                ctx.put(idxb, b.select(better, b.trunc(j, I32), old), T.i32, off)
            else:
                ctx.put(accb, _combine(b, kind, s, cur, v, False), acc_s, off)
        ctx.nest(rshape, inner)
    ctx.loop(n, outer, start=1)
    if arg:
        return [Buf(idxb, rshape, rstr, T.i32)]
    accbuf = Buf(accb, rshape, rstr, acc_s)
    if acc_s == s:
        return [accbuf]
    return [Expr(rshape, s, lambda c, idx: M.narrow(c.b, c.get(accbuf, idx), s), 2, False)]


def lower_scan(ctx, op, ins):
    x = ins[0]
    axis = op.attrs["axis"]
    reverse = bool(op.attrs.get("reverse", False))
    s = op.results[0].type.scalar
    shape = tuple(x.shape)
    n = shape[axis]
    b = ctx.b
    acc_s = T.f32 if (_is_float(s) and compute_type(s) == F32) else s
    strides = row_major(shape)
    g = ctx.buffer(numel(shape), mem_type(acc_s), "scan")
    res = Buf(g, shape, strides, acc_s)

    def body(idx):
        j = idx[axis]
        pos = b.sub(const(I64, n - 1), j) if reverse else j
        first = b.icmp_unsigned("==", j, const(I64, 0))
        prev = b.select(first, pos, b.add(pos, const(I64, 1)) if reverse else b.sub(pos, const(I64, 1)))
        here = list(idx)
        here[axis] = pos
        before = list(idx)
        before[axis] = prev
        v = ctx.get(x, here)
        if _is_float(s):
            v = M.widen(b, v, s)
        pv = ctx.get(res, before)
        out = b.select(first, v, _combine(b, op.attrs["op"], acc_s, pv, v, False))
        ctx.put(g, out, acc_s, ctx.offset(here, strides))
    ctx.nest(shape, body, order=[axis] + [d for d in range(len(shape)) if d != axis])
    if acc_s == s:
        return [res]
    return [Expr(shape, s, lambda c, idx: M.narrow(c.b, c.get(res, idx), s), 2, False)]


def lower_dot(ctx, op, ins):
    a, bv = ins[0], ins[1]
    acc = ins[2] if len(ins) > 2 else None
    rs = op.results[0].type.scalar
    m, k = op.operands[0].type.shape
    n = op.operands[1].type.shape[1]
    if _is_float(rs):
        cs = T.scalar("f64") if rs.kind.name == "f64" else T.f32
    else:
        cs = rs
    ct = reg_type(cs)
    b = ctx.b

    def converted(v, src_s, shape):
        if isinstance(v, Buf) and src_s == cs and v.strides[-1] in (1, 0) and v.contiguous:
            return v
        return ctx.materialize(Expr(shape, cs, lambda c, idx: cast_value(c.b, c.get(v, idx), src_s, cs), 1, False),
                               shape, cs, "dot")

    A = converted(a, op.operands[0].type.scalar, (m, k))
    B = converted(bv, op.operands[1].type.scalar, (k, n))
    cstr = row_major((m, n))
    C = ctx.buffer(m * n, ct, "c")
    zero = const(ct, 0.0 if _is_float(cs) else 0)
    if acc is None:
        ctx.nest((m, n), lambda idx: ctx.put(C, zero, cs, ctx.offset(idx, cstr)))
    else:
        ctx.nest((m, n), lambda idx: ctx.put(C, cast_value(b, ctx.get(acc, idx), rs, cs), cs, ctx.offset(idx, cstr)))
    float_ = _is_float(cs)

    def row(i):
        def red(kk):
            aik = ctx.get(A, [i, kk])

            def col(j):
                p = b.gep(C, [b.add(b.mul(i, const(I64, n)), j)], source_etype=ct)
                bkj = ctx.get(B, [kk, j])
                if float_:
                    new = b.fadd(b.load(p, typ=ct), b.fmul(aik, bkj, flags=("contract",)), flags=("contract",))
                else:
                    new = b.add(b.load(p, typ=ct), b.mul(aik, bkj))
                b.store(new, p)
            ctx.loop(n, col)
        ctx.loop(k, red)
    ctx.loop(m, row)
    cbuf = Buf(C, (m, n), cstr, cs)
    if cs == rs:
        return [cbuf]
    return [Expr((m, n), rs, lambda c, idx: cast_value(c.b, c.get(cbuf, idx), cs, rs), 2, False)]


LOWER = {"reduce": lower_reduce, "scan": lower_scan, "dot": lower_dot}
