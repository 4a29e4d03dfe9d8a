"""Grid-stride loops as programs: a kernel that loops over its own tiles runs them as the core's programs.

Kernels written for one program per core (triton-ascend's usual launch, ``grid = (num_cores,)``;
Triton's persistent matmul, tutorial 09) loop over the tiles a program owns::

    for tile in range(tl.program_id(0), num_tiles, NUM_CORES):     # or tl.num_programs(0)
        ...                                                           # one tile

or, after ``unflatten``, ``tile = pid - S; for t in range(T(pid)): tile += S; ...``.  Under the
persistent loop (persistent.py) each core then runs one program and the tiles in a loop of the
kernel's own, which the passes that work across a core's programs -- panel reuse (a dot operand's
L1 tiles kept for the next tile), the L0C ring, prefetching the next program's first tiles -- do not
see: Triton's persistent matmul at 1024^3, 128x128x64, ran 21590 cycles against 19389 for the same
tiles as a grid of programs.

Guarantee.  In a persistent kernel whose program loop ``P`` (``for v in range(core, G, cores)``,
``G`` the grid) holds, after its head, only pure ops and then, last, a ``for`` loop ``L`` (i32
bounds) that carries either nothing (its tile is its induction variable) or one scalar ``x``
advanced as ``x1 = x + s`` and yielded (its tile is ``x1``; ``x`` read by nothing else, ``s`` the
same for every program), and whose body reads no other value computed from the program id and
makes no atomic access (the cores' atomics would meet in another order: float sums round
otherwise): when
the launch's values give -- evaluated for every program ``p`` at once -- a 1-D grid with one
program per core (``G == cores``), every program's tiles as ``p, p + G, p + 2G, ...``, and a
scalar ``E`` the kernel computes without the program id (``L``'s bound, or another value: Triton's
``num_tiles``) such that program ``p`` has ``ceil((E - p) / G)`` tiles (so the tiles of all
programs are ``0 .. E-1``, each once), with ``E > G``: ``P`` runs ``v`` over ``range(core, E,
cores)``, each trip the program ``p = v mod G`` (``set_program`` names it) and the body of ``L``'s
trip ``v div G`` with the tile ``v`` (and L's counter ``lb + (v div G) * step``).  Core ``c`` then runs program ``c``'s tiles in the same
order, and nothing else: every effect happens as before, in the same order on the same core (the
ops before ``L`` are pure; they run again per tile).  The decision is a guard: a launch whose
values decide otherwise compiles again.  The function gets ``grid_stride = true``: program balance
and the runs of program_runs.py, which would move a program's tiles to other cores, leave it
alone.  Nothing changes otherwise.

Measured (1024^3 fp16, 24 cores): Triton's persistent matmul 21590 -> 19860 cycles at 128x128x64
(panel reuse keeps A's panels), 64x64x32 37766 -> 23193; at 128x256x64, which the cube paces and
which gets no panel, 21679 -> 22316 (the cores' first reads from DDR shift); a vector add written
this way 11932 -> 11922, its own loop was already double-buffered.
"""
from __future__ import annotations

import numpy as np

from tritonpu.ir import Function, Op, Value
from tritonpu.ir import types as T
from tritonpu.passes.manager import Pass, register
from tritonpu.passes.persistent import CORES, GRID_ARGS, is_program_loop
from tritonpu.passes.rewrite import clone_op, users_of
from tritonpu.passes.specialize import for_a_launch, lanes, launch_scalars, record
from tritonpu.ref.evaluator import EVAL


@register
class GridStride(Pass):
    name = "grid-stride"

    def run(self, fn: Function) -> None:
        if not fn.attrs.get("persistent") or not for_a_launch() or fn.attrs.get("grid_stride"):
            return
        P = next((o for o in fn.body.ops if is_program_loop(o)), None)
        if P is None:
            return
        m = _match(fn, P)
        if m is None:
            return
        tiles = Tiles.of(fn, P, m)
        if tiles is None or not tiles.holds(launch_scalars()):
            return
        record(tiles)
        _rewrite(fn, P, m, tiles.count)
        fn.attrs["grid_stride"] = True
        loc = m.L.loc
        at = f" (line {loc.line})" if getattr(loc, "line", None) else ""
        fn.__dict__["program_order_note"] = (
            f"grid-stride: the loop over the tiles a program owns{at} runs each tile as one of its core's "
            f"programs (the same tiles, on the same core, in the same order), so the optimizations across a "
            f"core's programs apply to it; disable_passes=(\"grid-stride\",) keeps the loop")


