"""The cpu backend (llvmlite, warm: compile excluded) against numpy doing the same math.

    python bench/cpu_vs_numpy.py [--runs N]

Kernels (Triton style, defined here): vector add 2^20 (BLOCK 1024), softmax 4096x1024 (one row
per program), layernorm 4096x1024 (one row per program), matmul 512^3 fp32 (64x64x32 blocks, K
loop). Prints the median of N runs of each, the ratio cpu/numpy, and one summary line. Aims:
within 2x of numpy on the vector kernels, within 10x on matmul.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import tritonpu
import tritonpu.language as tl


@tritonpu.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@tritonpu.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * n_cols + offs, e / tl.sum(e, axis=0), mask=mask)


@tritonpu.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + row * n_cols + offs, xc * rstd * w + b, mask=mask)


@tritonpu.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def _median(fn, runs):
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _layernorm_np(x, w, b, eps):
    mean = x.mean(axis=1, keepdims=True)
    xc = x - mean
    var = (xc * xc).mean(axis=1, keepdims=True)
    return xc / np.sqrt(var + eps) * w + b


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []

    n = 1 << 20
    x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    out = np.empty_like(x)
    run = lambda: add_kernel[(tritonpu.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, backend="cpu")  # noqa: E731
    ref = np.empty_like(x)
    rows.append(("vector add 2^20", _median(run, args.runs), _median(lambda: np.add(x, y, out=ref), args.runs),
                 np.abs(out - (x + y)).max(), 2.0))

    R, C = 4096, 1024
    xs = rng.standard_normal((R, C), np.float32)
    os_ = np.empty_like(xs)
    run = lambda: softmax_kernel[(R,)](xs, os_, C, BLOCK=1024, backend="cpu")  # noqa: E731

    def np_softmax():
        e = np.exp(xs - xs.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    rows.append(("softmax 4096x1024", _median(run, args.runs), _median(np_softmax, args.runs),
                 np.abs(os_ - np_softmax()).max(), 2.0))

    w, bb = rng.standard_normal(C, np.float32), rng.standard_normal(C, np.float32)
    ol = np.empty_like(xs)
    run = lambda: layernorm_kernel[(R,)](xs, w, bb, ol, C, 1e-5, BLOCK=1024, backend="cpu")  # noqa: E731
    rows.append(("layernorm 4096x1024", _median(run, args.runs),
                 _median(lambda: _layernorm_np(xs, w, bb, np.float32(1e-5)), args.runs),
                 np.abs(ol - _layernorm_np(xs, w, bb, np.float32(1e-5))).max(), 2.0))

    M = N = K = 512
    a, b = rng.standard_normal((M, K), np.float32), rng.standard_normal((K, N), np.float32)
    c = np.empty((M, N), np.float32)
    run = lambda: matmul_kernel[(M // 64, N // 64)](a, b, c, M, N, K, BM=64, BN=64, BK=32,  # noqa: E731
                                                      backend="cpu")
    rows.append(("matmul 512^3 fp32", _median(run, args.runs), _median(lambda: a @ b, args.runs),
                 np.abs(c - a @ b).max(), 10.0))

    print(f"{'kernel':<22}{'cpu ms':>10}{'numpy ms':>10}{'ratio':>8}{'aim':>6}{'max err':>11}")
    ok = 0
    for name, tc, tn, err, aim in rows:
        ratio = tc / tn
        ok += ratio <= aim
        print(f"{name:<22}{tc * 1e3:>10.3f}{tn * 1e3:>10.3f}{ratio:>7.2f}x{aim:>5.0f}x{err:>11.2e}")
    print(f"summary: {ok}/{len(rows)} kernels within their aim (median of {args.runs} runs, compile excluded)")


if __name__ == "__main__":
    main()
