"""Panel reuse: a dot operand's tiles for a whole K loop stay in L1 for the core's next program.

A core runs its grid programs one after another (the persistent loop).  In a blocked matmul the
programs a core runs often share one operand -- the same rows of A (Triton's grouped order) or
the same columns of B (``pid_m = pid // n, pid_n = pid % n`` with ``n`` dividing the core count) --
and each loads it again, tile by tile, from GM.  This pass keeps the tiles of one such operand in
an L1 *panel* (one slot per trip of the K loop) and lets the next program skip their loads when it
would load the same ones.

Guarantees.  In a persistent kernel whose launch passed no arrays sharing memory (no
``may_alias``), take the first ``for`` loop F inside the program loop P -- reached through
``if``s only, positive step, not yet pipelined or staggered -- that has *candidate* loads: a
``load_tile`` at the top of F's body of a 2-D tile with contiguous rows and a constant fill (zero,
with 32-byte rows, when not every row is valid), whose only use is a ``dot`` operand (directly or
viewed transposed), from a kernel argument nothing in the kernel
writes, at an address computed by pure ops from F's induction variable, carried scalars that
advance the same way every trip, and values from outside F.  Of those outside values, the ones a
program computes (from its id, by pure scalar ops: its *tag*, with F's bounds) must be integers.
Two programs with equal tags then load equal tiles at every trip (nothing writes the argument).
At most two candidates (A and B) are kept, each with a panel of ``slots`` tiles.  When the
launch's scalar arguments give F's trip count (a guard, as Triton specializes on arguments): that
many if L1 has room, else as many as it has room for -- then F's first ``slots`` trips use the
panel and the rest run as written, in a second loop that goes on with the same accumulator (at
least ``MIN_SPLIT`` trips, or no panel).  When they do not (a bound computed from the program id,
a loop under a branch): as many as L1 has room for, and a program whose trips do not fit runs F
as written.  "Room": beside the kernel's tiles, the second buffers double buffering will want
(the program loop's and the largest of the loops inside it) and the L1 copies of dot operands
computed on the vector unit.  Nothing is kept when MTE2 does not pace F's trips (estimated from
the shapes: the panel saves MTE2 work only; measured on cube-bound loops: 2048^3 128x256x64
split, 109056 -> 112523 cycles; 1024^3 128x256x128, whose panel holds every trip, 22530 ->
23756, the cores' first reads of DDR shifting).

F is replaced by ``if use_A { F_A } else if use_B { F_B } else { F }`` -- without the last
``else`` when B's panel holds every trip of every program: F_B then runs what F would, on a miss
filling the panel instead of the double buffers -- where F_X is F with X's load turned into
``panel_fill(slot, miss_X, ...)`` and ``panel_tile(slot, miss_X)`` (trip t's tile in slot t), and
P carries which operand the panel holds and its tag.  ``hit_X``: the panel holds X with this
program's tag; ``miss_X = not hit_X``.  ``use_X``: the trips fit, and ``hit_X`` or (no hit of the
other candidate and) the core's next program (``pid + num_programs``, evaluated on the same pure
ops with divisions by zero made harmless) computes the same tag for X.  The prediction only picks
a version; every version computes exactly what F did (results bitwise unchanged): F_X on a miss
fills every slot it reads, on a hit it reads the tiles the panel holds, filled by an earlier
program of this core from the same addresses.  The panel is one L1 region for the whole kernel
(buffer planning puts it first), so nothing else is placed over it between programs; double
buffering prefetches the fills like loads, each into its trip's slot.  When emission still runs
out of L1 beside a panel, the kernel is compiled again without panels (a note says so).

Before the rewrite, when the launch gives the grid and every program's tags, ``_order`` decides
the order of a core's programs (program_runs.py): a contiguous run each where that shares far more
than round robin (``pid // num_pid_n`` with column blocks not dividing the core count, a 2-D grid;
1024^3 64x64x32: 31783 -> 20411 cycles, Triton's grouped order 20327), and no panel at all where
no program would find its tiles in it.
"""
from __future__ import annotations

