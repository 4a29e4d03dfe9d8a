"""GM races between grid programs: accesses Triton leaves unordered, found whatever the schedule.

Triton gives a launch's programs no order, so two programs touching the same GM bytes — one of
them writing — give a schedule-dependent result, unless both accesses are atomic, or both happen
while their program holds a lock (a ``satomic.cas`` that succeeded, until the ``satomic.xchg`` /
store that releases it: Triton's LayerNorm-backward lock pattern orders what it guards, atomics
under the lock included).  The simulator runs the programs in one particular order, so such a
race never shows in its results; this check reports it instead, naming both programs and both
instructions.

Per GM argument it keeps, per byte, the record of the last write and of a read by another program
(two int32 per element of the argument — per byte once an access splits an element —, made when
the argument is first accessed; launches whose GM arguments exceed ``LIMIT`` skip the check).  A record is (program, core, kind, instruction).  The program is the grid program the core
runs (``set_program`` names it inside a persistent loop).  Reads and writes of two programs that
ran on the same core are not compared: the compiler issues a program's loads ahead, during the
previous program of its core (double buffering), so a read can carry the earlier program's id.
A scalar atomic is an acquire and a release (Triton's default ``acq_rel``; the ISA keeps no
weaker order): an access of program A is ordered before one of program B when A made a scalar
atomic after it on a location where B made one since — the "last program reduces" ticket
(``if tl.atomic_add(count, 1) == n - 1: read every partial``) and flags a consumer spins on.
(Chains through a third program are not followed: such a pair is still reported.)

Guarantees: no report for accesses of one program, for atomic/atomic pairs, for pairs of accesses
made under a lock (plain or atomic), for pairs a release and an acquire order, for read/read
pairs; a report for every other pair of overlapping accesses by programs on different cores, and
for write/write pairs on one core.
"""
from __future__ import annotations

import bisect

import numpy as np

from .errors import RaceError

LIMIT = 16 << 20            # GM bytes a launch may bind for the check to run
PLAIN, ATOMIC, GUARDED = 0, 1, 2        # bits of an access's kind: an atomic under a lock is both
SYNC = 4                                # a scalar atomic: acquire and release (Triton's acq_rel)
_KIND = {PLAIN: "", ATOMIC: "atomically ", GUARDED: "holding a lock ",
         ATOMIC | GUARDED: "atomically, holding a lock, "}


