"""Dead code elimination.

Guarantees: every op without effects whose results are all unused is removed, in every region,
repeatedly until nothing more goes; ``for``/``if``/``while`` ops are removed when their results
are unused and their regions hold no op with effects; a tile load (``load_tile``, ``gather_rows``:
reads only) whose result is unused goes too, as Triton drops an unused load; a value a ``for`` loop carries is removed
(init, region argument, result, and the ops that only advance it) when its result is unused and
the loop uses it for nothing but computing its own next value; results of an ``if`` nothing uses
are removed with the values its branches yield for them. Other ops with effects (``load``,
stores, atomics, prints, asserts) and terminators are never removed.
"""
from __future__ import annotations

from tritonpu.ir import Function, Op, Region
from tritonpu.passes.rewrite import TILE_LOADS as _READS
from tritonpu.passes.manager import Pass, register


def _has_effects(op: Op) -> bool:
    if op.opdef.effects and op.name not in _READS:
        return True
    return any(_has_effects(inner) for r in op.regions for inner in r.ops)


@register
class DeadCodeElimination(Pass):
    name = "dce"

    def run(self, fn: Function) -> None:
        while True:
            used = {id(v) for op in fn.walk() for v in op.operands}
            changed = self._sweep(fn.body, used)
            # who uses what, once per round: what a prune below removes only makes it stale on
            # the safe side (a use that is gone still counts); the next round sees the rest
            users: dict = {}
            for o in fn.walk():
                for v in o.operands:
                    users.setdefault(id(v), []).append(o)
            for op in list(fn.walk()):
                if op.name == "for":
                    changed |= _prune_carried(op, users)
                elif op.name == "if":
                    changed |= _prune_if_results(op, users)
            if not changed:
                return

    def _sweep(self, region: Region, used: set) -> bool:
        changed = False
        keep = []
        for op in region.ops:
            for r in op.regions:
                changed |= self._sweep(r, used)
            if not op.opdef.terminator and not _has_effects(op) and not any(id(res) in used for res in op.results):
                changed = True
                continue
            keep.append(op)
        region.ops = keep
        return changed


def _prune_if_results(op: Op, users: dict) -> bool:
    """Drop results of an if that nothing uses (and what its branches yield for them)."""
    dead = [i for i, r in enumerate(op.results) if not users.get(id(r))]
    for i in reversed(dead):
        for region in op.regions:
            del region.terminator.operands[i]
        del op.results[i]
    for j, r in enumerate(op.results):
        r.index = j
    return bool(dead)


def _prune_carried(op: Op, users: dict) -> bool:
    """Drop carried values of a for loop that only feed their own next value."""
    body = op.regions[0]
    term = body.terminator
    changed = False
    for i in reversed(range(len(op.results))):
        res, arg, nxt = op.results[i], body.args[i + 1], term.operands[i]
        if users.get(id(res)):
            continue
        # the ops of the body whose results feed nothing but nxt's computation (a value yielded
        # for two carries feeds the other one too -- unless it comes from outside the body:
        # then nothing of the body computes it)
        if sum(x is nxt for x in term.operands) > 1 and any(o is nxt.owner for o in body.ops):
            continue
        chain: set = set()
        grew = True
        while grew:
            grew = False
            for o in body.ops:
                if id(o) in chain or o.regions or o.opdef.effects or o.opdef.terminator or not o.results:
                    continue
                uses = [u for r in o.results for u in users.get(id(r), [])]
                if o is nxt.owner:
                    ok = all(u is term for u in uses)
                else:
                    ok = bool(uses) and all(id(u) in chain for u in uses)
                if ok:
                    chain.add(id(o))
                    grew = True
        if any(id(u) not in chain and not (u is term and term.operands.index(arg) == i
                                           if arg in term.operands else False)
               for u in users.get(id(arg), [])):
            continue
        body.ops = [o for o in body.ops if id(o) not in chain]
        del term.operands[i]
        del body.args[i + 1]
        del op.results[i]
        del op.operands[3 + i]
        for j, r in enumerate(op.results):
            r.index = j
        changed = True
    return changed


@register
class Cleanup(Pass):
    """canonicalize, cse and dce again, after passes that clone code (double buffering)."""
    name = "cleanup"

    def run(self, fn: Function) -> None:
        from tritonpu.passes.canonicalize import Canonicalize
        from tritonpu.passes.cse import CommonSubexpressionElimination
        Canonicalize().run(fn)
        CommonSubexpressionElimination().run(fn)
        DeadCodeElimination().run(fn)
