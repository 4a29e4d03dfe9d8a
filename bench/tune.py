"""Autotune sweeps on each executor, and configs="auto" against the hand-written lists
(simulated cycles are deterministic; wall times are this machine's):

    python bench/tune.py [--n 1024] [--runs 3] [--executors inprocess,processes,ray] [--auto]

* sweep: Triton's tutorial matmul (bench/cube.py) at n^3 fp16 over the tutorial's eight fp16
  configs, on each executor with 2 workers: median wall time of ``--runs`` sweeps (a fresh
  autotuner each, compile cache warm after the first), the chosen config and its cycles — which
  must be the same on every executor;
* ``--auto``: ``configs="auto"`` on the same launch: the config it finds, its cycles, the
  simulations it spent, against the best of the tutorial list.
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

CONFIGS = [tritonpu.Config({"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": k})
           for m, n, k in cube.TUTORIAL_CONFIGS[:8]]


def sweep(n, a, b, configs, executor, workers, max_simulations=None):
    kern = tritonpu.autotune(configs=configs, key=["M"], executor=executor, workers=workers,
                             max_simulations=max_simulations)(cube.tutorial_matmul)
    c = np.empty((n, n), np.float16)
    grid = lambda meta: (tritonpu.cdiv(n, meta["BLOCK_SIZE_M"]) * tritonpu.cdiv(n, meta["BLOCK_SIZE_N"]),)  # noqa
    t0 = time.perf_counter()
    kern[grid](a, b, c, n, n, n, n, 1, n, 1, n, 1, GROUP_SIZE_M=8, sanitize=False)
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
    print(f"{'executor':<11}{'wall s (median)':>16}{'runs':>24}   chosen config, cycles")
    seen = {}
    for ex in args.executors.split(","):
        if ex == "ray":
            try:
                import ray  # noqa: F401
            except ImportError:
                print("ray: not installed (pip install 'tritonpu[ray]')")
                continue
        walls, kern = [], None
        for _ in range(args.runs):
            w, kern = sweep(n, a, b, CONFIGS, ex, args.workers)
            walls.append(w)
        best = kern.best_config
        cyc = kern.configs_timings[best]
        seen[ex] = sorted((tuple(sorted(c.kwargs.items())), v) for c, v in kern.configs_timings.items())
        print(f"{ex:<11}{statistics.median(walls):>16.1f}{' '.join(f'{w:.1f}' for w in walls):>24}   "
              f"{best.kwargs} {cyc}", flush=True)
    same = len({repr(v) for v in seen.values()}) == 1
    print(f"every timing identical across executors: {same}")
    if args.auto:
        ex = args.executors.split(",")[-1]
        list_best = min(v for _, v in seen[next(iter(seen))])
        w, kern = sweep(n, a, b, "auto", ex, args.workers)
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
