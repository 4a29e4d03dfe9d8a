"""Double buffering: a loop's tile loads are issued one trip ahead, into two buffers used in turn.

Guarantees: in a ``for`` loop with a positive step, every ``load_tile``/``gather_rows`` at the top
of the body whose address (pointer, strides, extents) is computed from the induction variable,
loop-invariant values and carried scalars whose next value is computed the same way, and which
reads a kernel argument that nothing in the loop writes (a prefetch runs before the trip's
stores: it must not be able to see one; with ``may_alias = true`` — the launch passed arrays that
share memory — a loop that writes anything prefetches nothing), is prefetched: the loop is unrolled by two; before it, the first trip's tiles are loaded into
buffer A (carried); each pair of trips loads trip i+1's tiles into buffer B before trip i's work,
runs trip i on A, loads trip i+2's tiles back into A (carried to the next pair) and runs trip i+1
on B (a later trip's loads go at the start of each trip -- or, when the body's first such load
comes after an inner loop, at its place in the trip, so that MTE2 issues them after that loop's
loads) — straight-line code, so the sync pass can set each flag right after its transfer; an odd
trip count leaves one trip, run after the loop on the tiles already in A.  A prefetch for a trip that does not exist reads nothing (its first
valid extent along the last dimension is 0, the others full), so no address outside the
program's own accesses is touched, and every trip
computes, reads and writes exactly what it did before.  When the launch's arguments give the
trip count (a guard on its remainder by the buffer count, see _straight), no such prefetch is issued: the loop runs the passes whose prefetches all
exist and the trips after it are straight-line code, each issuing the loads of a later trip that
exists (an empty load would still wait for its buffer to be read, in MTE2's queue ahead of
whatever the program does next: measured, the next persistent program's first loads); their
dots go on accumulating into the loop's L0C tile (codegen/cube_homes.py).  MTE2 then brings trip i+1 while the vector
unit and the cube work on trip i and MTE3 drains trip i-1; the sync pass orders the two buffers.
A loop that only reads and whose trips are shorter than a GM read's latency gets more buffers (up
to ``PAIRED_FROM``, or ``MAX_STAGES`` and an even number when it computes a dot; ``SHORT_STAGES``
at most when the launch's arguments give it fewer trips than that, a guard, or ``PAIRED_FROM``
when they give it that many), its loads
running that many trips minus one ahead; with more than two, each trip's prefetched loads carry one ``{prefetch = N}``
group, which the sync pass orders for their readers with one flag.  With more buffers than
``PAIRED_FROM`` (more trips in flight than a pipe pair has event ids), the loads go two trips at a
time, one group: an odd trip's loads wait for the next trip's (the trip the unrolled pass consumes
itself and its last trip's go alone, so no group serves two passes; the loads before the loop pair
up the same way).
When the on-chip space does not allow the second buffers the loop is left as it is and marked
``{double_buffer = "off: ..."}`` in the IR.  The launch option ``double_buffer=False`` (CLI
``--no-double-buffer``) leaves this pass out.
"""
from __future__ import annotations

import math

from tritonpu.errors import CompilationError
from tritonpu.ir import Function, Op, Region, Value
from tritonpu.ir import types as T
from tritonpu.passes.manager import Pass, register
from tritonpu.passes.rewrite import (LoopView, clone, clone_op, load_extents, positive_step, replace_all_uses,
                                     trip_count, trip_work, written_by)
from tritonpu.passes.specialize import decide, launch_value



