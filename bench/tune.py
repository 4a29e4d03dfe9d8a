"""Autotune sweeps on each executor with 1 and 2 workers, and configs="auto" against the hand-written
lists (simulated cycles are deterministic; wall times are this machine's):

    python bench/tune.py [--n 1024] [--runs 3] [--executors inprocess,processes,ray] [--auto]

* sweep: Triton's tutorial matmul (bench/cube.py) at n^3 fp16 over 16 configs (the tutorial's
  eight fp16 block shapes, each with GROUP_SIZE_M 1 and 8), on each executor with 1 and with
  ``--workers`` workers: median wall time of ``--runs`` sweeps (``result.seconds``: preparing and
  running the trials, not the launch of the chosen config after them; a fresh autotuner each,
  compile cache warm after the first), the chosen config and its cycles -- which must be the same on every
  executor; the speed-up of ``--workers`` workers over 1, and Ray's per-config overhead over the
  process pool (the difference of their medians / 16);
* ``--auto``: ``configs="auto"`` on the same launch: the config it finds, its cycles, the
  simulations it spent, against the best of the tutorial list.
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
import cube  # noqa: E402

import tritonpu  # noqa: E402

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--executors", default="inprocess,processes,ray")
    ap.add_argument("--auto", action="store_true")
    args = ap.parse_args()
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
