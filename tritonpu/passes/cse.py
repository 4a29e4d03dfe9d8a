"""Common subexpression elimination.

Guarantees: two ops without effects or regions, with the same name, operands, attributes and
result types, where the first dominates the second (same region earlier, or an enclosing
region), compute the same value: uses of the second are replaced by the first, which then leaves
the second dead (``dce`` removes it).
"""
from __future__ import annotations

from tritonpu.ir import Function, Region
from tritonpu.passes.manager import Pass, register


def _freeze(v):
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, float) and v != v:
        return ("nan",)
    return (type(v).__name__, v)


def replace_uses(fn: Function, mapping: dict) -> None:
    """Replace every operand ``v`` with ``mapping[id(v)]`` where present."""
    if not mapping:
        return
    for op in fn.walk():
        op.operands = [mapping.get(id(v), v) for v in op.operands]


@register
class CommonSubexpressionElimination(Pass):
    name = "cse"

    def run(self, fn: Function) -> None:
        mapping: dict = {}
        self._region(fn.body, {}, mapping)
        replace_uses(fn, mapping)

    def _region(self, region: Region, seen: dict, mapping: dict) -> None:
        seen = dict(seen)
        for op in region.ops:
            operands = [mapping.get(id(v), v) for v in op.operands]
            for r in op.regions:
                self._region(r, seen, mapping)
            d = op.opdef
            if d.effects or d.terminator or op.regions or not op.results:
                continue
            key = (op.name, tuple(id(v) for v in operands),
                   tuple(sorted((k, _freeze(v)) for k, v in op.attrs.items())),
                   tuple(str(r.type) for r in op.results))
            prev = seen.get(key)
            if prev is None:
                seen[key] = op
                continue
            for old, new in zip(op.results, prev.results):
                mapping[id(old)] = new