import copy

from tritonpu.codegen.homes import PANEL_ALIGN, const_value, elem_bytes, panel_slot_bytes, tile_bytes
from tritonpu.ir import Function, Op, Value
from tritonpu.ir import types as T
from tritonpu.passes.manager import Pass, register
from tritonpu.passes.persistent import is_program_loop
from tritonpu.passes.rewrite import (TILE_LOADS, LoopView, clone_op, positive_step, region_of, root, trip_count,
                                     trip_work, users_of, written_by)
from tritonpu.passes import program_runs
from tritonpu.passes.specialize import decide, for_a_launch, launch_scalars, launch_value, record

MAX_CANDIDATES = 2          # the panel holds one operand at a time; a dot has two
PANEL_ROW_ALIGN = 32        # L1's alignment: rows of zeros go after the valid rows in one transfer
# A K loop split in two pays a second pipeline fill (about one trip's loads) in every program that
# runs it: a panel that cannot hold every trip must hold at least this many
MIN_SPLIT = 8



class _Cand:
    """One candidate load: its tag (values per program), the ops computing the tag from the
    program id, the panel's slots, and the carried state (region arguments of P) it gets."""

    def __init__(self, ld: Op, leaves: list, chain: list):
        self.ld, self.leaves, self.chain = ld, leaves, chain
        self.slots = 0
        self.split = False          # the panel holds F's first `slots` trips only
        self.fits = None            # i1: this program's trips fit the panel (None: every program's do)
        self.fits_ops: list = []
        self.held: list = []        # P's region arguments: the tag the panel holds for this load


def _program_loop(fn: Function):
    op = next((o for o in fn.body.ops if o.name == "for"), None)
    return op if op is not None and is_program_loop(op) else None


def _loops(region, path):
    """(for op, [(if op, region) on the way]) in program order, through ``if``s only."""
    for op in region.ops:
        if op.name == "for":
            yield op, path
        elif op.name == "if":
            for r in op.regions:
                yield from _loops(r, path + [(op, r)])


