"""Common subexpression elimination.

Guarantees: two ops without effects or regions, with the same name, operands, attributes and
result types, where the first dominates the second (same region earlier, or an enclosing
region), compute the same value: uses of the second are replaced by the first, which then leaves
the second dead (``dce`` removes it).  Tile loads (``load_tile``, ``gather_rows``) are merged the
same way when nothing that may write the kernel argument they read runs between them (a store,
scatter or atomic into it, in between or anywhere in a loop around the second).  Distinct
arguments are taken not to overlap unless the function has ``may_alias = true``: the launch
checks the arrays it passes and compiles such a specialization when two of them share memory;
then any write ends every earlier load's reuse.  Two loads of a dot operand staged in L1 are not
merged when one of them starts a loop (a ``for``'s initial carried value): the loop builds it in
its own carried buffer, and nothing could copy an L1 tile there (a UB tile is copied).  Block
splats and constants are never merged: making one again is one vector instruction, while keeping the
first alive until the second's uses holds a tile of on-chip memory all that time (and a tile that
starts a loop is built in that loop's carried buffer).
"""
from __future__ import annotations

from tritonpu.ir import Function, Region
from tritonpu.ir.ops import SCHEDULING_ATTRS
from tritonpu.passes.rewrite import TILE_LOADS, root, written_by
from tritonpu.passes.manager import Pass, register


def _freeze(v):
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, float):        # by its text: -0.0 is not 0.0 (they compare equal), nan is nan
        return ("float", repr(v))
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
        self.may_alias = bool(fn.attrs.get("may_alias"))
        self.fn = fn
        self.inits = {id(v) for o in fn.walk() if o.name == "for" for v in o.operands[3:]}
        self._homes = None
        self._region(fn.body, {}, mapping)
        replace_uses(fn, mapping)

    def _l1_loop_start(self, a, b) -> bool:
        """Loads ``a`` and ``b`` stage a dot operand in L1 and one of them starts a loop."""
        if id(a.result) not in self.inits and id(b.result) not in self.inits:
            return False
        if self._homes is None:             # (the analysis only when such a pair turns up)
            from tritonpu.codegen.analysis import L1, Analysis
            from tritonpu.errors import CompilationError
            try:
                home = Analysis(self.fn).home
            except CompilationError:        # code generation will say what it cannot do
                home = {}
            self._homes = {k for k, h in home.items() if h == L1}
        return id(a.result) in self._homes or id(b.result) in self._homes

    def _forget(self, seen: dict, written: set) -> None:
        """Drop the loads whose argument one of ``written`` (ids, None: unknown) may be."""
        if not written:
            return
        for key in [k for k in seen if k[0] in TILE_LOADS]:
            if self.may_alias or None in written or key[-1] is None or key[-1] in written:
                del seen[key]

    def _region(self, region: Region, seen: dict, mapping: dict) -> None:
        seen = dict(seen)
        for op in region.ops:
            operands = [mapping.get(id(v), v) for v in op.operands]
            if op.regions:
                written = set().union(*(written_by(r.ops) for r in op.regions))
                if op.name in ("for", "while"):      # a later trip runs after the loop's own writes
                    self._forget(seen, written)
                for r in op.regions:
                    self._region(r, seen, mapping)
                self._forget(seen, written)
            d = op.opdef
            load = op.name in TILE_LOADS
            if not load and d.effects:
                self._forget(seen, written_by([op]))
            if (d.effects and not load) or d.terminator or op.regions or not op.results:
                continue
            key = (op.name, tuple(id(v) for v in operands),
                   tuple(sorted((k, _freeze(v)) for k, v in op.attrs.items() if k not in SCHEDULING_ATTRS)),
                   tuple(str(r.type) for r in op.results))
            if load:
                arg = root(operands[0])
                key += (id(arg) if arg is not None else None,)
            prev = seen.get(key)
            if prev is None:
                seen[key] = op
                continue
            if load and self._l1_loop_start(prev, op):
                continue
            if op.name in ("splat", "constant") and op.results[0].type.is_block:
                continue        # made again where it is needed: one tile kept alive in between costs more
            for old, new in zip(op.results, prev.results):
                mapping[id(old)] = new
