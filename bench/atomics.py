"""Atomics as the 910B does them (atomic-accumulate DMA transfers): simulated cycles of atomic
kernels against their non-atomic counterparts.

    python bench/atomics.py            # all figures (a few minutes: the split-K matmul is 1024x1024x8192)
    python bench/atomics.py --quick    # smaller shapes

Cycle figures are deterministic; the ratios are what the issue's goals are stated in.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import tritonpu  # noqa: E402
import tritonpu.language as tl  # noqa: E402


@tritonpu.jit
def tile_atomic_add(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + offs)
    tl.atomic_add(acc_ptr + offs, x, mask=offs < n)


@tritonpu.jit
def tile_store(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + offs)
    tl.store(acc_ptr + tl.program_id(0) * BLOCK + offs, x, mask=offs < n)


@tritonpu.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
           SPLIT: tl.constexpr):
    """C = A @ B; with SPLIT > 1, program (m, n, s) multiplies the s-th K slice and atomically adds
    its fp32 partial tile into C (split-K)."""
    pid_m, pid_n, pid_k = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    k_per = K // SPLIT
    for k in range(pid_k * k_per, (pid_k + 1) * k_per, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    c_ptrs = c_ptr + rm[:, None] * N + rn[None, :]
    if SPLIT == 1:
        tl.store(c_ptrs, acc)
    else:
        tl.atomic_add(c_ptrs, acc)


@tritonpu.jit
def embedding_fwd(idx_ptr, w_ptr, out_ptr, D: tl.constexpr, ROWS: tl.constexpr):
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    idx = tl.load(idx_ptr + r)
    cols = tl.arange(0, D)
    tl.store(out_ptr + r[:, None] * D + cols[None, :], tl.load(w_ptr + idx[:, None] * D + cols[None, :]))


@tritonpu.jit
def embedding_bwd(idx_ptr, grad_ptr, dw_ptr, D: tl.constexpr, ROWS: tl.constexpr):
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    idx = tl.load(idx_ptr + r)
    cols = tl.arange(0, D)
    g = tl.load(grad_ptr + r[:, None] * D + cols[None, :])
    tl.atomic_add(dw_ptr + idx[:, None] * D + cols[None, :], g)


def _cycles(kernel, grid, *args, **kw):
    return kernel[grid](*args, **kw).stats.cycles


def tile_figures():
    x = np.ones(64 * 1024, np.float32)
    acc = np.zeros(1024, np.float32)
    atomic = _cycles(tile_atomic_add, (64,), x, acc, 1024, BLOCK=1024)
    assert np.all(acc == 64)
    store = _cycles(tile_store, (64,), x, np.zeros(64 * 1024, np.float32), 1024, BLOCK=1024)
    print(f"block atomic_add of a 1024-float tile, 64 programs: {atomic} cycles; the same tiles stored: {store} "
          f"({atomic / store:.2f}x)")


def splitk_figures(M, N, K, split):
    rng = np.random.default_rng(0)
    a = (rng.random((M, K)) - 0.5).astype(np.float16)
    b = (rng.random((K, N)) - 0.5).astype(np.float16)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    out = {}
    for s in (1, split):
        c = np.zeros((M, N), np.float32)
        out[s] = _cycles(matmul, (M // 128, N // 128, s), a, b, c, M, N, K, BM=128, BN=128, BK=64, SPLIT=s)
        assert np.allclose(c, ref, rtol=1e-3, atol=1e-2)
    print(f"matmul {M}x{N}x{K} fp16, 128x128x64 tiles: {out[1]} cycles; split-K {split} with atomic fp32 partials: "
          f"{out[split]} ({out[split] / out[1]:.2f}x)")


def embedding_figures(V, D, T):
    rng = np.random.default_rng(1)
    idx = rng.integers(0, V, T).astype(np.int32)
    w = rng.standard_normal((V, D)).astype(np.float32)
    out = np.zeros((T, D), np.float32)
    fwd = _cycles(embedding_fwd, (T // 32,), idx, w, out, D=D, ROWS=32)
    dw = np.zeros((V, D), np.float32)
    bwd = _cycles(embedding_bwd, (T // 32,), idx, out, dw, D=D, ROWS=32)
    expect = np.zeros((V, D), np.float32)
    np.add.at(expect, idx, out)
    assert np.allclose(dw, expect, rtol=1e-5, atol=1e-5)
    print(f"embedding {T} tokens x {D} of a {V}-row table: forward gather {fwd} cycles; backward row "
          f"scatter-add {bwd} ({bwd / fwd:.2f}x)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller shapes")
    args = ap.parse_args()
    tile_figures()
    if args.quick:
        splitk_figures(256, 256, 2048, 4)
    else:
        splitk_figures(1024, 1024, 8192, 4)
        splitk_figures(256, 256, 8192, 4)
    embedding_figures(1000, 128, 2048)


if __name__ == "__main__":
    main()
