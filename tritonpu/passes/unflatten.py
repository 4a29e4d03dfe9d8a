"""Unflatten: a loop over ``C * T`` trips whose counter cycles through ``0 .. C-1`` is two loops.

Triton's persistent matmul (tutorial 09 in Triton 3.0, and triton-ascend's sample after it) runs
one flat loop over every K step of every tile a program owns::

    ki = -1
    for _ in range(0, k_tiles * tiles_per_SM):
        ki = tl.where(ki == k_tiles - 1, 0, ki + 1)
        if ki == 0:                      # a new tile: its offsets
            tile_id += NUM_SMS; ...; offs_am = ...; offs_bn = ...
        a = tl.load(...); b = tl.load(...)
        accumulator = tl.dot(a, b, accumulator)
        if ki == k_tiles - 1:            # the tile's last K step: store it, start the next
            tl.store(c_ptrs, accumulator.to(tl.float16), mask=c_mask)
            accumulator = tl.zeros(...)

Carried through the flat loop, the offsets are data (element gathers) and the accumulator is
stored from inside its loop (it stays in UB): at 1024^3, 128x128x64, 196031 cycles against 21590
for the same kernel written as two loops, and 128x256x64 did not fit.

Guarantee.  A ``for`` loop from 0 with step 1 whose end is ``mul(C, T)`` and which carries a
scalar ``k`` from the constant -1, advanced first thing as ``select(k == C - 1, 0, k + 1)`` and
used for nothing else, not read after the loop -- when the launch's arguments give ``C >= 1``
(a guard: another launch compiles again) -- becomes ``for t in range(T): for kk in range(C)``
over the same body, the advanced counter replaced by ``kk``: trip ``t * C + kk`` of the flat loop
is trip ``(t, kk)`` and its counter was ``kk`` (``C >= 1``: the flat loop's end is ``C * T``
trips exactly when ``T >= 0`` and none when ``T <= 0``, as the outer loop's), so every op runs
on the same values in the same order.  Then, in the inner loop:

* ``if kk == 0`` whose other branch only yields values the loop carries and yields back unchanged
  (they change only at a tile's first K step), and whose own branch, without side effects (it
  moves before the trip's earlier ops), reads only values from before
  the inner loop, those carried values (their values at ``kk = 0``: the inner loop's initial
  ones) and ``kk`` (0), runs once before the inner loop; its results are the inner loop's
  invariants (the carries are dropped);
* ``if kk == C - 1`` right before the yield, whose other branch only yields and whose results the
  loop only yields, and whose
  branch reads values from before the inner loop, the values its other branch yields (after the
  inner loop: the loop's results, the last trip's) and ``kk`` (``C - 1``), runs once after the
  inner loop (``C >= 1``: the last trip exists) -- the inner loop yields the other branch's
  values, and the outer loop what the branch yields;
* a value the outer loop then carries from a constant (or a splat of one) and yields as the same
  constant again (the accumulator reset to zeros) is that constant, not carried.

Results are bitwise the same (the same ops in the same order on the same values).  Nothing is
changed when any condition does not hold, or without the launch's arguments (``tritonpu opt``).
"""
from __future__ import annotations

from tritonpu.ir import Function, Op, Region, Value
from tritonpu.ir import types as T
from tritonpu.passes.cse import replace_uses
from tritonpu.passes.manager import Pass, register
from tritonpu.passes.rewrite import clone_op, init_carries, users_of
from tritonpu.passes.specialize import decide


def _const(v):
    o = v.owner
    if o is not None and o.name == "constant" and not v.type.is_block:
        return o.attrs["value"]
    return None


def _is(v, c) -> bool:
    x = _const(v)
    return x is not None and not isinstance(x, bool) and x == c


def _minus_one_of(v, c) -> bool:
    """Whether scalar ``v`` is computed as ``c - 1``."""
    o = v.owner
    if _const(c) is not None and _const(v) is not None:
        return _is(v, _const(c) - 1)
    return v is not c and o is not None and o.name == "sub" and o.operands[0] is c and _is(o.operands[1], 1)


