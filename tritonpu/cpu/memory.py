"""Lowering of the memory ops: load, store, atomic_rmw, atomic_cas, with bounds checks.

Guarantees:

* Every active lane of every access is bounds-checked: its byte address must fall inside the
  array argument it was derived from (found statically by ``provenance``; when a pointer may
  come from several arguments, inside any argument) with the element fully inside (and aligned
  to the element size when pointers were bitcast). A lane that fails is never accessed, so a
  kernel cannot segfault through a load, store or atomic. Loads and stores check in the same
  (vectorised) loop as the access and report after it: a store that fails has written its
  in-bounds lanes (the reference writes none); atomics check every lane first. The failing op,
  program id, argument and byte offset go to the error record and the kernel returns a non-zero
  status; the engine raises ``ExecutionError`` with the reference's message.
* The first bad lane in row-major order is the one reported (a scalar re-scan, run only on
  failure), as the reference does.
* Loads: masked-off lanes give ``other`` or 0 and are not read. Stores: masked-off lanes are not
  written. Atomics: lanes are applied one at a time in row-major order (the grid runs
  sequentially in one thread, so this is exactly the reference's semantics) and return the old
  values (0 for masked-off lanes); fp32/fp64 ``max``/``min`` order the bits as Triton does
  (``dtypes.bits_atomic``), fp16/bf16 ones follow Python's ``max``/``min`` on the pair (current,
  value), as the reference does; f16/bf16 ``add`` is computed in f32.
"""
from __future__ import annotations

from llvmlite import ir

from tritonpu.cpu import mathlib as M
from tritonpu.cpu.codegen import (I1, I8, I64, PTR, Buf, Scalar, const, elem_bytes, mem_type, numel, row_major,
                                  signed, zero_of)

MULTI = -1
ERR_OOB, ERR_ASSERT, ERR_WHILE, ERR_STEP = 1, 2, 3, 4


# -- provenance ----------------------------------------------------------------------------------
def provenance(fn) -> dict:
    """id(value) -> index of the pointer argument every address in it derives from, or MULTI."""
    ptr_index = {}
    for a in fn.args:
        if a.type.is_ptr:
            ptr_index[id(a)] = len(ptr_index)
    prov = dict(ptr_index)
    unset = object()
    changed = True

    def get(v):
        return prov.get(id(v), unset)

    def setp(v, p):
        nonlocal changed
        if not v.type.is_ptr or p is unset:
            return
        old = prov.get(id(v), unset)
        new = p if old is unset else (old if old == p else MULTI)
        if new != old:
            prov[id(v)] = new
            changed = True

    def region(r):
        for op in r.ops:
            for sub in op.regions:
                region(sub)
            n = op.name
            res = op.results
            if n in ("addptr", "splat", "broadcast", "expand_dims", "reshape", "permute"):
                setp(res[0], get(op.operands[0]))
            elif n == "bitcast":
                setp(res[0], get(op.operands[0]) if op.operands[0].type.is_ptr else MULTI)
            elif n == "select":
                setp(res[0], get(op.operands[1]))
                setp(res[0], get(op.operands[2]))
            elif n in ("constant", "load") and res and res[0].type.is_ptr:
                setp(res[0], MULTI)
            elif n == "for":
                body = op.regions[0]
                inits = op.operands[3:]
                ys = body.ops[-1].operands
                for a, i, y, r in zip(body.args[1:], inits, ys, res):
                    setp(a, get(i))
                    setp(a, get(y))
                    setp(r, get(a))
            elif n == "if":
                for reg in op.regions:
                    for r, y in zip(res, reg.ops[-1].operands):
                        setp(r, get(y))
            elif n == "while":
                before, after = op.regions
                cond = before.ops[-1].operands[1:]
                for a, i, y in zip(before.args, op.operands, after.ops[-1].operands):
                    setp(a, get(i))
                    setp(a, get(y))
                for a, c, r in zip(after.args, cond, res):
                    setp(a, get(c))
                    setp(r, get(c))

    while changed:
        changed = False
        region(fn.body)
    return {k: (v if v is not unset else MULTI) for k, v in prov.items()}


# -- errors and checks -----------------------------------------------------------------------------
def emit_error(ctx, code: int, op, k: int, value) -> None:
    """Fill the error record and leave the kernel (the builder continues in a dead block)."""
    b = ctx.b
    fields = [const(I64, code), const(I64, ctx.op_ids[id(op)]), *(b.sext(p, I64) for p in ctx.pid),
              const(I64, k), value]
    for i, v in enumerate(fields):
        b.store(v, b.gep(ctx.err, [const(I64, i)], source_etype=I64))
    b.branch(ctx.fail_block)
    b.position_at_end(ctx.block("dead"))


