"""Program balance: grid programs of unequal work dealt to the cores so that they finish together.

The persistent loop (persistent.py) gives core c of C the programs c, c + C, c + 2C, ... .  Where
a program's work grows with its id -- causal attention's ``range(0, (start_m + 1) * BLOCK_M,
BLOCK_N)``, a triangular matmul's K loop -- that leaves some cores with the long programs and
others with the short ones: causal FlashAttention at 8 x 2048 x 128, BLOCK_M 128, ran its cores
between 83150 and 254370 cycles.

Guarantees.  For a launch whose scalar values give every loop at the top of the program -- or at
the top of a branch of an ``if`` there, with that ``if``'s condition (an early ``return`` puts the
rest of the program in one) -- its trip count (from the program id, the grid and the scalar
arguments: :class:`Plan`, evaluated for all programs at once), the programs' work is estimated --
each loop's trips (none in a program whose condition skips its branch) times one trip's cycles
estimated from its shapes (rewrite.ops_work: the busiest of MTE2 at the L2 rate, the cube, the
vector unit), plus the rest of the program once -- and, when dealing the programs (heaviest first,
each to the core with the least work so far among those with a trip left, every core keeping the
number of programs round robin gives it) would cut the busiest core's estimated work by at least
``MIN_GAIN`` of it (counting a table read per program), trip t of the program loop runs program
``order[t]``, read from ``__order``, an int32 table the launch passes (one entry per program; a
core runs its programs in increasing id).  That is a bijection of the same programs onto the same
cores' trips, each program run once, with ``set_program`` naming it; it is applied only to
kernels whose programs cannot observe one another (program_runs.independent), whose results it
therefore leaves bitwise unchanged.  The plan is a guard: a launch whose values give another
table (or none) compiles again.  Kernels with a loop whose trip count depends on loaded data (a
tile list, ``cu_seqlens``) are left in round robin: their work cannot be told before they run.
The function then carries ``balanced = true``, and panel reuse, which relies on a core's
consecutive programs sharing operands in round robin or in runs, leaves it alone.
"""
from __future__ import annotations

import numpy as np

from tritonpu.ir import Function, Op, Value
from tritonpu.ir import types as T
from tritonpu.ir.ops import TILE_LOADS
from tritonpu.passes.manager import Pass, register
from tritonpu.passes.persistent import CORES, is_program_loop
from tritonpu.passes.program_runs import PerProgram, independent
from tritonpu.passes.rewrite import ops_work
from tritonpu.passes.specialize import for_a_launch, launch_scalars, record

ORDER = "__order"          # the launch's table of programs, by trip of the program loop
MIN_GAIN = 0.15            # the least share of the busiest core's estimated work worth dealing for
TABLE_READ = 200           # cycles a program's read of its id costs the scalar unit (a GM read)
PROGRAM_START = 600        # cycles a program costs beside its ops' (its first loads' and last stores' latency)
MAX_PROGRAMS = 1 << 14     # larger grids stay in round robin (dealing takes ~10-20 us a program)
TRIP_START = 40            # cycles a trip costs beside its ops' (its scalar work and flags)