def _cmp_eq(v):
    """(x, y) of ``v = cmp(x, y) {eq}``, else None."""
    o = v.owner
    if o is None or o.name != "cmp" or o.attrs.get("pred") != "eq":
        return None
    return tuple(o.operands)


def _free(region: Region) -> list:
    """The values the ops of ``region`` read that they (and its arguments) do not define."""
    inside = {id(a) for a in region.args}
    ops = [x for o in region.ops for x in o.walk()]
    for o in ops:
        inside.update(id(r) for r in o.results)
        for r in o.regions:
            inside.update(id(a) for a in r.args)
    return [v for o in ops for v in o.operands if id(v) not in inside]


def _materialize(values, body: Region, mapping: dict, out: list) -> bool:
    """Make every value of ``values`` defined in ``body`` available outside it: those in
    ``mapping`` are; the others must be computed by pure scalar ops of ``body`` from such values,
    which are cloned into ``out`` (and recorded in ``mapping``).  False when one is not."""
    defs = {id(r): o for o in body.ops for r in o.results}
    args = {id(a) for a in body.args}

    def need(v) -> bool:
        if id(v) in mapping or (id(v) not in defs and id(v) not in args):
            return True
        o = defs.get(id(v))
        if o is None or o.regions or o.opdef.effects or len(o.results) != 1 or o.result.type.is_block:
            return False
        if not all(need(x) for x in o.operands):
            return False
        out.append(clone_op(o, mapping))
        return True

    return all(need(v) for v in values)


@register
class Unflatten(Pass):
    name = "unflatten"

    def run(self, fn: Function) -> None:
        for op in list(fn.walk()):
            if op.name == "for":
                _unflatten(fn, op)


def _counter(loop: Op):
    """(index of the carried counter, the advanced counter, C, T) when ``loop`` is a flat loop
    (see the module), else None."""
    lb, ub, step = loop.operands[:3]
    body = loop.regions[0]
    m = ub.owner
    if not (_is(lb, 0) and _is(step, 1)) or m is None or m.name != "mul" or str(ub.type) != "i32":
        return None
    term = body.terminator
    for j, (k, init) in enumerate(zip(body.args[1:], loop.operands[3:])):
        kn = term.operands[j]
        sel = kn.owner
        if not _is(init, -1) or str(k.type) != "i32" or sel is None or sel.name != "select" or \
                sel.parent is not body:
            continue
        cond, zero, inc = sel.operands
        eq = _cmp_eq(cond)
        if eq is None or not _is(zero, 0) or inc.owner is None or inc.owner.name != "add" or \
                k not in inc.owner.operands or not any(_is(x, 1) for x in inc.owner.operands) or \
                cond.owner.parent is not body or inc.owner.parent is not body:
            continue
        last = eq[1] if eq[0] is k else eq[0] if eq[1] is k else None
        for C, Tn in ((m.operands[0], m.operands[1]), (m.operands[1], m.operands[0])):
            if last is not None and _minus_one_of(last, C) and C.region is not body and \
                    (C.owner is None or C.owner.parent is not body):
                return j, kn, C, Tn
    return None