class GmRaces:
    def __init__(self, sizes: dict, granules: dict | None = None):
        self.sizes = dict(sizes)
        # bytes per map entry: the argument's element size while every access is whole elements
        # (it drops to 1 — exactly, by repeating entries — at the first access that is not)
        self.granule = {n: (granules or {}).get(n, 1) for n in sizes}
        self.w: dict = {}       # name -> last write's record per granule (-1: none); made on first access
        self.r: dict = {}       # name -> a read's record (-1: none; <= -2: -2 - rec, read by several)
        self.touched: dict = {}  # name -> Spans of the bytes accessed (records exist only there)
        self.gpid = np.empty(256, np.int64)
        self.core = np.empty(256, np.int64)
        self.kind = np.empty(256, np.int8)
        self.inst: list = []
        self.releases: dict = {}   # program -> [(record, location)] of its scalar atomics, in order
        self.acquires: dict = {}   # program -> {location: its latest scalar atomic's record there}

    def _maps(self, name):
        w = self.w.get(name)
        if w is None:
            g = self.granule[name]
            n = -(-self.sizes[name] // g)
            w = self.w[name] = np.full(n, -1, np.int32)
            self.r[name] = np.full(n, -1, np.int32)
            self.touched[name] = Spans()
        return w, self.r[name]

    def _fit(self, name, *values) -> int:
        """The granule to address ``values`` (byte offsets and lengths) with: the argument's, unless
        one of them is not a multiple of it — then its maps become per byte from here on."""
        g = self.granule[name]
        if g > 1 and any((v % g) if isinstance(v, (int, np.integer)) else (np.asarray(v) % g).any() for v in values):
            if name in self.w:
                n = self.sizes[name]
                self.w[name] = np.repeat(self.w[name], g)[:n]
                self.r[name] = np.repeat(self.r[name], g)[:n]
            g = self.granule[name] = 1
        return g

    def _record(self, gpid, core, kind, inst) -> int:
        k = len(self.inst)
        if k == self.gpid.size:
            for name in ("gpid", "core", "kind"):
                a = getattr(self, name)
                setattr(self, name, np.concatenate([a, np.empty_like(a)]))
        self.gpid[k], self.core[k], self.kind[k] = gpid, core, kind
        self.inst.append(inst)
        return k

    def access(self, st, name, write: bool, kind: int, inst, lo=None, hi=None, starts=None, length=0,
               nseg=1, stride=0):
        """Program ``st.gpid`` accesses bytes [lo, hi) of GM argument ``name`` — or ``nseg`` segments
        of ``length`` bytes ``stride`` apart from ``lo`` — or ``length`` bytes from each of ``starts``."""
        if starts is not None:
            if length <= 0 or len(starts) == 0:
                return
            g = self._fit(name, starts, length)
            starts = np.asarray(starts, np.int64)
            at = (starts[:, None] // g + np.arange(length // g, dtype=np.int64)).ravel()
            span = (int(starts.min()), int(starts.max()) + length)
        elif nseg > 1:
            if length <= 0:
                return
            g = self._fit(name, lo, length, stride)
            at = _Segments(lo // g, nseg, length // g, stride // g)
            span = (min(lo, lo + (nseg - 1) * stride), max(lo, lo + (nseg - 1) * stride) + length)
        else:
            if hi <= lo:
                return
            g = self.granule[name]
            if g > 1 and (lo % g or hi % g):
                g = self._fit(name, lo, hi)
            at = slice(lo // g, hi // g)
            span = (lo, hi)
        if st.locks:
            kind |= GUARDED
        sync = kind & SYNC
        kind &= ~SYNC
        rec = self._record(st.gpid, st.core, kind, inst)
        me, core = st.gpid, st.core
        if sync:
            loc = (name, lo)
            self.releases.setdefault(me, []).append((rec, loc))
            self.acquires.setdefault(me, {})[loc] = rec
        w, r = self._maps(name)
        where = at
        if isinstance(at, _Segments):           # evenly strided segments: views, not index arrays
            w, r, at = at.view(w), at.view(r), Ellipsis
        if self.touched[name].add(*span):       # no byte of it accessed before: nothing to check
            (w if write else r)[at] = rec
            return
        prev_w = w[at]
        b = prev_w.max()
        if b >= 0:              # written before: by whom (usually one record for the whole range)
            a = prev_w.min()
            recs = np.array([a]) if a == b else np.unique(prev_w[prev_w >= 0])
            self._check(name, recs, me, core, kind, write, True, inst, where, prev_w)
        prev_r = r[at]
        a, b = prev_r.min(), prev_r.max()
        if write:
            if a != -1 or b != -1:
                vals = np.array([a]) if a == b else np.unique(prev_r[prev_r != -1])
                self._check(name, np.where(vals >= 0, vals, -2 - vals), me, core, kind, write, False, inst, where,
                            prev_r)
            w[at] = rec
        elif a == b:            # one previous state for the whole range (the common case)
            if a == -1:
                r[at] = rec
            elif a >= 0:
                r[at] = rec if self.gpid[a] == me else -2 - rec
        else:
            foreign = (prev_r >= 0) & (self.gpid[np.maximum(prev_r, 0)] != me)
            r[at] = np.where(prev_r == -1, rec, np.where(foreign, -2 - rec, prev_r))

    def _check(self, name, recs, me, core, kind, write, against_write, inst, at, prev):
        if recs.size == 0:
            return
        gp, cr, kd = self.gpid[recs], self.core[recs], self.kind[recs]
        other = gp != me
        if not (write and against_write):               # read/write pairs: not on one core (prefetch)
            other &= cr != core
        # ordered: two atomics, or two accesses under a lock (the Count of LayerNorm-backward's lock
        # pattern is read plainly and set with atomic_xchg, both while the lock is held)
        conflict = other & ((kd & kind) == 0)
        if not conflict.any():
            return
        for j in np.flatnonzero(conflict):
            if self._ordered(int(recs[j]), int(gp[j]), me):
                conflict[j] = False
        if not conflict.any():
            return
        j = int(np.argmax(conflict))
        rec = int(recs[j])
        prev_inst = self.inst[rec]
        byte = self._first_byte(at, prev, rec) * self.granule[name]
        where = (f"line {prev_inst.loc[1]}" if getattr(prev_inst, "loc", None) else f"assembly line {prev_inst.line}")
        did = "wrote" if against_write else "read"
        does = "writes" if write else "reads"
        raise RaceError(
            f"program {me} (core {core}) {_KIND[kind]}{does} `{name}` byte {byte:#x}, which program "
            f"{int(gp[j])} (core {int(cr[j])}) {_KIND[int(kd[j])]}{did} at {where} (`{prev_inst.text().strip()}`); "
            "Triton runs a launch's programs in no order, so the result depends on the schedule — make each "
            "program touch its own elements, or use atomics (sanitize=False turns this check off)",
            inst=inst, addrs={name: byte})

    def _ordered(self, rec, program, me) -> bool:
        """Whether ``program``'s access ``rec`` happens before what ``me`` does now: ``program`` made a
        scalar atomic (a release) after it, on a location where ``me`` has made one (an acquire) since."""
        mine = self.acquires.get(me)
        if not mine:
            return False
        return any(r > rec and mine.get(loc, -1) > r for r, loc in self.releases.get(program, ()))

    def _first_byte(self, at, prev, rec) -> int:
        hit = np.flatnonzero((prev == rec) | (prev == -2 - rec))
        k = int(hit[0]) if hit.size else 0
        if isinstance(at, slice):
            return at.start + k
        if isinstance(at, _Segments):
            i, j = divmod(k, at.length)
            return at.lo + i * at.stride + j
        return int(at[k])


class Spans:
    """A union of byte ranges, kept as sorted disjoint ranges (touching ones merged)."""

    def __init__(self):
        self.los: list = []
        self.his: list = []

    def add(self, lo: int, hi: int) -> bool:
        """Add [lo, hi); whether it overlapped none of the ranges before."""
        los, his = self.los, self.his
        i = bisect.bisect_left(his, lo)         # the first range ending at or after lo
        if i < len(los) and los[i] <= lo and hi <= his[i]:
            return False                        # inside one range (re-reads: the common case)
        j = bisect.bisect_right(los, hi)        # past the last range starting at or before hi
        # ranges i .. j-1 overlap [lo, hi) or touch it (the ranges are disjoint and do not touch
        # one another: only the first can end at lo, only the last start at hi)
        n = j - i
        fresh = n == 0 or n == 1 and (his[i] == lo or los[i] == hi) or \
            n == 2 and his[i] == lo and los[i + 1] == hi
        if i == j:
            los.insert(i, lo)
            his.insert(i, hi)
        else:
            lo, hi = min(lo, los[i]), max(hi, his[j - 1])
            los[i:j] = [lo]
            his[i:j] = [hi]
        return fresh


class _Segments:
    """``nseg`` runs of ``length`` bytes, ``stride`` apart from ``lo``: a 2-D view of a per-byte map."""

    def __init__(self, lo, nseg, length, stride):
        self.lo, self.nseg, self.length, self.stride = lo, nseg, length, stride

    def view(self, m):
        end = self.lo + self.nseg * self.stride
        if self.length <= self.stride and end <= m.size:       # rows of a reshaped slice: cheaper
            return m[self.lo:end].reshape(self.nseg, self.stride)[:, :self.length]
        e = m.itemsize
        return np.lib.stride_tricks.as_strided(m[self.lo:], shape=(self.nseg, self.length),
                                               strides=(self.stride * e, e))
