"""Simulation speed: wall time of a launch on the virtual NPU against numpy doing the same math.

    python bench/npu_speed.py [--runs N] [--quick]

A launch includes everything the user waits for: the results in the output arrays and the cycle
model (h.stats). The NPU column runs with the sanitizer off (sanitize=False), the next column with
it on. Kernels: vector add 2^20 (BLOCK 1024), softmax 4096x1024 fp32 (one row per program),
scale-bias-softmax 4096x1024, matmul 512^3 fp32 and fp16-in/fp32-acc (64x64x32 blocks), gather of
8192 rows from a 50000x256 fp32 table (64 rows per program, BLOCK_D=256). Each is warmed up once
(compile excluded), then timed as the median of N runs; every result is checked against numpy.
Goals (issue 8): geometric mean <= 5x numpy, no kernel above 15x (sanitizer off).

The NPU columns use the translating engine (TRITONPU_NPU_ENGINE, default here: translate — what a
launch of a hot program uses; the default engine, auto, switches to it after a program has run
some 200 times over); "interpret ms" is the reference engine in the same run, sanitizer off, and
"speedup" the ratio of the two (--no-reference skips it).

numpy's BLAS runs single-threaded (OPENBLAS_NUM_THREADS=1 unless already set), like the simulator:
on a busy 2-core machine a threaded OpenBLAS 512^3 matmul measured 22 ms instead of 2.2 ms, which
would flatter the matmul ratios tenfold. Set OPENBLAS_NUM_THREADS yourself to compare otherwise.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")  # before numpy is imported; see the docstring

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels"))

import gather as gk  # noqa: E402
import matmul as mm  # noqa: E402
import softmax as sm  # noqa: E402
import vector_add as va  # noqa: E402



def _median(fn, runs):
    fn()  # warm-up: compiles on the first call, fills caches
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def cases(rng, quick):
    """(name, npu(sanitize) -> result, numpy() -> result, atol, rtol)."""
    q = 4 if quick else 1
    n = (1 << 20) // q
    x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    yield (f"vector add {n}", lambda s: va.add(x, y, BLOCK=1024, sanitize=s)[0],
           lambda: x + y, 1e-6, 1e-6)

    R, C = 4096 // q, 1024
    xs = rng.standard_normal((R, C), np.float32)
    yield (f"softmax {R}x{C} fp32", lambda s: sm.softmax(xs, sanitize=s)[0],
           lambda: _np_softmax(xs), 1e-6, 1e-4)

    bias = rng.standard_normal(C, np.float32)
    scale = 0.5

    yield (f"scale-bias-softmax {R}x{C}", lambda s: sm.scale_bias_softmax(xs, bias, scale, sanitize=s)[0],
           lambda: _np_softmax(xs * np.float32(scale) + bias), 1e-6, 1e-4)

    M = 512 // (2 if quick else 1)
    a, b = rng.standard_normal((M, M), np.float32), rng.standard_normal((M, M), np.float32)
    yield (f"matmul {M}^3 fp32", lambda s: mm.matmul(a, b, np.float32, 64, 64, 32, sanitize=s)[0],
           lambda: a @ b, 1e-3, 1e-4)
    a16, b16 = a.astype(np.float16), b.astype(np.float16)
    yield (f"matmul {M}^3 fp16->fp32", lambda s: mm.matmul(a16, b16, np.float32, 64, 64, 32, sanitize=s)[0],
           lambda: a16.astype(np.float32) @ b16.astype(np.float32), 1e-3, 1e-4)

    rows, vocab, dim = 8192 // q, 50000, 256
    table = rng.standard_normal((vocab, dim), np.float32)
    idx = rng.integers(0, vocab, rows).astype(np.int32)
    yield (f"gather {rows} of {vocab}x{dim}", lambda s: gk.gather(table, idx, ROWS=64, BLOCK_D=256, sanitize=s)[0],
           lambda: np.take(table, idx, axis=0), 0.0, 0.0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="quarter-size problems (matmul 256^3)")
    ap.add_argument("--no-reference", action="store_true", help="do not time the reference engine")
    args = ap.parse_args(argv)
    engine = os.environ["TRITONPU_NPU_ENGINE"] = os.environ.get("TRITONPU_NPU_ENGINE") or "translate"
    rng = np.random.default_rng(0)
    print(f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}, median of {args.runs} runs, compile excluded")
    print(f"engine: {engine}")
    print(f"{'kernel':<30}{'npu ms':>10}{'sanitize=on':>13}{'numpy ms':>10}{'ratio':>9}{'ratio on':>10}"
          + ("" if args.no_reference else f"{'interpret ms':>14}{'speedup':>9}"))
    ratios = []
    for name, npu, ref, atol, rtol in cases(rng, args.quick):
        expect = ref()
        for s in (False, True):
            np.testing.assert_allclose(npu(s), expect, atol=atol, rtol=rtol, err_msg=name)
        t_off = _median(lambda: npu(False), args.runs)
        t_on = _median(lambda: npu(True), args.runs)
        t_np = _median(ref, args.runs)
        r = t_off / t_np
        ratios.append((r, name))
        ref_cols = ""
        if not args.no_reference:
            os.environ["TRITONPU_NPU_ENGINE"] = "interpret"
            try:
                t_ref = _median(lambda: npu(False), args.runs)
            finally:
                os.environ["TRITONPU_NPU_ENGINE"] = engine
            ref_cols = f"{t_ref * 1e3:>14.2f}{t_ref / t_off:>8.2f}x"
        print(f"{name:<30}{t_off * 1e3:>10.2f}{t_on * 1e3:>13.2f}{t_np * 1e3:>10.3f}{r:>8.1f}x"
              f"{t_on / t_np:>9.1f}x" + ref_cols, flush=True)
    geo = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
    worst, wname = max(ratios)
    print(f"geometric mean of ratios (sanitizer off): {geo:.2f}x")
    print(f"summary: geomean {geo:.1f}x numpy (goal <= 5x), worst {wname} {worst:.1f}x (goal <= 15x)")


if __name__ == "__main__":
    main()
