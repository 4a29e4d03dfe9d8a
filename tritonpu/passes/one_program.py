"""One program per core: a program loop that gives no core a second trip carries nothing over.

The persistent loop (persistent.py) runs ``for pid in range(core, programs, cores)`` on every core.
A launch whose grid has no more programs than the launch has cores -- a matmul of 16 tiles on 24
cores, a row reduction of 24 rows with a program per row -- runs that loop once per core (or not
at all), yet the sync pass carried flags over its back edge for a next trip that never comes --
each pair set before the loop, set again at the trip's end and drained after the loop (a
256x256x64 fp32 matmul on 16 programs: 12 sets before its loop, 12 drains after it) -- and
ordered its body after hazards from that trip's end.

Guarantee.  When the program loop ``P`` is still the one persistent.py made -- its bounds the
core's id, the product of the grid's sizes and the launch's cores; not the tiles of grid-stride
nor the dealt programs of balance -- and the launch's values give ``programs <= cores`` (a guard,
recorded either way: a launch that answers otherwise compiles again), ``P`` gets ``one_trip =
true``.  It is emitted as a ``Loop`` that runs once at most (``asmlist.Loop.one_trip``): the sync
pass carries no flags over it and lets no hazard reach its body over the back edge, so the body
starts from what was before the loop, each of its pairs set right before its wait.  The loop stays
a loop, so the double-buffer pass still issues its first loads before it (turning it into a
branch lost that: a row reduction whose last load then waited for its column loop ran 569 -> 653
cycles).  The ops, their order and their cores are unchanged: results are bitwise the same.
Nothing changes without the launch's values (``tritonpu opt``).

Measured (a probe of 40 kernels, 195 launches with the sanitizer on, against the code before;
with a persistent kernel's whole program, which runs once per core, also marked ``one_trip``):
119 faster (up to 3.96%: the 256x256x64 matmul above 1280 -> 1257 cycles, 2 x 256^2 x 64 batched
2062 -> 2032; launches of more programs than cores by a few cycles, their program's start no
longer waiting for its own end), 64 unchanged, 11 slower: 8 by 0.46-1.49% -- a K loop that runs
once, where a pair set right after the first loads, before the loop, let the first L0 copy wait
for those loads alone; now set right before it, it waits for all of MTE2's queue -- and 3 by at
most 0.02%.  Geometric mean -0.32%.
"""
from __future__ import annotations

from tritonpu.ir import Function, Op
from tritonpu.passes.manager import Pass, register
from tritonpu.passes.persistent import CORES, GRID_ARGS, is_program_loop
from tritonpu.passes.specialize import for_a_launch, launch_scalars, record


class OneTrip:
    """The guard: whether a launch's grid has at most as many programs as it has cores."""

    def __init__(self, fn: Function):
        self.args = {id(a): a.name for a in fn.args if a.name in GRID_ARGS}
        self.args[CORES] = CORES        # (the accepted values are keyed on these names)
        self.expected = None

    def answer(self, scalars: dict):
        if any(name not in scalars for name in self.args.values()):
            return None
        gx, gy, gz = (int(scalars[g]) for g in GRID_ARGS)
        return gx * gy * gz <= int(scalars[CORES])

    def holds(self, scalars: dict) -> bool:
        return self.answer(scalars) == self.expected


@register
class OneProgram(Pass):
    name = "one-program"

    def run(self, fn: Function) -> None:
        if not fn.attrs.get("persistent") or not for_a_launch() or fn.attrs.get("grid_stride") or \
                fn.attrs.get("balanced"):
            return
        P = next((o for o in fn.body.ops if is_program_loop(o)), None)
        if P is None or not _made_by_persistent(fn, P):
            return
        guard = OneTrip(fn)
        guard.expected = guard.answer(launch_scalars())
        if guard.expected is None:
            return
        record(guard)
        if guard.expected:
            P.attrs["one_trip"] = True


def _made_by_persistent(fn: Function, P: Op) -> bool:
    """Whether ``P``'s bounds are persistent.py's: ``(program_id, grid_x * grid_y * grid_z,
    num_programs)`` at the function's top level, with no values carried."""
    if len(P.operands) != 3 or P.results:
        return False
    defs = {id(r): o for o in fn.body.ops for r in o.results}
    core, total, cores = (defs.get(id(v)) for v in P.operands)
    if None in (core, total, cores):
        return False
    grid = {id(a): a.name for a in fn.args if a.name in GRID_ARGS}
    if core.name != "program_id" or cores.name != "num_programs" or total.name != "mul":
        return False
    gxy = defs.get(id(total.operands[0]))
    names = [grid.get(id(total.operands[1]))] + ([grid.get(id(v)) for v in gxy.operands]
                                                 if gxy is not None and gxy.name == "mul" else [None])
    return sorted(n for n in names if n) == sorted(GRID_ARGS)
