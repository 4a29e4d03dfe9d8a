"""Launch statistics, the per-pipe profile table and the Chrome trace-event timeline.

Stalls by reason (cycles, summed over cores): ``wait_flag SRC->DST`` — the pipe DST (or the
scalar unit) idled from when it could have started until the flag fired; ``barrier all`` — the
scalar unit waited for every pipe.  ``queue_wait[P]``: cycles instructions spent in pipe P's
queue after their issue while P was busy with earlier work (back-pressure, not idleness).

Guarantees: ``cycles`` is the slowest core's cycles; ``pipe_busy`` sums busy cycles over cores
(keys: scalar mte2 mte1 cube fix vector mte3; the scalar unit is busy one cycle per instruction
it issues plus scalar GM latencies); the roofline follows DESIGN.md §6 over the distinct GM bytes
read and written and the logical MACs: ``max(read/(cores*32), write/(cores*W),
sum(macs_T / (cores*16*16*K0_T)))`` -- W the rate of the fastest path that can write GM: FIX's
256 B/cycle from L0C when the launch does cube work, else MTE3's 64 --,
``efficiency = roofline_cycles / cycles``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field


from tritonpu.isa import PIPE_STAT_NAMES, PIPES

_ORDER = ["scalar", "mte2", "mte1", "cube", "fix", "vector", "mte3"]


def _column_sums(rows) -> dict:
    """Pipe name -> the sum of its column over the cores' rows (in core order)."""
    if not rows:
        return {n: 0 for n in PIPE_STAT_NAMES}
    return dict(zip(PIPE_STAT_NAMES, map(sum, zip(*rows))))