class _Match:
    """The tile loop ``L`` of the program loop: its bounds, and for a carried tile its initial value
    ``x0``, its step ``s`` and the op ``x1 = x + s`` (``tile_op``; None: the tile is L's counter)."""

    def __init__(self, L: Op, tile_op):
        self.L, self.tile_op = L, tile_op
        self.bounds = list(L.operands[:3])
        if tile_op is not None:
            self.x0, self.s = L.operands[3], _step_of(tile_op, L.regions[0].args[1])


def _step_of(add: Op, x: Value) -> Value:
    return add.operands[1] if add.operands[0] is x else add.operands[0]


def _match(fn: Function, P: Op):
    body = P.regions[0]
    ops = body.ops[:-1]                             # (the yield)
    k = next(i for i, o in enumerate(ops) if o.name == "set_program")
    if not ops or ops[-1].name != "for":
        return None
    L, pre = ops[-1], ops[k + 1:-1]
    if any(o.opdef.effects or any(x.opdef.effects for x in o.walk()) for o in pre):
        return None
    if L.results and any(users_of(fn).get(id(r)) for r in L.results):
        return None
    if any(o.name.startswith("atomic") or o.attrs.get("atomic") for o in L.walk()):
        return None         # (cores' atomics meet in another order: float sums round otherwise)
    iv, *carried = L.regions[0].args
    if iv.type != T.i32 or len(carried) > 1 or any(x.type != T.i32 for x in L.operands[:3]):
        return None
    tile_op = None
    inner = L.regions[0].ops
    users = users_of(fn)
    if carried:
        x = carried[0]
        uses = users.get(id(x), [])
        tile_op = uses[0][0] if len(uses) == 1 else None
        if tile_op is None or tile_op.name != "add" or tile_op.parent is not L.regions[0] or x.type != T.i32 or \
                inner[-1].operands != [tile_op.result]:
            return None
    # the body reads the program id only through its tile (and L's bounds)
    dep = _program_dependent(P, L)
    inside = {id(r) for o in L.walk() for r in o.results} | {id(a) for o in L.walk() for r in o.regions
                                                              for a in r.args}
    for o in L.walk():
        if o is L:
            continue
        if any(id(v) in dep and id(v) not in inside for v in o.operands):
            return None
    return _Match(L, tile_op)


def _program_dependent(P: Op, L: Op) -> set:
    """ids of the values of P's body before ``L`` computed from its induction variable (the program)."""
    dep = {id(P.regions[0].args[0])}
    for o in P.regions[0].ops:
        if o is L:
            break
        if any(id(v) in dep for x in o.walk() for v in x.operands):
            dep.update(id(r) for r in o.results)
    return dep


