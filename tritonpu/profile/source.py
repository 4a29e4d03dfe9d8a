"""The source-line profile: ``h.stats.source_profile()``, a table that prints like ``perf annotate``.

One row per line of the kernel's source (lines that cost nothing are shown without numbers, as
``perf annotate`` does), then the lines of the ``@jit`` helpers it inlined, then instructions with
no source line (the flag syncs).  Columns, from :mod:`.model`:

* ``%slow``: of the slowest core's cycles, the time during which an instruction of the line was
  running on some pipe of that core (the union of their intervals);
* one column per pipe that did any work: busy cycles summed over cores (the columns add up to
  ``stats.pipe_busy``; the scalar unit's column counts one issue cycle per instruction it hands to
  another pipe);
* one column per data path that moved bytes (summed over cores; the columns add up to
  ``stats.bytes_by_path``), and ``ddr%``: the share of the line's GM read beats that were a line's
  first touch (from DDR at 32 B/cycle rather than L2 at 110);
* ``stall``: cycles other pipes waited on a flag this line's instruction was the producer of.

Inlined helpers: the compiler keeps only the innermost location, so a helper's instructions carry
the helper's own line.  Its rows are listed under the helper, and also added to the kernel line
that calls it when that call site is unique (found in the source: the kernel's calls of the
helper's name, followed through helpers calling helpers); such kernel lines are marked ``+``.
"""
from __future__ import annotations

import ast
import linecache
import os
from dataclasses import dataclass, field

from . import model
from .model import ORDER, LineCost


@dataclass
class Function:
    file: str
    name: str
    first: int            # the def line (decorators excluded)
    last: int
    calls: dict = field(default_factory=dict)      # callee name -> [lines]


def _functions(path: str) -> list:
    text = "".join(linecache.getlines(path))
    if not text:
        return []
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            f = Function(path, node.name, node.lineno, getattr(node, "end_lineno", node.lineno))
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call):
                    fn = sub.func
                    name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None
                    if name:
                        f.calls.setdefault(name, []).append(sub.lineno)
            out.append(f)
    return out


def _innermost(funcs, line):
    best = None
    for f in funcs:
        if f.first <= line <= f.last and (best is None or f.first >= best.first):
            best = f
    return best


@dataclass
class Row:
    file: str
    line: int                 # 0 for the rows without a source line
    text: str
    function: str
    cost: LineCost | None     # None: the line ran no instruction
    rolled_up: bool = False   # includes the cost of helpers it calls
    callers: list = field(default_factory=list)   # for a helper's line: the kernel lines calling it


