"""Loop unswitching: a branch on a loop-invariant condition becomes two versions of the loop.

Guarantees: a ``for`` loop whose body holds (at its top level) an ``if`` whose condition is computed,
by pure ops, only from values defined outside the loop, is replaced by
``if cond { loop with the if's then-region in its place } else { loop with its else-region }``;
the condition's ops move before the loop.  Each version computes exactly what the original did on
the trips it runs (the condition is the same on every trip).  Memory analysis guards structured
transfers with such conditions (``x % m`` offsets that do not wrap around); unswitching gives the
fast version straight-line loads that double buffering and the cube path can use.  A loop already
inside a version on the same condition (a second access guarded alike) takes that version's
branch, with no second ``if``.  Innermost loops first; at most one branch per loop per run, and
only loops whose body stays small (no nested loop).
"""
from __future__ import annotations

from tritonpu.ir import Function, Op, Region
from tritonpu.passes.rewrite import clone, clone_op, invariant_slice, loop_like, replace_all_uses, sink_into_branches
from tritonpu.passes.manager import Pass, register


def _version(loop: Op, guard: Op, branch: int) -> Op:
    """A copy of ``loop`` with ``guard`` replaced by the ops of its region ``branch``."""
    mapping: dict = {}
    body = loop.regions[0]
    args = [type(a)(a.type, a.name) for a in body.args]
    for a, b in zip(body.args, args):
        mapping[id(a)] = b
    ops: list = []
    for o in body.ops:
        if o is guard:
            region = guard.regions[branch]
            clone(region.ops[:-1], mapping, ops)
            for r, y in zip(guard.results, region.ops[-1].operands):
                mapping[id(r)] = mapping.get(id(y), y)
            continue
        ops.append(clone_op(o, mapping))
    return loop_like(loop, args, ops)


def versions_if(fn: Function, loop: Op, cond, then_loop: Op, else_loop: Op) -> Op:
    """Put ``if cond { then_loop } else { else_loop }`` (each branch yielding its loop's results)
    in ``loop``'s place; what used ``loop``'s results uses the if's (``else_loop`` may be ``loop``)."""
    region = loop.parent
    regions = []
    for v in (then_loop, else_loop):
        r = Region([], [v, Op("yield", list(v.results), [], loc=loop.loc)])
        for o in r.ops:
            o.parent = r
        regions.append(r)
    outer = Op("if", [cond], [r.type for r in loop.results], regions=regions, loc=loop.loc)
    for a, b in zip(loop.results, outer.results):
        b.name = a.name
    region.ops[region.ops.index(loop)] = outer
    outer.parent = region
    mapping = {id(a): b for a, b in zip(loop.results, outer.results)}
    yields = {id(r.ops[-1]) for r in regions}
    for o in fn.walk():
        if id(o) not in yields:
            o.operands = [mapping.get(id(x), x) for x in o.operands]
    return outer


def _decided(op: Op, cond):
    """0 or 1 when ``op`` lies in the then- or else-branch of an ``if`` on ``cond`` itself (a version
    an earlier unswitch made on the same condition), else None."""
    while op.parent is not None and op.parent.parent is not None:
        region, outer = op.parent, op.parent.parent
        if outer.name == "if" and outer.operands[0] is cond:
            return outer.regions.index(region)
        op = outer
    return None


@register
class Unswitch(Pass):
    name = "unswitch"

    def run(self, fn: Function) -> None:
        changed = True
        while changed:
            changed = False
            for loop in reversed([o for o in fn.walk() if o.name == "for"]):
                if self._unswitch(fn, loop):
                    changed = True
                    break

    def _unswitch(self, fn: Function, loop: Op) -> bool:
        body = loop.regions[0]
        if any(o.name in ("for", "while") for top in body.ops for o in top.walk()):
            return False
        for guard in body.ops:
            if guard.name != "if":
                continue
            cond_ops = invariant_slice(body, guard.operands[0])
            if cond_ops is None:
                continue
            known = _decided(loop, guard.operands[0])
            if known is not None:       # inside a version already: the branch that version took
                one = _version(loop, guard, known)
                loop.parent.ops[loop.parent.ops.index(loop)] = one
                one.parent = loop.parent
                replace_all_uses(fn, loop.results, one.results)
                return True
            region = loop.parent
            # the condition's ops move before the loop (they read only values defined there)
            body.ops = [o for o in body.ops if o not in cond_ops]
            at = region.ops.index(loop)
            region.ops[at:at] = cond_ops
            for o in cond_ops:
                o.parent = region
            outer = versions_if(fn, loop, guard.operands[0], _version(loop, guard, 0), _version(loop, guard, 1))
            sink_into_branches(fn, region, outer)
            return True
        return False
