"""The bottleneck report: ``h.stats.advice()`` — what bounds the launch and what to try, each
statement computed from the stats with the number behind it (no canned text).

Sections (``Advice.sections``, each a list of :class:`Finding` with its numbers in ``values``):

* **bound** — the busiest pipe on the slowest core and its busy ratio (= the pipe overlap:
  that pipe's busy cycles ÷ the slowest core's cycles; 1.0 means it never idles), the same
  pipe's utilisation over all cores, and the source line costing most of it;
* **balance** — grid programs go round-robin over the cores: ``rounds = ceil(P / C)``, the last
  round runs ``P - (rounds - 1)·C`` programs, and with programs of equal cost balance alone caps
  efficiency at ``P / (rounds·C)``; a grid of a multiple of C below or above P would not have the
  tail; plus the measured spread of the cores' cycles;
* **reads** — GM read beats that were a 512 B line's first touch (DDR, 32 B/cycle) or a re-read
  (L2, 110 B/cycle), the re-read factor (bytes read ÷ distinct bytes) and the slowest core's share
  of first touches;
* **stalls** — cycles pipes waited on flags, by pipe pair, with the producer and waiting lines;
* **memory** — the highest on-chip byte the program touched in UB, L1, L0A/B/C against capacity;
* **try** — suggestions, each motivated by one of the numbers above.

``str(advice)`` prints them; the launch must have run with ``trace=True`` for the line-level parts
(without it the report still gives bound, balance and stall totals from the stats).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import model

_PIPE_TITLE = {"scalar": "the scalar unit", "mte2": "MTE2 (GM reads)", "mte1": "MTE1 (L1 -> L0)",
               "cube": "the cube", "fix": "FIX (L0C out)", "vector": "the vector unit",
               "mte3": "MTE3 (UB -> GM writes)"}
_PAIR_PIPE = {"S": "scalar", "MTE2": "mte2", "MTE1": "mte1", "M": "cube", "FIX": "fix", "V": "vector",
              "MTE3": "mte3"}


@dataclass
class Finding:
    section: str
    text: str
    values: dict = field(default_factory=dict)


def balance(programs: int, cores: int) -> dict:
    """Rounds, last-round occupancy, the efficiency cap and tail-free grids for ``programs``
    equal programs round-robin on ``cores`` cores."""
    rounds = -(-programs // cores)
    last = programs - (rounds - 1) * cores
    cap = programs / (rounds * cores)
    below = (programs // cores) * cores
    grids = [g for g in (below, rounds * cores) if g >= cores and g != programs]
    if programs < cores:
        grids = [cores]
    return {"programs": programs, "cores": cores, "rounds": rounds, "last": last, "cap": cap,
            "grids": grids}


def balance_text(b: dict) -> str:
    p, c = b["programs"], b["cores"]
    if p < c:
        return (f"{p} programs on {c} cores: {c - p} cores idle — caps efficiency at {b['cap']:.2f}; "
                f"a grid of {c} programs (smaller blocks) would use every core")
    grids = " or ".join(str(g) for g in b["grids"])
    return (f"{p} programs on {c} cores: {b['rounds']} rounds, the last one {b['last']}/{c} full — "
            f"caps efficiency at {b['cap']:.2f}; a grid of {grids} programs would not")


class Advice:
    def __init__(self, stats):
        self.stats = stats
        self.findings: list = []
        self.traced = getattr(stats, "_trace", None) is not None
        self.sp = None
        self.t = None
        if self.traced:
            from .source import SourceProfile
            self.sp = SourceProfile(stats)
            self.t = self.sp.traced
        self._bound()
        self._balance()
        self._reads()
        self._stalls()
        self._memory()
        self._try()

    # ---- helpers -----------------------------------------------------------------------------
    def add(self, section, text, **values):
        self.findings.append(Finding(section, text, values))

    def section(self, name) -> list:
        return [f for f in self.findings if f.section == name]

    @property
    def sections(self) -> dict:
        out: dict = {}
        for f in self.findings:
            out.setdefault(f.section, []).append(f)
        return out

    def _slowest(self):
        cc = self.stats.core_cycles
        s = max(range(len(cc)), key=lambda i: cc[i]) if cc else 0
        return s, (cc[s] if cc else 0)

    def _line_label(self, key) -> str:
        if key is None or key[1] == 0:
            return "(flag syncs)" if key == model.NO_LINE_SYNC else "(no source line)"
        from .source import _text
        src = _text(*key).strip()
        src = src if len(src) <= 60 else src[:57] + "..."
        return f"line {key[1]} `{src}`"

    # ---- sections ----------------------------------------------------------------------------
    def _bound(self):
        st = self.stats
        s, cyc = self._slowest()
        busy = st.pipe_busy_by_core[s] if st.pipe_busy_by_core else st.pipe_busy
        pipe = max(model.ORDER, key=lambda p: busy.get(p, 0))
        b = busy.get(pipe, 0)
        ratio = b / cyc if cyc else 0.0
        total = st.cycles * st.cores_used
        util = st.pipe_busy[pipe] / total if total else 0.0
        self.bound_pipe, self.overlap = pipe, ratio
        self.add("bound", f"bound by {_PIPE_TITLE[pipe]}: busy {b} of the slowest core's {cyc} cycles "
                 f"(core {s}) — pipe overlap {ratio:.2f}; over all {st.cores_used} cores it is busy "
                 f"{100 * util:.0f}% of the launch", pipe=pipe, busy=b, cycles=cyc, core=s, overlap=ratio,
                 utilisation=util)
        others = sorted(((busy.get(p, 0) / cyc if cyc else 0.0, p) for p in model.ORDER if p != pipe),
                        reverse=True)
        if others and others[0][0] > 0:
            self.add("bound", "next busiest on that core: " + ", ".join(
                f"{p} {r:.2f}" for r, p in others[:3] if r > 0), ratios={p: r for r, p in others})
        self.add("bound", f"roofline {st.roofline_cycles:.0f} cycles ({st.roofline_bound} bound), "
                 f"efficiency {st.efficiency:.2f}", roofline=st.roofline_cycles, efficiency=st.efficiency)
        if self.sp is not None:
            tot = sum(c.cycles[pipe] for c in self.sp.costs.values())
            hot = self.sp.hottest(pipe, 3)
            self.hot = []
            for r in hot:
                share = r.cost.cycles[pipe] / tot if tot else 0.0
                if share <= 0:
                    continue
                self.hot.append(((r.file, r.line), share))
                self.add("bound", f"{self._line_label((r.file, r.line))}: {100 * share:.0f}% of {pipe} "
                         f"cycles ({r.cost.cycles[pipe]} over all cores)", line=r.line, pipe=pipe, share=share)

    def _balance(self):
        st = self.stats
        b = balance(st.programs, st.cores)
        self.balance = b
        if b["cap"] < 0.999:
            self.add("balance", balance_text(b), **b)
        else:
            self.add("balance", f"{st.programs} programs on {st.cores} cores: {b['rounds']} full "
                     f"round{'s' if b['rounds'] > 1 else ''} (no tail)", **b)
        cc = [c for c in st.core_cycles if c]
        if len(cc) > 1:
            mean = sum(cc) / len(cc)
            self.add("balance", f"cores finish between {min(cc)} and {max(cc)} cycles (mean {mean:.0f}): "
                     f"measured balance {mean / max(cc):.2f}", min=min(cc), max=max(cc), mean=mean,
                     measured=mean / max(cc))

    def _reads(self):
        st = self.stats
        if self.t is None or not self.t.recorded:
            return
        ddr = sum(r[3] for r in self.t.bytes)
        l2 = sum(r[4] for r in self.t.bytes)
        if not ddr + l2:
            return
        beat = st.machine.beat_bytes
        amp = (ddr + l2) * beat / st.read_bytes if st.read_bytes else 0.0
        ddr_cyc = ddr * beat / st.machine.ddr_bytes_per_cycle
        l2_cyc = l2 * beat / st.machine.l2_bytes_per_cycle
        self.reads = {"ddr_beats": ddr, "l2_beats": l2, "reread": amp}
        self.add("reads", f"GM reads: {ddr * beat} B first touch from DDR ({ddr_cyc:.0f} MTE2 cycles at "
                 f"{st.machine.ddr_bytes_per_cycle} B/cycle), {l2 * beat} B re-read from L2 ({l2_cyc:.0f} "
                 f"cycles at {st.machine.l2_bytes_per_cycle} B/cycle); the kernel reads its {st.read_bytes} "
                 f"distinct bytes {amp:.2f} times", ddr_bytes=ddr * beat, l2_bytes=l2 * beat, reread=amp,
                 ddr_cycles=ddr_cyc, l2_cycles=l2_cyc)
        pc = model.per_core(self.t)
        s, cyc = self._slowest()
        total = sum(d["ddr_beats"] for d in pc.values())
        used = max(1, st.cores_used)
        runs = len(range(s, st.programs, used)) or 1
        if len(pc) > 1 and total and st.programs:
            mine = pc.get(s, {}).get("ddr_beats", 0) / runs          # per program it ran
            mean = total / st.programs
            self.reads["slowest_ddr"] = mine
            self.reads["mean_ddr"] = mean
            self.add("reads", f"per program, the slowest core (core {s}, {runs} programs) read {mine * beat:.0f} B "
                     f"from DDR, the launch's mean {mean * beat:.0f} B ({mine / mean:.2f}x)", core=s,
                     ddr=mine * beat, mean=mean * beat)

    def _stalls(self):
        st = self.stats
        s, _ = self._slowest()
        if self.t is not None and self.t.stalls:
            by: dict = {}
            for x in self.t.stalls:
                d = by.setdefault(x.reason, {"cycles": 0, "slowest": 0, "pairs": {}})
                d["cycles"] += x.cycles
                if x.core == s:
                    d["slowest"] += x.cycles
                pk = (self.t.line_of[x.producer] if x.producer is not None else None,
                      self.t.line_of[x.consumer] if x.consumer is not None else None)
                d["pairs"][pk] = d["pairs"].get(pk, 0) + x.cycles
            self.stall_groups = by
            for reason, d in sorted(by.items(), key=lambda kv: -kv[1]["cycles"])[:5]:
                pairs = sorted(d["pairs"].items(), key=lambda kv: -kv[1])[:2]
                where = "; ".join(f"{self._line_label(pk[1])} waits for {self._line_label(pk[0])} "
                                  f"({c})" for pk, c in pairs)
                self.add("stalls", f"{reason}: {d['cycles']} cycles over all cores, {d['slowest']} on the "
                         f"slowest core — {where}", reason=reason, cycles=d["cycles"], slowest=d["slowest"],
                         pairs=[(pk, c) for pk, c in pairs])
        elif st.stalls:
            for reason, c in list(st.stalls.items())[:5]:
                self.add("stalls", f"{reason}: {c} cycles over all cores", reason=reason, cycles=c)

    def _memory(self):
        st = self.stats
        if st._code is None:
            return
        hw = dict(st._records.high) if st._records is not None else {}
        if not hw:
            return
        self.memory = {}
        parts = []
        for space in ("ub", "l1", "l0a", "l0b", "l0c"):
            if space in hw:
                cap = st.machine.capacity[space]
                self.memory[space] = hw[space] / cap
                parts.append(f"{space.upper()} {hw[space] // 1024} of {cap // 1024} KiB "
                             f"({100 * hw[space] / cap:.0f}%)")
        self.add("memory", "on-chip memory reached: " + ", ".join(parts), **hw)

    # ---- suggestions -------------------------------------------------------------------------
    def _try(self):
        st = self.stats
        cands = []      # (expected gain, text, values)
        b = self.balance
        if b["cap"] < 0.95:
            cands.append((1 - b["cap"], f"change the grid: {balance_text(b)} (pick blocks so that the "
                          f"number of programs is a multiple of {b['cores']})", {"kind": "balance", **b}))
        pipe, ov = self.bound_pipe, self.overlap
        hot = getattr(self, "hot", [])
        if ov >= 0.7 and hot:
            (key, share) = hot[0]
            what = {"vector": "fewer vector passes over the tile there (fuse, reuse a result, cheaper ops)",
                    "mte2": "fewer GM bytes there (bigger blocks along the dimension that is re-read, "
                            "lower precision)",
                    "mte3": "fewer or larger stores", "cube": "the cube is the limit: a larger block per "
                    "program only helps if it keeps the cube fed", "scalar": "less address arithmetic "
                    "there (hoist it, use block pointers)", "mte1": "larger K blocks (fewer L1->L0 moves)",
                    "fix": "fewer accumulator drains (larger K per output tile)"}[pipe]
            cands.append((ov * share * 0.5, f"the launch is bound by {pipe} (overlap {ov:.2f}) and "
                          f"{self._line_label(key)} costs {100 * share:.0f}% of it: {what}",
                          {"kind": "bound", "pipe": pipe, "line": key[1], "share": share}))
        groups = getattr(self, "stall_groups", None)
        s, cyc = self._slowest()
        holding = {r: d for r, d in (groups or {}).items()
                   if "->" in r and _PAIR_PIPE.get(r.split("->")[-1]) == pipe}   # waits of the bound pipe
        if ov < 0.7 and holding:
            reason, d = max(holding.items(), key=lambda kv: kv[1]["slowest"])
            if cyc and d["slowest"] > 0.1 * cyc:
                pk = max(d["pairs"].items(), key=lambda kv: kv[1])[0]
                dst = _PAIR_PIPE.get(reason.split("->")[-1], "") if "->" in reason else ""
                cands.append(((1 - ov) * 0.5, f"the busiest pipe idles {100 * (1 - ov):.0f}% of the slowest "
                              f"core's time; it waits {d['slowest']} cycles there on {reason} "
                              f"({100 * d['slowest'] / cyc:.0f}%): {self._line_label(pk[1])} waits for "
                              f"{self._line_label(pk[0])} — overlap them (more buffers: "
                              f"num_stages/multibuffer, or more work between waits: a larger block along the loop)",
                              {"kind": "stall", "reason": reason, "cycles": d["slowest"], "pipe": dst}))
        reads = getattr(self, "reads", None)
        if reads and reads["reread"] > 1.5 and pipe == "mte2":
            cands.append((0.3 * (1 - 1 / reads["reread"]), f"GM data is read {reads['reread']:.2f} times "
                          "over: larger blocks along the re-read dimension (or grouping programs that share "
                          "it on one core) would cut MTE2 time", {"kind": "reread", **reads}))
        runs = len(range(s, st.programs, max(1, st.cores_used))) or 1
        if reads and reads.get("mean_ddr") and reads["slowest_ddr"] > 1.5 * reads["mean_ddr"] and cyc \
                and runs * reads["slowest_ddr"] * st.machine.beat_bytes / st.machine.ddr_bytes_per_cycle > 0.1 * cyc:
            excess = runs * (reads["slowest_ddr"] - reads["mean_ddr"]) * st.machine.beat_bytes \
                / st.machine.ddr_bytes_per_cycle
            cands.append((0.5 * excess / cyc, f"per program, the slowest core pays {reads['slowest_ddr'] / reads['mean_ddr']:.1f}x the "
                          f"launch's mean first-touch DDR reads ({excess:.0f} extra DDR cycles on that core): spread the "
                          "first reads of shared data over the cores (program order, GROUP_SIZE_M)",
                          {"kind": "first_touch", "excess_cycles": excess}))
        mem = getattr(self, "memory", {})
        if mem.get("ub", 1) < 0.25 and pipe in ("mte2", "mte3") and ov < 0.7:
            cands.append((0.05, f"UB is only {100 * mem['ub']:.0f}% used: larger blocks would amortise each "
                          f"transfer's {st.machine.paths['gm->ub'].latency}-cycle latency",
                          {"kind": "ub", "ub": mem["ub"]}))
        for gain, text, values in sorted(cands, key=lambda c: -c[0]):
            self.add("try", text, gain=gain, **values)

    # ---- text --------------------------------------------------------------------------------
    def __str__(self) -> str:
        st = self.stats
        titles = {"bound": "bound", "balance": "core balance", "reads": "GM reads", "stalls": "sync stalls",
                  "memory": "on-chip memory", "try": "what to try"}
        out = [f"bottleneck report for {st.kernel}: {st.cycles} cycles"]
        for name, items in self.sections.items():
            out.append(f"{titles.get(name, name)}:")
            for i, f in enumerate(items, 1):
                lead = f"  {i}. " if name == "try" else "  - "
                out.append(lead + f.text)
        if not self.traced:
            out.append("(launch with trace=True for the source lines, reads and stall pairs)")
        return "\n".join(out)

    __repr__ = __str__

    def to_dicts(self) -> list:
        return [{"section": f.section, "text": f.text,
                 "values": {k: v for k, v in f.values.items() if isinstance(v, (int, float, str, list))}}
                for f in self.findings]


__all__ = ["Advice", "Finding", "balance", "balance_text"]
