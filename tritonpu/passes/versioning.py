"""Single-trip versioning: a loop that runs its inner loops once per trip gets a version without them.

Guarantees: for a scope — each ``for`` loop at the top level of the kernel (the persistent loop over
a core's programs, when there is one), or else the kernel body itself — the candidate loops are the
``for`` loops at the top level of the scope's body whose bounds are computed, by pure ops, only from
values defined outside the scope, whose step is a positive constant and whose body loads a tile.  If
there are any, the scope becomes ``if cond { fast } else { original }`` where ``cond`` says that
every candidate runs exactly once (``lb < ub`` and ``ub - step <= lb``; an ``ub - step`` that wraps
around is large and sends the launch to the original) and ``fast`` is the scope with each
candidate replaced by its body, run on ``lb`` with the loop's initial values.  Both versions
compute exactly what the original did; ``cond`` is the same on every trip of the scope, so it is
computed once, before it.  ``cse`` and ``dce`` then run on the result: in the fast version the tiles the
inlined loops load again (a LayerNorm's two or three passes over its row when ``BLOCK >= n_cols``)
are loaded once, and every load sits at the top level of the persistent loop's body, where double
buffering can issue it during the previous program.  This is the common Triton idiom — a loop over
column blocks with ``BLOCK = next_power_of_2(n_cols)`` — which otherwise re-reads the row and
exposes each load's latency.

When the compiler knows the launch's scalar arguments (a launch compiles inside
:func:`launch_values`) and ``cond`` is computed from them alone, it is decided at compile time, as
Triton specializes on argument values: the kernel gets only the version the launch runs (the
function attribute ``single_trip`` says which), and the condition is kept as a :class:`Guard`; a
later launch whose arguments answer it differently compiles the other version.  Without them
(``tritonpu opt`` on IR text, or a condition that depends on the program) both versions stay,
behind the ``if`` — the code doubles and the branch costs one scalar compare per scope.
"""
from __future__ import annotations


from tritonpu.ir import Function, Op, Region, Value
from tritonpu.ir import types as T
from tritonpu.passes.cse import CommonSubexpressionElimination
from tritonpu.passes.dce import DeadCodeElimination
from tritonpu.passes.rewrite import (TILE_LOADS, clone, clone_op, invariant_slice, loop_like, positive_step,
                                     region_of, replace_all_uses)
from tritonpu.passes.manager import Pass, register
from tritonpu.passes.specialize import decide
from tritonpu.passes.unswitch import versions_if


def _candidates(body: Region) -> list:
    """(loop, ops computing its bounds) for the candidate loops at the top level of ``body``."""
    out = []
    for op in body.ops:
        if op.name != "for" or op.attrs.get("double_buffer"):
            continue
        lb, ub, step = op.operands[:3]
        if not positive_step(step) or not any(o.name in TILE_LOADS for o in op.regions[0].ops):
            continue
        slices = [invariant_slice(body, v) for v in (lb, ub, step)]
        if any(s is None for s in slices):
            continue
        out.append((op, [o for s in slices for o in s]))
    return out


def _cond(cands) -> tuple[list, Value]:
    """Ops computing 'every candidate runs exactly once', and its value."""
    ops: list = []

    def mk(name, operands, ty, **attrs):
        o = Op(name, operands, [ty], attrs, loc=loc)
        ops.append(o)
        return o.result

    cond, done = None, set()
    for loop, _ in cands:
        lb, ub, step = loop.operands[:3]
        if (id(lb), id(ub), id(step)) in done:      # the same bounds: the same condition
            continue
        done.add((id(lb), id(ub), id(step)))
        loc = loop.loc
        ty = lb.type
        once = mk("and", [mk("cmp", [lb, ub], T.i1, pred="lt"),
                          mk("cmp", [mk("sub", [ub, step], ty), lb], T.i1, pred="le")], T.i1)
        cond = once if cond is None else mk("and", [cond, once], T.i1)
    return ops, cond