@dataclass
class Stats:
    kernel: str
    machine: object
    grid: tuple
    programs: int
    cores: int                    # cores the roofline assumes (the preset's or the override)
    cores_used: int
    cycles: int
    core_cycles: list
    pipe_busy: dict
    pipe_busy_by_core: list
    instr_count: dict
    bytes_by_path: dict
    bytes_by_pipe: dict
    stalls: dict
    queue_wait: dict
    read_bytes: int
    write_bytes: int
    cube_macs: int
    macs_by_dtype: dict
    roofline_cycles: float
    roofline_bound: str
    roofline_terms: dict
    gm: dict = field(default_factory=dict)      # parameter -> the bound array
    _trace: list | None = None
    _code: list | None = None
    _records: object = None       # npu.state.Records of a traced launch

    @property
    def efficiency(self) -> float:
        return self.roofline_cycles / self.cycles if self.cycles else 0.0

    @property
    def time_us(self) -> float:
        return self.cycles / (self.machine.clock_ghz * 1e3)

    # ---- construction ---------------------------------------------------------------------------
    @classmethod
    def from_state(cls, st, prog, arrays, cores, used):
        m = st.m
        busy = _column_sums(st.busy_by_core)
        cnt = _column_sums(st.count_by_core)
        by_pipe = {n: 0 for n in PIPE_STAT_NAMES}
        for path, b in st.bytes_by_path.items():
            by_pipe[PIPE_STAT_NAMES[PIPES.index(m.paths[path].pipe)]] += b
        # distinct bytes the kernel reads: not the compiler's own parameters (`__zeros`, the zero row
        # padded L1 tiles copy; names starting with __), whose transfers bytes_by_path still counts
        rd = sum(x.count() for name, x in st.gm_read.items() if not name.startswith("__"))
        wr = sum(x.count() for x in st.gm_written.values())
        # GM is written by MTE3 from UB, or by FIX straight from L0C: the faster FIX when the
        # launch did cube work (a dot's result may leave that way), MTE3 otherwise
        writer = "l0c->gm" if st.macs else "ub->gm"
        terms = {"mte2 read": rd / (cores * m.ddr_bytes_per_cycle),
                 "gm write": wr / (cores * m.paths[writer].bytes_per_cycle),
                 "cube": sum(v / (cores * m.macs_per_cycle(t)) for t, v in st.macs.items())}
        bound = max(terms, key=lambda k: terms[k])
        stalls = dict(sorted(st.stalls.items(), key=lambda kv: -kv[1]))
        return cls(kernel=prog.name, machine=m, grid=st.grid, programs=st.nprog, cores=cores,
                   cores_used=used, cycles=max(st.core_cycles), core_cycles=list(st.core_cycles),
                   pipe_busy=busy, pipe_busy_by_core=[dict(zip(PIPE_STAT_NAMES, b))
                                                      for b in st.busy_by_core],
                   instr_count=cnt, bytes_by_path=dict(st.bytes_by_path), bytes_by_pipe=by_pipe,
                   stalls=stalls, queue_wait=dict(st.queue_wait), read_bytes=rd, write_bytes=wr,
                   cube_macs=int(sum(st.macs.values())), macs_by_dtype=dict(st.macs),
                   roofline_cycles=terms[bound], roofline_bound=bound, roofline_terms=terms,
                   gm=arrays, _trace=st.trace, _code=prog.code,
                   _records=st.records)

    # ---- profile --------------------------------------------------------------------------------
    def profile_table(self) -> str:
        """A pipe-utilisation report: busy cycles, % of the launch, instructions, bytes."""
        total = self.cycles * self.cores_used
        lines = [f"kernel {self.kernel}: {self.cycles} cycles ({self.time_us:.2f} us at "
                 f"{self.machine.clock_ghz} GHz), grid {self.grid[:_ndim(self.grid)]} = "
                 f"{self.programs} programs on {self.cores_used} of {self.cores} cores "
                 f"({self.machine.name})",
                 f"{'pipe':<8}{'busy cycles':>14}{'% of total':>12}{'instrs':>10}{'bytes':>14}"]
        for n in _ORDER:
            b = self.pipe_busy[n]
            pct = 100.0 * b / total if total else 0.0
            lines.append(f"{n:<8}{b:>14}{pct:>11.1f}%{self.instr_count[n]:>10}"
                         f"{self.bytes_by_pipe[n]:>14}")
        if self.bytes_by_path:
            lines.append("bytes by path: " + ", ".join(f"{k} {v}" for k, v in self.bytes_by_path.items()))
        if self.stalls:
            lines.append("stalls: " + ", ".join(f"{k} {v}" for k, v in self.stalls.items()))
        if self.queue_wait:
            lines.append("queue wait (pipe busy): " + ", ".join(f"{k} {v}" for k, v in self.queue_wait.items()))
        if len(self.core_cycles) > 1:
            cc = self.core_cycles
            lines.append(f"core cycles: min {min(cc)}, max {max(cc)}, mean {sum(cc) / len(cc):.0f}")
        lines.append(f"roofline: {self.roofline_cycles:.1f} cycles, bound by {self.roofline_bound} "
                     f"(read {self.read_bytes} B, write {self.write_bytes} B, {self.cube_macs} MACs); "
                     f"efficiency {100 * self.efficiency:.1f}%")
        return "\n".join(lines)

    def summary(self) -> str:
        return (f"{self.kernel}: {self.cycles} cycles, roofline {self.roofline_cycles:.1f} "
                f"({self.roofline_bound}), efficiency {100 * self.efficiency:.1f}%")

    # ---- tritonpu.profile (delegating) -----------------------------------------------------------
    def source_profile(self):
        """Per kernel source line: cycles per pipe, bytes per path, stalls caused (trace=True)."""
        from tritonpu.profile.source import SourceProfile
        return SourceProfile(self)

    def advice(self):
        """The bottleneck report: bound pipe, overlap, core balance, reads, stalls, what to try."""
        from tritonpu.profile.advice import Advice
        return Advice(self)

    def write_html(self, path) -> None:
        """One self-contained HTML report: timeline, source profile, roofline, advice."""
        from tritonpu.profile.html import write_html
        write_html(self, path)

    def plot_timeline(self, path, **kw) -> None:
        """A PNG timeline of every pipe of the cores (needs matplotlib: tritonpu[plot])."""
        from tritonpu.profile.plot import plot_timeline
        plot_timeline(self, path, **kw)

    def write_csv(self, directory) -> list:
        """msprof-style CSV files (pipe utilisation per core, memory traffic); returns the paths."""
        from tritonpu.profile.csvs import write_csv
        return write_csv(self, directory)

    # ---- trace ----------------------------------------------------------------------------------
    @property
    def trace_events(self) -> list:
        """Chrome trace events: one process per core, one thread per pipe; ts/dur in us."""
        if self._trace is None:
            return []
        scale = 1.0 / (self.machine.clock_ghz * 1e3)
        ev = []
        cores = sorted({t[0] for t in self._trace}) or list(range(self.cores_used))
        for c in cores:
            ev.append({"ph": "M", "name": "process_name", "pid": c, "tid": 0,
                       "args": {"name": f"core {c}"}})
            ev.append({"ph": "M", "name": "process_sort_index", "pid": c, "tid": 0,
                       "args": {"sort_index": c}})
            for i, p in enumerate(PIPES):
                ev.append({"ph": "M", "name": "thread_name", "pid": c, "tid": i,
                           "args": {"name": p}})
                ev.append({"ph": "M", "name": "thread_sort_index", "pid": c, "tid": i,
                           "args": {"sort_index": i}})
        code = self._code
        for core, p, start, dur, idx, pid in self._trace:
            inst = code[idx]
            ev.append({"ph": "X", "name": inst.mnemonic, "cat": PIPES[p], "pid": core, "tid": p,
                       "ts": start * scale, "dur": dur * scale,
                       "args": {"line": inst.line, "cycles": dur, "start_cycle": start,
                                "program": pid, "text": inst.text()}})
        return ev

    def write_trace(self, path) -> None:
        """Write the timeline as Chrome trace-event JSON (opens in Perfetto / chrome://tracing)."""
        if self._trace is None:
            raise ValueError("run with trace=True to record a timeline")
        with open(path, "w") as f:
            json.dump({"traceEvents": self.trace_events, "displayTimeUnit": "ns",
                       "otherData": {"kernel": self.kernel, "cycles": self.cycles,
                                     "machine": self.machine.name}}, f)


def _ndim(grid):
    n = 3
    while n > 1 and grid[n - 1] == 1:
        n -= 1
    return n