class Tiles:
    """Every program's tiles for a launch's scalar values: a guard for the compile that took the
    rewrite (``args``, ``holds``).  Its ops are copies (later passes change the function's)."""

    def __init__(self, pid, ops, values, args, bform, counts):
        self.pid, self.ops, self.values, self.args, self.bform = pid, ops, values, args, bform
        self.counts = counts        # [(the kernel's value, its copy)]: candidates for the tile count
        self.count = None           # the kernel's value that is the tile count at this launch

    @classmethod
    def of(cls, fn: Function, P: Op, m: _Match):
        pid = P.regions[0].args[0]
        wanted = m.bounds + ([m.x0, m.s] if m.tile_op is not None else [])
        sl = _slice(fn, P, wanted)
        if sl is None:
            return None
        order, args = sl
        # candidates for the number of tiles: L's bound, then the program-independent scalars the
        # kernel computes before L, then its scalar arguments (each verified at every launch)
        dep = _program_dependent(P, m.L)
        cands = [m.bounds[1]] + [r for o in P.regions[0].ops if o is not m.L and o.name != "set_program"
                                 for r in o.results] + list(fn.args)
        counts = []
        for c in cands:
            if id(c) in dep or c.type != T.i32 or any(c is x for x in counts):
                continue
            csl = _slice(fn, P, [c])
            if csl is None:
                continue
            order += [o for o in csl[0] if o not in order]
            args.update(csl[1])
            counts.append(c)
        for g in GRID_ARGS:
            args[id(next(x for x in fn.args if x.name == g))] = g
        args[CORES] = CORES         # (a launch's cores decide too: the accepted values are keyed on these)
        ordered = [o for o in P.regions[0].ops if o in order]      # (program order)
        mapping: dict = {}
        ops = [clone_op(o, mapping) for o in ordered]
        return cls(pid, ops, [mapping.get(id(v), v) for v in wanted], args, m.tile_op is not None,
                   [(c, mapping.get(id(c), c)) for c in counts])

    def holds(self, scalars: dict) -> bool:
        """Whether the rewrite applies for these values -- the tile count taken (``count``) the
        first candidate that is it, as at the compile."""
        count = self._count(scalars)
        if self.count is None:
            self.count = count
        return count is not None and count is self.count

    def _count(self, scalars: dict):
        if any(name not in scalars for name in self.args.values()) or CORES not in scalars:
            return None
        gx, gy, gz = (int(scalars[g]) for g in GRID_ARGS)
        if gy != 1 or gz != 1 or gx != int(scalars[CORES]) or gx < 1:
            return None
        env = {k: scalars[n] for k, n in self.args.items() if k != CORES}
        env[id(self.pid)] = np.arange(gx, dtype=np.int32)
        lanes(self.ops, env, gx)

        def of(v):
            return np.broadcast_to(np.asarray(env[id(v)], dtype=np.int64), (gx,))

        lb, ub, step = (of(v) for v in self.values[:3])
        if (step <= 0).any():
            return None
        n = np.maximum(0, -(-(ub - lb) // step))
        first, stride = (of(self.values[3]) + of(self.values[4]), of(self.values[4])) if self.bform else (lb, step)
        p = np.arange(gx)
        if not ((n == 0) | ((first == p) & ((n == 1) | (stride == gx)))).all():
            return None
        for c, copy in self.counts:
            e = of(copy)
            if e[0] > gx and (n == np.maximum(0, -(-(e[0] - p) // gx))).all():
                return c
        return None


def _slice(fn: Function, P: Op, wanted: list):
    """(the ops of P's body computing ``wanted`` from the program and scalar arguments, in order;
    id(argument) -> name), or None when they are not pure scalar ops of those."""
    body = P.regions[0]
    pid = body.args[0]
    defs = {id(r): o for o in body.ops for r in o.results}
    names = {id(a): a.name for a in fn.args}
    order, seen, args = [], set(), {}

    def visit(v) -> bool:
        if id(v) in seen or v is pid:
            return True
        seen.add(id(v))
        if id(v) in names:
            if v.type.is_block or v.type.is_ptr:
                return False
            args[id(v)] = names[id(v)]
            return True
        o = defs.get(id(v))
        if o is None or not _scalar_pure(o) or not all(visit(x) for x in _reads(o)):
            return False
        order.append(o)
        return True

    return (order, args) if all(visit(v) for v in wanted) else None


def _scalar_pure(o: Op) -> bool:
    """A pure op of scalars (an ``if`` whose branches hold only such ops and yields)."""
    if o.opdef.effects or any(r.type.is_block for r in o.results) or \
            (o.name not in ("constant", "if") and o.name not in EVAL):
        return False
    return all(x.name == "yield" or _scalar_pure(x) for r in o.regions for x in r.ops)


def _reads(o: Op) -> list:
    """The values ``o`` reads from outside it (its operands and its regions' free values)."""
    inside = {id(a) for x in o.walk() for r in x.regions for a in r.args} | \
        {id(r) for x in o.walk() if x is not o for r in x.results}
    return [v for x in o.walk() for v in x.operands if id(v) not in inside]


def _rewrite(fn: Function, P: Op, m: _Match, count: Value) -> None:
    body = P.regions[0]
    v = body.args[0]
    loc = P.loc
    gx = next(x for x in fn.args if x.name == GRID_ARGS[0])

    def mk(name, operands, into, ty=T.i32, **attrs):
        o = Op(name, operands, [ty], attrs, loc=loc)
        into.append(o)
        return o.result

    # the tiles: ``count`` of them, computed again before P (it is the same for every program)
    top: list = []
    mapping = {id(v): mk("constant", [], top, value=0)}
    top += [clone_op(o, mapping) for o in _slice(fn, P, [count])[0]]
    at = fn.body.ops.index(P)
    fn.body.ops[at:at] = top
    for o in top:
        o.parent = fn.body
    P.operands[1] = mapping.get(id(count), count)
    # the program and its tile's trip of L
    head: list = []
    p = mk("rem", [v, gx], head)
    for o in body.ops:
        for x in o.walk():
            x.operands = [p if y is v else y for y in x.operands]
    L = m.L
    iv = L.regions[0].args[0]
    ops = L.regions[0].ops[:-1]
    if m.tile_op is not None:
        ops.remove(m.tile_op)
        tile = m.tile_op.result
    else:
        tile = iv
    counter: list = []         # L's counter at trip v div G: lb + (v div G) * step (when read)
    if any(y is iv and y is not tile for o in ops for x in o.walk() for y in x.operands):
        lb, _, step = m.bounds
        iv_now = mk("add", [lb, mk("mul", [mk("div", [v, gx], counter), step], counter)], counter)
    for o in ops:
        for x in o.walk():
            x.operands = [v if y is tile else (iv_now if y is iv else y) for y in x.operands]
    k = body.ops.index(L)
    body.ops[k:k + 1] = counter + ops
    body.ops[0:0] = head
    for o in head + counter + ops:
        o.parent = body
