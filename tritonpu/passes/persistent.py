"""Persistent per-core loops: each core runs the grid programs it is given as one loop.

Guarantees: the kernel body becomes ``for pid in range(core, programs, cores)`` where ``core`` and
``cores`` are the launch's own program id and size (the launch runs one program per core) and
``programs = grid_x * grid_y * grid_z`` of the user's grid, passed as three new scalar arguments
``__grid_x/y/z``; inside, ``program_id(axis)`` is ``pid``'s coordinate along ``axis`` (x fastest)
and ``num_programs(axis)`` the user's grid size, so every program runs exactly as before, on the
core the round-robin assignment gives it (program p on core p mod cores), in the same order --
until panel reuse gives each core a contiguous run of programs instead (program_runs.py: a
bijection of the same programs onto the same trips, chosen only where programs cannot see one
another's work).  The
function gets the attribute ``persistent = true``, which tells the launch to pass the grid and
start one program per core; each trip starts with ``set_program(pid)``, so the NPU's sanitizer and
error messages name the grid program that runs.  With the programs of a core in one loop, later passes can overlap a
program's loads with the previous program's work (double buffering) and hoist loads that do not
depend on the program id.
"""
from __future__ import annotations

from tritonpu.ir import Function, Op, Region, Value
from tritonpu.ir import types as T
from tritonpu.passes.manager import Pass, register

GRID_ARGS = ("__grid_x", "__grid_y", "__grid_z")
CORES = "__cores"       # the launch's core count, among its scalars for the compile (not an argument)


def is_program_loop(op) -> bool:
    """Whether ``op`` is the loop this pass makes: the programs a core runs, one per trip (its first
    op with effects is ``set_program``; before it, at most the pure ops that say which program a
    trip runs, see program_runs.py)."""
    if op.name != "for":
        return False
    first = next((o for o in op.regions[0].ops if o.opdef.effects or o.regions), None)
    return first is not None and first.name == "set_program"


@register
class PersistentLoop(Pass):
    name = "persistent"

    def run(self, fn: Function) -> None:
        if fn.attrs.get("persistent") or not any(op.name in ("program_id", "num_programs") or op.opdef.effects
                                                 for op in fn.walk()):
            return
        body = fn.body
        ret = body.ops[-1]
        loc = ret.loc
        grid = [Value(T.i32, n) for n in GRID_ARGS]
        fn.args.extend(grid)
        pre = []

        def mk(name, operands, ty, into, **attrs):
            o = Op(name, operands, [ty], attrs, loc=loc)
            into.append(o)
            return o.result

        core = mk("program_id", [], T.i32, pre, axis=0)
        cores = mk("num_programs", [], T.i32, pre, axis=0)
        gxy = mk("mul", [grid[0], grid[1]], T.i32, pre)
        total = mk("mul", [gxy, grid[2]], T.i32, pre)
        pid = Value(T.i32, "pid")
        head = [Op("set_program", [pid], [], loc=loc)]
        coords = [mk("rem", [pid, grid[0]], T.i32, head),
                  mk("rem", [mk("div", [pid, grid[0]], T.i32, head), grid[1]], T.i32, head),
                  mk("div", [pid, gxy], T.i32, head)]
        inner = body.ops[:-1]
        mapping = {}
        for op in list(_walk(inner)):
            if op.name == "program_id":
                mapping[id(op.result)] = coords[op.attrs["axis"]]
            elif op.name == "num_programs":
                mapping[id(op.result)] = grid[op.attrs["axis"]]
        for op in _walk(inner):
            op.operands = [mapping.get(id(v), v) for v in op.operands]
        region = Region([pid], head + inner + [Op("yield", [], [], loc=loc)])
        for o in region.ops:
            o.parent = region
        loop = Op("for", [core, total, cores], [], regions=[region], loc=loc)
        body.ops = pre + [loop, ret]
        for o in body.ops:
            o.parent = body
        fn.attrs["persistent"] = True


def _walk(ops):
    for op in ops:
        yield from op.walk()
