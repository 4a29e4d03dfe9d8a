"""PNG pictures with matplotlib (the ``plot`` extra): ``h.stats.plot_timeline(path)`` and the
plots ``tritonpu.testing.perf_report`` saves.

matplotlib is imported only here and only when a picture is asked for, so ``import tritonpu``
never needs it; without it the error names ``pip install tritonpu[plot]``.
"""
from __future__ import annotations

from . import model

_COLORS = {"scalar": "#8c8c8c", "mte2": "#1f77b4", "mte1": "#17becf", "cube": "#d62728", "fix": "#9467bd",
           "vector": "#2ca02c", "mte3": "#ff7f0e"}
MISSING = "matplotlib is needed for PNG plots: pip install tritonpu[plot]"


def pyplot():
    """matplotlib.pyplot with a non-interactive backend, or ImportError naming the extra."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError(MISSING) from None
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    return plt


def plot_timeline(stats, path, cores=None, max_cores: int = 8) -> None:
    """Every pipe of every core (at most ``max_cores`` cores: the slowest first, then in order)
    as horizontal bars over simulated cycles, plus an "all cores" lane per pipe (share of cores
    busy), saved as a PNG."""
    plt = pyplot()
    t = model.build(stats)
    ncores = len(stats.core_cycles)
    if cores is None:
        s = t.slowest
        cores = [s] + [c for c in range(ncores) if c != s][:max_cores - 1]
    pipes = model.PIPE_NAMES
    P = len(pipes)
    rows = 1 + len(cores)
    fig, ax = plt.subplots(figsize=(12, 0.9 + 0.95 * rows), dpi=80)
    ev = t.ev
    yt, yl = [], []
    cyc = max(stats.cycles, 1)
    import numpy as np
    bins = 400
    width = cyc / bins
    for k, core in enumerate(cores):
        base = (rows - 2 - k) * (P + 1)
        mine = ev[ev[:, 0] == core]
        for p in range(P):
            sel = mine[mine[:, 1] == p]
            if len(sel):
                ax.broken_barh(list(zip(sel[:, 2].tolist(), sel[:, 3].tolist())), (base + P - 1 - p, 0.8),
                               facecolors=_COLORS[pipes[p]], linewidth=0)
            yt.append(base + P - 1 - p + 0.4)
            yl.append(f"core {core} {pipes[p]}" if p == 0 else pipes[p])
    base = (rows - 1) * (P + 1)                 # the "all cores" lanes on top
    for p in range(P):
        sel = ev[ev[:, 1] == p]
        occ = np.zeros(bins)
        for s, d in zip(sel[:, 2].tolist(), sel[:, 3].tolist()):
            a, b = int(s / width), int(min(s + d, cyc - 1) / width)
            occ[a:b + 1] += 1
        occ = np.minimum(occ / max(ncores, 1), 1.0)
        for i in np.nonzero(occ)[0]:
            ax.broken_barh([(i * width, width)], (base + P - 1 - p, 0.8), facecolors=_COLORS[pipes[p]],
                           alpha=float(occ[i]), linewidth=0)
        yt.append(base + P - 1 - p + 0.4)
        yl.append(f"all cores {pipes[p]}" if p == 0 else pipes[p])
    ax.set_yticks(yt)
    ax.set_yticklabels(yl, fontsize=7)
    ax.set_xlim(0, cyc)
    ax.set_xlabel("cycles")
    ax.set_title(f"{stats.kernel}: {stats.cycles} cycles, {stats.programs} programs on {stats.cores_used} cores "
                 f"(bound {stats.roofline_bound}, efficiency {stats.efficiency:.2f})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def save_perf_report(bench, header, rows, path) -> None:
    """One Triton-style ``perf_report`` plot: the first x column against each line's values
    (a band between its min and max when the function returned them), saved as PNG."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=80)
    col = {h: i for i, h in enumerate(header)}
    xs = [r[0] for r in rows]
    styles = bench.styles or []
    for i, name in enumerate(bench.line_names):
        kw = {}
        if i < len(styles) and isinstance(styles[i], (tuple, list)) and len(styles[i]) >= 2:
            kw = {"color": styles[i][0], "linestyle": styles[i][1]}
        ys = [r[col[name]] for r in rows]
        line, = ax.plot(xs, ys, marker="o", label=name, **kw)
        lo, hi = col.get(f"{name}-min"), col.get(f"{name}-max")
        if lo is not None and hi is not None and all(r[lo] is not None and r[hi] is not None for r in rows):
            ax.fill_between(xs, [r[lo] for r in rows], [r[hi] for r in rows], alpha=0.2, color=line.get_color())
    ax.set_xlabel(bench.xlabel or bench.x_names[0])
    ax.set_ylabel(bench.ylabel or "")
    if bench.x_log:
        ax.set_xscale("log")
    if bench.y_log:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend()
    ax.set_title(bench.plot_name)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
