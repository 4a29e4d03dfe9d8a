"""msprof-style CSV files of a launch: ``h.stats.write_csv(directory)``.

* ``PipeUtilization.csv`` — one row per core (the layout of msprof's PipeUtilization.csv: time
  and ratio per pipe): ``core, programs, total_cycles, total_time(us)``, then for each pipe
  ``<pipe>_time(us)`` and ``<pipe>_ratio`` (busy cycles ÷ the core's cycles);
* ``Memory.csv`` — per core and data path: bytes moved, and for GM reads the bytes that were a
  line's first touch (DDR) and re-reads (L2); a ``total`` row per path (needs ``trace=True`` for the
  per-core split; without it only the launch totals, core ``all``);
* ``SourceProfile.csv`` (traced launches) — the source-line profile, one row per line.

Numbers are simulated cycles converted at the preset's clock; the files are plain CSV.
"""
from __future__ import annotations

import csv
import os

from . import model


def write_csv(stats, directory) -> list:
    os.makedirs(directory, exist_ok=True)
    paths = [_pipes(stats, directory), _memory(stats, directory)]
    if getattr(stats, "_trace", None) is not None:
        paths.append(_source(stats, directory))
    return paths


def _us(stats, cycles) -> float:
    return round(cycles / (stats.machine.clock_ghz * 1e3), 6)


def _pipes(stats, directory) -> str:
    path = os.path.join(directory, "PipeUtilization.csv")
    used = max(1, stats.cores_used)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["core", "programs", "total_cycles", "total_time(us)"]
                   + [h for p in model.ORDER for h in (f"{p}_time(us)", f"{p}_ratio")])
        for c, cyc in enumerate(stats.core_cycles):
            busy = stats.pipe_busy_by_core[c]
            w.writerow([c, len(range(c, stats.programs, used)), cyc, _us(stats, cyc)]
                       + [v for p in model.ORDER
                          for v in (_us(stats, busy[p]), round(busy[p] / cyc, 6) if cyc else 0.0)])
    return path


def _memory(stats, directory) -> str:
    path = os.path.join(directory, "Memory.csv")
    beat = stats.machine.beat_bytes
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["core", "path", "bytes", "ddr_first_touch_bytes", "l2_reread_bytes"])
        traced = getattr(stats, "_trace", None) is not None
        if traced:
            t = model.build(stats)
            if t.recorded:
                per: dict = {}
                for i, p, n, cold, warm in t.bytes:
                    core = int(t.ev[i, 0]) if i < len(t.ev) else -1
                    d = per.setdefault((core, p), [0, 0, 0])
                    d[0] += n
                    d[1] += cold * beat
                    d[2] += warm * beat
                for (core, p), (n, cold, warm) in sorted(per.items()):
                    w.writerow([core, p, n, cold, warm])
        for p, n in stats.bytes_by_path.items():
            w.writerow(["total", p, n, "", ""])
    return path


def _source(stats, directory) -> str:
    from .source import SourceProfile
    sp = SourceProfile(stats)
    pipes, paths = model.ORDER, sp.paths()
    path = os.path.join(directory, "SourceProfile.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["file", "line", "function", "source", "share_slowest"] + [f"{p}_cycles" for p in pipes]
                   + [f"{k}_bytes" for k in paths] + ["ddr_beats", "l2_beats", "stall_caused", "stall_waited"])
        for d in sp.to_dicts():
            if "cycles" not in d:
                continue
            w.writerow([d["file"], d["line"], d["function"], d["source"].strip(), round(d["share_slowest"], 6)]
                       + [d["cycles"][p] for p in pipes] + [d["bytes"].get(k, 0) for k in paths]
                       + [d["ddr_beats"], d["l2_beats"], d["stall_caused"], d["stall_waited"]])
    return path