@register
class PanelReuse(Pass):
    name = "panel-reuse"

    def run(self, fn: Function) -> None:
        if not fn.attrs.get("persistent") or fn.attrs.get("may_alias"):
            return
        P = _program_loop(fn)
        written = written_by(fn.body.ops)
        if P is None or None in written or fn.attrs.get("balanced"):
            return
        users = users_of(fn)
        for F, path in _loops(P.regions[0], []):
            if str(F.attrs.get("stagger", "")).startswith("on") or F.attrs.get("double_buffer") or \
                    not positive_step(F.operands[2]):
                continue
            cands = self._candidates(fn, P, F, users, written)
            if cands:
                cands = self._size(fn, P, F, cands)
            order = self._order(fn, P, path, cands) if cands else None
            if order == program_runs.RUNS:
                cands = self._candidates(fn, P, F, users_of(fn), written)
                cands = self._size(fn, P, F, cands) if cands else []
            elif order == program_runs.NONE:
                continue
            if cands:
                self._rewrite(fn, P, F, path, cands[:MAX_CANDIDATES])
                return

    @staticmethod
    def _order(fn, P, path, cands):
        """The order of the core's programs and whether a panel is kept, for the launch's values
        (program_runs.Choice, a guard for later launches; None without them): RUNS -- each core
        one run of programs -- when a core's programs then share a tag with the program before at
        all, at least twice as often as in round robin, and round robin in fewer than half of
        them; NONE when no program would find its tag in the panel (its versions only cost:
        tril(A) @ B at 512x1024x512, 11534 cycles against 9337 without).  Runs only where every
        program does the same work: the K loop's trip count the same for all (the launch gives it)
        and, at each ``if`` on the way to it, a K loop on the other way too -- runs put
        neighbouring programs on one core, and a grid whose work varies by row block (tril(A) @ B,
        an early return) ended unevenly (9337 -> 15685 cycles)."""
        if not for_a_launch():
            return None
        choice = program_runs.Choice.of(fn, P, [(c.chain, c.leaves) for c in cands[:MAX_CANDIDATES]])
        if choice is None:
            return None
        # (not a kernel's own grid-stride loop: its trips stay on their program's core, see grid_stride.py)
        choice.may_run = program_runs.independent(fn) and _same_work(cands, path) and not fn.attrs.get("grid_stride")
        choice.expected = choice.order(launch_scalars()) or program_runs.ROBIN
        record(choice)
        if choice.expected == program_runs.RUNS:
            program_runs.run_in_order(fn, P)
        return choice.expected

    # ---- what can be kept -----------------------------------------------------------------------
    def _candidates(self, fn, P, F, users, written) -> list:
        lv = LoopView(F)
        nexts = lv.next_computable()
        in_f = {id(o) for o in F.walk()}
        in_p = {id(o) for o in P.walk() if id(o) not in in_f and o is not P}
        pid = P.regions[0].args[0]
        out = []
        for ld in lv.body.ops:
            if ld.name != "load_tile" or len(ld.result.type.shape) != 2:
                continue
            rows, cols = ld.result.type.shape
            ops = ld.operands
            fill = const_value(ops[5]) if len(ops) > 5 else 0
            # rows past the valid ones (a masked edge) are zeros from GM's zero row, on MTE2 too
            zero_rows = fill == 0 and cols * elem_bytes(ld.result.type) % PANEL_ROW_ALIGN == 0
            if const_value(ops[2]) != 1 or fill is None or (const_value(ops[3]) != rows and not zero_rows):
                continue
            us = users.get(id(ld.result), [])
            if len(us) == 1 and us[0][0].name == "permute" and us[0][0].parent is lv.body:
                us = users.get(id(us[0][0].result), [])         # viewed transposed (a column-major operand)
            if len(us) != 1 or us[0][0].name != "dot" or us[0][1] > 1 or us[0][0].parent is not lv.body:
                continue
            arg = root(ops[0])
            if arg is None or id(arg) in written:
                continue
            outside = self._outside(F, lv, nexts, ld)
            if outside is None:
                continue
            leaves: list = []
            if not all(self._leaves(fn, v, in_p, pid, leaves) for v in outside):
                continue
            uniq = list({id(v): v for v in leaves}.values())
            chain = self._chain(P, uniq, in_p, pid)
            if chain is None:
                continue
            out.append(_Cand(ld, [v for v in uniq if v is not pid] + ([pid] if any(v is pid for v in uniq) else []),
                             chain))
        return out

    @staticmethod
    def _outside(F, lv, nexts, ld):
        """Values from outside F that ``ld``'s tiles depend on (with F's bounds and the initial
        values of the carried scalars its address advances with), or None."""
        out, seen, work = list(F.operands[:3]), set(), list(ld.operands)
        while work:
            v = work.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            o = lv.defs.get(id(v))
            if o is not None:
                if o.regions or o.opdef.effects or o.opdef.terminator:
                    return None
                work.extend(o.operands)
            elif v is lv.iv:
                continue
            elif any(v is a for a in lv.iters):
                if not any(v is n for n in nexts):
                    return None
                k = next(i for i, a in enumerate(lv.iters) if a is v)
                work.append(lv.term.operands[k])
                out.append(F.operands[3 + k])
            else:
                out.append(v)
        return out

    @staticmethod
    def _leaves(fn, v, in_p, pid, acc) -> bool:
        """Collect the per-program integer values ``v`` is made of into ``acc`` (the program id, or
        integers computed in P; other values computed in P count by what they are made of); False if
        one cannot be followed (a block, an op with effects or regions, an unknown region argument)."""
        if v is pid:
            acc.append(v)
            return True
        o = v.owner
        if o is None:
            return any(v is a for a in fn.args)
        if id(o) not in in_p or o.name == "constant":
            return True                                 # the same for every program
        if v.type.is_block:
            return False
        if v.type.is_int and not v.type.is_ptr:
            if _from_pid(v, in_p, pid):
                acc.append(v)
            return True
        return not (o.regions or o.opdef.effects) and \
            all(PanelReuse._leaves(fn, x, in_p, pid, acc) for x in o.operands)

    @staticmethod
    def _chain(P, leaves, in_p, pid):
        """The ops of P computing ``leaves`` from the program id (pure, no regions), in order."""
        need, stack = set(), list(leaves)
        while stack:
            x = stack.pop()
            o = x.owner
            if x is pid or o is None or id(o) not in in_p:
                continue
            if id(o) in need:
                continue
            if o.regions or o.opdef.effects or o.opdef.terminator or o.name in ("program_id", "num_programs"):
                return None
            need.add(id(o))
            stack.extend(o.operands)
        return [o for o in P.walk() if id(o) in need]

    # ---- how many slots ---------------------------------------------------------------------------
    def _size(self, fn, P, F, cands) -> list:
        """Give each candidate its slots; drop those whose panel cannot hold F's trips."""
        from tritonpu.errors import CompilationError
        from tritonpu.isa.machines import machine
        from tritonpu.passes.buffer_planning import trial_peaks
        from tritonpu.passes.double_buffer import stages_for
        try:
            peak = trial_peaks(copy.deepcopy(fn)).get("l1", 0)
        except CompilationError:
            return []
        lv = LoopView(F)
        tiles = _tiles(F)

        def second_buffers(loop) -> int:
            return (stages_for(LoopView(loop), _tiles(loop)) - 1) * sum(tile_bytes(o.result.type) for o in _tiles(loop))

        # beside the kernel's tiles: the buffers double buffering will want -- the program loop's
        # (the next program's first tiles) and the largest of the loops inside it --, and the L1
        # copies of dot operands computed on the vector unit, staged after the plan (emit_cube)
        db = second_buffers(P) + max((second_buffers(o) for o in P.walk() if o.name == "for" and o is not P),
                                     default=0)
        staged = sum(-(-tile_bytes(v.type) // PANEL_ALIGN) * PANEL_ALIGN + PANEL_ALIGN
                     for o in P.walk() if o.name == "dot" for v in o.operands[:2] if not _loaded(v))
        budget = machine("ascend910b").capacity["l1"] - peak - staged - db
        mte2, cube, vector = trip_work(lv, tiles)
        if mte2 <= max(cube, vector):
            return []           # the panel saves MTE2 work: nothing when the cube or vector unit paces F
        lb, ub, step = F.operands[:3]
        kept = []
        for c in cands:
            each = panel_slot_bytes(c.ld.result.type)
            most = budget // each
            if most < 2:
                continue
            ops: list = []
            trips = trip_count(lb, ub, step, ops, F.loc)
            n = launch_value(fn, ops, trips)
            if n is not None and n <= 0:
                continue
            slots = int(n) if n is not None and n <= most else most
            if n is not None and slots < n and slots < MIN_SPLIT:
                continue                # F split in two: worth it for at least MIN_SPLIT trips
            fits = _mk("cmp", [trips, _mk("constant", [], trips.type, ops, F.loc, value=slots)], T.i1, ops, F.loc,
                       pred="le")
            known = decide(fn, ops, fits)
            # the launch's arguments give the trips (a guard): the panel holds every trip, or else
            # the first `slots` (F is split there); they do not (a bound from the program id, a
            # loop under a branch): a program uses the panel when its trips fit, F as written else
            c.split = known is False
            c.fits, c.fits_ops = (None, []) if known is not None else (fits, ops)
            c.slots = slots
            kept.append(c)
        return kept

    # ---- the rewrite -----------------------------------------------------------------------------
    def _rewrite(self, fn, P, F, path, cands) -> None:
        loc = F.loc
        body = P.regions[0]
        pid = body.args[0]
        # P carries the panel's state: which candidate it holds (0: none, k + 1) and each one's tag
        init_ops: list = []
        hold = self._carry(P, T.i32, _mk("constant", [], T.i32, init_ops, loc, value=0))
        for c in cands:
            c.held = [self._carry(P, v.type, _mk("constant", [], v.type, init_ops, loc,
                                                 value=False if str(v.type) == "i1" else 0)) for v in c.leaves]
        at = fn.body.ops.index(P)
        fn.body.ops[at:at] = init_ops
        for o in init_ops:
            o.parent = fn.body
        # at F: this program's hits and the prediction for the core's next program
        pre: list = []

        def mk(name, operands, ty, **attrs):
            return _mk(name, operands, ty, pre, loc, **attrs)

        true = mk("constant", [], T.i1, value=True)

        def all_of(conds):
            out = true
            for x in conds:
                out = x if out is true else mk("and", [out, x], T.i1)
            return out

        def not_(x):
            return mk("xor", [x, true], T.i1)

        npid = mk("add", [pid, P.operands[2]], pid.type)
        has_next = mk("cmp", [npid, P.operands[1]], T.i1, pred="lt")
        for k, c in enumerate(cands):
            c.hit = mk("and", [mk("cmp", [hold, mk("constant", [], T.i32, value=k + 1)], T.i1, pred="eq"),
                               all_of(mk("cmp", [v, h], T.i1, pred="eq") for v, h in zip(c.leaves, c.held))], T.i1)
            nxt = _next_values(c.chain, c.leaves, pid, npid, pre, loc)
            c.next = mk("and", [has_next, all_of(mk("cmp", [n, v], T.i1, pred="eq")
                                                 for n, v in zip(nxt, c.leaves))], T.i1)
        # use_0 = hit_0 or (not hit_1 and next_0); use_1 = not use_0 and (hit_1 or next_1)
        uses = []
        for k, c in enumerate(cands):
            alt = c.next
            if k == 0 and len(cands) > 1:
                alt = mk("and", [not_(cands[1].hit), alt], T.i1)
            use = mk("or", [c.hit, alt], T.i1)
            if c.fits is not None:
                pre.extend(c.fits_ops)
                use = mk("and", [c.fits, use], T.i1)
            if uses:
                use = mk("and", [use, not_(uses[0])], T.i1)
            uses.append(use)
            c.miss = not_(c.hit)
        # the versions; each yields F's results and the state after it
        state_in = [hold] + [h for c in cands for h in c.held]

        def state_after(k):
            out = [mk_const(k + 1)]
            for j, c in enumerate(cands):
                out += c.leaves if j == k else c.held
            return out

        def mk_const(v):
            return mk("constant", [], T.i32, value=v)

        outs = [state_after(k) for k in range(len(cands))]
        region = F.parent
        i = region.ops.index(F)
        region.ops[i:i] = pre
        for o in pre:
            o.parent = region
        types = [r.type for r in F.results] + [v.type for v in state_in]
        n = len(F.results)
        at = i + len(pre)
        # the versions, innermost first.  What runs when no use_k holds: F -- or, when the last
        # candidate's panel holds every trip, that candidate's version: on a miss it fills the panel
        # instead of the double buffers, at F's pace, and F itself is not kept (less code)
        if cands[-1].split or cands[-1].fits is not None:
            ops, results, chosen = [F], list(F.results) + state_in, cands
        else:
            ops, results = self._panel_version(F, cands[-1])
            results, chosen = results + outs[-1], cands[:-1]
        for k in reversed(range(len(chosen))):
            then, res = self._panel_version(F, chosen[k])
            then.append(Op("yield", res + outs[k], [], loc=loc))
            other = ops + [Op("yield", results, [], loc=loc)]
            top = Op("if", [uses[k]], types, regions=[region_of([], then), region_of([], other)], loc=loc)
            for r, old in zip(top.results, F.results):
                r.name = old.name
            ops, results = [top], list(top.results)
        region.ops[at:at + 1] = ops
        for o in ops:
            o.parent = region
        mapping = {id(a): b for a, b in zip(F.results, results[:n])}
        inside = {id(x) for o in ops for x in o.walk()}
        for o in fn.walk():
            if id(o) not in inside:
                o.operands = [mapping.get(id(v), v) for v in o.operands]
        state = results[n:]
        # thread the state out through the ifs around F, to P's yield
        for if_op, r in reversed(path):
            base = len(if_op.results)
            for v in state:
                if_op.results.append(Value(v.type, None, owner=if_op, index=len(if_op.results)))
            for reg in if_op.regions:
                reg.terminator.operands.extend(state if reg is r else state_in)
            state = if_op.results[base:]
        body.terminator.operands.extend(state)

    @staticmethod
    def _carry(P, ty, init) -> Value:
        """A new value P carries (initial value ``init``); its region argument."""
        arg = Value(ty, None)
        P.regions[0].add_arg(arg)
        P.operands.append(init)
        P.results.append(Value(ty, None, owner=P, index=len(P.results)))
        return arg

    @staticmethod
    def _panel_version(F, c) -> tuple[list, list]:
        """(ops, the values F's results become): ``if miss { F filling } else { F reading }`` --
        F with ``c``'s load into the panel, trip t's tile in slot t: filled then read on a miss,
        only read on a hit (a loop with no fill, whose other loads may then take every flag and
        run as far ahead as they need); when the panel holds the first ``slots`` trips only, F
        runs them so and then the rest as it was."""
        miss_ops, miss_res = PanelReuse._slotted(F, c, fill=True)
        hit_ops, hit_res = PanelReuse._slotted(F, c, fill=False)
        miss_ops.append(Op("yield", miss_res, [], loc=F.loc))
        hit_ops.append(Op("yield", hit_res, [], loc=F.loc))
        top = Op("if", [c.miss], [r.type for r in F.results],
                 regions=[region_of([], miss_ops), region_of([], hit_ops)], loc=F.loc)
        for r, old in zip(top.results, F.results):
            r.name = old.name
        return [top], list(top.results)

    @staticmethod
    def _slotted(F, c, fill: bool) -> tuple[list, list]:
        """F with ``c``'s load turned into the panel's slot of its trip: ``panel_fill`` then
        ``panel_tile`` on a miss (``fill``), ``panel_tile`` alone on a hit.  First copies of the
        splats F starts from (an accumulator's zeros: each loop its own, so that each can start in
        L0C, not from a block in UB they share)."""
        mapping: dict = {}
        ops: list = []
        for v in F.operands[3:]:
            o = v.owner
            if o is not None and o.name == "splat" and id(v) not in mapping:
                ops.append(clone_op(o, mapping))
        fx = clone_op(F, mapping)
        fx.attrs["panel"] = f"{c.slots} slots"
        body = fx.regions[0]
        ld = mapping[id(c.ld.result)].owner
        lb, ub, step = F.operands[:3]
        iv = body.args[0]
        each = panel_slot_bytes(c.ld.result.type)
        slot_ops: list = []
        trip = _mk("div", [_mk("sub", [iv, lb], iv.type, slot_ops, ld.loc), step], iv.type, slot_ops, ld.loc)
        slot = _mk("mul", [trip, _mk("constant", [], iv.type, slot_ops, ld.loc, value=each)], iv.type, slot_ops,
                   ld.loc)
        miss = c.miss if fill else _mk("constant", [], T.i1, slot_ops, ld.loc, value=False)
        if fill:
            slot_ops.append(Op("panel_fill", [slot, miss] + list(ld.operands), [],
                               {"slots": c.slots, "event": 0, "shape": list(ld.result.type.shape)}, loc=ld.loc))
        tile = Op("panel_tile", [slot, miss], [ld.result.type], {"slots": c.slots, "event": 0}, loc=ld.loc)
        tile.result.name = ld.result.name
        slot_ops.append(tile)
        at = body.ops.index(ld)
        body.ops[at:at + 1] = slot_ops
        for o in slot_ops:
            o.parent = body
        for o in fx.walk():
            o.operands = [tile.result if v is ld.result else v for v in o.operands]
        if not c.split:
            return ops + [fx], list(fx.results)
        # the head runs trips lb .. lb + (slots - 1) * step (those that exist), the tail the rest
        end = _mk("add", [lb, _mk("mul", [_mk("constant", [], step.type, ops, F.loc, value=c.slots), step],
                                  step.type, ops, F.loc)], lb.type, ops, F.loc)
        fx.operands[1] = _mk("minimum", [ub, end], ub.type, ops, F.loc)
        tail = clone_op(F, {})
        tail.operands[0] = end
        tail.operands[3:] = list(fx.results)
        return ops + [fx, tail], list(tail.results)


def _same_work(cands, path) -> bool:
    """Whether every program runs the K loop the same number of trips: the launch gives its trip
    count, and each ``if`` on the way to it has a K loop (a ``for`` with a dot) on its other way."""
    def has_k_loop(region) -> bool:
        return any(o.name == "for" and any(x.name == "dot" for x in o.walk())
                   for top in region.ops for o in top.walk())
    return all(c.fits is None for c in cands) and \
        all(has_k_loop(r) for if_op, region in path for r in if_op.regions if r is not region)


def _tiles(loop) -> list:
    """The 2-D tile loads at the top of ``loop``'s body (what double buffering gives second buffers)."""
    return [o for o in loop.regions[0].ops if o.name == "load_tile" and len(o.result.type.shape) == 2]


def _loaded(v) -> bool:
    """A dot operand straight from a tile load (viewed transposed or not): it lives in L1."""
    while v.owner is not None and v.owner.name == "permute":
        v = v.owner.operands[0]
    return v.owner is not None and v.owner.name in TILE_LOADS


def _from_pid(v, in_p, pid) -> bool:
    """Whether the program computes ``v`` from its id (or from something not known to be the same
    for every program: an op with effects or regions); False for values made of constants and
    arguments only, wherever computed."""
    stack, seen = [v], set()
    while stack:
        x = stack.pop()
        if x is pid:
            return True
        o = x.owner
        if o is None or id(o) not in in_p or id(o) in seen:
            continue
        if o.regions or o.opdef.effects:
            return True
        seen.add(id(o))
        stack.extend(o.operands)
    return False


def _mk(name, operands, ty, into, loc, **attrs) -> Value:
    o = Op(name, operands, [ty], attrs, loc=loc)
    into.append(o)
    return o.result


def _next_values(chain, leaves, pid, npid, into, loc) -> list:
    """``leaves`` recomputed by ``chain`` for program ``npid``: a division by a value that may be 0
    divides by 1 instead (the next program may not exist; the value is only a prediction)."""
    mapping = {id(pid): npid}
    for o in chain:
        n = clone_op(o, mapping)
        if o.name in ("div", "rem") and not const_value(o.operands[1]):
            d = n.operands[1]
            zero = _mk("constant", [], d.type, into, loc, value=0)
            one = _mk("constant", [], d.type, into, loc, value=1)
            n.operands[1] = _mk("select", [_mk("cmp", [d, zero], T.i1, into, loc, pred="eq"), one, d], d.type,
                                into, loc)
        into.append(n)
    return [mapping.get(id(v), v) for v in leaves]