@register
class DoubleBuffer(Pass):
    name = "double-buffer"

    def run(self, fn: Function) -> None:
        self.groups = 0             # the trips whose loads were issued ahead, numbered
        # inner loops first: an outer loop's unrolled copies then carry the pipelined inner loops
        for op in reversed([o for o in fn.walk() if o.name == "for"]):
            if op.attrs.get("double_buffer"):
                continue
            self._loop(fn, op)

    def _loop(self, fn: Function, op: Op) -> None:
        lb, ub, step = op.operands[:3]
        if not positive_step(step):
            return
        lp = LoopView(op, bool(fn.attrs.get("may_alias")))
        nexts = lp.next_computable()
        loads = lp.candidates(nexts)
        # the fills of the L1 panel a K loop reads (passes/panel_reuse.py: {panel}) are prefetched
        # like loads, each into the slot of its trip: nothing is carried, the trip's panel_tile
        # reads the slot (those of a loop inside stay with it: their events are its trips')
        fills = [o for o in lp.body.ops if o.name == "panel_fill" and lp.slice(o.operands, nexts) is not None] \
            if op.attrs.get("panel") else []
        if not loads and not fills:
            return
        from tritonpu.passes.buffer_planning import trial_plan
        region = op.parent
        saved = list(region.ops)
        reason = ""
        most = stages_for(lp, loads, fills)
        filling = any(o.name == "panel_fill" for o in lp.body.ops)
        if most > SHORT_STAGES and self._short(fn, op, most):
            # fewer trips than buffers: as many as eight when it has those, else SHORT_STAGES
            most = PAIRED_FROM if most > PAIRED_FROM and not self._short(fn, op, PAIRED_FROM) else SHORT_STAGES
        if isinstance(fn.attrs.get("pipeline_stages"), int):      # a cap the IR text can set
            most = max(2, min(most, fn.attrs["pipeline_stages"]))
        for stages in range(most, 1, -1):
            left = self._straight(fn, op, stages)
            new_ops, results = self._rewrite(lp, loads, fills, nexts, stages, filling, left)
            olds = {id(r) for r in op.results}
            users = [(o, list(o.operands)) for o in fn.walk() if any(id(v) in olds for v in o.operands)]
            replace_all_uses(fn, op.results, results)
            i = region.ops.index(op)
            region.ops[i:i + 1] = new_ops
            for o in new_ops:
                o.parent = region
            try:
                trial_plan(fn)
                return
            except CompilationError as e:
                region.ops = list(saved)
                for o, operands in users:
                    o.operands = operands
                reason = str(e).split("error: ", 1)[-1].split(" at once")[0]
        op.attrs["double_buffer"] = f"off: {reason} with two buffers per load"

    @staticmethod
    def _straight(fn: Function, op: Op, stages: int):
        """How many of the loop's last trips run after it as straight-line code when it is
        pipelined over ``stages`` buffers, or None: ``n - p * stages`` for n trips, p the most
        passes whose prefetches all exist -- when the launch's arguments give n.  The guard taken
        (the same count for every trip count the code is right for): the trip count is at least
        that many and leaves the same remainder by ``stages`` -- not n itself, so a kernel launched
        with another K is not compiled again for that alone."""
        t = _TripTest(op)
        n = launch_value(fn, t.ops, t.trips)
        if n is None or n < 1:
            return None
        n = int(n)
        left = n - max(0, (n - (stages - 1) - stages) // stages + 1) * stages
        same = t.mk("cmp", [t.mk("rem", [t.trips, t.const(stages)]), t.const(n % stages)], pred="eq")
        enough = t.mk("cmp", [t.trips, t.const(left)], pred="ge")
        return left if decide(fn, t.ops, t.mk("and", [same, enough], i1=True)) else None

    @staticmethod
    def _short(fn: Function, op: Op, stages: int) -> bool:
        """Whether the launch's arguments give the loop fewer than ``stages`` trips (a guard): its
        loads are then all issued before it, and buffers for trips that do not exist only cost
        the instructions that check for them (1024^3 is long; a K loop of 4 trips ran 1093 cycles
        with 4 buffers, 1279 with 8)."""
        t = _TripTest(op)
        return decide(fn, t.ops, t.mk("cmp", [t.trips, t.const(stages)], pred="lt")) is True

    def _rewrite(self, lp: LoopView, loads: list, fills: list, nexts: list, stages: int, filling: bool,
                 left=None) -> list:
        """The loop pipelined over ``stages`` buffers per load: loads run ``stages - 1`` trips
        ahead, the body is unrolled ``stages`` times (each trip's tiles in a buffer of their own,
        straight-line code), and the last ``stages - 1`` trips run after the loop, each if it exists
        -- or, with ``left`` given (_straight), the loop runs only passes whose loads all exist and
        its last ``left`` trips are straight-line code after it, each issuing the loads of the
        trip ``stages - 1`` after it when that one exists.  Returns (the ops, the values the loop's
        results become)."""
        op = lp.op
        lb, ub, step = op.operands[:3]
        inits = op.operands[3:]
        loc = op.loc
        ahead = stages - 1
        out: list = []

        def mk(name, operands, ty, into, **attrs):
            o = Op(name, operands, [ty], attrs, loc=loc)
            into.append(o)
            return o.result

        def const(v, into):
            return mk("constant", [], lb.type, into, value=v)

        def exists(iv, into):
            return mk("cmp", [iv, ub], T.i1, into, pred="lt")

        def load_at(iv, scal, ok, event, into, group=None, real=False):
            """Clone the candidate loads and panel fills at trip ``iv`` with the carried scalars
            ``scal`` (id of a carried scalar -> its value at that trip); their first valid extent is
            0 unless ``ok``, a fill fills nothing unless ``ok`` (``event``: its trip's buffer, the
            panel event it writes; ``group``: the prefetch group they join, a new one if None)."""
            m = {id(lp.iv): iv, **scal}
            if group is None:
                group = self.groups = self.groups + 1
            ids = {id(ld) for ld in loads + fills}
            addr = lp.slice([v for ld in loads + fills for v in ld.operands], nexts, ids)
            order = {id(o): k for k, o in enumerate(lp.body.ops)}
            cloned = {}
            for o in sorted({id(o): o for o in addr + loads + fills}.values(), key=lambda o: order[id(o)]):
                if id(o) not in ids:
                    into.append(clone_op(o, m))
                    continue
                n = clone_op(o, m)
                if o.name == "panel_fill":
                    # a trip that does not exist has no slot: nothing is filled
                    if not real:
                        n.operands[1] = mk("and", [ok, n.operands[1]], T.i1, into)
                    n.attrs["event"] = event
                    if stages > 2 or real:
                        n.attrs["prefetch"] = group
                    into.append(n)
                    continue
                # a trip that does not exist reads nothing: its last valid extent is 0; the others
                # are full, so no fill is needed either (the tile is all pad and never used)
                for k, full in ([] if real else load_extents(o)):
                    v = n.operands[k]
                    alt = mk("constant", [], v.type, into, value=full)
                    n.operands[k] = mk("select", [ok, v, alt], v.type, into)
                if stages > 2 or real:      # one trip's loads, issued ahead together (sync: one flag;
                    n.attrs["prefetch"] = group     # a loop around does not prefetch them again)
                into.append(n)
                cloned[id(o)] = n.result
            return [cloned[id(ld)] for ld in loads]

        def next_scal(iv, scal, into):
            """The carried scalars of trip iv + step from those of trip iv (their yield slices)."""
            m = {id(lp.iv): iv, **scal}
            ys = [lp.term.operands[lp.iters.index(a)] for a in nexts]
            clone(lp.slice(ys, nexts) or [], m, into)
            return {id(a): m.get(id(y), y) for a, y in zip(nexts, ys)}

        def scal_of(iters_vals):
            return {id(a): v for a, v in zip(lp.iters, iters_vals) if any(a is n for n in nexts)}

        # a later trip's loads go at the start of each trip -- or, when the body's first candidate
        # load comes after a loop (a bias row a persistent matmul loads after its K loop), where
        # that load was: at the start, the prefetch waited for the last trip's epilogue to read
        # its buffer, ahead of this trip's K loop loads in MTE2's queue
        at_load = min(k for k, o in enumerate(lp.body.ops) if any(o is x for x in loads + fills))
        if not any(o.regions for o in lp.body.ops[:at_load]):
            at_load = 0

        def run_trip(iv, iters_vals, tiles, into, event, ahead_ops=()):
            """Clone the body for trip ``iv`` on ``tiles`` (its panel tiles filled on ``event``),
            ``ahead_ops`` (a later trip's loads) where its first load was; the trip's yielded values."""
            m = {id(lp.iv): iv, **{id(a): v for a, v in zip(lp.iters, iters_vals)},
                 **{id(ld.result): x for ld, x in zip(loads, tiles)}}
            start = len(into)
            skip = {id(ld) for ld in loads} | {id(f) for f in fills}
            clone(lp.body.ops[:at_load], m, into, skip)
            into.extend(ahead_ops)
            clone(lp.body.ops[at_load:-1], m, into, skip)
            ahead = {id(o) for o in ahead_ops}
            for o in into[start:] if filling else ():      # (events: the fills' trips)
                if o.name in ("panel_tile", "panel_fill") and id(o) not in ahead:
                    o.attrs["event"] = event                   # (a fill not prefetched: in its trip)
            return [m.get(id(y), y) for y in lp.term.operands]

        # prologue: trips lb .. lb + (ahead - 1) * step, each in a buffer of its own (carried)
        first: list = []
        iv_j, scal = lb, scal_of(inits)
        for j in range(ahead):
            if j:
                scal = next_scal(iv_j, scal, out)
                iv_j = mk("add", [iv_j, step], iv_j.type, out)
            paired_with = self.groups if stages > PAIRED_FROM and j % 2 else None
            first.append(load_at(iv_j, scal, exists(iv_j, out), j, out, paired_with))
        span = mk("mul", [step, const(stages, out)], step.type, out)
        if left is not None:
            # passes whose loads all exist (none for a trip past the end: such a load would still
            # wait for MTE1 to free its buffer, in MTE2's queue ahead of whatever follows the loop):
            # they end where the last `left` trips begin
            trips = trip_count(lb, ub, step, out, loc)
            last = mk("add", [lb, mk("mul", [mk("sub", [trips, const(left, out)], lb.type, out), step],
                                     lb.type, out)], lb.type, out)
        else:
            lead = step if ahead == 1 else mk("mul", [step, const(ahead, out)], step.type, out)
            last = mk("sub", [ub, lead], ub.type, out)
        # `stages` trips iv .. iv + (stages - 1) * step per pass (all of them exist), straight-line
        body: list = []
        iv = Value(lp.iv.type, lp.iv.name)
        iters = [Value(a.type, a.name) for a in lp.iters]
        carried = [[Value(ld.result.type, ld.result.name) for ld in loads] for _ in range(ahead)]
        trip_ivs = {0: iv}

        def trip_iv(k):
            """iv + k * step (the pass's next group starts at iv + span), made once."""
            if k not in trip_ivs:
                trip_ivs[k] = mk("add", [iv, span], iv.type, body) if k == stages else \
                    mk("add", [trip_iv(k - 1), step], iv.type, body)
            return trip_ivs[k]

        fresh: list = []
        cur = list(iters)
        paired = stages > PAIRED_FROM
        held = None
        for j in range(stages):
            a_iv = trip_iv(j + ahead)        # trip j + ahead: its loads go first
            ok = exists(a_iv, body)
            a_scal = scal_of(cur)
            for k in range(j, j + ahead):
                a_scal = next_scal(trip_iv(k), a_scal, body)
            ahead_ops: list = []        # (placed in trip j where its own loads were)
            if paired and j % 2 and j < stages - 1:
                # many buffers: an odd trip's loads wait for the next trip's, so that the two go
                # together, one prefetch group (one flag for both: the loads in flight hold half
                # the event ids); the loads consumed in this pass (trip `ahead`, issued first) and
                # the last trip's go alone, so a group never serves both this pass and the next
                held = (a_iv, a_scal, ok, (j + ahead) % stages)
            else:
                group = None
                if held is not None:
                    fresh.append(load_at(*held, ahead_ops))
                    group = self.groups
                fresh.append(load_at(a_iv, a_scal, ok, (j + ahead) % stages, ahead_ops, group))
                held = None
            cur = run_trip(trip_iv(j), cur, carried[j] if j < ahead else fresh[j - ahead], body, j, ahead_ops)
        body.append(Op("yield", cur + [x for f in fresh[stages - ahead:] for x in f], [], loc=loc))
        new_region = Region([iv] + iters + [x for c in carried for x in c], body)
        for o in body:
            o.parent = new_region
        loop = Op("for", [lb, last, span] + list(inits) + [x for f in first for x in f],
                  [a.type for a in lp.iters] + [x.type for f in first for x in f], dict(op.attrs),
                  [new_region], loc)
        loop.attrs["double_buffer"] = "on" if stages == 2 else f"on: {stages} buffers"
        out.append(loop)
        n_it = len(lp.iters)
        if left is not None:
            # the rest, straight-line: trip t issues the loads of trip t + ahead when it exists
            iv_t = last
            xs = list(loop.results[:n_it])
            have = [loop.results[n_it + j * len(loads):n_it + (j + 1) * len(loads)] for j in range(ahead)]
            ivs = [iv_t]
            for t in range(1, left):
                ivs.append(mk("add", [ivs[-1], step], lb.type, out))
            for t in range(left):
                if t + ahead < left:
                    a_scal = scal_of(xs)
                    for k in range(t, t + ahead):
                        a_scal = next_scal(ivs[k], a_scal, out)
                    have.append(load_at(ivs[t + ahead], a_scal, None, (t + ahead) % stages, out, real=True))
                xs = run_trip(ivs[t], xs, have[t], out, t % stages)
            return out, xs
        # the last trips (fewer than `stages`), their tiles already loaded: iv = lb + passes * span
        gap = mk("maximum", [mk("sub", [last, lb], lb.type, out), const(0, out)], lb.type, out)
        passes = mk("div", [mk("add", [gap, mk("sub", [span, const(1, out)], lb.type, out)], lb.type, out), span],
                    lb.type, out)
        iv_r = mk("add", [lb, mk("mul", [passes, span], lb.type, out)], lb.type, out)
        xs = list(loop.results[:n_it])
        for j in range(ahead):
            tiles = loop.results[n_it + j * len(loads):n_it + (j + 1) * len(loads)]
            if j:
                iv_r = mk("add", [iv_r, step], iv_r.type, out)
            then: list = []
            ys = run_trip(iv_r, xs, tiles, then, j)
            then.append(Op("yield", ys, [], loc=loc))
            regions = [Region([], then), Region([], [Op("yield", xs, [], loc=loc)])]
            for r in regions:
                for o in r.ops:
                    o.parent = r
            rest = Op("if", [exists(iv_r, out)], [a.type for a in lp.iters], regions=regions, loc=loc)
            for a, b in zip(op.results, rest.results):
                b.name = a.name
            out.append(rest)
            xs = list(rest.results)
        return out, xs


class _TripTest:
    """A condition on a loop's trip count for :func:`decide`: the ops computing the count
    (``trips``) and what ``mk`` / ``const`` add after them."""

    def __init__(self, op: Op):
        self.loc, self.ops = op.loc, []
        self.trips = trip_count(*op.operands[:3], self.ops, op.loc)

    def mk(self, name, operands, i1=False, **attrs):
        """A new op on ``operands``: an i1 for ``cmp`` (or with ``i1``), else of the count's type."""
        ty = T.i1 if i1 or name == "cmp" else self.trips.type
        o = Op(name, operands, [ty], attrs, loc=self.loc)
        self.ops.append(o)
        return o.result

    def const(self, v):
        return self.mk("constant", [], value=v)


MAX_STAGES = 16         # for a loop that computes a dot
PAIRED_FROM = 8         # with more buffers than this, loads are issued two trips at a time (one flag)
SHORT_STAGES = 4        # at most, for a loop the launch's arguments give fewer than its stages' trips


def stages_for(lp: "LoopView", loads: list, fills=()) -> int:
    """How many buffers per load hide MTE2's latency: one trip's work (the busiest of its loads at
    the L2 rate, its dots on the cube, its block ops on the vector unit, estimated from the
    shapes) against the latency of a GM read -- 2 when a trip outlasts it or the loop stores, up to
    ``PAIRED_FROM`` for short trips of a loop that only reads, ``MAX_STAGES`` for one that computes a
    dot (a K loop: its loads then go two trips at a time)."""
    from tritonpu.isa.machines import machine
    m = machine("ascend910b")
    ops = [x for o in lp.body.ops for x in o.walk()]
    if any(o.name in ("for", "while") for o in ops):
        return 2                # a trip runs a loop: long enough
    if written_by(ops):
        # a loop that stores: each stored tile holds its buffer for a whole unrolled pass, and more
        # buffers in flight only lengthen the store/load chains (measured: softmax rows slower)
        return 2
    mte2, cube, vector = trip_work(lp, loads, fills)
    trip = max(mte2, cube, vector, 1)
    latency = m.paths["gm->ub"].latency
    if trip >= latency:
        return 2
    # a load issued `ahead` trips early lands after its latency and its own beats
    stages = 1 + math.ceil((latency + mte2) / trip)
    dot = any(o.name == "dot" for o in ops)
    if stages > PAIRED_FROM and dot:
        # loads issued two trips at a time (an odd trip's one trip later), only for the cube: a
        # vector loop is near its roofline with eight, and sixteen unrolled trips cost compile
        # time (layernorm 4096 BLOCK 256: 7295 -> 7212 cycles, 0.7 -> 2.0 s to compile)
        stages = min(MAX_STAGES, stages + 1)
    stages = max(2, min(MAX_STAGES if dot else PAIRED_FROM, stages))
    if stages % 2 and dot:
        # an even number, so that the unrolled trips alternate the L0A/L0B halves across the back
        # edge too (an odd count puts two trips in a row on one half: the second's operands wait
        # for the first's product)
        stages = stages + 1 if stages < MAX_STAGES else stages - 1
    return stages