class SourceProfile:
    """Rows of source lines with their costs; ``str()`` is the annotated listing."""

    def __init__(self, stats):
        self.stats = stats
        t = model.build(stats)
        self.traced = t
        self.recorded = t.recorded
        self.costs = model.line_costs(t)
        self.slowest = t.slowest
        self.slowest_cycles = stats.core_cycles[self.slowest] if stats.core_cycles else 0
        self.rows = self._rows()

    # ---- building ----------------------------------------------------------------------------
    def _rows(self) -> list:
        files = sorted({k[0] for k in self.costs if k[1] > 0})
        funcs = {f: _functions(f) for f in files}
        kernel = self.stats.kernel
        owner = {}                                 # (file, line) -> Function
        for key in self.costs:
            if key[1] > 0:
                owner[key] = _innermost(funcs.get(key[0], []), key[1])
        kernels = [f for fs in funcs.values() for f in fs if f.name == kernel]
        helpers = []
        for f in {id(o): o for o in owner.values() if o is not None}.values():
            if f.name != kernel:
                helpers.append(f)
        # a helper's kernel call sites, through helpers calling helpers
        def sites(name, seen=()):
            found = []
            for k in kernels:
                found += [(k.file, ln) for ln in k.calls.get(name, [])]
            for h in helpers:
                if h.name in seen or h.name == name:
                    continue
                if name in h.calls:
                    found += sites(h.name, seen + (name,))
            return sorted(set(found))
        rows = []
        roll: dict = {}                       # kernel (file, line) -> LineCost of helpers it calls
        callers_of = {}
        for h in helpers:
            cs = sites(h.name)
            callers_of[h.name] = cs
            if len(cs) == 1:
                for key, c in self.costs.items():
                    if owner.get(key) is h:
                        acc = roll.setdefault(cs[0], LineCost(cs[0]))
                        acc.add(c)
        for k in sorted(kernels, key=lambda f: (f.file, f.first)):
            for ln in range(k.first, k.last + 1):
                key = (k.file, ln)
                c = self.costs.get(key)
                r = roll.get(key)
                if r is not None:
                    merged = LineCost(key)
                    if c is not None:
                        merged.add(c)
                    merged.add(r)
                    c = merged
                rows.append(Row(k.file, ln, _text(k.file, ln), k.name, c, rolled_up=r is not None))
        shown = {(r.file, r.line) for r in rows}
        for h in sorted(helpers, key=lambda f: (f.file, f.first)):
            for ln in range(h.first, h.last + 1):
                key = (h.file, ln)
                rows.append(Row(h.file, ln, _text(h.file, ln), h.name, self.costs.get(key),
                                callers=[x[1] for x in callers_of.get(h.name, [])]))
                shown.add(key)
        for key in sorted(self.costs, key=lambda k: (k[1] == 0, k)):
            if key in shown:
                continue
            if key == model.NO_LINE_SYNC:
                text = "(no source line) set_flag / wait_flag / barrier"
            elif key == model.NO_LINE_OTHER:
                text = "(no source line) other instructions"
            else:
                text = _text(*key)
            rows.append(Row(key[0], key[1], text, "", self.costs[key]))
        return rows

    # ---- access ------------------------------------------------------------------------------
    def row(self, line: int, file: str | None = None) -> Row:
        """The row of source line ``line`` (of ``file``, default: any file)."""
        for r in self.rows:
            if r.line == line and (file is None or os.path.samefile(r.file, file)):
                return r
        raise KeyError(f"no row for line {line}")

    def hottest(self, pipe: str | None = None, n: int = 5) -> list:
        """The rows with the most cycles on ``pipe`` (default: the most cycles on any pipe);
        kernel lines including helpers are counted once (helper rows are skipped)."""
        def score(r):
            c = r.cost
            return c.cycles[pipe] if pipe else max(c.cycles[p] for p in ORDER if p != "scalar") or c.cycles["scalar"]
        rows = [r for r in self.rows if r.cost is not None and not r.callers]
        return sorted(rows, key=score, reverse=True)[:n]

    def pipes(self) -> list:
        tot = {p: sum(c.cycles[p] for c in self.costs.values()) for p in ORDER}
        return [p for p in ORDER if tot[p]]

    def paths(self) -> list:
        seen = {}
        for c in self.costs.values():
            for k in c.bytes:
                seen[k] = True
        order = list(self.stats.machine.paths)
        return sorted(seen, key=lambda k: order.index(k) if k in order else 99)

    def totals(self) -> LineCost:
        t = LineCost(("total", 0))
        for c in self.costs.values():
            t.add(c)
        return t

    def to_dicts(self) -> list:
        """The rows as plain dicts (for JSON, CSV)."""
        out = []
        for r in self.rows:
            d = {"file": r.file, "line": r.line, "function": r.function, "source": r.text.rstrip(),
                 "rolled_up": r.rolled_up, "callers": r.callers}
            c = r.cost
            if c is not None:
                d.update({"share_slowest": c.busy_slowest / self.slowest_cycles if self.slowest_cycles else 0.0,
                          "cycles": dict(c.cycles), "bytes": dict(c.bytes), "ddr_beats": c.ddr_beats,
                          "l2_beats": c.l2_beats, "instructions": c.instrs, "stall_caused": c.stall_caused,
                          "stall_waited": c.stall_waited})
            out.append(d)
        return out

    # ---- text --------------------------------------------------------------------------------
    def __str__(self) -> str:
        st = self.stats
        pipes, paths = self.pipes(), self.paths()
        w = 9
        head = (f"{'line':>5}  {'source':<52}{'%slow':>7}" + "".join(f"{p:>{w}}" for p in pipes)
                + "".join(f"{_short(k):>{w + 1}}" for k in paths) + f"{'ddr%':>6}{'stall':>8}")
        out = [f"source profile of {st.kernel}: {st.cycles} cycles; slowest core {self.slowest} "
               f"({self.slowest_cycles} cycles); pipes: busy cycles over all cores; bytes over all cores",
               head, "-" * len(head)]
        cur = None
        for r in self.rows:
            if r.function != cur and r.line:
                cur = r.function
                label = (f"{r.function}()" + (f"  [inlined helper, called from line "
                                              f"{', '.join(map(str, r.callers))}]" if r.callers else ""))
                out.append(f"{'':>5}  -- {label}")
            elif r.line == 0 and cur != "":
                cur = ""
                out.append(f"{'':>5}  -- (no source line)")
            src = r.text.rstrip().replace("\t", "    ")
            src = src if len(src) <= 50 else src[:49] + "~"
            mark = "+" if r.rolled_up else " "
            lead = f"{r.line:>5}{mark} " if r.line else f"{'':>5}  "
            c = r.cost
            if c is None:
                out.append((lead + src).rstrip())
                continue
            share = 100.0 * c.busy_slowest / self.slowest_cycles if self.slowest_cycles else 0.0
            reads = c.ddr_beats + c.l2_beats
            ddr = f"{100.0 * c.ddr_beats / reads:>5.0f}%" if reads else f"{'':>6}"
            out.append(lead + f"{src:<52}{share:>6.1f}%" + "".join(f"{_n(c.cycles[p]):>{w}}" for p in pipes)
                       + "".join(f"{_n(c.bytes.get(k, 0)):>{w + 1}}" for k in paths) + ddr
                       + f"{_n(c.stall_caused):>8}")
        t = self.totals()
        reads = t.ddr_beats + t.l2_beats
        out.append("-" * len(head))
        out.append(f"{'':>5}  {'total':<52}{'':>7}" + "".join(f"{_n(t.cycles[p]):>{w}}" for p in pipes)
                   + "".join(f"{_n(t.bytes.get(k, 0)):>{w + 1}}" for k in paths)
                   + (f"{100.0 * t.ddr_beats / reads:>5.0f}%" if reads else f"{'':>6}") + f"{_n(t.stall_caused):>8}")
        notes = []
        if any(r.rolled_up for r in self.rows):
            notes.append("+ : includes the inlined helper lines listed below it (the total counts them once)")
        if not self.recorded:
            notes.append("bytes, ddr% and stalls need the per-instruction records of a traced launch "
                         "(trace=True)")
        notes.append("%slow: share of the slowest core's cycles during which the line ran on some pipe; "
                     "stall: cycles pipes waited on flags this line produced")
        return "\n".join(out + notes)

    __repr__ = __str__


def _text(path: str, line: int) -> str:
    return linecache.getline(path, line).rstrip("\n")


def _n(v) -> str:
    return str(int(v)) if v else "."


def _short(path: str) -> str:
    return path.replace("->", ">")
