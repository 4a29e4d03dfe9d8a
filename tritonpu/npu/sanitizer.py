"""Race detection between pipes with vector clocks, over address intervals of on-chip memory.

Each pipe P keeps a vector clock ``vc[P]`` (``vc[P][Q]``: how many of Q's instructions P is
ordered after).  An instruction on P bumps ``vc[P][P]``; ``set_flag`` snapshots the source's
clock, ``wait_flag`` merges it into the destination's, ``barrier all`` merges every clock.
Each on-chip access by a pipe other than the scalar unit is recorded per (space, pipe, interval)
with the pipe's epoch.  An access by pipe P races with a recorded access by pipe Q != P when the
intervals overlap, at least one of them writes, and ``vc[P][Q] < epoch`` (Q's access is not yet
ordered before P).  Scalar-unit accesses complete at issue, so they are checked but never
recorded: every later instruction is ordered after them.

GM is checked the same way per argument (space ``gm:<name>``, byte intervals; a strided transfer
or a gather counts as the interval from its first byte to its last): within a core, an MTE2 read of
bytes an MTE3 store has not yet landed is a race, as on chip.  (Programs on other cores are checked
by :mod:`.gm_races`.)

Records are kept per exact interval (a newer access of the same pipe and interval replaces the
older, which is sound: anything unordered with the older is unordered with the newer) and
pruned once every pipe that touches the space is ordered after them.
"""
from __future__ import annotations

from tritonpu.isa import PIPES

from .errors import RaceError

NPIPES = len(PIPES)
GM = "gm:"                  # the race-tracker space of a GM argument: GM + its name
_PRUNE_AT = 48


class RaceTracker:
    def __init__(self, accessors: dict):
        # accessors: space -> set of pipe indices (other than S) that access the space
        self.accessors = {s: sorted(p for p in ps if p != 0) for s, ps in accessors.items()}
        # the clock rows and seen_s are reset in place: the translating engine's code holds them
        # (translate.Emitter.tick)
        self.vc = [[0] * NPIPES for _ in range(NPIPES)]
        self.seen_s = [0] * NPIPES          # the s_version each pipe last merged
        self.reset()

    def reset(self):
        for row in self.vc:
            row[:] = [0] * NPIPES
        self.seen_s[:] = [0] * NPIPES
        self.s_version = 0                  # bumps whenever the scalar unit's clock row changes
        self.w = {s: [{} for _ in range(NPIPES)] for s in self.accessors}
        self.r = {s: [{} for _ in range(NPIPES)] for s in self.accessors}
        # the latest epoch recorded per (space, pipe): records no newer than what a pipe is
        # ordered after cannot race with it, so their scan is skipped
        self.w_top = {s: [0] * NPIPES for s in self.accessors}
        self.r_top = {s: [0] * NPIPES for s in self.accessors}

    # ---- ordering events ----------------------------------------------------------------------
    def snapshot(self, p):
        return list(self.vc[p])

    def merge(self, p, snap):
        row = self.vc[p]
        for i, x in enumerate(snap):
            if x > row[i]:
                row[i] = x
        if p == 0:
            self.s_version += 1

    def issue(self, p):
        """Pipe p gets an instruction: bump its epoch (after the instruction's accesses)."""
        self.vc[p][p] += 1
        if p and self.seen_s[p] != self.s_version:
            self.follow_scalar(p)

    def follow_scalar(self, p):
        """An instruction on p is ordered after what the scalar unit, which issued it in program
        order, is ordered after."""
        self.seen_s[p] = self.s_version
        row = self.vc[p]
        for i, x in enumerate(self.vc[0]):
            if x > row[i]:
                row[i] = x

    def barrier_all(self):
        top = [max(col) for col in zip(*self.vc)]
        for row in self.vc:
            row[:] = top
        self.s_version += 1

    # ---- accesses -----------------------------------------------------------------------------
    def access(self, p, space, lo, hi, write, inst):
        if hi <= lo:
            return
        if p and self.seen_s[p] != self.s_version:
            self.follow_scalar(p)
        vcp = self.vc[p]
        ws, rs = self.w[space], self.r[space]
        w_top, r_top = self.w_top[space], self.r_top[space]
        for q in self.accessors[space]:
            if q == p:
                continue
            known = vcp[q]
            if w_top[q] > known:
                for (a, b), (e, other) in ws[q].items():
                    if e > known and a < hi and lo < b:
                        self._race(p, q, space, lo, hi, a, b, other, inst,
                                   "write-after-write" if write else "read-after-write")
            if write and r_top[q] > known:
                for (a, b), (e, other) in rs[q].items():
                    if e > known and a < hi and lo < b:
                        self._race(p, q, space, lo, hi, a, b, other, inst, "write-after-read")
        if p == 0:
            return
        rec = (ws if write else rs)[p]
        rec[(lo, hi)] = (vcp[p] + 1, inst)         # the epoch this instruction gets at issue
        (w_top if write else r_top)[p] = vcp[p] + 1
        if len(rec) > _PRUNE_AT:
            self._prune(space, p, rec)

    def _prune(self, space, p, rec):
        others = [q for q in self.accessors[space] if q != p]
        floor = min((self.vc[q][p] for q in others), default=1 << 62)
        dead = [k for k, (e, _) in rec.items() if e <= floor]
        for k in dead:
            del rec[k]

    def _race(self, p, q, space, lo, hi, a, b, other, inst, kind):
        what = "writes" if kind != "read-after-write" else "reads"
        label = space
        if space.startswith(GM):                # a GM argument: named as the kernel names it
            space = space[len(GM):]
            label = f"GM argument {space}"
        theirs = "read" if kind == "write-after-read" else "write"
        msg = (f"{kind} race on {label}: pipe {PIPES[p]} {what} {space}[{lo:#x}, {hi:#x}) while "
               f"pipe {PIPES[q]}'s {theirs} of {space}[{a:#x}, {b:#x}) (line {other.line}: "
               f"{other.text()}) is not ordered before it by a flag or barrier")
        raise RaceError(msg, inst=inst, addrs={"access": (lo, hi), "other": (a, b)})