def _unflatten(fn: Function, loop: Op) -> bool:
    found = _counter(loop)
    if found is None:
        return False
    j, kn, C, Tn = found
    body = loop.regions[0]
    k = body.args[1 + j]
    sel = kn.owner
    cmp, inc = sel.operands[0].owner, sel.operands[2].owner
    # k feeds only its own advance (whose compare and increment feed only the select); the
    # counter is not read after the loop
    for v, only in ((k, (cmp, inc)), (cmp.result, (sel,)), (inc.result, (sel,)), (loop.results[j], ())):
        if any(v in o.operands and o not in only for o in fn.walk()):
            return False
    one = Op("constant", [], [T.i32], {"value": 1}, loc=loop.loc)
    ge = Op("cmp", [C, one.result], [T.i1], {"pred": "ge"}, loc=loop.loc)
    if decide(fn, [one, ge], ge.result) is not True:
        return False
    keep = [i for i in range(len(body.args) - 1) if i != j]
    where = loop.parent.ops
    zero = Op("constant", [], [T.i32], {"value": 0}, loc=loop.loc)
    step = Op("constant", [], [T.i32], {"value": 1}, loc=loop.loc)
    # the inner loop: the body as it is, kk for the advanced counter
    kk = Value(T.i32, "kk")
    term = body.terminator
    ops = [o for o in body.ops if o not in (sel, cmp, inc, term)]
    inner_term = Op("yield", [term.operands[i] for i in keep], [], loc=term.loc)
    inner_body = Region([kk] + [body.args[1 + i] for i in keep], ops + [inner_term])
    for o in inner_body.ops:
        o.parent = inner_body
    outer_args = [Value(body.args[1 + i].type, body.args[1 + i].name) for i in keep]
    inner = Op("for", [zero.result, C, step.result] + outer_args, [body.args[1 + i].type for i in keep],
               dict(loop.attrs), [inner_body], loop.loc)
    outer_term = Op("yield", list(inner.results), [], loc=term.loc)
    outer_body = Region([Value(T.i32, "t")] + outer_args, [inner, outer_term])
    inner.parent = outer_term.parent = outer_body
    outer = Op("for", [zero.result, Tn, step.result] + [loop.operands[3 + i] for i in keep],
               [loop.results[i].type for i in keep], dict(loop.attrs), [outer_body], loop.loc)
    for i, r in zip(keep, outer.results):
        r.name = loop.results[i].name
    at = where.index(loop)
    where[at:at + 1] = [zero, step, outer]
    for o in (zero, step, outer):
        o.parent = loop.parent
    replace_uses(fn, {id(kn): kk, **{id(loop.results[i]): r for i, r in zip(keep, outer.results)}})
    _hoist_first(fn, inner, outer_body)
    _sink_last(fn, inner, outer_body, C)
    _constant_carries(fn, outer)
    return True


def _constant_carries(fn: Function, loop: Op) -> None:
    """A value ``loop`` carries from a constant (or a splat of one) and yields as the same
    constant again (the accumulator a tile's last K step resets) is that constant: its uses read
    the initial value, and the carry is dropped (it would hold a tile of UB for nothing)."""
    body = loop.regions[0]
    drop = {i: init for i, init in init_carries(loop, constants=True)}
    if drop:
        replace_uses(fn, {id(body.args[1 + i]): init for i, init in drop.items()})
        replace_uses(fn, {id(loop.results[i]): init for i, init in drop.items()})
        _drop_carries(loop, set(drop))