class Plan(PerProgram):
    """The dealt order of a launch's programs (or None: round robin), for any launch's values -- a
    guard for the compile that took it.  Its candidates' leaves are the bounds and step of each
    loop at the top of the program; ``trip_cycles`` one trip's estimated cycles, ``rest`` the rest
    of the program's."""

    trip_cycles: list
    kinds: list             # per loop: None (at the program's top), or the branch of its if (True: then)
    rest: float
    expected = None
    estimate = None         # (round robin's busiest core, the dealt one's), estimated cycles

    def deal(self, scalars: dict):
        """The table of programs by trip (int32) for these values, or None (round robin)."""
        got = self.evaluate(scalars)
        if got is None or got[1] is None:
            return None
        n, bounds = got
        cores = min(int(scalars[CORES]), n)
        if n <= cores or n > MAX_PROGRAMS:
            return None
        work = np.full(n, float(self.rest + PROGRAM_START))
        for b, w, taken in zip(bounds, self.trip_cycles, self.kinds):
            lb, ub, step = b[:, 0], b[:, 1], b[:, 2]
            runs = np.ones(n, bool) if taken is None else (b[:, 3] != 0) == taken
            if (step[runs] <= 0).any():
                return None             # (a loop counting down, or by a step the values make 0)
            with np.errstate(all="ignore"):
                trips = np.maximum(0, -(-(ub - lb) // np.where(runs, step, 1)))
            work += np.where(runs, trips, 0) * w
        rounds = -(-n // cores)
        robin = max(work[c::cores].sum() for c in range(cores))
        dealt, order = _deal(work, cores)
        if dealt + rounds * TABLE_READ > (1 - MIN_GAIN) * robin:
            return None
        self.estimate = (robin, dealt + rounds * TABLE_READ)
        return order

    def holds(self, scalars: dict) -> bool:
        got = self.deal(scalars)
        return (got is None and self.expected is None) or \
            (got is not None and self.expected is not None and np.array_equal(got, self.expected))


def _deal(work: np.ndarray, cores: int) -> tuple:
    """(the busiest core's work, the table: trip c + k*cores runs the core's k-th program).  Core c
    keeps the trips round robin gives it; the programs go heaviest first, each to the core whose
    work would then be least counting, for each trip it has left after this one, the mean work of
    the programs not dealt yet (a core with more trips left expects more work)."""
    n = len(work)
    q, r = divmod(n, cores)
    room = [q + (c < r) for c in range(cores)]
    load = [0.0] * cores
    mine: list = [[] for _ in range(cores)]
    left = float(work.sum())
    for i, p in enumerate(np.argsort(-work, kind="stable").tolist()):     # (ties: lower id first)
        w = float(work[p])
        left -= w
        mean = left / (n - i - 1) if i + 1 < n else 0.0
        c = min((c for c in range(cores) if room[c]), key=lambda c: (load[c] + w + (room[c] - 1) * mean, c))
        mine[c].append(p)
        load[c] += w
        room[c] -= 1
    table = np.empty(n, np.int32)
    for c, progs in enumerate(mine):
        table[c::cores] = sorted(progs)
    table.flags.writeable = False               # (every launch of the compilation reads it)
    return max(load), table


@register
class ProgramBalance(Pass):
    name = "balance"

    def run(self, fn: Function) -> None:
        if not fn.attrs.get("persistent") or not for_a_launch():
            return
        P = next((o for o in fn.body.ops if is_program_loop(o)), None)
        if P is None or fn.attrs.get("balanced") or fn.attrs.get("grid_stride") or not independent(fn):
            return
        plan = self._plan(fn, P)
        if plan is None:
            return
        plan.expected = plan.deal(launch_scalars())
        record(plan)
        if plan.expected is not None:
            self._rewrite(fn, P, plan.expected)
            robin, dealt = plan.estimate
            fn.__dict__["program_order_note"] = (
                f"balance: the programs' work differs (loop trips from the program id), so they are dealt to the "
                f"cores by their estimated work instead of round robin (the busiest core's estimate {robin:.0f} -> "
                f"{dealt:.0f} cycles); disable_passes=('balance',) keeps round robin")

    @staticmethod
    def _plan(fn: Function, P: Op):
        """The plan for the loops at the top of the program loop ``P`` -- and at the top of the
        branches of an ``if`` there (an early ``return`` puts the rest of the program in one) --,
        or None when a loop's trip count or a branch's condition does not follow from the program
        id and the launch's values, or no trip count depends on the program id."""
        body = P.regions[0]
        pid = body.args[0]
        places = [(o, None, None) for o in body.ops if o.name == "for"]      # (loop, if, branch taken)
        for o in body.ops:
            if o.name == "if":
                for k, region in enumerate(o.regions):
                    places += [(F, o, k == 0) for F in region.ops if F.name == "for"]
        cands, trips, kinds = [], [], []
        for F, cond_op, taken in places:
            wanted = list(F.operands[:3]) + ([cond_op.operands[0]] if cond_op is not None else [])
            chain = _chain(wanted, [body] + ([F.parent] if cond_op is not None else []), pid)
            if chain is None:
                return None
            if _reads(chain, pid, wanted):
                cands.append((chain, wanted))
                kinds.append(taken)
                inner = [o for o in F.walk() if o is not F]
                trips.append(TRIP_START + sum(ops_work(F.regions[0].ops, [o for o in inner if o.name in TILE_LOADS])))
        if not cands:
            return None
        plan = Plan.of(fn, P, cands)
        if plan is None:
            return None
        in_loops = {id(o) for F, _, _ in places for o in F.walk()}
        rest = [o for o in body.ops if id(o) not in in_loops]
        plan.trip_cycles, plan.kinds = trips, kinds
        plan.rest = sum(ops_work(rest, [o for o in P.walk() if o.name in TILE_LOADS and id(o) not in in_loops]))
        return plan

    @staticmethod
    def _rewrite(fn: Function, P: Op, table) -> None:
        """Trip t of ``P`` runs program ``__order[t]`` (see the module)."""
        order = Value(T.ptr(T.i32), ORDER)
        fn.args.append(order)
        body = P.regions[0]
        trip = body.args[0]
        at = Op("addptr", [order, trip], [T.ptr(T.i32)], loc=P.loc)
        pid = Op("load", [at.result], [T.i32], loc=P.loc)
        pid.result.name = "program"
        for o in P.walk():
            if o is not P:
                o.operands = [pid.result if v is trip else v for v in o.operands]
        at.operands = [order, trip]
        body.ops[0:0] = [at, pid]
        for o in (at, pid):
            o.parent = body
        fn.attrs["balanced"] = True
        fn.__dict__["program_order"] = table


def _chain(values, regions: list, pid: Value):
    """The pure scalar ops of ``regions`` (the program loop's body, then a branch in it) that
    compute ``values``, in order, or None when that needs anything else (a load, a block, a
    region argument other than ``pid``); values from outside the program loop are leaves."""
    defs = {id(r): o for region in regions for o in region.ops for r in o.results}
    args = {id(a) for region in regions for a in region.args}
    need, stack = set(), list(values)
    while stack:
        v = stack.pop()
        o = defs.get(id(v))
        if o is None:
            if id(v) in args and v is not pid:
                return None
            continue
        if id(o) in need:
            continue
        if o.regions or o.opdef.effects or o.opdef.terminator or any(r.type.is_block for r in o.results):
            return None
        need.add(id(o))
        stack.extend(o.operands)
    return [o for region in regions for o in region.ops if id(o) in need]


def _reads(chain: list, pid: Value, values) -> bool:
    """Whether ``values`` (computed by ``chain``) depend on ``pid``."""
    dep = {id(pid)}
    for o in chain:
        if any(id(x) in dep for x in o.operands):
            dep |= {id(r) for r in o.results}
    return any(id(v) in dep for v in values)