def _inline(ops, cands, mapping: dict) -> list:
    """Clones of ``ops`` with each candidate loop replaced by its body run once on its lower bound."""
    loops = {id(loop) for loop, _ in cands}
    out: list = []
    for o in ops:
        if id(o) not in loops:
            out.append(clone_op(o, mapping))
            continue
        body = o.regions[0]
        lb = o.operands[0]
        mapping[id(body.args[0])] = mapping.get(id(lb), lb)
        for a, init in zip(body.args[1:], o.operands[3:]):
            mapping[id(a)] = mapping.get(id(init), init)
        clone(body.ops[:-1], mapping, out)
        for r, y in zip(o.results, body.ops[-1].operands):
            mapping[id(r)] = mapping.get(id(y), y)
    return out


def _plan(fn: Function, body: Region):
    """(candidates, condition ops, condition, the body's ops computing the bounds, decided value)
    for versioning ``body``, or None when there is nothing to version or the launch rules it out."""
    cands = _candidates(body)
    if not cands:
        return None
    cond_ops, cond = _cond(cands)
    bound_ops = {id(o) for _, s in cands for o in s}
    moved = [o for o in body.ops if id(o) in bound_ops]
    once = decide(fn, moved + cond_ops, cond)
    if once is not None:
        fn.attrs["single_trip"] = once
    if once is False:
        return None
    return cands, cond_ops, cond, moved, once


@register
class Versioning(Pass):
    name = "versioning"

    def run(self, fn: Function) -> None:
        changed = False
        for op in [o for o in fn.body.ops if o.name == "for"]:
            changed |= self._loop(fn, op)
        if not changed and not fn.attrs.get("persistent"):
            changed = self._body(fn)
        if changed:
            CommonSubexpressionElimination().run(fn)
            DeadCodeElimination().run(fn)

    def _loop(self, fn: Function, loop: Op) -> bool:
        """Version a top-level loop on its inner loops running once."""
        body = loop.regions[0]
        plan = _plan(fn, body)
        if plan is None:
            return False
        cands, cond_ops, cond, moved, once = plan
        bound_ops = {id(o) for o in moved}
        region = loop.parent
        body.ops = [o for o in body.ops if id(o) not in bound_ops]
        at = region.ops.index(loop)
        region.ops[at:at] = moved + ([] if once else cond_ops)
        for o in region.ops[at:at + len(moved) + len(cond_ops)]:
            o.parent = region
        mapping: dict = {}
        args = [Value(a.type, a.name) for a in body.args]
        for a, b in zip(body.args, args):
            mapping[id(a)] = b
        fast = loop_like(loop, args, _inline(body.ops, cands, mapping))
        if once:
            _replace(fn, region, loop, fast)
        else:
            for a, b in zip(loop.results, fast.results):
                b.name = a.name
            versions_if(fn, loop, cond, fast, loop)
        return True

    def _body(self, fn: Function) -> bool:
        """Version the kernel body (no top-level loop to version) on its loops running once."""
        body = fn.body
        plan = _plan(fn, body)
        if plan is None:
            return False
        cands, cond_ops, cond, moved, once = plan
        bound_ops = {id(o) for o in moved}
        ret = body.ops[-1]
        rest = [o for o in body.ops[:-1] if id(o) not in bound_ops]
        fast = _inline(rest, cands, {})
        if once:
            body.ops = moved + fast + [ret]
        else:
            fast.append(Op("yield", [], [], loc=ret.loc))
            slow = rest + [Op("yield", [], [], loc=ret.loc)]
            outer = Op("if", [cond], [], regions=[region_of([], fast), region_of([], slow)], loc=ret.loc)
            body.ops = moved + cond_ops + [outer, ret]
        for o in body.ops:
            o.parent = body
        return True


def _replace(fn, region, loop, new) -> None:
    """``new`` takes ``loop``'s place and its results' uses."""
    for a, b in zip(loop.results, new.results):
        b.name = a.name
    region.ops[region.ops.index(loop)] = new
    new.parent = region
    replace_all_uses(fn, loop.results, new.results)


