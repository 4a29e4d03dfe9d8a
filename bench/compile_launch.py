"""Cold compile time per specialization and warm launch overhead on the virtual NPU.

    python bench/compile_launch.py [--launches N]

Compile: TRITONPU_CACHE_DIR points at a fresh temporary folder and every specialization uses
constexpr values not used before in the process, so nothing comes from a cache. The time of one
specialization is kernel.warmup(...) (frontend to IR) plus the NPU compile, which happens at the
first launch: measured as (first launch) - (median of 3 warm launches of the same call). Problems are
tiny so the launch itself is small next to the compile. The very first compile of the process
(lazy imports) is shown but not counted.
Warm launch: a 1-program vector add (n=1024, BLOCK 1024), sanitizer off, median of N launches.
Goals (issue 8): compile <= 150 ms cold per specialization; warm launch overhead <= 200 us.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ["TRITONPU_CACHE_DIR"] = tempfile.mkdtemp(prefix="tritonpu-bench-cache-")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels"))

import gather as gk  # noqa: E402
import layernorm as ln  # noqa: E402
import matmul as mm  # noqa: E402
import softmax as sm  # noqa: E402
import vector_add as va  # noqa: E402



def specializations(rng):
    """(label, kernel, grid, args, constexpr kwargs) — each a specialization never compiled before."""
    f32 = lambda *s: rng.standard_normal(s, np.float32)  # noqa: E731
    n = 4096
    x, y, o = f32(n), f32(n), np.empty(n, np.float32)
    for block in (2048, 256, 512):
        yield (f"vector add BLOCK {block}", va.add_kernel, (n // block,), (x, y, o, n), dict(BLOCK=block))
    R, C = 8, 1000
    xs, os_ = f32(R, C), np.empty((R, C), np.float32)
    for block in (1024, 2048):
        yield (f"softmax BLOCK {block}", sm.softmax_kernel, (R,), (os_, xs, C, C, C), dict(BLOCK=block))
    for block in (128, 256):
        yield (f"online softmax BLOCK {block}", sm.online_softmax_kernel, (R,), (os_, xs, C, C), dict(BLOCK=block))
    bias = f32(C)
    for block in (1024, 2048):
        yield (f"scale-bias-softmax BLOCK {block}", sm.scale_bias_softmax_kernel, (R,), (xs, bias, os_, C, 0.5),
               dict(BLOCK=block))
    w, b = f32(C), f32(C)
    mean, rstd = np.empty(R, np.float32), np.empty(R, np.float32)
    for block in (128, 256):
        yield (f"layernorm BLOCK {block}", ln.layernorm_kernel, (R,), (xs, os_, w, b, mean, rstd, C, C, 1e-5),
               dict(BLOCK=block))
    table, idx = f32(1000, 200), rng.integers(0, 1000, 256).astype(np.int32)
    out = np.empty((256, 200), np.float32)
    for rows, bd in ((32, 128), (16, 256)):
        yield (f"gather ROWS {rows} BLOCK_D {bd}", gk.gather_kernel, (256 // rows,), (table, idx, out, 256, 200),
               dict(ROWS=rows, BLOCK_D=bd))
    M = N = K = 128
    for dt, (bm, bn, bk, gm) in ((np.float32, (64, 64, 32, 4)), (np.float16, (64, 64, 32, 5)),
                                (np.float16, (128, 64, 32, 6)), (np.float16, (128, 128, 64, 7))):
        a, bb = f32(M, K).astype(dt), f32(K, N).astype(dt)
        c = np.empty((M, N), np.float32)
        grid = ((M // bm) * (N // bn),)
        yield (f"matmul {np.dtype(dt).name} {bm}x{bn}x{bk}", mm.matmul_kernel, grid,
               (a, bb, c, M, N, K, K, 1, N, 1, N, 1), dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm))


def cold(kernel, grid, args, kw):
    t0 = time.perf_counter()
    kernel.warmup(*args, grid=grid, **kw)
    t_front = time.perf_counter() - t0
    t0 = time.perf_counter()
    kernel[grid](*args, **kw, sanitize=False)
    t_first = time.perf_counter() - t0
    warm = []
    for _ in range(3):
        t0 = time.perf_counter()
        kernel[grid](*args, **kw, sanitize=False)
        warm.append(time.perf_counter() - t0)
    t_warm = statistics.median(warm)
    return t_front, t_first - t_warm, t_warm


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launches", type=int, default=50)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)

    # the process's first compile pays for lazy imports: shown, not counted
    x = rng.standard_normal(64, np.float32)
    f, b, w = cold(va.add_kernel, (1,), (x, x, np.empty_like(x), 64), dict(BLOCK=64))
    print(f"(first compile of the process, vector add BLOCK 64: {1e3 * (f + b):.1f} ms; not counted)")

    print(f"{'specialization (cold)':<34}{'frontend ms':>12}{'npu ms':>9}{'total ms':>10}{'launch ms':>11}")
    totals = []
    for label, kernel, grid, kargs, kw in specializations(rng):
        try:
            f, b, w = cold(kernel, grid, kargs, kw)
        except Exception as e:  # a specialization that does not compile is a finding: report it
            print(f"{label:<34} FAILED {type(e).__name__}: {str(e).splitlines()[0][:150]}")
            continue
        totals.append((f + b, label))
        print(f"{label:<34}{1e3 * f:>12.1f}{1e3 * b:>9.1f}{1e3 * (f + b):>10.1f}{1e3 * w:>11.2f}", flush=True)
    med = statistics.median(t for t, _ in totals)
    worst, wlabel = max(totals)
    print(f"cold compile: median {1e3 * med:.1f} ms, max {1e3 * worst:.1f} ms ({wlabel}) over {len(totals)} specializations")

    n = 1024
    x, y, o = (rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32), np.empty(n, np.float32))
    launch = lambda: va.add_kernel[(1,)](x, y, o, n, BLOCK=1024, sanitize=False)  # noqa: E731
    launch()
    np.testing.assert_array_equal(o, x + y)
    times = []
    for _ in range(args.launches):
        t0 = time.perf_counter()
        launch()
        times.append(time.perf_counter() - t0)
    warm = statistics.median(times)
    print(f"warm launch, 1-program vector add n=1024 (sanitize=False): median {1e6 * warm:.0f} us, "
          f"min {1e6 * min(times):.0f} us over {args.launches}")
    print(f"summary: cold compile median {1e3 * med:.0f} ms, max {1e3 * worst:.0f} ms (goal <= 150 ms); "
          f"warm launch {1e6 * warm:.0f} us (goal <= 200 us)")


if __name__ == "__main__":
    main()
