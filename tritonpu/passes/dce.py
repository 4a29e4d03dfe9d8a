"""Dead code elimination.

Guarantees: every op without effects whose results are all unused is removed, in every region,
repeatedly until nothing more goes; ``for``/``if``/``while`` ops are removed when their results
are unused and their regions hold no op with effects. Ops with effects (loads, stores, atomics,
prints, asserts) and terminators are never removed.
"""
from __future__ import annotations

from tritonpu.ir import Function, Op, Region
from tritonpu.passes.manager import Pass, register


def _has_effects(op: Op) -> bool:
    if op.opdef.effects:
        return True
    return any(_has_effects(inner) for r in op.regions for inner in r.ops)


@register
class DeadCodeElimination(Pass):
    name = "dce"

    def run(self, fn: Function) -> None:
        while True:
            used = {id(v) for op in fn.walk() for v in op.operands}
            if not self._sweep(fn.body, used):
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
