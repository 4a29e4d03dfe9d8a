"""Loop-invariant loads: a tile every trip of a loop loads alike is loaded once, before the loop.

Guarantees: a ``load_tile``/``gather_rows`` at the top level of a ``for`` body whose operands are
computed, by pure ops, only from values defined outside the loop, and which reads a kernel
argument nothing in the loop writes (with ``may_alias = true``: a loop that writes nothing), moves
before the loop with the ops computing its operands; the loop's trips then use that one tile.
When the loop runs no trip the hoisted load reads nothing (its last valid extent is 0, the others
full), so it never touches memory the loop would not have.  Innermost loops first, so a load
invariant in two loops leaves both.  A hoisted tile stays on chip for the whole loop: if the
space does not allow that, the load stays where it was.  With the persistent loop this is a
weight, bias or LayerNorm ``w``/``b`` row loaded once per core instead of once per program.
"""
from __future__ import annotations

from tritonpu.errors import CompilationError
from tritonpu.ir import Function, Op
from tritonpu.ir import types as T
from tritonpu.passes.double_buffer import _LOADS, _extents, _root, _written_roots
from tritonpu.passes.manager import Pass, register
from tritonpu.passes.unswitch import _invariant_slice


@register
class HoistLoads(Pass):
    name = "hoist"

    def run(self, fn: Function) -> None:
        may_alias = bool(fn.attrs.get("may_alias"))
        for loop in reversed([o for o in fn.walk() if o.name == "for"]):
            body = loop.regions[0]
            written = _written_roots(body)
            if None in written or (written and may_alias):
                continue
            for ld in [o for o in body.ops if o.name in _LOADS]:
                root = _root(ld.operands[0])
                if root is None or id(root) in written:
                    continue
                slices = [_invariant_slice(body, v) for v in ld.operands]
                if any(s is None for s in slices):
                    continue
                self._hoist(fn, loop, ld, {id(o) for s in slices for o in s})

    @staticmethod
    def _hoist(fn: Function, loop: Op, ld: Op, need: set) -> None:
        from tritonpu.passes.buffer_planning import plan
        body, region = loop.regions[0], loop.parent
        saved_body, saved_region, saved_operands = list(body.ops), list(region.ops), list(ld.operands)
        moved = [o for o in body.ops if id(o) in need]
        guard: list = []

        def mk(name, operands, ty, **attrs):
            o = Op(name, operands, [ty], attrs, loc=ld.loc)
            guard.append(o)
            return o.result

        runs = mk("cmp", loop.operands[:2], T.i1, pred="lt")
        for k, full in _extents(ld):
            v = ld.operands[k]
            ld.operands[k] = mk("select", [runs, v, mk("constant", [], v.type, value=full)], v.type)
        body.ops = [o for o in body.ops if id(o) not in need and o is not ld]
        at = region.ops.index(loop)
        region.ops[at:at] = moved + guard + [ld]
        for o in moved + guard + [ld]:
            o.parent = region
        try:
            plan(fn)
        except CompilationError:
            body.ops, region.ops, ld.operands = saved_body, saved_region, saved_operands
            for o in body.ops:
                o.parent = body
