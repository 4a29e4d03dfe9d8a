"""Sync insertion: ``set_flag``/``wait_flag`` pairs between pipes, over a structured instruction list.

Guarantee.  After :func:`insert_sync`, for every two accesses to overlapping byte ranges of one
space (at least one a write) by instructions on different pipes P != Q that can run in that
order -- in straight-line code, across ``If`` branches and their merge, from before a loop into
it, from one trip of a ``Loop``/``While`` to a later trip (through the back edge), and from before
or inside a loop to after it (a loop may run zero times) -- the later instruction is ordered after
the earlier one by a chain of ``set_flag``/``wait_flag`` pairs (possibly through other pipes, or
through the scalar unit: once S waited for a flag, everything S issues later is ordered after it).
So the simulator's sanitizer reports no race.  Exceptions, by the machine's semantics: accesses
on the scalar pipe S complete at issue, so an earlier S access needs nothing (a later S access
does: P -> S); instructions of one pipe run in order; instructions without accesses (and sync
instructions already in the list, which the pass does not model except ``barrier all``) need
nothing.  Every inserted ``set_flag`` is matched by its ``wait_flag`` later in the same
straight-line block -- except a loop-carried pair's, set before the loop (or in the run right
before it, or in the enclosing loop's previous trip: a cross pair, sync_cross.py) and in the body,
drained after the loop in the block that holds it or, through ``If``s that follow, in both
branches of one -- so no flag is pending at the end of a block, no (src, dst,
event) is set twice before its wait, no wait lacks its set, and event ids stay below
``max_events`` per pipe pair.
The input is expected to contain no flags of its own.  A ``Loop`` marked ``one_trip`` (it runs
at most once: passes/one_program.py, or a persistent kernel's whole program) has no back edge:
its body starts from the state before it, and it is left after none or one trip.

Model.  Abstract interpretation over the structure.  A *record* is one access of one static
instruction (its latest dynamic instance); the state holds, per pipe Q, ``unord[Q]``: the records
Q is not yet ordered after.  Issuing an instruction on P makes its records unordered for every
other pipe; a wait on Q for a flag set by P at point X removes from ``unord[Q]`` what P was
ordered after at X plus P's own records up to X (minus records re-issued since X); a wait on S
removes them for every pipe.  States join by union at ``If`` merges and at loop heads; loop heads
are iterated to a fixed point before the final pass inserts the syncs.  A loop exits from its
head; the drain after it of each loop-carried pair (the wait on Q for a flag P set in the last
trip, or before the loop when there was none) removes from ``unord[Q]`` the records P was ordered
after at both of those sets, where it is placed: right before the first instruction on Q after
the loop that conflicts with one of them (the drain that orders least first: a pipelined loop's
last trips, run after it in branches, each wait for their own tiles); when one branch of an
``If`` needs it, it is waited for there and -- when src is the cube or the vector unit, not a
transfer pipe -- set again right after that wait (at the branch's end when the branch uses the
flag again), ordering what src was ordered after at both sets, so it stays pending after the
``If`` on both paths; a cube or vector drain that a loop inside one branch leaves pending stays
pending after the ``If`` too -- the other branch sets it at its end, and it orders what src was
ordered after on both paths (a record a path never issued needs no order there); a drain is
waited for before the next loop or the end of the block otherwise.

Placement.  A needed pair P -> Q goes ``set_flag`` right after the last conflicting P instruction
when that instruction is earlier in the same straight-line block (so P work issued later does not
delay Q), with an event id not pending on (P, Q) anywhere between set and wait; otherwise (or when
no id is free) the set goes immediately before the wait, right before the consumer.  When the
producer belongs to a *prefetch group* (``Instr.group``: the loads of one trip a pipelined loop
issues ahead) and the consumer's pipe has other work queued before it, the set goes after the
group's last load before that pipe's next instruction instead: one flag covers the trip's tiles,
so the loads in flight hold one event id per trip.  A loop-carried pair's first ``set_flag`` (for
the first trip) goes right after the loads it covers (and the rest of their prefetch group) when
they are in the straight-line run right before the loop, else right before the loop: the first
trip waits for its own tiles, not for every load a pipelined loop's prologue issues.  A drain
still pending at the loop (an earlier loop's, e.g. the previous persistent program's K loop) is
waited for right after its pipe's last work in that run -- the same point in its queue -- when
that pipe is not S.  A loop's first set that covers none of the run's work on its pipe goes
right before that pipe's first work there, so the flag does not wait for that work (a
persistent matmul's next program's first L0 tiles were held back by its accumulator's zeroing,
which waits for FIX to drain the previous program's).  A loop's first set on a pipe with no work
in that run, for a first trip that needs only that pipe's own accesses, goes at the run's start,
before the drains the pipe waits for there (a persistent matmul's MTE1 freed the L1 buffer of the
next program's second load only after waiting for the cube's last product).  When several
pipes must be waited for, the flag that covers most conflicts is taken first, so conflicts covered
transitively get no pair of their own.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import sync_cross
from .asmlist import If, Instr, Loop, While, walk
from .sync_branches import check_top, place_sets
from .sync_events import EventIds
from .sync_model import Restart, State, conflicts, flag_of, is_sync
from .sync_runs import Segment


@dataclass
class SyncReport:
    pairs: int = 0                                          # set_flag/wait_flag pairs inserted
    events_used: dict = field(default_factory=dict)         # (src, dst) -> number of event ids used


def _ring(n: Loop, st: State) -> State:
    """The state a trip of ``n`` leaves to the next: with ``n.l0c_ring`` (codegen/l0c_ring.py) the
    next trip's L0C accesses are in the other half, so M is not held to this trip's other L0C
    accesses (the fence before the next trip's drains orders the trip after it)."""
    if n.l0c_ring:
        ids = {id(i) for i in walk(n.body)}
        st = st.copy()
        st.unord["M"] -= {k for k in st.index.get("l0c", ()) if k[0] in ids and st.recs.get(k) is not None
                          and st.recs[k].pipe != "M"}
    return st


# The pipes whose drains a branch sets again (after its own wait for one, or at its end for one
# the other branch leaves pending): not the transfer pipes, whose set_flag fires only
# once every transfer issued before it has landed -- set again after the branch's wait, it would
# also wait for the transfers issued since (prefetched loads, stores in flight); measured:
# layernorm's column loops 452245 -> 478751 cycles with MTE2's and MTE3's drains set again.
_REARMED_FROM = ("M", "V")


def _rearm(branch: list, flag) -> None:
    """Set ``flag`` again in ``branch``, which waited for it: right after that wait when nothing
    later in the branch uses the flag (src's work after it need not be waited for), else at the end."""
    src, dst, ev = flag
    wait, put = f"wait_flag {src}, {dst}, {ev}", f"set_flag {src}, {dst}, {ev}"
    at = next((j for j, n in enumerate(branch) if isinstance(n, Instr) and n.text == wait), None)
    if at is None or any(i.text in (wait, put) for i in walk(branch[at + 1:])):
        at = len(branch) - 1
    branch.insert(at + 1, Instr(put, src))


class _Pass(EventIds):
    def __init__(self, max_events: int, reserved=None, refused=frozenset()):
        if max_events < 1:
            raise ValueError("max_events must be at least 1")
        self.max_events = max_events
        self.taken: list = [reserved] if reserved else []   # the reservations of the code being placed
        self.report = SyncReport()
        self.reserved: dict = {}     # (src, dst) -> {(id(Loop), producer): event id of a loop-carried pair}
        self.carried: dict = {}      # id(Loop) -> {(src, dst, ev)} to pre-set before / drain after it
        self.active: list = []       # ids of the Loops around the code being placed, outermost first
        self.outer: dict = {}        # id(Loop) -> ids of the Loops around it
        # id(Loop) -> [(src, dst, keys src is ordered after where the carried set_flag sits)], from
        # the last run of its body: what the drain after the loop orders dst after
        self.carried_known: dict = {}
        self.entry: dict = {}        # id(Loop) -> the Segment right before it in its block (or None)
        # (id(Loop), src, dst, ev) -> position in the entry segment after which the pair's first
        # set_flag goes (instead of right before the loop)
        self.early: dict = {}
        self.rearmed: dict = {}      # id(Loop) -> (src, dst, ev) of drains waited for in its entry run
        # the drains of loops already left, not yet waited for (their wait goes right before the
        # first instruction on dst that needs what they order): [(src, dst, ev, keys)]
        self.pending: list = []
        self.drains: dict = {}       # id(Loop) -> its drains, from loop() to the block placing it
        self.over: dict = {}         # id(Loop) -> (src, dst, ev) of inner drains pending over its back edge
        self._body_ids: dict = {}    # id(Loop) -> body_ids(loop)
        # the blocks being placed, outermost first: [nodes, index of the node being placed, the
        # Loop / If / While whose block it is (None at the top)]
        self.frames: list = []
        self._owner = None           # the owner of the next block _block runs
        # loop-carried pairs through branches (sync_branches.py): id(Loop) -> {(src, dst, ev):
        # ids of their producers}; (id(Loop), src, dst, ev) -> the consumers' waits
        self.branch_pairs: dict = {}
        self.branch_waits: dict = {}
        # (id(Loop), producers, n) -> {id(consumer): its path, {id(If): in its then-branch}}
        self.branch_users: dict = {}
        self.top_pairs: dict = {}    # id(Loop) -> (src, dst) of its pairs through branches with no If around
        self.relays: dict = {}       # (id(Loop), pair key) -> (src, event) of a pair set through a relay
        self.relayed_before: set = set()     # (id(Loop), pair) whose set before the loop goes through it too
        self.holding: dict = {}      # (id(Loop), producers) -> sync_branches._holding of its body
        self._block_positions: dict = {}
        self._reserved_by_ifs: dict = {}
        self.idle: dict = {}        # id(Loop) -> the pipes with no work in its body
        # a loop's first set from the enclosing loop's previous trip (sync_cross.py):
        # (id(outer Loop), src, dst, ev) -> sync_cross.Cross; id(inner Loop) -> id(outer Loop)
        self.cross: dict = {}
        self.cross_of: dict = {}
        # (id(outer Loop's head), src, dst) of cross pairs, ("top", id(Loop's head), src, dst) of
        # pairs right in a loop's body (sync_branches.check_top), refused in a run before
        self.refused = refused
        self.decisions = 0           # cross pairs taken or refused so far (a round with one runs again)
        # the drains of cross pairs not yet waited for: (src, dst, ev) -> the cross pair's key;
        # and the waits of each cross pair's drains placed so far: key -> [wait_flag Instr]
        self.forced: dict = {}
        self.cross_waits: dict = {}
        self.starved: dict = {}      # id(Loop) -> (src, dst) that ran out of ids in its body's last round

    # ---- structure ------------------------------------------------------------------------------
    def block(self, nodes: list, st: State, emit: bool, loop: Loop | None = None, pending=None) -> State:
        """Run ``nodes`` from state ``st``; with ``emit``, insert the syncs into the list.  ``loop``:
        the Loop whose body ``nodes`` is (its straight-line runs run on every trip).  ``pending``:
        the drains not yet waited for when the block starts (a branch's), left in the list as they
        are still pending at its end; without it the block waits for its own before it ends."""
        own = pending is None
        saved, self.pending = self.pending, ([] if own else pending)
        try:
            st = self._block(nodes, st, emit, loop)
            tail = self._drain(st, lambda d: True) if own else []
            if emit:
                nodes += tail
        finally:
            self.pending = saved
        return st

    def forget(self, recs) -> None:
        """An instruction issued again after a loop: its new records are none a drain orders."""
        if self.pending and recs:
            keys = {k for k, _ in recs}
            self.pending[:] = [d[:3] + (d[3] - keys,) for d in self.pending]

    def _drain(self, st: State, which) -> list:
        """The waits of the pending drains ``which`` selects, their ordering applied to ``st``."""
        out = []
        for d in [d for d in self.pending if which(d)]:
            src, dst, ev, keys = d
            self.pending.remove(d)
            st.cover(dst, keys)
            out.append(Instr(f"wait_flag {src}, {dst}, {ev}", dst))
            if d[:3] in self.forced:
                self.cross_waits.setdefault(self.forced.pop(d[:3]), []).append(out[-1])
        return out

    def _forced_before(self, nodes: list, j: int) -> list:
        """The cross pairs' drains still pending that ``nodes[j]`` is the last producer of in its
        straight-line run (the set for the next trip follows it and the drain's wait; a wait
        before an earlier producer would hold dst's work in between back)."""
        out = []
        for f, key in self.forced.items():
            made = self.cross[key].producers
            if id(nodes[j]) in made and any(d[:3] == f for d in self.pending):
                later = next((k for k in range(j + 1, len(nodes)) if not isinstance(nodes[k], Instr)
                              or id(nodes[k]) in made), len(nodes))
                if later == len(nodes) or not isinstance(nodes[later], Instr):
                    out.append(f)
        return out

    def _block(self, nodes: list, st: State, emit: bool, loop: Loop | None) -> State:
        frame = [nodes, 0, self._owner]
        self._owner = None
        self.frames.append(frame)
        try:
            return self._placed(nodes, st, emit, loop, frame)
        finally:
            self.frames.pop()

    def _placed(self, nodes: list, st: State, emit: bool, loop: Loop | None, frame: list) -> State:
        out: list = []
        seg = None                                  # the current straight-line run of Instrs
        body_ids = self.body_ids(loop) if loop is not None else set()
        for j, n in enumerate(nodes):
            frame[1] = j
            if isinstance(n, Instr):
                pre, waited = [], []
                for f in self._forced_before(nodes, j) if self.forced else ():
                    pre += self._drain(st, lambda d: d[:3] == f)
                    waited.append(f)
                while self.pending and not is_sync(n):
                    # a drain is waited for right before the first instruction of its pipe that
                    # needs it -- the one that orders least first (a pipelined loop's drains order
                    # its tiles in the order the trips after it read them)
                    need = conflicts(st, n)
                    cands = [d for d in self.pending if d[1] == n.pipe and d[3] & need]
                    if not cands:
                        break
                    first = min(cands, key=lambda d: len(d[3]))
                    pre += self._drain(st, lambda d: d is first)
                    waited.append(first[:3])
                if seg is None:
                    run = []
                    for m in nodes[j:]:
                        if not isinstance(m, Instr):
                            break
                        run.append(m)
                    seg = Segment(self, st, run if loop is not None else None, loop, body_ids, run)
                    if not pre and j + len(run) < len(nodes) and isinstance(nodes[j + len(run)], Loop):
                        # a loop's entry run: what its pipes are ordered after at its start (the
                        # loop's first set of a flag may go there, see Segment._early; not when
                        # drains are waited for before its first instruction: the set would go
                        # before them)
                        seg.start_known = {p: frozenset(st.known(p)) for p in {x.pipe for x in run} - {"S"}}
                    if loop is not None:        # what a trip runs after this run
                        seg.later = {id(x) for x in walk(nodes[j + len(run):])}
                for pair in waited:         # (no first set of a loop's pair goes before these)
                    seg.drained[pair] = len(seg.instrs)
                seg.instr(n, pre)
                continue
            entry = seg
            if seg is not None:
                start = len(out)
                out += seg.flush(emit)
                seg = None
            # a cross pair's drain is waited for in the run right after its loop
            out += self._drain(st, lambda d: d[:3] in self.forced)
            waited = {d[:3] for d in self.pending}
            moved = {}                      # drain -> the entry run's position its wait goes before
            if isinstance(n, Loop) and entry is not None and \
                    {d[0] for d in self.pending if d[1] != "S"} & set(entry.start_known):
                # a drain is waited for right after its pipe's last work in the loop's entry run
                # (the same point in that pipe's queue): the loop's first set of the same flag may
                # then go earlier in the run (Segment._early); not on S, whose waits stall issue
                for d in self.pending:
                    if d[1] != "S":
                        moved[d[:3]] = 1 + entry.last_on(d[1])
            waits = self._drain(st, lambda d: d[:3] in moved)
            if isinstance(n, Loop):
                self.rearmed[id(n)] = set(moved)
            if not isinstance(n, If):       # a loop inside never meets an earlier loop's flag
                out += self._drain(st, lambda d: True)
            if isinstance(n, Loop):
                self.entry[id(n)] = entry
                st = self.loop(n, st, emit)
                # (a cross pair's first set is in the previous trip of the loop around: sync_cross.py)
                cross = {pr for pr in self.carried.get(id(n), ()) if sync_cross.is_cross(self, n, pr)}
                pairs = sorted(self.carried_of(n) - cross)
                # the first trip's waits find their flags set before the loop (right after the
                # loads they wait for, when those are just before it, or before the first work of
                # their pipe there); the last trip's flags are consumed after it
                # (a pair's first set goes after the wait of a drain of the same flag)
                early = {pr: None if entry is None else entry.early_ok(pr, self.early.get((id(n),) + pr))
                         for pr in pairs}
                early = {pr: None if at is None or (pr in waited and (pr not in moved or moved[pr] > at + 1))
                         else at for pr, at in early.items()}
                # (out position, rank, instruction), inserted from the last: at one position a
                # drain's wait goes before a set
                put = [(entry.out_pos[k - 1] if k > 0 else 0, 1, w)
                       for w in waits for k in [moved[flag_of(w)]]]
                # (a set at the run's start goes before the drains waited for there, unless it
                # sets one of their flags)
                put += [(entry.out_pos[at] if at >= 0 else 0, 2 if at < 0 and (a, b, e) not in moved else 0,
                         Instr(f"set_flag {a}, {b}, {e}", a))
                        for (a, b, e), at in early.items() if at is not None]
                for at, _, ins in sorted(put, key=lambda x: (-x[0], x[1])):
                    out.insert(start + at, ins)
                over = self.over_of(n) or []
                # (a pair set through a relay pipe, whose first trip needs src's work from before
                # the loop, is set through it before the loop too: the relay's own set orders none
                # of src's work -- found by a probe)
                relays = {pr: r for pr, (_, r) in self.branch_pairs.get(id(n), {}).items()
                          if r and (id(n), pr) in self.relayed_before}
                for a, b, e in pairs:
                    if early[(a, b, e)] is None:
                        if (a, b, e) in relays:
                            src, r = relays[(a, b, e)]
                            out += [Instr(f"set_flag {src}, {a}, {r}", src), Instr(f"wait_flag {src}, {a}, {r}", a)]
                        out.append(Instr(f"set_flag {a}, {b}, {e}", a))
                out += [Instr(f"set_flag {a}, {b}, {e}", a) for a, b, e in over]
                out.append(n)
                # the drains: dst waits for each pair's last flag where it first needs it
                self.pending += self.drains.pop(id(n)) + [(a, b, e, frozenset()) for a, b, e in over]
                self.forced.update((pr, (self.cross_of[id(n)],) + pr) for pr in cross)
                continue
            if isinstance(n, If):
                # a drain whose id the branches' own code uses is waited for before them
                mine = {(a, b, e) for r in (n.reserved, n.reserved_else) for (a, b), es in r.items() for e in es}
                out += self._drain(st, lambda d: d[:3] in mine)
            out.append(n)
            if isinstance(n, If):
                self._owner = n
                st = self.block(n.test, st, emit, pending=self.pending)
                ends = []
                for branch, reserved in ((n.then, n.reserved), (n.orelse, n.reserved_else)):
                    left = list(self.pending)
                    self.taken.append(reserved)
                    self._owner = n
                    try:
                        ends.append((branch, self.block(branch, st.copy(), emit, pending=left), left))
                    finally:
                        self.taken.pop()
                # a drain pending before the branches that one of them waited for (its own code
                # needed it) is set again there, right after that wait (see _rearm), so that it
                # stays pending after both: the other path waits for it only where it needs it,
                # not at its end (a persistent matmul's MTE1 waited there for the cube before
                # freeing L1 for the next program's first loads); it then orders what src was
                # ordered after at both sets.  One pending after both (the same flag: the two
                # branches' loops took the same id) orders what it orders on both paths; any
                # other is waited for at the end of the branch that leaves it pending.
                start = {d[:3] for d in self.pending}
                for k, (branch, bst, left) in enumerate(ends):
                    kept = {d[:3]: d for d in ends[1 - k][2]}
                    mine = {d[:3] for d in left}
                    # (not the records of the branch's own instructions: a key names the latest
                    # instance, and one the branch issues again -- in a loop around the If --
                    # may come after the new set)
                    ids = {id(i) for i in walk(branch)}
                    for f in sorted(start - mine):
                        if f in kept and f[0] in _REARMED_FROM and f[1] != "S":
                            left.append(f + (frozenset(x for x in kept[f][3] if x[0] not in ids),))
                            if emit:
                                _rearm(branch, f)
                other = {d[:3]: d[3] for d in ends[1][2]}
                both = {d[:3] for d in ends[0][2]} & set(other)
                # a drain of the cube or the vector unit pending at the end of one branch only (a
                # loop of its own left it) stays pending after the If: the other branch sets it at
                # its end, ordering what src is ordered after there -- so dst waits for it where it
                # needs it, not at the branch's end (a persistent matmul's MTE1 waited there for
                # the cube's last products before freeing L1 for the next program's first loads);
                # it orders what it orders on the first path, less what src is not ordered after
                # at the other's end
                ones = {}
                for k, (branch, bst, left) in enumerate(ends):
                    theirs = {d[:3] for d in ends[1 - k][2]}
                    for d in left:
                        if d[:3] not in theirs and d[0] in _REARMED_FROM and d[1] != "S":
                            # (a record the other path never issued needs no order there)
                            ones[d[:3]] = (1 - k, d[3] - ends[1 - k][1].unord[d[0]])
                for k, (branch, bst, left) in enumerate(ends):
                    saved, self.pending = self.pending, left
                    try:
                        tail = self._drain(bst, lambda d: d[:3] not in both and d[:3] not in ones)
                    finally:
                        self.pending = saved
                    if emit:
                        branch += tail + [Instr(f"set_flag {a}, {b}, {e}", a)
                                          for (a, b, e), (at, _) in sorted(ones.items()) if at == k]
                self.pending[:] = [d[:3] + (d[3] & other[d[:3]],) for d in ends[0][2] if d[:3] in both] + \
                    [f + (keys,) for f, (_, keys) in sorted(ones.items())]
                st = ends[0][1].join(ends[1][1])
            elif isinstance(n, While):
                st = self.while_(n, st, emit)
            else:
                raise TypeError(f"insert_sync: unexpected node {n!r}")
        if seg is not None:
            out += seg.flush(emit)
        out += self._drain(st, lambda d: d[:3] in self.forced)
        if emit:
            nodes[:] = out
        return st

    def loop(self, n: Loop, entry: State, emit: bool) -> State:
        ctx = n if n.carry_flags else None
        self.outer[id(n)] = tuple(self.active)
        self.active.append(id(n))

        def body(s, em=False):
            self.carried_known[id(n)] = []
            self._owner = n
            if ctx is None:
                return _ring(n, self.block(n.body, s.copy(), em, ctx))
            # the drains still pending at the end of a trip (an inner loop's, nothing after it
            # needed them) stay pending over the back edge -- set before the loop, waited for
            # after it -- so the next trip's first work on their pipe does not queue behind them
            # (they order nothing there: at the head they carry no records)
            over = self.over_of(n)
            left = [(a, b, e, frozenset()) for a, b, e in over or ()]
            self.starved[id(n)] = set()
            saved, self.pending = self.pending, left
            try:
                st = self._block(n.body, s.copy(), em, ctx)
                ends = {d[:3] for d in self.pending}
                stay = set(over or ())
                tail = self._drain(st, lambda d: d[:3] not in stay)
                # (one a trip waited for on every path is set again for the next trip's wait)
                rearm = [Instr(f"set_flag {a}, {b}, {e}", a) for a, b, e in sorted(stay - ends)]
            finally:
                self.pending = saved
            if over is None:        # the first round decides which ones stay pending
                self.over[id(n)] = sorted(ends)
            if em:
                n.body += tail + rearm
            sync_cross.check(self, n)
            check_top(self, n)
            return _ring(n, st)
        try:
            # (a loop of one trip at most: its body starts from the entry, and it is left after
            # none or one)
            head, end = self._fixpoint(entry, body, join=not n.one_trip)
            if emit:
                for key in [k for k in self.branch_waits if k[0] == id(n)]:
                    del self.branch_waits[key]      # (the waits of the run that emits)
                for key in [k for k in self.cross_waits if k[0] == id(n)]:
                    del self.cross_waits[key]
                end = body(head, True)
                for pair, rec in sync_cross.accepted(self, id(n)):
                    waits = {id(w) for w in self.cross_waits.get((id(n),) + pair, ())}
                    self.report.pairs += place_sets(n.body, pair, frozenset(rec.producers), waits)
                for pair, (producers, relay) in sorted(self.branch_pairs.get(id(n), {}).items()):
                    waits = {id(w) for w in self.branch_waits.get((id(n),) + pair, ())}
                    if not waits:
                        # (planned in an earlier round, covered otherwise in this one: set before
                        # the loop and drained after it, which orders nothing here -- a wait and
                        # a set in the body would hold dst for nothing; found by a probe: a row
                        # reduction's loads waited for the vector unit at every trip's end, +8.7%)
                        continue
                    self.report.pairs += place_sets(n.body, pair, producers, waits, relay)
                    used = self.report.events_used
                    for a, b, e in [pair] + ([(relay[0], pair[0], relay[1])] if relay else []):
                        used[(a, b)] = max(used.get((a, b), 0), e + 1)
        finally:
            self.active.pop()
        # exit at the head: after 0 or more trips.  The drains after the loop (``wait_flag`` on
        # dst of each loop-carried pair) order dst after what src was ordered after at the pair's
        # set_flag: in the last trip (after one or more trips), before the loop (after none, the
        # set before it) -- so after the records known at both (applied where each is waited for)
        # (a pair the last run of the body does not set -- an earlier fixpoint round took its id --
        # is still set before the loop: its drain orders nothing)
        body_ids = self.body_ids(n)
        keys: dict = {}
        seg = self.entry.get(id(n))
        before = {}
        for src, dst, ev, known in self.carried_known.get(id(n), ()):
            # a set before the loop that went right after its loads orders only what src was
            # ordered after there -- not what src waited for later in that run (found by a probe:
            # MTE2 waited for V after its early set, and the drain claimed V's write for MTE1) --
            # and not what the run issues again after it (a record is its latest instance)
            at = self.early.get((id(n), src, dst, ev))
            early = at is not None and seg is not None
            if (src, at) not in before:
                # (a set before src's first work in the run, or at its start: what src was ordered
                # after at the run's start, a subset of what it is there -- and none of the
                # records the run issues: a record is its latest instance, and what src knew of
                # an earlier instance, e.g. the outer loop's previous trip's, does not carry
                # over; found when drains pending at the run made a set go there more often)
                before[(src, at)] = (entry.known(src), None) if not early else (seg.known_at(at) or set(), at) \
                    if at >= 0 and seg.whole[at].pipe == src else (seg.start_known.get(src, frozenset()), -1)
            pre, cut = before[(src, at)]
            # (a cross pair's first set is in the previous trip of the loop around: its drain
            # orders what the loop's own sets do -- claiming its producers too made the drain the
            # one a later read of theirs waited for, after the loop's last product: a probe's
            # 128x128x64 matmul with 3 K trips 4799 -> 5112 cycles; a pair of its own is set
            # right after them instead)
            cross = sync_cross.is_cross(self, n, (src, dst, ev))
            keys.setdefault((src, dst, ev), set()).update(
                k for k in known if k[0] in body_ids or
                (not cross and k in pre and (cut is None or seg.issued.get(k, -1) <= cut)))
        self.drains[id(n)] = [(a, b, e, frozenset(keys.get((a, b, e), ()))) for a, b, e in sorted(self.carried_of(n))]
        return head.join(end) if n.one_trip else head.copy()

    def over_of(self, n: Loop):
        """The inner drains pending over ``n``'s back edge (None before its first round): not a
        cross pair's, which its loop's trip waits for (sync_cross.py)."""
        over = self.over.get(id(n))
        crossed = {pair for pair, _ in sync_cross.accepted(self, id(n))}
        return over if over is None or not crossed else [f for f in over if f not in crossed]

    def carried_of(self, n: Loop) -> set:
        """The pairs set before ``n`` and drained after it: its loop-carried pairs and the cross
        pairs of the loops inside it (sync_cross.py)."""
        return self.carried.get(id(n), set()) | {pair for pair, _ in sync_cross.accepted(self, id(n))}

    def body_ids(self, n: Loop) -> set:
        """The ids of the instructions in ``n``'s body (found once: the syncs the pass inserts
        there later have no records, which is all the ids are looked up for)."""
        ids = self._body_ids.get(id(n))
        if ids is None:
            ids = self._body_ids[id(n)] = {id(i) for i in walk(n.body)}
        return ids

    def positions(self, nodes: list) -> dict:
        """id(instruction) -> the index in ``nodes`` of the node holding it (cached per block and
        length: the emitting run rewrites a block only at its end)."""
        key = (id(nodes), len(nodes))
        pos = self._block_positions.get(key)
        if pos is None:
            pos = self._block_positions[key] = {id(x): j for j, n in enumerate(nodes) for x in walk([n])}
        return pos

    def while_(self, n: While, entry: State, emit: bool) -> State:
        def trip(s, em=False):
            self._owner = n
            t = self.block(n.before, s.copy(), em)
            self._owner = n
            t = self.block(n.test, t, em)
            self._owner = n
            return t, self.block(n.after, t.copy(), em)

        head, _ = self._fixpoint(entry, lambda s: trip(s)[1])
        exit_state, _ = trip(head, emit)
        return exit_state

    def _fixpoint(self, entry: State, body, join: bool = True) -> tuple:
        """The loop head's state: rounds of ``body`` until it is stable and a round took or refused
        no cross pair (the next round, which emits, then decides as the last one did) -- without
        ``join`` (a loop of one trip at most), the entry's.  Returns it and the state the last
        round ended in."""
        head = entry
        while True:
            seen = self.decisions
            end = body(head)
            nxt = head.join(end) if join else entry
            if nxt == head and self.decisions == seen:
                return head, end
            head = nxt


def insert_sync(nodes: list, *, max_events: int = 8, reserved: dict | None = None) -> SyncReport:
    """Insert ``set_flag``/``wait_flag`` pairs into ``nodes`` (in place, into nested loop bodies
    and branches too) so that every cross-pipe hazard is ordered -- see the module docstring for
    the exact guarantee and the placement rules.  Event ids the code uses for flags of its own
    (asmlist.Guarded) are never taken: ``reserved`` ((src, dst) -> ids) anywhere, an ``If``'s
    ``reserved`` / ``reserved_else`` in its branches.  Returns a :class:`SyncReport`: the number
    of pairs inserted and, per (src, dst) pipe pair, how many event ids (0..n-1) it uses."""
    saved = _lists(nodes)
    refused: set = set()
    while True:
        p = _Pass(max_events, reserved, frozenset(refused))
        try:
            p.block(nodes, State(), True)
            return p.report
        except Restart as r:     # (a new name each time: the runs are finite)
            refused.add(r.name)
            for lst, items in saved:
                lst[:] = items


def _lists(nodes: list) -> list:
    """(list, a copy of its items) for ``nodes`` and every block in it: what restores the input."""
    out = [(nodes, list(nodes))]
    for n in nodes:
        parts = (n.body,) if isinstance(n, Loop) else (n.test, n.then, n.orelse) if isinstance(n, If) \
            else (n.before, n.test, n.after) if isinstance(n, While) else ()
        for part in parts:
            out += _lists(part)
    return out
