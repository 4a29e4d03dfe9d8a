"""Loop-invariant code motion: what every trip of a loop computes or loads alike happens once, before it.

Guarantees: pure ops (no effects, no regions; not ``program_id``/``num_programs``; not a block
splat that starts an inner loop's carried tile, which that loop builds in place) at the top
level of a ``for`` body whose operands are all defined outside the loop (or by such ops) move
before the loop, in order — a mask ``cols < n_cols``, an ``arange``, the scalar arithmetic of a
bound.  Then a ``load_tile``/``gather_rows`` at the top level of a ``for`` body whose operands are
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
from tritonpu.passes.rewrite import TILE_LOADS, invariant_slice, load_extents, root, written_by
from tritonpu.passes.manager import Pass, register


@register
class HoistLoads(Pass):
    name = "hoist"

    def run(self, fn: Function) -> None:
        may_alias = bool(fn.attrs.get("may_alias"))
        for loop in reversed([o for o in fn.walk() if o.name == "for"]):
            self._pure(fn, loop)
            body = loop.regions[0]
            written = written_by(body.ops)
            if None in written or (written and may_alias):
                continue
            for ld in [o for o in body.ops if o.name in TILE_LOADS]:
                arg = root(ld.operands[0])
                if arg is None or id(arg) in written:
                    continue
                slices = [invariant_slice(body, v) for v in ld.operands]
                if any(s is None for s in slices):
                    continue
                self._hoist(fn, loop, ld, {id(o) for s in slices for o in s})

    @staticmethod
    def _pure(fn: Function, loop: Op) -> None:
        body = loop.regions[0]
        inside = {id(a) for a in body.args}
        for o in body.ops:
            inside.update(id(r) for r in o.results)
        moved, out = [], set()
        # a block splat that starts an inner loop's carried tile is built in that tile's buffer;
        # hoisted, it would be a whole tile kept alive and copied in every trip
        starts = {id(v) for o in body.ops if o.name == "for" for v in o.operands[3:]}
        for o in body.ops:
            if o.regions or o.opdef.effects or o.opdef.terminator or not o.results or \
                    o.name in ("program_id", "num_programs"):
                continue
            if o.name in ("splat", "constant") and o.results[0].type.is_block and id(o.results[0]) in starts:
                continue
            if all(id(v) not in inside or id(v) in out for v in o.operands):
                moved.append(o)
                out.update(id(r) for r in o.results)
        if moved:
            _move_before(fn, loop, moved, check=any(v.type.is_block for o in moved for v in o.results))

    @staticmethod
    def _hoist(fn: Function, loop: Op, ld: Op, need: set) -> None:
        saved_operands = list(ld.operands)
        moved = [o for o in loop.regions[0].ops if id(o) in need]
        guard: list = []

        def mk(name, operands, ty, **attrs):
            o = Op(name, operands, [ty], attrs, loc=ld.loc)
            guard.append(o)
            return o.result

        runs = mk("cmp", loop.operands[:2], T.i1, pred="lt")
        for k, full in load_extents(ld):
            v = ld.operands[k]
            ld.operands[k] = mk("select", [runs, v, mk("constant", [], v.type, value=full)], v.type)
        if not _move_before(fn, loop, moved + guard + [ld], check=True):
            ld.operands = saved_operands


def _move_before(fn: Function, loop: Op, ops: list, check: bool) -> bool:
    """Put ``ops`` (from the loop's body, or new) right before ``loop``, in order.  With ``check``,
    undo it and return False when the function's blocks then no longer fit on chip."""
    from tritonpu.passes.buffer_planning import plan
    body, region = loop.regions[0], loop.parent
    saved_body, saved_region = list(body.ops), list(region.ops)
    ids = {id(o) for o in ops}
    body.ops = [o for o in body.ops if id(o) not in ids]
    at = region.ops.index(loop)
    region.ops[at:at] = ops
    for o in ops:
        o.parent = region
    if check:
        try:
            plan(fn)
        except CompilationError:
            body.ops, region.ops = saved_body, saved_region
            for o in body.ops:
                o.parent = body
            return False
    return True