def _lane_ok(ctx, addr, size: int, k: int, align: bool = True):
    """i1: ``addr`` (i64) addresses a whole, aligned element inside argument k (or any, k = MULTI)."""
    b = ctx.b
    args = ctx.ptr_args if k == MULTI else [ctx.ptr_args[k]]
    ok = None
    for pa in args:
        off = b.sub(addr, pa.base)
        inside = b.and_(b.icmp_unsigned("<", off, pa.size), b.icmp_unsigned(">=", b.sub(pa.size, off), const(I64, size)))
        if align:
            inside = b.and_(inside, b.icmp_unsigned("==", b.and_(off, const(I64, size - 1)), const(I64, 0)))
        ok = inside if ok is None else b.or_(ok, inside)
    return ok if ok is not None else const(I1, 0)


def _needs_align(ctx, k: int, size: int) -> bool:
    """Offsets are multiples of the element size unless pointers were bitcast between types."""
    return size > 1 and (k == MULTI or ctx.ptr_bitcasts or ctx.ptr_args[k].elem != size)


def _report_first_bad(ctx, op, ptrv, maskv, size, k, bad) -> None:
    """If ``bad``: find the first bad lane (row-major, scalar loop) and leave with its record."""
    b = ctx.b
    align = _needs_align(ctx, k, size)

    def lane_bad(idx):
        r = b.not_(_lane_ok(ctx, ctx.get(ptrv, idx), size, k, align))
        return r if maskv is None else b.and_(r, ctx.get(maskv, idx))

    with b.if_then(bad, likely=False):
        def find(idx):
            with b.if_then(lane_bad(idx), likely=False):
                a = ctx.get(ptrv, idx)
                off = a if k == MULTI else b.sub(a, ctx.ptr_args[k].base)
                emit_error(ctx, ERR_OOB, op, k, off)
        ctx.nest(ptrv.shape, find)


def check_access(ctx, op, ptrv, maskv, size: int, k: int) -> None:
    """Emit the bounds check of every active lane of ``ptrv`` before the access (atomics)."""
    b = ctx.b
    align = _needs_align(ctx, k, size)
    acc = ctx.var(I1, const(I1, 0))

    def body(idx):
        bad = b.not_(_lane_ok(ctx, ctx.get(ptrv, idx), size, k, align))
        if maskv is not None:
            bad = b.and_(bad, ctx.get(maskv, idx))
        b.store(b.or_(b.load(acc), bad), acc)
    ctx.nest(ptrv.shape, body)
    _report_first_bad(ctx, op, ptrv, maskv, size, k, b.load(acc))


def checked_access(ctx, op, ptrv, maskv, size: int, k: int, lane) -> None:
    """One loop over the lanes: ``lane(idx, active, addr)`` accesses memory only where ``active``
    (mask and in bounds); afterwards a bad active lane leaves the kernel with its record."""
    b = ctx.b
    align = _needs_align(ctx, k, size)
    acc = ctx.var(I1, const(I1, 0))

    def body(idx):
        a = ctx.get(ptrv, idx)
        ok = _lane_ok(ctx, a, size, k, align)
        m = ctx.get(maskv, idx) if maskv is not None else None
        bad = b.not_(ok) if m is None else b.and_(m, b.not_(ok))
        b.store(b.or_(b.load(acc), bad), acc)
        lane(idx, ok if m is None else b.and_(m, ok), a)
    ctx.nest(ptrv.shape, body)
    _report_first_bad(ctx, op, ptrv, maskv, size, k, b.load(acc))


def address(ctx, a, k: int):
    """An LLVM pointer for the i64 address ``a`` derived from argument k (keeps provenance)."""
    b = ctx.b
    if k == MULTI:
        return b.inttoptr(a, PTR)
    pa = ctx.ptr_args[k]
    return b.gep(pa.param, [b.sub(a, pa.base)], source_etype=I8)


def read(ctx, p, s):
    v = ctx.b.load(p, typ=mem_type(s), align=elem_bytes(s))
    if not s.is_ptr and s.is_bool:
        v = ctx.b.icmp_unsigned("!=", v, const(I8, 0))
    return v


def write(ctx, p, v, s):
    if not s.is_ptr and s.is_bool:
        v = ctx.b.zext(v, I8)
    ctx.b.store(v, p, align=elem_bytes(s))


def _masked(ctx, m, then, default):
    """``then()`` where the i1 ``m`` holds, else ``default`` (a phi; no access happens)."""
    if m is None:
        return then()
    b = ctx.b
    pre = b.block
    with b.if_then(m):
        v = then()
        body_end = b.block
    if v is None:
        return None
    phi = b.phi(v.type)
    phi.add_incoming(v, body_end)
    phi.add_incoming(default, pre)
    return phi


def _prov(ctx, op):
    return ctx.prov.get(id(op.operands[0]), MULTI)