def _hoist_first(fn: Function, inner: Op, outer_body: Region) -> None:
    """``if kk == 0`` of the inner loop run once before it (see the module)."""
    body = inner.regions[0]
    kk, term = body.args[0], body.terminator
    carried = {id(a): i for i, a in enumerate(body.args[1:])}
    for op in body.ops:
        eq = _cmp_eq(op.operands[0]) if op.name == "if" and op.operands else None
        if eq is None or not ((eq[0] is kk and _is(eq[1], 0)) or (eq[1] is kk and _is(eq[0], 0))):
            continue
        then, orelse = op.regions
        if len(orelse.ops) != 1 or any(o.opdef.effects for x in then.ops for o in x.walk()):
            return
        # each result: the other branch yields a carried value the loop yields back as this result
        slots = []
        for r, e in zip(op.results, orelse.terminator.operands if orelse.ops else ()):
            i = carried.get(id(e))
            if i is None or term.operands[i] is not r:
                return
            slots.append(i)
        if len(slots) != len(op.results) or len(set(slots)) != len(slots):
            return
        # run the branch before the inner loop: carried values at kk = 0 are the inner loop's inits
        zero = Op("constant", [], [T.i32], {"value": 0}, loc=op.loc)
        mapping = {id(kk): zero.result, **{id(body.args[1 + i]): inner.operands[3 + i] for i in carried.values()}}
        hoisted = [zero]
        if not _materialize(_free(then), body, mapping, hoisted):
            return
        for o in then.ops[:-1]:
            hoisted.append(clone_op(o, mapping))
        values = [mapping.get(id(v), v) for v in then.terminator.operands]
        at = outer_body.ops.index(inner)
        outer_body.ops[at:at] = hoisted
        for o in hoisted:
            o.parent = outer_body
        # in the loop (and after it) the results are those values; their carries go
        replace_uses(fn, {id(r): v for r, v in zip(op.results, values)})
        replace_uses(fn, {id(body.args[1 + i]): v for i, v in zip(slots, values)})
        replace_uses(fn, {id(inner.results[i]): v for i, v in zip(slots, values)})
        body.ops.remove(op)
        _drop_carries(inner, set(slots))
        return


def _drop_carries(inner: Op, slots: set) -> None:
    """Remove carried values ``slots`` (now unused) from the ``for`` op ``inner``."""
    body = inner.regions[0]
    keep = [i for i in range(len(body.args) - 1) if i not in slots]
    body.args = [body.args[0]] + [body.args[1 + i] for i in keep]
    body.terminator.operands = [body.terminator.operands[i] for i in keep]
    results = inner.results
    inner.operands = inner.operands[:3] + [inner.operands[3 + i] for i in keep]
    inner.results = [results[i] for i in keep]
    for n, r in enumerate(inner.results):
        r.index = n


def _sink_last(fn: Function, inner: Op, outer_body: Region, C: Value) -> None:
    """``if kk == C - 1`` right before the inner loop's yield run once after it (see the module)."""
    body = inner.regions[0]
    kk, term = body.args[0], body.terminator
    if len(body.ops) < 2:
        return
    op = body.ops[-2]
    eq = _cmp_eq(op.operands[0]) if op.name == "if" and op.operands else None
    if eq is None or not ((eq[0] is kk and _minus_one_of(eq[1], C)) or (eq[1] is kk and _minus_one_of(eq[0], C))):
        return
    then, orelse = op.regions
    if len(orelse.ops) != 1 or not then.ops:
        return
    # its results only yielded by the loop, each as one carried value
    slots, users = {}, users_of(fn)
    for r in op.results:
        uses = users.get(id(r), [])
        if len(uses) != 1 or uses[0][0] is not term:
            return
        slots[id(r)] = uses[0][1]
    others = orelse.terminator.operands
    cm1 = next((v for v in eq if v is not kk), None)
    # after the loop: the other branch's values are the loop's results (the last trip's), kk is C - 1
    after, mapping = [], {id(e): inner.results[slots[id(r)]] for r, e in zip(op.results, others)}
    if not _materialize([cm1], body, mapping, after):
        return
    mapping[id(kk)] = mapping.get(id(cm1), cm1)
    if not _materialize(_free(then), body, mapping, after):
        return
    # the loop yields the other branch's values; after it, the branch runs on the last trip's
    for r, e in zip(op.results, others):
        term.operands[slots[id(r)]] = e
    body.ops.remove(op)
    for o in then.ops[:-1]:
        after.append(clone_op(o, mapping))
    values = {slots[id(r)]: mapping.get(id(v), v) for r, v in zip(op.results, then.terminator.operands)}
    outer_term = outer_body.terminator
    index = {id(r): i for i, r in enumerate(inner.results)}
    outer_term.operands = [values.get(index.get(id(v)), v) for v in outer_term.operands]
    at = outer_body.ops.index(outer_term)
    outer_body.ops[at:at] = after
    for o in after:
        o.parent = outer_body
