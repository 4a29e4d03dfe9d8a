"""Lowering of structured control flow (for, if, while), program ids, print and assert.

Guarantees:

* ``for`` iterates ``range(lb, ub, step)`` with Python's meaning for either sign of the step
  (bounds evaluated once); ``while`` runs its before-region, then its after-region while the
  condition holds; ``if`` runs one region. Scalars are carried in SSA phis.
* Carried block values live in two buffers per value that swap roles each iteration (pointer
  phis): the yield writes the next value into the buffer nobody reads, so yields may permute or
  swap carried values freely. ``if`` block results are written by either branch into one buffer.
* ``print`` materialises its operands into dedicated globals and calls back into Python
  (``tpu_print``), which formats them exactly as the reference does. ``assert`` fails the launch
  (error record, non-zero status) when any element of the condition is false.
"""
from __future__ import annotations

from llvmlite import ir

from tritonpu.cpu.codegen import I1, I32, I64, PTR, Buf, Scalar, const, mem_type, numel, reg_type, row_major
from tritonpu.cpu.memory import ERR_ASSERT, ERR_STEP, ERR_WHILE, emit_error
from tritonpu.ref.evaluator import MAX_WHILE_TRIPS


def _carried(ctx, values, inits):
    """Per carried IR value: None for scalars, else (bufA, bufB) with the init written to A."""
    out = []
    for v, init in zip(values, inits):
        ty = v.type
        if not ty.is_block:
            out.append(None)
            continue
        a = ctx.buffer(numel(ty.shape), mem_type(ty.scalar), "ca")
        bb = ctx.buffer(numel(ty.shape), mem_type(ty.scalar), "cb")
        ctx.write(a, init, ty.shape, ty.scalar)
        out.append((a, bb))
    return out


def _header_phis(ctx, values, inits, bufs, pre):
    """Phis at a loop header: (lowered region-arg values, per-value phi records)."""
    b = ctx.b
    lowered, recs = [], []
    for v, init, buf in zip(values, inits, bufs):
        ty = v.type
        if buf is None:
            phi = b.phi(reg_type(ty))
            phi.add_incoming(init.value, pre)
            recs.append(phi)
            lowered.append(Scalar(phi, ty))
        else:
            cur, nxt = b.phi(PTR), b.phi(PTR)
            cur.add_incoming(buf[0], pre)
            nxt.add_incoming(buf[1], pre)
            recs.append((cur, nxt))
            lowered.append(Buf(cur, ty.shape, row_major(ty.shape), ty.scalar))
    return lowered, recs


def _back_edge(ctx, values, recs, yields):
    """Write yielded blocks into the free buffers and add the phis' back-edge incomings."""
    b = ctx.b
    for v, rec, y in zip(values, recs, yields):
        if isinstance(rec, tuple):
            ctx.write(rec[1], y, v.type.shape, v.type.scalar)
    latch = b.block
    for rec, y in zip(recs, yields):
        if isinstance(rec, tuple):
            rec[0].add_incoming(rec[1], latch)
            rec[1].add_incoming(rec[0], latch)
        else:
            rec.add_incoming(y.value, latch)


def lower_for(ctx, op, ins):
    b = ctx.b
    lb, ub, step = (x.value for x in ins[:3])
    inits = ins[3:]
    body = op.regions[0]
    carried_vals = body.args[1:]
    bufs = _carried(ctx, carried_vals, inits)
    if not isinstance(step, ir.Constant):     # a step of 0 stops the launch, as on the NPU and ref
        with b.if_then(b.icmp_signed("==", step, const(step.type, 0)), likely=False):
            emit_error(ctx, ERR_STEP, op, 0, b.sext(step, I64) if step.type.width < 64 else step)
    pre = b.block
    hdr = ctx.block("for")
    b.branch(hdr)
    b.position_at_end(hdr)
    iv = b.phi(lb.type)
    iv.add_incoming(lb, pre)
    args, recs = _header_phis(ctx, carried_vals, inits, bufs, pre)
    zero = const(lb.type, 0)
    go = b.select(b.icmp_signed(">", step, zero), b.icmp_signed("<", iv, ub), b.icmp_signed(">", iv, ub))
    body_b, exit_b = ctx.block("forbody"), ctx.block("forexit")
    b.cbranch(go, body_b, exit_b)
    b.position_at_end(body_b)
    ys = ctx.lower_region(body, [Scalar(iv, body.args[0].type)] + args)
    iv_next = b.add(iv, step)
    _back_edge(ctx, carried_vals, recs, ys)
    iv.add_incoming(iv_next, b.block)
    b.branch(hdr)
    b.position_at_end(exit_b)
    return args