# -- ops -------------------------------------------------------------------------------------------
def lower_load(ctx, op, ins):
    ptrv = ins[0]
    maskv = ins[1] if len(ins) > 1 else None
    other = ins[2] if len(ins) > 2 else None
    ty = op.results[0].type
    s = ty.scalar
    k = _prov(ctx, op)
    zero = zero_of(s)
    out = []
    g = ctx.buffer(numel(ty.shape), mem_type(s), "ld") if ty.is_block else None
    strides = row_major(ty.shape)

    def lane(idx, active, a):
        dflt = ctx.get(other, idx) if other is not None else zero
        v = _masked(ctx, active, lambda: read(ctx, address(ctx, a, k), s), dflt)
        if g is None:
            out.append(v)
        else:
            ctx.put(g, v, s, ctx.offset(idx, strides))
    checked_access(ctx, op, ptrv, maskv, elem_bytes(s), k, lane)
    if g is None:
        return [Scalar(out[0], s)]
    return [Buf(g, ty.shape, strides, s)]


def lower_store(ctx, op, ins):
    ptrv, val = ins[0], ins[1]
    maskv = ins[2] if len(ins) > 2 else None
    s = op.operands[1].type.scalar
    k = _prov(ctx, op)

    def lane(idx, active, a):
        v = ctx.get(val, idx)
        with ctx.b.if_then(active):
            write(ctx, address(ctx, a, k), v, s)
    checked_access(ctx, op, ptrv, maskv, elem_bytes(s), k, lane)
    return []


def _rmw(b, kind, cur, v, s):
    if kind == "xchg":
        return v
    if kind == "and":
        return b.and_(cur, v)
    if kind == "or":
        return b.or_(cur, v)
    if kind == "xor":
        return b.xor(cur, v)
    is_float = not s.is_ptr and s.is_float
    if kind == "add":
        if is_float:
            return M.narrow(b, b.fadd(M.widen(b, cur, s), M.widen(b, v, s)), s)
        return b.xor(cur, v) if s.is_bool else b.add(cur, v)
    pred = ">" if kind == "max" else "<"
    if is_float and elem_bytes(s) in (4, 8):
        # fp32 / fp64 as Triton lowers them: where v's sign bit is clear a signed integer max (min)
        # of the bits, where it is set an unsigned min (max) -- dtypes.bits_atomic
        ity = ir.IntType(8 * elem_bytes(s))
        ci, vi = b.bitcast(cur, ity), b.bitcast(v, ity)
        on_signed = b.select(b.icmp_signed(pred, vi, ci), v, cur)
        on_unsigned = b.select(b.icmp_unsigned("<" if kind == "max" else ">", vi, ci), v, cur)
        return b.select(b.icmp_signed(">=", vi, ir.Constant(ity, 0)), on_signed, on_unsigned)
    if is_float:
        better = b.fcmp_ordered(pred, M.widen(b, v, s), M.widen(b, cur, s))
    elif signed(s):
        better = b.icmp_signed(pred, v, cur)
    else:
        better = b.icmp_unsigned(pred, v, cur)
    return b.select(better, v, cur)


def lower_atomic(ctx, op, ins):
    ptrv = ins[0]
    cas = op.name == "atomic_cas"
    maskv = None if cas or len(ins) < 3 else ins[2]
    ty = op.results[0].type
    s = ty.scalar
    k = _prov(ctx, op)
    kind = op.attrs.get("op", "cas")
    check_access(ctx, op, ptrv, maskv, elem_bytes(s), k)
    b = ctx.b
    zero = zero_of(s)

    def lane(idx):
        def do():
            p = address(ctx, ctx.get(ptrv, idx), k)
            cur = read(ctx, p, s)
            if cas:
                c, v = ctx.get(ins[1], idx), ctx.get(ins[2], idx)
                if s.is_float and not s.is_ptr:
                    eq = b.fcmp_ordered("==", M.widen(b, cur, s), M.widen(b, c, s))
                else:
                    eq = b.icmp_unsigned("==", cur, c)
                new = b.select(eq, v, cur)
            else:
                new = _rmw(b, kind, cur, ctx.get(ins[1], idx), s)
            write(ctx, p, new, s)
            return cur
        return _masked(ctx, ctx.get(maskv, idx) if maskv is not None else None, do, zero)

    if not ty.is_block:
        return [Scalar(lane([]), s)]
    g = ctx.buffer(numel(ty.shape), mem_type(s), "old")
    strides = row_major(ty.shape)
    ctx.nest(ty.shape, lambda idx: ctx.put(g, lane(idx), s, ctx.offset(idx, strides)))
    return [Buf(g, ty.shape, strides, s)]


LOWER = {"load": lower_load, "store": lower_store, "atomic_rmw": lower_atomic, "atomic_cas": lower_atomic}
