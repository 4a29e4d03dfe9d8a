"""``triton.testing``'s benchmarking helpers, measuring the virtual NPU: ``do_bench``,
``Benchmark`` and ``perf_report`` (re-exported by :mod:`tritonpu.testing`).

Guarantees: ``do_bench(fn)`` returns milliseconds, as Triton's does. When every launch ``fn``
makes runs on the virtual NPU, that is the *simulated* device time of one call — the launches'
cycles (each as long as its slowest core) at the machine's clock, added up as launches run one
after another — found by calling ``fn`` twice (the first call compiles and autotunes) and never
dependent on the host's load: a deterministic simulation has nothing to repeat. When ``fn``
launches nothing on the NPU (another backend, or plain numpy), it is wall-clock time, as Triton
measures: ``warmup`` ms of calls, then calls for about ``rep`` ms. ``perf_report`` /
``Benchmark`` run a function over a grid of arguments and print or save the table (CSV); with
``save_path`` and matplotlib installed (``tritonpu[plot]``), also a PNG plot per table, as
Triton's does (without matplotlib: the CSV only).
"""
from __future__ import annotations

import statistics
import time
from pathlib import Path

from tritonpu.runtime import hooks

_MODES = ("min", "max", "mean", "median", "all")


def _reduce(times, quantiles, return_mode):
    if quantiles is not None:
        qs = [float(q) for q in quantiles]
        if any(not 0 <= q <= 1 for q in qs):
            raise ValueError(f"quantiles must lie in [0, 1], got {quantiles}")
        s = sorted(times)
        out = [s[min(int(round(q * (len(s) - 1))), len(s) - 1)] for q in qs]
        return out[0] if len(out) == 1 else out
    if return_mode not in _MODES:
        raise ValueError(f"return_mode must be one of {_MODES}, got {return_mode!r}")
    if return_mode == "all":
        return list(times)
    return {"min": min, "max": max, "mean": statistics.fmean, "median": statistics.median}[return_mode](times)


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean", **_ignored):
    """Milliseconds one call of ``fn`` takes: simulated device time on the virtual NPU, else wall
    time (see the module docstring). ``quantiles`` / ``return_mode`` as in Triton."""
    fn()                                            # compiles, autotunes, fills caches
    handles = []

    def record(_jitfn, handle):
        handles.append(handle)

    hooks.add_launch_listener(record)
    try:
        t0 = time.perf_counter()
        fn()
        first = (time.perf_counter() - t0) * 1e3
    finally:
        hooks.remove_launch_listener(record)
    simulated = [h.stats for h in handles if h.backend == "npu" and h.stats is not None]
    if handles and len(simulated) == len(handles):
        ms = sum(s.cycles for s in simulated) / (simulated[0].machine.clock_ghz * 1e6)
        return _reduce([ms], quantiles, return_mode)
    times = [first]
    t_end = time.perf_counter() + max(rep - first, 0) / 1e3
    n_warm = int(warmup / max(first, 1e-3))
    for _ in range(min(n_warm, 1000)):
        fn()
    while time.perf_counter() < t_end and len(times) < 1000:
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return _reduce(times, quantiles, return_mode)


class Benchmark:
    """One table of ``perf_report``: ``x_names`` take each of ``x_vals``; one column per value of
    ``line_arg`` in ``line_vals`` (named by ``line_names``); ``args`` are passed to every call."""

    def __init__(self, x_names, x_vals, line_arg, line_vals, line_names, plot_name, args=None, xlabel="",
                 ylabel="", x_log=False, y_log=False, styles=None, color=None):
        self.x_names, self.x_vals = list(x_names), list(x_vals)
        self.line_arg, self.line_vals, self.line_names = line_arg, list(line_vals), list(line_names)
        if len(self.line_names) != len(self.line_vals):
            raise ValueError(f"{len(self.line_names)} line_names for {len(self.line_vals)} line_vals")
        self.plot_name, self.args = plot_name, dict(args or {})
        self.xlabel, self.ylabel, self.x_log, self.y_log, self.styles = xlabel, ylabel, x_log, y_log, styles


class Mark:
    def __init__(self, fn, benchmarks):
        self.fn, self.benchmarks = fn, benchmarks

    def _table(self, bench: Benchmark, **kwargs):
        header = list(bench.x_names) + list(bench.line_names)
        rows, extra = [], False
        for x in bench.x_vals:
            xs = list(x) if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            x_args = dict(zip(bench.x_names, xs))
            row, lo_hi = list(xs), []
            for val in bench.line_vals:
                y = self.fn(**x_args, **{bench.line_arg: val}, **bench.args, **kwargs)
                if isinstance(y, (list, tuple)):
                    mid, lo, hi = (list(y) + [None, None])[:3]
                    extra = True
                else:
                    mid, lo, hi = y, None, None
                row.append(mid)
                lo_hi += [lo, hi]
            rows.append((row, lo_hi))
        if extra:
            header += [f"{n}-{s}" for n in bench.line_names for s in ("min", "max")]
            return header, [r + lh for r, lh in rows]
        return header, [r for r, _ in rows]

    def run(self, show_plots=False, print_data=False, save_path="", return_df=False, **kwargs):
        """Run every benchmark; print its table (``print_data``), write ``<plot_name>.csv`` under
        ``save_path``, and ``<plot_name>.png`` beside it when matplotlib is installed (the ``plot``
        extra), as Triton does; with ``return_df`` return the tables (pandas DataFrames when pandas is
        installed, else (header, rows) pairs). ``show_plots`` is accepted and ignored."""
        benches = self.benchmarks if isinstance(self.benchmarks, (list, tuple)) else [self.benchmarks]
        out = []
        for bench in benches:
            header, rows = self._table(bench, **kwargs)
            if print_data:
                print(f"{bench.plot_name}:")
                print(_format(header, rows))
            if save_path:
                path = Path(save_path) / f"{bench.plot_name}.csv"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("\n".join(",".join(_cell(v) for v in r) for r in [header] + rows) + "\n")
                _save_png(bench, header, rows, Path(save_path) / f"{bench.plot_name}.png")
            out.append(_frame(header, rows))
        if return_df:
            return out[0] if len(out) == 1 else out
        return None


def _save_png(bench, header, rows, path) -> None:
    try:
        from tritonpu.profile.plot import save_perf_report
        save_perf_report(bench, header, rows, path)
    except ImportError:             # no matplotlib: the CSV is the report (tritonpu[plot] adds the PNG)
        pass


def perf_report(benchmarks):
    """Decorator: ``fn`` becomes a :class:`Mark` whose ``.run(...)`` makes the tables."""
    return lambda fn: Mark(fn, benchmarks)


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _format(header, rows) -> str:
    cells = [[_cell(v) for v in r] for r in [header] + rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells)


def _frame(header, rows):
    try:
        import pandas as pd
    except ImportError:
        return header, rows
    return pd.DataFrame(rows, columns=header)
