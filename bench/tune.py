"""Autotune sweeps on each executor with 1 and 2 workers, and configs="auto" against the hand-written
lists (simulated cycles are deterministic; wall times are this machine's):

    python bench/tune.py [--n 1024] [--runs 3] [--executors inprocess,processes,ray] [--auto]
    python bench/tune.py --goals [--kernels matmul,softmax,layernorm,attention] [--quick]
                         [--sizes 1024,2048] [--rows 4096] [--heads 8] [--workers 2]

* sweep: Triton's tutorial matmul (bench/cube.py) at n^3 fp16 over 16 configs (the tutorial's
  eight fp16 block shapes, each with GROUP_SIZE_M 1 and 8), on each executor with 1 and with
  ``--workers`` workers: median wall time of ``--runs`` sweeps (``result.seconds``: preparing and
  running the trials, not the launch of the chosen config after them; a fresh autotuner each,
  compile cache warm after the first), the chosen config and its cycles -- which must be the same on every
  executor; the speed-up of ``--workers`` workers over 1, and Ray's per-config overhead over the
  process pool (the difference of their medians / 16);
* ``--auto``: ``configs="auto"`` on the same launch: the config it finds, its cycles, the
  simulations it spent, against the best of the tutorial list.
* ``--goals``: issue 19's goals for ``configs="auto"``, kernel by kernel: the hand-written list
  and ``configs="auto"`` (default ``max_simulations``, but for the matmul) on the same launch,
  each through the sweep the autotuner runs (:func:`tritonpu.runtime.tuner.sweep_list` / ``search_auto``, without the
  final launch after it), on a process pool of ``--workers``, sanitizer off, no results on disk:

  - ``matmul``: Triton's tutorial matmul (bench/cube.py), fp16, at each of ``--sizes`` (1024^3
    and 2048^3). Hand-written: the tutorial's ten configs with GROUP_SIZE_M 8 as bench/cube.py
    runs them, and bench/npu_codegen.py's MATMUL_CONFIGS (block shapes and GROUP_M) on the same
    kernel. Auto tunes GROUP_SIZE_M too (a program-order parameter), with ``max_simulations``
    = the tutorial list's size, 10. Goals: within 3% of the best of both lists, fewer cycles than
    the best of the tutorial list, at most as many simulations as the tutorial list has configs;
  - ``softmax``: kernels/softmax.py ``softmax_kernel``, ``--rows`` x 4096 fp32 (bench/npu_codegen.py:
    BLOCK 4096);
  - ``layernorm``: kernels/layernorm.py, ``--rows`` x 4096 fp32, both kernels bench/npu_codegen.py
    runs: ``layernorm_kernel`` (column blocks; BLOCK 512 and 4096) and ``layernorm_row_kernel``
    (the row in one block; BLOCK 4096) -- auto on each; the goal compares the better of the two
    auto choices with the best of the three hand configs;
  - ``attention``: kernels/flash_attention.py, fp16, ``--heads`` x 2048 x 128 (bench/cube.py), hand
    configs BLOCK_M 128 x BLOCK_N 64 and 128; auto launches with ``grid=lambda meta: ...`` so that
    BLOCK_M can be tuned.

  Goal for all: auto within 3% of the best hand config. ``--quick``: matmul 1024^3 only, 1024
  rows, attention at 2 heads. ``--check-pruning``: every candidate pruned for its footprint
  (UB/L1/L0) is compiled after all, and none may compile; ``--verbose``: every candidate's row.
Measure on an idle machine: the speed-up is the machine's cores at work.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels"))
import cube  # noqa: E402
import flash_attention as fa  # noqa: E402
import layernorm as ln  # noqa: E402
import npu_codegen  # noqa: E402
import softmax as sm  # noqa: E402

import tritonpu  # noqa: E402
from tritonpu.runtime import tuner  # noqa: E402

CONFIGS = [tritonpu.Config({"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": k, "GROUP_SIZE_M": g})
           for m, n, k in cube.TUTORIAL_CONFIGS[:8] for g in (1, 8)]


def sweep(n, a, b, configs, executor, workers, max_simulations=None, **launch):
    kern = tritonpu.autotune(configs=configs, key=["M"], executor=executor, workers=workers,
                             max_simulations=max_simulations)(cube.tutorial_matmul)
    c = np.empty((n, n), np.float16)
    grid = lambda meta: (tritonpu.cdiv(n, meta["BLOCK_SIZE_M"]) * tritonpu.cdiv(n, meta["BLOCK_SIZE_N"]),)  # noqa
    t0 = time.perf_counter()
    kern[grid](a, b, c, n, n, n, n, 1, n, 1, n, 1, sanitize=False, **launch)
    return time.perf_counter() - t0, kern


# ---- --goals: issue 19's goals for configs="auto" --------------------------------------------------
class Case:
    """One launch: its hand-written config list (``tutorial``: the part of it that is Triton's
    tutorial list, if any) and the launch ``configs="auto"`` gets (``auto_kw``: what it is given
    that the list tunes, e.g. GROUP_SIZE_M)."""

    def __init__(self, label, group, kernel, args, grid, hand, tutorial=None, auto_kw=None, fixed=None):
        self.label, self.group, self.kernel, self.args, self.grid = label, group, kernel, args, grid
        self.hand, self.tutorial, self.auto_kw, self.fixed = hand, tutorial, auto_kw or {}, fixed or {}


def _dedup(configs):
    seen, out = set(), []
    for c in configs:
        k = tuple(sorted(c.kwargs.items()))
        if k not in seen:
            seen.add(k)
            out.append(c)
    return out


def goal_cases(kernels, sizes, rows, heads):
    rng = np.random.default_rng(0)
    cases = []
    if "matmul" in kernels:
        tut = [tritonpu.Config({"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": k, "GROUP_SIZE_M": 8})
               for m, n, k in cube.TUTORIAL_CONFIGS]
        codegen = [tritonpu.Config({"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": k, "GROUP_SIZE_M": g})
                   for m, n, k, g in npu_codegen.MATMUL_CONFIGS]
        for n in sizes:
            a = (rng.random((n, n)) - 0.5).astype(np.float16)
            b = (rng.random((n, n)) - 0.5).astype(np.float16)
            c = np.empty((n, n), np.float16)
            grid = lambda meta, n=n: (tritonpu.cdiv(n, meta["BLOCK_SIZE_M"]) * tritonpu.cdiv(n, meta["BLOCK_SIZE_N"]),)  # noqa
            cases.append(Case(f"matmul {n}^3 fp16", f"matmul {n}", cube.tutorial_matmul,
                              (a, b, c, n, n, n, n, 1, n, 1, n, 1), grid, _dedup(tut + codegen), tut))
    cols = 4096
    if "softmax" in kernels:
        x = rng.standard_normal((rows, cols), np.float32)
        cases.append(Case(f"softmax {rows}x{cols} fp32", "softmax", sm.softmax_kernel,
                          (np.empty_like(x), x, cols, cols, cols), (rows,), [tritonpu.Config({"BLOCK": cols})]))
    if "layernorm" in kernels:
        x = rng.standard_normal((rows, cols), np.float32)
        w, b = rng.standard_normal(cols, np.float32), rng.standard_normal(cols, np.float32)
        args = (x, np.empty_like(x), w, b, np.empty(rows, np.float32), np.empty(rows, np.float32), cols, cols, 1e-5)
        cases.append(Case(f"layernorm {rows}x{cols} fp32 column blocks", "layernorm", ln.layernorm_kernel, args,
                          (rows,), [tritonpu.Config({"BLOCK": 512}), tritonpu.Config({"BLOCK": 4096})]))
        cases.append(Case(f"layernorm {rows}x{cols} fp32 row kernel", "layernorm", ln.layernorm_row_kernel, args,
                          (rows,), [tritonpu.Config({"BLOCK": tritonpu.next_power_of_2(cols)})]))
    if "attention" in kernels:
        seq, d = 2048, 128
        q, k, v = ((rng.standard_normal((heads, seq, d)) * 0.5).astype(np.float16) for _ in range(3))
        grid = lambda meta: (tritonpu.cdiv(seq, meta["BLOCK_M"]), heads)  # noqa: E731
        cases.append(Case(f"attention {heads}x{seq}x{d} fp16", "attention", fa.attention_kernel,
                          (q, k, v, np.empty_like(q), seq, d, 1.0 / np.sqrt(d)), grid,
                          [tritonpu.Config({"BLOCK_M": 128, "BLOCK_N": bn}) for bn in (64, 128)],
                          fixed={"D": d}))
    return cases


def _cfg(config, order=()) -> str:
    """Block sizes joined by x in the order of ``order`` (the hand list's), then G<group>."""
    kw = config.kwargs
    names = [n for n in order if n in kw] + sorted(n for n in kw if n not in order)
    return "x".join(str(kw[n]) for n in names if not n.startswith("GROUP")) + "".join(
        f" G{kw[n]}" for n in names if n.startswith("GROUP"))


def check_pruning(case, kwargs, auto, args) -> str:
    """Compiles (no run) every candidate auto pruned for its footprint, the ones dropped without
    compiling (no smaller than one that did not fit) included: each must fail to compile."""
    from tritonpu.runtime import executors
    pruned = [r for r in auto.rows if r.status == "pruned" and not r.reason.startswith(("occupancy", "grid:"))]
    if not pruned:
        return "pruning check: nothing pruned for its footprint"
    sweep = executors.prepare(case.kernel, case.args, kwargs, case.grid, [r.config for r in pruned])
    res = executors.run(executors.get(args.executor, args.workers), sweep, None, "compile")
    wrong = [pruned[i].config for i, r in res.items() if r["error"] != "compile"]
    dominated = sum(r.reason.startswith("no smaller") for r in pruned)
    return (f"pruning check: {len(pruned)} candidates pruned for their footprint ({dominated} without compiling), "
            f"compiled now: {len(wrong)} compile" + (f" -- WRONGLY PRUNED: {wrong}" if wrong else ""))


def run_goals(args):
    os.environ["TRITONPU_AUTOTUNE_CACHE"] = "0"
    kernels = [k for k in args.kernels.split(",") if k]
    sizes = [int(s) for s in args.sizes.split(",") if s] or ([1024] if args.quick else [1024, 2048])
    rows = args.rows or (1024 if args.quick else 4096)
    heads = args.heads or (2 if args.quick else 8)
    launch = {"sanitize": False}
    print(f"configs='auto' against the hand-written lists: simulated cycles; executor {args.executor}, "
          f"{args.workers} workers; max_simulations {args.max_simulations or 'default (matmul: the tutorial list size)'}", flush=True)
    print(f"{'kernel':<40}{'auto config':>18}{'cycles':>10}{'sims':>6}{'cands':>7}{'best hand':>18}{'cycles':>10}"
          f"{'gap %':>8}{'tut.':>5}{'tut. best':>11}{'wall s':>8}", flush=True)
    done = []
    for case in goal_cases(kernels, sizes, rows, heads):
        t0 = time.perf_counter()
        order = list(case.hand[0].kwargs)
        hand = tuner.sweep_list(case.kernel, case.hand, case.args, {**launch, **case.fixed}, case.grid,
                                executor=args.executor, workers=args.workers, name=case.label)
        auto = tuner.search_auto(case.kernel, case.args, {**launch, **case.fixed, **case.auto_kw}, case.grid,
                                 executor=args.executor, workers=args.workers,
                                 max_simulations=args.max_simulations or (case.tutorial and len(case.tutorial)),
                                 name=case.label)
        wall = time.perf_counter() - t0
        hbest = hand.best
        hcyc = hand.timings[hbest]
        acyc = auto.timings[auto.best]
        tut = None
        if case.tutorial:
            keys = {tuple(sorted(c.kwargs.items())) for c in case.tutorial}
            tut = min(v for c, v in hand.timings.items() if tuple(sorted(c.kwargs.items())) in keys)
        pruned = sum(r.status == "pruned" for r in auto.rows)
        gap = 100 * (acyc / hcyc - 1)
        print(f"{case.label:<40}{_cfg(auto.best, order):>18}{acyc:>10}{auto.simulations:>6}"
              f"{f'{len(auto.rows) - pruned}/{len(auto.rows)}':>7}{_cfg(hbest, order):>18}{hcyc:>10}{gap:>+8.1f}"
              f"{len(case.tutorial) if case.tutorial else '':>5}{tut if tut else '':>11}{wall:>8.0f}", flush=True)
        if args.check_pruning:
            print("    " + check_pruning(case, {**launch, **case.fixed, **case.auto_kw}, auto, args), flush=True)
        if args.verbose:
            for r in auto.rows:
                print(f"    {_cfg(r.config, order):>18} {r.status:<14}{r.cycles or '':>9} bound {r.bound or 0:>9.0f} "
                      f"{r.reason[:90]}")
            for c, v in hand.timings.items():
                print(f"    hand {_cfg(c, order):>18} {v}")
        done.append((case, auto, acyc, hcyc, tut))
    # goals, per kernel (the layernorm's two kernels count together)
    met, total, lines = 0, 0, []
    for group in dict.fromkeys(c.group for c, *_ in done):
        rows_ = [d for d in done if d[0].group == group]
        acyc = min(d[2] for d in rows_)
        hcyc = min(d[3] for d in rows_)
        gap = 100 * (acyc / hcyc - 1)
        goals = [("within 3%", gap <= 3.0, f"{gap:+.1f}%")]
        for case, auto, a, _, tut in rows_:
            if tut is not None:
                goals.append(("beats tutorial best", a < tut, f"{a} vs {tut}"))
                goals.append((f"sims <= {len(case.tutorial)}", auto.simulations <= len(case.tutorial),
                              f"{auto.simulations}"))
        for name, ok, fig in goals:
            met, total = met + ok, total + 1
        lines.append(f"{group}: " + ", ".join(f"{name} {'MET' if ok else 'MISSED'} ({fig})"
                                               for name, ok, fig in goals))
    for line in lines:
        print(line)
    print(f"summary: {met}/{total} goals met ("
          + "; ".join(f"{d[0].label}: auto {d[2]} vs hand {d[3]} ({100 * (d[2] / d[3] - 1):+.1f}%, "
                      f"{d[1].simulations} sims)" for d in done) + ")")
    return 0 if met == total else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--executors", default="inprocess,processes,ray")
    ap.add_argument("--auto", action="store_true")
    ap.add_argument("--goals", action="store_true", help="issue 19's configs='auto' goals (see the module doc)")
    ap.add_argument("--kernels", default="matmul,softmax,layernorm,attention", help="--goals: the kernels to run")
    ap.add_argument("--quick", action="store_true", help="--goals: matmul 1024^3 only, 1024 rows, 2 heads")
    ap.add_argument("--sizes", default="", help="--goals: matmul sizes (default 1024,2048)")
    ap.add_argument("--rows", type=int, default=0, help="--goals: softmax/layernorm rows (default 4096)")
    ap.add_argument("--heads", type=int, default=0, help="--goals: attention heads (default 8)")
    ap.add_argument("--executor", default="processes", help="--goals: executor (default processes)")
    ap.add_argument("--max-simulations", type=int, default=None, help="--goals: auto's budget (default: its own)")
    ap.add_argument("--verbose", action="store_true", help="--goals: every candidate's row")
    ap.add_argument("--check-pruning", action="store_true",
                    help="--goals: compile every candidate pruned for its footprint (none may compile)")
    args = ap.parse_args()
    if args.goals:
        return run_goals(args)
    os.environ.setdefault("TRITONPU_AUTOTUNE_CACHE", "0")
    n = args.n
    rng = np.random.default_rng(0)
    a = (rng.random((n, n)) - 0.5).astype(np.float16)
    b = (rng.random((n, n)) - 0.5).astype(np.float16)
    print(f"{'executor':<11}{'workers':>8}{'wall s (median)':>16}{'runs':>24}   chosen config, cycles")
    seen, med = {}, {}
    for ex in args.executors.split(","):
        if ex == "ray":
            try:
                import ray  # noqa: F401
            except ImportError:
                print("ray: not installed (pip install 'tritonpu[ray]')")
                continue
        for workers in ((1,) if ex == "inprocess" else (1, args.workers)):
            walls, kern = [], None
            for _ in range(args.runs):
                _, kern = sweep(n, a, b, CONFIGS, ex, workers)
                walls.append(kern.result.seconds)      # the sweep, not the final launch after it
            best = kern.best_config
            cyc = kern.configs_timings[best]
            seen[ex, workers] = sorted((tuple(sorted(c.kwargs.items())), v) for c, v in kern.configs_timings.items())
            med[ex, workers] = statistics.median(walls)
            print(f"{ex:<11}{workers:>8}{med[ex, workers]:>16.1f}{' '.join(f'{w:.1f}' for w in walls):>24}   "
                  f"{best.kwargs} {cyc}", flush=True)
    for ex in ("processes", "ray"):
        if (ex, 1) in med and (ex, args.workers) in med:
            print(f"{ex}: {args.workers} workers {med[ex, 1] / med[ex, args.workers]:.2f}x faster than 1")
    for w in sorted({w for _, w in med}):
        if ("ray", w) in med and ("processes", w) in med:
            print(f"ray over processes, {w} worker(s): {1000 * (med['ray', w] - med['processes', w]) / len(CONFIGS):+.0f} "
                  "ms per config")
    same = len({repr(v) for v in seen.values()}) == 1
    print(f"every timing identical across executors: {same}")
    if args.auto:
        ex = args.executors.split(",")[-1]
        list_best = min(v for _, v in seen[next(iter(seen))])
        w, kern = sweep(n, a, b, "auto", ex, args.workers, GROUP_SIZE_M=8)
        cyc = kern.configs_timings[kern.best_config]
        statuses = {}
        for r in kern.report:
            statuses[r.status] = statuses.get(r.status, 0) + 1
        print(f"auto ({ex}): {kern.best_config.kwargs} {cyc} cycles, {kern.result.simulations} simulations, "
              f"{w:.1f} s; candidates {statuses}; tutorial list best {list_best} "
              f"({100 * (cyc / list_best - 1):+.1f}%)")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
