"""Cycles with double buffering on and off (simulated, deterministic):

    python bench/double_buffer.py [--quick]

softmax 4096x1024 fp32, one row per program, and matmul 1024^3 fp16 with fp32 accumulation
(64x64x32 blocks as in kernels/matmul.py). Goal (issue 6): >= 1.7x fewer cycles with it on.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels"))

import matmul as mm  # noqa: E402
import softmax as sm  # noqa: E402


def run(label, launch):
    on = launch(True)
    off = launch(False)
    ratio = off.stats.cycles / on.stats.cycles
    print(f"{label:<34} {off.stats.cycles:>12} {on.stats.cycles:>12} {ratio:>8.2f}x   "
          f"eff {100 * off.stats.efficiency:5.1f}% -> {100 * on.stats.efficiency:5.1f}%")
    return ratio


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller problems (512 rows, 256^3)")
    args = ap.parse_args()
    rows, n = (512, 256) if args.quick else (4096, 1024)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, 1024), dtype=np.float32)
    a = rng.standard_normal((n, n)).astype(np.float16)
    b = rng.standard_normal((n, n)).astype(np.float16)
    print(f"{'kernel':<34} {'cycles off':>12} {'cycles on':>12} {'ratio':>9}")
    r1 = run(f"softmax {rows}x1024 fp32", lambda db: sm.softmax(x, double_buffer=db, sanitize=False)[1])
    r2 = run(f"matmul {n}^3 fp16->fp32", lambda db: mm.matmul(a, b, double_buffer=db, sanitize=False)[1])
    print(f"summary: double buffering gives {r1:.2f}x (softmax) and {r2:.2f}x (matmul) fewer cycles; goal 1.7x")


if __name__ == "__main__":
    main()
