"""Placement within one straight-line run for the sync pass (see :mod:`tritonpu.codegen.sync`):
where each ``set_flag`` goes, which event id it takes, and the loop-carried pairs' first sets."""
from __future__ import annotations

from itertools import islice

from tritonpu.isa import PIPES

from . import sync_branches, sync_cross
from .asmlist import Instr
from .sync_model import State, conflicts, flag_of, is_sync, records


class Segment:
    """A straight-line run of instructions: state snapshots per position so a ``set_flag`` can be
    placed right after its producer, and per-(src, dst) event intervals to allocate ids."""

    def __init__(self, p, st: State, run=None, loop=None, body_ids=(), whole=()):
        self.p, self.st = p, st                     # st is updated in place (shared with caller)
        # in a loop body: this run executes every trip, so a producer later in it (last trip's
        # instance) can set its flag right after itself for the next trip (loop-carried pair)
        self.run = run
        self.whole = whole                          # the run's instructions (in or out of a loop)
        self.loop = loop
        self.body_ids = body_ids
        self.pos_of = {id(x): j for j, x in enumerate(run)} if run else {}
        self.instrs: list[Instr] = []
        self.before: list[list[Instr]] = []         # syncs inserted before instruction i
        self.after: list[list[Instr]] = []          # set_flags inserted after instruction i
        # known(pipe of i) right after issuing i, see known_at -- for instructions with records
        # only (a flag is only ever set after one of those); None for the others
        self.known: list = []
        self.issued: dict = {}                      # record key -> position issued in this run
        self.base = 0                               # run positions are segment positions
        self.carried_sets: dict = {}                # position -> loop-carried set_flags after it
        self.busy: dict = {}                        # (src, dst) -> [(event, start, end)]
        self.tick = 0
        self.later: set = set()                     # ids of the body's instructions after this run
        self.drained: dict = {}                     # (src, dst, ev) of a drain waited for here -> position
        self.start_known: dict = {}                 # pipe -> known(pipe) at the run's start (a loop's entry)

    def last_on(self, pipe: str) -> int:
        """The last position of the run where ``pipe`` has work (its instruction, or a flag
        instruction placed around it), -1 for none."""
        for k in range(len(self.instrs) - 1, -1, -1):
            if any(x.pipe == pipe for x in (self.instrs[k], *self.before[k], *self.after[k],
                                            *self.carried_sets.get(self.base + k, ()))):
                return k
        return -1

    def _pos(self, i, side):
        self.tick += 1
        return (i, side, self.tick)

    def instr(self, ins: Instr, pre=()):
        """Place ``ins`` (``pre``: drain waits that go right before it, already applied)."""
        st, i = self.st, len(self.instrs)
        self.instrs.append(ins)
        self.before.append(list(pre))
        self.after.append([])
        if is_sync(ins) and ins.text.split()[:2] == ["barrier", "all"]:
            for q in PIPES:
                st.unord[q].clear()
        need = conflicts(st, ins)
        while need:
            plan = max((self._plan(pp, need, i) for pp in sorted({st.recs[k].pipe for k in need},
                                                                   key=PIPES.index)),
                       key=lambda pl: len(pl[3] & need))
            self._apply(plan, ins.pipe, i)
            need = conflicts(st, ins)
        recs = records(ins)
        for key, _ in recs:
            self.issued[key] = i
        st.issue(ins, recs)
        self.p.forget(recs)
        self.known.append((len(st.recs), frozenset(st.unord[ins.pipe])) if recs else None)

    def known_at(self, k: int):
        """``known(pipe)`` for instruction k's pipe right after it was issued (None for one without
        records): kept as how many records there were and the keys not yet ordered before that
        pipe -- the records only grow, in order -- not as a set of every record per instruction
        (a 1024-element tl.sort: 11875 such sets of ~5500 records, 3.9 s of its compile)."""
        snap = self.known[k]
        if snap is None:
            return None
        n, unord = snap
        return {key for key in islice(self.st.recs, n) if key not in unord}

    def _plan(self, src: str, need: set, i: int):
        """(src, set position k or None for adjacent, event, keys the flag carries)."""
        mine = [self.issued[k] for k in need if self.st.recs[k].pipe == src and k in self.issued]
        if mine:
            k = self._extend(src, self.instrs[i].pipe, max(mine), i)
            ev = self._free(src, k, i)
            if ev is not None:
                later = {key for key, pos in self.issued.items() if pos > k}
                return src, k, ev, self.known_at(k) - later
        elif self.run is not None:
            carried = self._carried_plan(src, need, i)
            if carried is not None:
                return carried
        if not mine:
            branch = sync_branches.plan(self.p, id(self.instrs[i]), src, self.instrs[i].pipe, need, self.st)
            if branch is not None:
                return branch
        return src, None, None, self.st.known(src)

    def _carried_plan(self, src: str, need: set, i: int):
        """A producer of the previous trip later in this run: its flag is set right after it."""
        base = self.base + i
        ahead = [self.pos_of[k[0]] for k in need if self.st.recs[k].pipe == src and k[0] in self.pos_of
                 and self.pos_of[k[0]] > base]
        if not ahead or any(k[0] in self.body_ids and k[0] not in self.pos_of for k in need
                            if self.st.recs[k].pipe == src):
            return None
        dst = self.instrs[i].pipe
        kk = self._extend(src, dst, max(ahead), len(self.run))
        ev = self.p.carried_event(self.loop, kk, src, dst)
        if ev is None:
            return None
        # covered: src's records from (i, kk] of this run (last trip) and those from before the loop
        keys = {key for key in self.st.known(src) | need
                if self.st.recs[key].pipe == src and
                ((key[0] in self.pos_of and base < self.pos_of[key[0]] <= kk) or key[0] not in self.body_ids)}
        first = sync_cross.claim(self.p, self.loop, src, dst, ev, need, self.st)
        if first is not None:       # the first trip's set is in the previous trip of the loop around
            return src, ("carried", kk), ev, {key for key in keys if key[0] in self.pos_of} | first
        early = self._early(src, dst, ev, need)
        if early is None:
            # a consumer that needs nothing from before the loop claims no more than the pair's
            # first set covers either, wherever another consumer put it (found by a probe: the
            # wait for this trip's first L0A slot claimed the run's later reads of the second)
            early = self.p.early.get((id(self.loop), src, dst, ev))
        if early is not None:       # the first trip's set goes after entry position `early`
            entry = self.p.entry[id(self.loop)]
            keys = {key for key in keys if entry.issued.get(key, -1) <= early}
        return src, ("carried", kk), ev, keys

    def _early(self, src: str, dst: str, ev: int, need: set):
        """Where in the straight-line run right before the loop the first ``set_flag`` of the
        loop-carried pair ``(src, dst, ev)`` can go for a consumer that needs ``need``: right after
        the last of those records issued in that run (and the rest of its prefetch group), when
        no flag ``(src, dst, ev)`` of the run is pending there -- so the first trip waits for the
        loads it reads, not for every load issued before the loop.  When it needs none of src's
        records of that run and src has work in it, right before src's first work there (what
        src's queue holds there, less that work: a persistent matmul's next program's first L0
        tiles waited for its accumulator's zeroing, which waits for FIX to store the previous
        program's); when src has no work in the run and the consumer needs only src's own
        records, at the run's start (-1).  None: right before the loop."""
        entry = self.p.entry.get(id(self.loop))
        if entry is None:
            return None
        mine = [entry.issued[k] for k in need if self.st.recs[k].pipe == src and k in entry.issued]
        first = next((k for k, x in enumerate(entry.whole) if x.pipe == src), None)
        # src idle in the run but waiting there for earlier loops' drains, and the consumer
        # needing only src's own accesses: at the run's start, before those waits
        idle = not mine and first is None and bool(need) and \
            any(d[1] == src for d in self.p.rearmed.get(id(self.loop), ())) and \
            all(self.st.recs[k].pipe == src for k in need)
        if not mine and not idle and first is None:
            return None
        key = (id(self.loop), src, dst, ev)
        if key in self.p.early and self.p.early[key] is None:
            return None
        # the set only moves later as consumers are seen (what earlier claims took stays true);
        # None for good: right before the loop, which covers every claim
        # (the rest of the group too: the flag then covers what the body's flag for that trip does)
        end = entry._group_end(src, dst, max(mine), len(entry.whole))[0] if mine else -1 if idle else first - 1
        at = entry.early_ok((src, dst, ev), max(end, self.p.early.get(key, -1)))
        self.p.early[key] = at
        return at

    def early_ok(self, pair, at):
        """``at`` if the first set of ``pair`` may go after position ``at`` of this run (no flag of
        the pair set or drained here is pending after it), else None."""
        src, dst, ev = pair
        if at is None or any(e == ev and end[0] >= at for e, _, end in self.busy.get((src, dst), ())) or \
                self.drained.get(pair, -2) >= at:
            return None
        return at

    def _extend(self, src: str, dst: str, k: int, limit: int) -> int:
        """Where a flag ``src -> dst`` set after run position ``k`` for a consumer at ``limit`` (or
        in the next trip: ``limit`` is the run's end) goes instead: after the last instruction of
        ``k``'s prefetch group (the loads of one trip a pipelined loop issues ahead: ``Instr.group``)
        before the next ``dst`` instruction -- when that next ``dst`` instruction is not the
        consumer.  One flag then covers the tiles the consumer and the ones after it need (their
        waits find them ordered already), so the loads a pipelined loop keeps in flight hold one
        event id per trip, not one each; the consumer, queued behind other ``dst`` work, waits
        for its trip's later loads too, which were issued with its own a trip or more ahead."""
        last, met = self._group_end(src, dst, k, limit)
        return last if met else k

    def _group_end(self, src: str, dst: str, k: int, limit: int):
        """(the last instruction of ``k``'s prefetch group before the next ``dst`` instruction or
        ``limit``, whether a ``dst`` instruction came first)."""
        group, last = self.whole[k].group, k
        if group is None:
            return k, False
        for j in range(k + 1, limit):
            x = self.whole[j]
            if x.pipe == dst:
                return last, True
            if x.pipe == src and x.group == group:
                last = j
        return last, False

    def _free(self, src, k, i):
        dst = self.instrs[i].pipe
        start, end = (k, 1, self.tick + 1), (i, 0, self.tick + 2)
        used = {e for e, a, b in self.busy.get((src, dst), ()) if not (b < start or end < a)}
        used |= self.p.held(src, dst)
        # a drain of the pair waited for in this run after position k is still pending at k (it
        # left ``pending`` when its wait was placed, before this pair's consumer)
        used |= {e for (a, b, e), w in self.drained.items() if (a, b) == (src, dst) and w > k}
        ev = next((e for e in range(self.p.max_events) if e not in used), None)
        if ev is None:
            self.p.starve(src, dst)
        return ev

    def _apply(self, plan, dst: str, i: int):
        src, k, ev, keys = plan
        if isinstance(k, tuple) and k[0] == "branch":
            # loop-carried through branches: the sets go in after the body is placed
            wait = Instr(f"wait_flag {src}, {dst}, {ev}", dst)
            self.before[i].append(wait)
            self.p.branch_waits.setdefault((k[1], src, dst, ev), []).append(wait)
            self.st.cover(dst, keys)
            return
        if isinstance(k, tuple):    # loop-carried: set after the producer, for the next trip
            self.carried_sets.setdefault(k[1], []).append(Instr(f"set_flag {src}, {dst}, {ev}", src))
            self.before[i].append(Instr(f"wait_flag {src}, {dst}, {ev}", dst))
            self.st.cover(dst, keys)
            return
        if k is None:               # every earlier flag of this run was waited for: any id is free
            held = self.p.held(src, dst)
            ev = next(e for e in range(self.p.max_events) if e not in held)
            start = self._pos(i, 0)
            self.before[i].append(Instr(f"set_flag {src}, {dst}, {ev}", src))
        else:
            start = self._pos(k, 1)
            self.after[k].append(Instr(f"set_flag {src}, {dst}, {ev}", src))
        end = self._pos(i, 0)
        self.before[i].append(Instr(f"wait_flag {src}, {dst}, {ev}", dst))
        self.busy.setdefault((src, dst), []).append((ev, start, end))
        self.st.cover(dst, keys)

    def flush(self, emit: bool) -> list:
        out = []
        self.out_pos = []                           # per instruction: its end in the list returned
        whole_pos = None
        for j, (ins, b, a) in enumerate(zip(self.instrs, self.before, self.after)):
            if self.carried_sets.get(self.base + j):
                # what src is ordered after at the set, less what the last trip issues after it
                # (later in this run, or in the body after it)
                if whole_pos is None:
                    whole_pos = {id(x): n for n, x in enumerate(self.whole)}
                later = self.later
                known = frozenset(k for k in self.known_at(j)
                                  if not (whole_pos.get(k[0], -1) > j or k[0] in later))
            for c in self.carried_sets.get(self.base + j, ()):
                src, dst, ev = flag_of(c)
                self.p.carried_known.setdefault(id(self.loop), []).append((src, dst, ev, known))
            a = a + self.carried_sets.get(self.base + j, [])
            out += b + [ins] + a
            self.out_pos.append(len(out))
            if emit:
                for s in b + a:
                    if s.text.startswith("set_flag"):
                        src, dst, ev = flag_of(s)
                        used = self.p.report.events_used
                        used[(src, dst)] = max(used.get((src, dst), 0), ev + 1)
                        self.p.report.pairs += 1
        return out
