"""GM races between grid programs: accesses Triton leaves unordered, found whatever the schedule.

Triton gives a launch's programs no order, so two programs touching the same GM bytes — one of
them writing — give a schedule-dependent result, unless both accesses are atomic, or both happen
while their program holds a lock (a ``satomic.cas`` that succeeded, until the ``satomic.xchg`` /
store that releases it: Triton's LayerNorm-backward lock pattern orders what it guards).  The
simulator runs the programs in one particular order, so such a race never shows in its results;
this check reports it instead, naming both programs and both instructions.

Per GM argument it keeps, per byte, the record of the last write and of a read by another program
(4 + 4 bytes per GM byte; launches whose GM arguments exceed ``LIMIT`` skip the check, with a
note).  A record is (program, core, kind, instruction).  The program is the grid program the core
runs (``set_program`` names it inside a persistent loop).  Reads and writes of two programs that
ran on the same core are not compared: the compiler issues a program's loads ahead, during the
previous program of its core (double buffering), so a read can carry the earlier program's id.
Guarantees: no report for accesses of one program, for atomic/atomic pairs, for lock-guarded
pairs, for read/read pairs; a report for every other pair of overlapping accesses by programs on
different cores, and for write/write pairs on one core.
"""
from __future__ import annotations

import numpy as np

from .errors import RaceError

LIMIT = 64 << 20            # GM bytes a launch may bind for the check to run
PLAIN, ATOMIC, GUARDED = 0, 1, 2
_KIND = {PLAIN: "", ATOMIC: "atomically ", GUARDED: "holding a lock "}


class GmRaces:
    def __init__(self, sizes: dict):
        self.w = {n: np.full(s, -1, np.int32) for n, s in sizes.items()}
        self.r = {n: np.full(s, -1, np.int32) for n, s in sizes.items()}   # <= -2: -2 - rec, read by several
        self.gpid = np.empty(256, np.int64)
        self.core = np.empty(256, np.int64)
        self.kind = np.empty(256, np.int8)
        self.inst: list = []

    def _record(self, gpid, core, kind, inst) -> int:
        k = len(self.inst)
        if k == self.gpid.size:
            for name in ("gpid", "core", "kind"):
                a = getattr(self, name)
                setattr(self, name, np.concatenate([a, np.empty_like(a)]))
        self.gpid[k], self.core[k], self.kind[k] = gpid, core, kind
        self.inst.append(inst)
        return k

    def access(self, st, name, write: bool, kind: int, inst, lo=None, hi=None, starts=None, length=0):
        """Program ``st.gpid`` accesses bytes [lo, hi) of GM argument ``name`` (or ``length`` bytes
        from each of ``starts``)."""
        if starts is not None:
            if length <= 0 or len(starts) == 0:
                return
            at = (np.asarray(starts, np.int64)[:, None] + np.arange(length, dtype=np.int64)).ravel()
        else:
            if hi <= lo:
                return
            at = slice(lo, hi)
        if kind == PLAIN and st.locks:
            kind = GUARDED
        rec = self._record(st.gpid, st.core, kind, inst)
        me, core = st.gpid, st.core
        w, r = self.w[name], self.r[name]
        prev_w = w[at]
        self._check(name, prev_w[prev_w >= 0], me, core, kind, write, True, inst, at, prev_w)
        if write:
            prev_r = r[at]
            several = prev_r[prev_r <= -2]
            readers = np.concatenate([prev_r[prev_r >= 0], -2 - several])
            self._check(name, readers, me, core, kind, write, False, inst, at, prev_r)
            w[at] = rec
        else:
            prev_r = r[at]
            foreign = (prev_r >= 0) & (self.gpid[np.maximum(prev_r, 0)] != me)
            new = np.where(prev_r == -1, rec, np.where(foreign, -2 - rec, prev_r))
            r[at] = new

    def _check(self, name, recs, me, core, kind, write, against_write, inst, at, prev):
        if recs.size == 0:
            return
        gp, cr, kd = self.gpid[recs], self.core[recs], self.kind[recs]
        other = gp != me
        if not (write and against_write):               # read/write pairs: not on one core (prefetch)
            other &= cr != core
        conflict = other & ~((kd == ATOMIC) & (kind == ATOMIC)) & ~((kd == GUARDED) & (kind == GUARDED))
        if not conflict.any():
            return
        j = int(np.argmax(conflict))
        rec = int(recs[j])
        prev_inst = self.inst[rec]
        byte = self._first_byte(at, prev, rec)
        where = (f"line {prev_inst.loc[1]}" if getattr(prev_inst, "loc", None) else f"assembly line {prev_inst.line}")
        did = "wrote" if against_write else "read"
        does = "writes" if write else "reads"
        raise RaceError(
            f"program {me} (core {core}) {_KIND[kind]}{does} `{name}` byte {byte:#x}, which program "
            f"{int(gp[j])} (core {int(cr[j])}) {_KIND[int(kd[j])]}{did} at {where} (`{prev_inst.text().strip()}`); "
            "Triton runs a launch's programs in no order, so the result depends on the schedule — make each "
            "program touch its own elements, or use atomics (sanitize=False turns this check off)",
            inst=inst, addrs={name: byte})

    def _first_byte(self, at, prev, rec) -> int:
        hit = np.nonzero((prev == rec) | (prev == -2 - rec))[0]
        k = int(hit[0]) if hit.size else 0
        if isinstance(at, slice):
            return at.start + k
        return int(at[k])
