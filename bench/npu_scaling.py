"""Scaling over AI cores: softmax 4096x4096 fp32 (one row per program, BLOCK 4096) on the
ascend910b preset with cores=1, 2, 4, 8, 16, 24; simulated cycles and speedup against 1 core.

    python bench/npu_scaling.py [--quick]

--quick uses 1024x4096. Results are checked against numpy; sanitizer off.
Goal (issue 8): >= 20x from 1 to 24 cores.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels"))

import softmax as sm  # noqa: E402

CORES = (1, 2, 4, 8, 16, 24)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="1024x4096 instead of 4096x4096")
    args = ap.parse_args(argv)
    rows, cols = (1024 if args.quick else 4096), 4096
    x = np.random.default_rng(0).standard_normal((rows, cols), np.float32)
    ref = sm.reference(x)
    print(f"softmax {rows}x{cols} fp32, BLOCK {cols}, sanitize=False")
    print(f"{'cores':>6}{'cycles':>12}{'speedup':>10}{'per-core eff':>14}{'roofline eff':>14}{'wall s':>8}")
    base = None
    speedup = None
    for c in CORES:
        t0 = time.perf_counter()
        out, h = sm.softmax(x, cores=c, sanitize=False)
        wall = time.perf_counter() - t0
        np.testing.assert_allclose(out, ref, atol=1e-6, rtol=1e-4)
        cyc = h.stats.cycles
        base = base or cyc
        speedup = base / cyc
        print(f"{c:>6}{cyc:>12}{speedup:>9.2f}x{speedup / c:>14.3f}{h.stats.efficiency:>14.3f}{wall:>8.1f}", flush=True)
    print(f"summary: softmax {rows}x{cols} runs {speedup:.1f}x faster on {CORES[-1]} cores than on 1 (goal >= 20x)")


if __name__ == "__main__":
    main()