def lower_if(ctx, op, ins):
    b = ctx.b
    cond = ins[0].value
    results = op.results
    rbufs = [ctx.buffer(numel(r.type.shape), mem_type(r.type.scalar), "if") if r.type.is_block else None
             for r in results]
    then_b, else_b, merge = ctx.block("then"), ctx.block("else"), ctx.block("endif")
    b.cbranch(cond, then_b, else_b)
    incoming = []
    for region, blk in zip(op.regions, (then_b, else_b)):
        b.position_at_end(blk)
        ys = ctx.lower_region(region, [])
        for r, y, g in zip(results, ys, rbufs):
            if g is not None:
                ctx.write(g, y, r.type.shape, r.type.scalar)
        incoming.append((ys, b.block))
        b.branch(merge)
    b.position_at_end(merge)
    out = []
    for i, (r, g) in enumerate(zip(results, rbufs)):
        if g is not None:
            out.append(Buf(g, r.type.shape, row_major(r.type.shape), r.type.scalar))
        else:
            phi = b.phi(reg_type(r.type))
            for ys, blk in incoming:
                phi.add_incoming(ys[i].value, blk)
            out.append(Scalar(phi, r.type))
    return out


def lower_while(ctx, op, ins):
    b = ctx.b
    before, after = op.regions
    bufs = _carried(ctx, before.args, ins)
    counter = ctx.var(I64, const(I64, 0))
    pre = b.block
    hdr = ctx.block("while")
    b.branch(hdr)
    b.position_at_end(hdr)
    args, recs = _header_phis(ctx, before.args, ins, bufs, pre)
    cond, *vals = ctx.lower_region(before, args)
    after_b, exit_b = ctx.block("do"), ctx.block("endwhile")
    b.cbranch(cond.value, after_b, exit_b)
    b.position_at_end(after_b)
    trips = b.add(b.load(counter), const(I64, 1))      # never a hang: stopped after MAX_WHILE_TRIPS
    b.store(trips, counter)
    with b.if_then(b.icmp_signed("==", trips, const(I64, MAX_WHILE_TRIPS)), likely=False):
        emit_error(ctx, ERR_WHILE, op, 0, trips)
    ys = ctx.lower_region(after, vals)
    _back_edge(ctx, before.args, recs, ys)
    b.branch(hdr)
    b.position_at_end(exit_b)
    return vals


def lower_program_id(ctx, op, ins):
    src = ctx.pid if op.name == "program_id" else ctx.grid
    return [Scalar(src[op.attrs["axis"]], op.results[0].type)]


def lower_print(ctx, op, ins):
    b = ctx.b
    names = []
    for v, x in zip(op.operands, ins):
        ty = v.type
        g = ctx.buffer(numel(ty.shape), mem_type(ty.scalar), "pr")
        # read by the print callback, not by the kernel: an internal global written and never read
        # is optimised away (the callback then read whatever sat at its address)
        g.linkage = ""                  # (the default: external)
        if ty.is_block:
            ctx.write(g, x, ty.shape, ty.scalar)
        else:
            ctx.put(g, x.value, ty.scalar, const(I64, 0))
        names.append((g.name, ty))
    ctx.prints[ctx.op_ids[id(op)]] = names
    fn = ctx.intrinsic("tpu_print", ir.VoidType(), [I64, I32, I32, I32, I32])
    b.call(fn, [ctx.token, const(I32, ctx.op_ids[id(op)]), *ctx.pid])
    return []


def lower_assert(ctx, op, ins):
    b = ctx.b
    x = ins[0]
    if isinstance(x, Scalar):
        ok = x.value
    else:
        acc = ctx.var(I1, const(I1, 1))
        ctx.nest(x.shape, lambda idx: b.store(b.and_(b.load(acc), ctx.get(x, idx)), acc))
        ok = b.load(acc)
    with b.if_then(b.not_(ok), likely=False):
        emit_error(ctx, ERR_ASSERT, op, 0, const(I64, 0))
    return []


LOWER = {"for": lower_for, "if": lower_if, "while": lower_while, "program_id": lower_program_id,
         "num_programs": lower_program_id, "print": lower_print, "assert": lower_assert}
