"""A traced launch as data: every executed instruction with its core, pipe, start, duration and
kernel source line, the per-instruction records the simulator keeps for a traced launch (``npu.state.Records``), and who stalled whom.

Everything the profile shows is derived here from ``Stats`` (``trace=True``), never estimated:
per line, the cycles of its instructions per pipe (the scalar unit counts one issue cycle for each
instruction it hands to another pipe, as ``pipe_busy`` does), the bytes of its transfers per path
and their first-touch (DDR) and L2 beats; per stall, the instruction that waited, the producer it
waited for and the line that next ran on the stalled pipe.

Producer of a ``wait_flag SRC->DST`` stall: the last instruction on SRC before the matching
``set_flag`` (sync insertion puts each ``set_flag`` right after what it signals); consumer: the
next instruction on DST after the wait.  A ``barrier all`` waits for the pipe that finished last;
a transfer waiting for its own pipe's earlier data (a gather's indices) waits for that pipe's
previous instruction.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tritonpu.isa import PIPE_STAT_NAMES, PIPES


PIPE_NAMES = list(PIPE_STAT_NAMES)      # scalar mte2 mte1 cube fix vector mte3 (PIPES order)
ORDER = ["scalar", "mte2", "mte1", "cube", "fix", "vector", "mte3"]
NO_LINE_SYNC = ("<sync>", 0)             # set_flag / wait_flag / barrier (they carry no loc)
NO_LINE_OTHER = ("<no loc>", 0)          # anything else without a source location


class NotTraced(ValueError):
    pass


def need_trace(stats):
    if getattr(stats, "_trace", None) is None:
        raise NotTraced("this profile needs the launch's timeline: launch with trace=True "
                        "(kernel[grid](..., trace=True); `tritonpu run` sets it for --profile=source, "
                        "--report and --timeline)")


@dataclass
class Stall:
    reason: str          # "wait_flag MTE2->V", "barrier all", or the simulator's wait text
    cycles: int
    core: int
    waiter: int          # trace index of the waiting instruction
    producer: int | None     # code index of the producing instruction
    consumer: int | None     # code index of the instruction that next ran on the stalled pipe


@dataclass
class Traced:
    stats: object
    ev: np.ndarray                       # (N, 6) int64: core, pipe, start, dur, code index, program
    line_of: list                        # code index -> (file, line) or a NO_LINE_* key
    bytes: list                          # (trace index, path, bytes, ddr beats, l2 beats)
    stalls: list = field(default_factory=list)   # Stall
    recorded: bool = True                # per-instruction records were made (npu.state.Records)

    @property
    def code(self):
        return self.stats._code

    @property
    def slowest(self) -> int:
        cc = self.stats.core_cycles
        return int(np.argmax(cc)) if cc else 0


def loc_key(inst):
    if inst.loc is not None:
        return (inst.loc[0], int(inst.loc[1]))
    return NO_LINE_SYNC if inst.spec.impl == "sync" else NO_LINE_OTHER


def build(stats) -> Traced:
    """The analysis of a traced launch (cached on the Stats object)."""
    need_trace(stats)
    cached = stats.__dict__.get("_profile_model")
    tr = stats._trace
    if cached is not None and cached[0] == len(tr):
        return cached[1]
    ev = np.array(tr, dtype=np.int64).reshape(-1, 6)
    code = stats._code
    lines = [loc_key(inst) for inst in code]
    rec = stats._records
    t = Traced(stats, ev, lines, list(rec.bytes) if rec else [], recorded=rec is not None)
    if rec is not None:
        t.stalls = _attribute(ev, code, rec.stalls)
    stats.__dict__["_profile_model"] = (len(tr), t)
    return t


def _attribute(ev, code, stalls):
    """Stall records -> Stall objects with their producer and consumer instructions."""
    if not stalls:
        return []
    at = {}
    for i, reason, cyc in stalls:
        at.setdefault(i, []).append((reason, cyc))
    n = len(ev)
    last_real = {}          # (core, pipe) -> code index of the last non-sync instruction
    last_end = {}           # (core, pipe) -> (end, code index)
    set_by = {}             # (core, sp, dp, event) -> producer code index
    pending = {}            # (core, pipe) -> [Stall] waiting for their consumer
    out = []
    for j in range(n):
        core, p, start, dur, idx, _ = (int(x) for x in ev[j])
        inst = code[idx]
        sync = inst.spec.impl == "sync"
        op = inst.spec.op
        if sync and op == "set":
            sp, dp = PIPES.index(inst.args[0]), PIPES.index(inst.args[1])
            set_by[(core, sp, dp, inst.args[2].value())] = last_real.get((core, sp))
        if j in at:
            for reason, cyc in at[j]:
                if sync and op == "wait":
                    sp, dp = PIPES.index(inst.args[0]), PIPES.index(inst.args[1])
                    prod = set_by.get((core, sp, dp, inst.args[2].value()))
                    s = Stall(reason, cyc, core, j, prod, None)
                    pending.setdefault((core, dp), []).append(s)
                elif sync:                                  # barrier all: the last pipe to finish
                    ends = [v for (c, _q), v in last_end.items() if c == core]
                    prod = max(ends)[1] if ends else None
                    s = Stall(reason, cyc, core, j, prod, None)
                    pending.setdefault((core, 0), []).append(s)
                else:                                       # waits for its own pipe's earlier data
                    s = Stall(reason, cyc, core, j, last_real.get((core, p)), idx)
                out.append(s)
        if not sync:
            for s in pending.pop((core, p), ()):
                s.consumer = idx
            last_real[(core, p)] = idx
            end = start + dur
            if end >= last_end.get((core, p), (-1, 0))[0]:
                last_end[(core, p)] = (end, idx)
    return out


# ---- per line ----------------------------------------------------------------------------------
@dataclass
class LineCost:
    key: tuple
    cycles: dict = field(default_factory=lambda: {n: 0 for n in ORDER})
    bytes: dict = field(default_factory=dict)          # path -> bytes
    ddr_beats: int = 0
    l2_beats: int = 0
    instrs: int = 0
    stall_caused: int = 0
    stall_waited: int = 0
    busy_slowest: int = 0                               # union of its intervals on the slowest core

    def add(self, other: "LineCost") -> None:
        for k, v in other.cycles.items():
            self.cycles[k] += v
        for k, v in other.bytes.items():
            self.bytes[k] = self.bytes.get(k, 0) + v
        self.ddr_beats += other.ddr_beats
        self.l2_beats += other.l2_beats
        self.instrs += other.instrs
        self.stall_caused += other.stall_caused
        self.stall_waited += other.stall_waited
        self.busy_slowest += other.busy_slowest


def line_costs(t: Traced) -> dict:
    """(file, line) -> LineCost, over every core."""
    ev, lines = t.ev, t.line_of
    out: dict = {}

    def get(key):
        c = out.get(key)
        if c is None:
            c = out[key] = LineCost(key)
        return c
    if len(ev):
        idx, pipe, dur = ev[:, 4], ev[:, 1], ev[:, 3]
        nidx = len(lines)
        for p in range(len(PIPES)):
            sel = pipe == p
            per = np.bincount(idx[sel], weights=dur[sel], minlength=nidx)
            cnt = np.bincount(idx[sel], minlength=nidx)
            for i in np.nonzero(cnt)[0]:
                c = get(lines[i])
                c.cycles[PIPE_NAMES[p]] += int(per[i])
                c.instrs += int(cnt[i])
                if p != 0:                       # the scalar unit's issue cycle
                    c.cycles["scalar"] += int(cnt[i])
        s = t.slowest
        mine = ev[ev[:, 0] == s]
        by_line: dict = {}
        for row in mine:
            by_line.setdefault(lines[int(row[4])], []).append((int(row[2]), int(row[2] + row[3])))
        for key, iv in by_line.items():
            get(key).busy_slowest = _union(iv)
    code_idx = ev[:, 4] if len(ev) else None
    for i, path, n, cold, warm in t.bytes:
        c = get(lines[int(code_idx[i])]) if i < len(ev) else get(NO_LINE_OTHER)
        c.bytes[path] = c.bytes.get(path, 0) + n
        c.ddr_beats += cold
        c.l2_beats += warm
    for st in t.stalls:
        get(lines[st.producer] if st.producer is not None else NO_LINE_SYNC).stall_caused += st.cycles
        get(lines[st.consumer] if st.consumer is not None else NO_LINE_SYNC).stall_waited += st.cycles
    return out


def _union(iv) -> int:
    iv.sort()
    total, cur_s, cur_e = 0, None, None
    for s, e in iv:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        elif e > cur_e:
            cur_e = e
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def per_core(t: Traced) -> dict:
    """Per core: busy cycles per pipe (from the stats) and the bytes per path and DDR/L2 beats of
    its transfers (from the records)."""
    st = t.stats
    out = {c: {"cycles": st.core_cycles[c], "busy": dict(st.pipe_busy_by_core[c]), "bytes": {},
               "ddr_beats": 0, "l2_beats": 0} for c in range(len(st.core_cycles))}
    ev = t.ev
    for i, path, n, cold, warm in t.bytes:
        if i >= len(ev):
            continue
        d = out.setdefault(int(ev[i, 0]), {"cycles": 0, "busy": {}, "bytes": {}, "ddr_beats": 0,
                                            "l2_beats": 0})
        d["bytes"][path] = d["bytes"].get(path, 0) + n
        d["ddr_beats"] += cold
        d["l2_beats"] += warm
    return out
