"""The cube path at the configurations users write (simulated cycles, deterministic):

    python bench/cube.py [--quick] [--only tutorial,plain,attention,layouts,ragged,persistent,oneblock] [--sizes 1024,2048]

Kernels:
* Triton's matmul tutorial as published (grouped program order, ``% M`` / ``% N`` wrapped
  offsets, ``mask=offs_k < K - k * BLOCK_K``, ``accumulator = tl.dot(a, b, accumulator)``, fp16
  out), fp16 in / fp32 accumulate, at the ten configurations of the tutorial's autotune list
  (its eight fp16 ones and its two fp8 ones), plus 128x128x64;
* a plain blocked matmul (no wrap, no masks, ``acc += tl.dot(a, b)``) at 128x128x64, with double
  buffering on and off;
* FlashAttention forward (``kernels/flash_attention.py``), fp16, 8 heads x 2048 x 128, BLOCK_M 128,
  BLOCK_N 64 and 128; causal at 128x64, with and without the ``balance`` pass (programs of unequal
  work dealt to the cores);
* the tutorial at 128x128x64 with A, B and both stored column-major (``x @ W.T``: the operand is
  loaded as its transpose and transposed on the way to L0), at the first size;
* the tutorial at ragged sizes, M and N 24 less than the first size (the last row and column of
  programs wrap their ``% M`` / ``% N`` offsets around), at 128x128x64 and 128x256x64, A row- and
  column-major;
* Triton's persistent matmul (tutorial 09 of Triton 3.0; triton-ascend's sample is the same loop):
  one program per core, one flat loop over every K step of every tile it owns (a counter cycling
  through the K steps, the tile's offsets computed at its first step and its result stored at its
  last), at 128x128x64 and 128x256x64, as compiled, without the ``unflatten`` pass, and without
  ``grid-stride`` (the tiles a loop of the program's own, not the core's programs);
* a matmul with K in one block (``tl.dot(a, b)``, no K loop), K = 64, fp32 out, at the first size:
  at 128x128 only stored (FIX stores the product from L0C), at 128x256 with a GELU epilogue (done a
  few rows at a time from L0C).

Columns: simulated cycles; the roofline (DESIGN.md section 6) and efficiency = roofline / cycles;
``tile bound``: the fewest cycles the tile shape allows -- the busiest of the cube, MTE2, MTE1
and FIX over the programs the busiest core runs, never under the roofline; MTE2 moves each
program's operand bytes at the L2 rate (on the core that moves the most), less, in each program
that shares an operand with the core's previous one (the kernel's program order tells), as much
of that operand's K panel as fits L1 beside two buffers of each tile (panel reuse; the operand
that saves more when both are shared); nor under the core's first program's operand bytes at the
L2 rate (it shares nothing with an earlier one, and pipes run in order: its last product waits
for all of them) plus the cube cycles of the core's other programs -- and ``of bound`` = tile
bound / cycles;
``overlap``: the busiest pipe's busy cycles on the slowest core / cycles (1.0: that pipe never
idles). Results are checked against numpy. Sanitizer off. ``--quick``: 1024^3 only, attention
at 2 heads. ``--ddr-at-l2-rate``: a what-if, not the preset -- lines read for the first time in a
launch come at the L2 rate too, so what is left of a gap to the tile bound (which counts every
byte at the L2 rate) is not DDR's.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")  # before numpy: the cube's small products, on a busy 2-core machine
    # with BLAS threads, took 10-35x the wall time (cycles are the same either way)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels"))

import flash_attention as fa  # noqa: E402

import tritonpu  # noqa: E402
import tritonpu.language as tl  # noqa: E402
from tritonpu.isa import MACHINES  # noqa: E402

M910 = MACHINES["ascend910b"]

# Triton's tutorial (03-matrix-multiplication): its eight fp16 configs and its two fp8 ones
TUTORIAL_CONFIGS = ((128, 256, 64), (64, 256, 32), (128, 128, 32), (128, 64, 32), (64, 128, 32), (128, 32, 32),
                    (64, 32, 32), (32, 64, 32), (128, 256, 128), (256, 128, 128))
EXTRA_CONFIGS = ((128, 128, 64),)


@tritonpu.jit
def tutorial_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                    GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@tritonpu.jit
def persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                      BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                      GROUP_SIZE_M: tl.constexpr, NUM_SMS: tl.constexpr):
    # Triton 3.0's persistent matmul (tutorial 09), as triton-ascend's sample writes it too: one
    # flat loop over every K step of every tile a program owns, a counter cycling through the K steps
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    tiles_per_SM = num_tiles // NUM_SMS
    if start_pid < num_tiles % NUM_SMS:
        tiles_per_SM += 1
    tile_id = start_pid - NUM_SMS
    ki = -1
    offs_k_for_mask = tl.arange(0, BLOCK_SIZE_K)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    pid_m = 0
    pid_n = 0
    offs_am = tl.arange(0, BLOCK_SIZE_M)
    offs_bn = tl.arange(0, BLOCK_SIZE_N)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for _ in range(0, k_tiles * tiles_per_SM):
        ki = tl.where(ki == k_tiles - 1, 0, ki + 1)
        if ki == 0:
            tile_id += NUM_SMS
            group_id = tile_id // num_pid_in_group
            first_pid_m = group_id * GROUP_SIZE_M
            group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
            pid_m = first_pid_m + (tile_id % group_size_m)
            pid_n = (tile_id % num_pid_in_group) // group_size_m
            offs_am = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_bn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            offs_am = tl.where(offs_am < M, offs_am, 0)
            offs_bn = tl.where(offs_bn < N, offs_bn, 0)
            offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)
            offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N)
        offs_k = ki * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        a = tl.load(a_ptrs, mask=offs_k_for_mask[None, :] < K - ki * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k_for_mask[:, None] < K - ki * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        if ki == k_tiles - 1:
            offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
            c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
            tl.store(c_ptrs, accumulator.to(tl.float16), mask=c_mask)
            accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)


@tritonpu.jit
def plain_matmul(a_ptr, b_ptr, c_ptr, K, N: tl.constexpr,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    pid_m = pid // (N // BN)
    pid_n = pid % (N // BN)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@tritonpu.jit
def one_block_matmul(a_ptr, b_ptr, c_ptr, N: tl.constexpr, K: tl.constexpr,
                     BM: tl.constexpr, BN: tl.constexpr, GELU: tl.constexpr):
    pid = tl.program_id(0)
    rm = pid // (N // BN) * BM + tl.arange(0, BM)
    rn = pid % (N // BN) * BN + tl.arange(0, BN)
    rk = tl.arange(0, K)
    acc = tl.dot(tl.load(a_ptr + rm[:, None] * K + rk[None, :]), tl.load(b_ptr + rk[:, None] * N + rn[None, :]))
    if GELU:
        acc = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def _ceil(a, b):
    return -(-a // b)


def grouped_order(M, N, bm, bn, group=8):
    """The tutorial's program order: program id -> (pid_m, pid_n)."""
    num_m, num_n = _ceil(M, bm), _ceil(N, bn)

    def order(pid):
        first_m = pid // (group * num_n) * group
        size = min(num_m - first_m, group)
        return first_m + (pid % (group * num_n)) % size, (pid % (group * num_n)) // size
    return order


def matmul_tile_bound(M, N, K, bm, bn, bk, es=2, cores=24, roofline=0.0, order=None):
    """The fewest cycles this tile shape allows on the preset (see the module docstring).
    ``order``: program id -> (pid_m, pid_n) (default: row-major, ``pid_n = pid % n``)."""
    k0 = 32 // es
    trips = _ceil(K, bk)
    cube = _ceil(bm, 16) * _ceil(bn, 16) * _ceil(bk, k0) * trips
    a, b = bm * bk * es * trips, bk * bn * es * trips          # one program's operand bytes
    num_n = _ceil(N, bn)
    order = order or (lambda pid: divmod(pid, num_n))
    # a core's next program may find the operand it shares with the previous one (same rows of A,
    # same columns of B) still in L1 as a K panel (panel reuse): as much of it as fits beside two
    # buffers of each operand tile (a panel may hold the first trips only); the panel holds one
    # operand, the one that saves more
    room = M910.capacity["l1"] - 2 * (bm + bn) * bk * es
    programs = _ceil(M, bm) * num_n
    mte2 = first = 0.0
    for core in range(min(cores, programs)):
        loaded, prev = 0, None
        for pid in range(core, programs, cores):
            m, n = order(pid)
            shared = [min(x, room) for x, same in ((a, prev and prev[0] == m), (b, prev and prev[1] == n)) if same]
            loaded += a + b - max(shared, default=0)
            if prev is None:
                # a core's first program shares nothing: its operands (the rows and columns it
                # has) come in at the L2 rate at best before its last product; the cube runs the
                # core's other programs after that one
                rows, cols = min(bm, M - m * bm), min(bn, N - n * bn)
                first = max(first, (rows + cols) * K * es / M910.l2_bytes_per_cycle
                            + (len(range(core, programs, cores)) - 1) * cube)
            prev = (m, n)
        mte2 = max(mte2, loaded / M910.l2_bytes_per_cycle)
    mte1 = (bm * bk * es / M910.paths["l1->l0a"].bytes_per_cycle
            + bk * bn * es / M910.paths["l1->l0b"].bytes_per_cycle) * trips
    fix = bm * bn * 4 / M910.paths["l0c->gm"].bytes_per_cycle
    rounds = _ceil(programs, cores)
    core = max(rounds * cube, mte2, rounds * mte1, rounds * fix, first)
    return max(roofline, core), {"cube": cube, "mte2": mte2, "mte1": mte1, "fix": fix, "first": first}


def overlap(st) -> float:
    """The busiest pipe's busy cycles on the slowest core / cycles."""
    slow = max(range(len(st.core_cycles)), key=lambda i: st.core_cycles[i])
    busy = st.pipe_busy_by_core[slow]
    return max(v for k, v in busy.items() if k != "scalar") / st.cycles if st.cycles else 0.0


HEADER = (f"{'kernel':<50}{'cycles':>10}{'roofline':>10}{'eff':>7}{'tile bound':>12}{'of bound':>10}"
          f"{'overlap':>9}{'wall s':>8}")


def row(label, launch, check, bound=None):
    t0 = time.perf_counter()
    try:
        out, h = launch()
    except Exception as e:  # a config that fails is a finding: report it, go on
        print(f"{label:<50}{'FAILED':>10}  {type(e).__name__}: {str(e).splitlines()[0][:150]}", flush=True)
        return None
    wall = time.perf_counter() - t0
    st = h.stats
    err = check(out)
    b = bound(st) if bound else None
    print(f"{label:<50}{st.cycles:>10}{st.roofline_cycles:>10.0f}{st.efficiency:>7.3f}"
          + (f"{b:>12.0f}{b / st.cycles:>10.3f}" if b else f"{'':>12}{'':>10}")
          + f"{overlap(st):>9.3f}{wall:>8.1f}" + ("" if err is None else f"   WRONG: {err}"), flush=True)
    return None if err is not None else (st, b)


def _close(out, ref, atol, rtol):
    try:
        np.testing.assert_allclose(out.astype(np.float32), ref, atol=atol, rtol=rtol)
        return None
    except AssertionError as e:
        return " ".join(str(e).split())[:150]


def tutorial(n, rng, configs, column_major="", shape=None):
    """The tutorial at each config (``column_major``: which of ``a``/``b`` is stored column-major,
    ``x @ W.T`` with ``W`` row-major: the kernel gets its strides), n^3 or ``shape`` (M, N, K)."""
    M, N, K = shape or (n, n, n)
    a = (rng.random((M, K)) - 0.5).astype(np.float16)
    b = (rng.random((K, N)) - 0.5).astype(np.float16)
    ref = a[:64].astype(np.float32) @ b.astype(np.float32)
    a = np.asfortranarray(a) if "a" in column_major else a
    b = np.asfortranarray(b) if "b" in column_major else b
    strides = [st // 2 for st in a.strides + b.strides]
    suffix = f" {'A' if column_major == 'a' else 'B' if column_major == 'b' else 'A, B'} column-major" \
        if column_major else ""
    size = f"{n}^3" if shape is None else f"{M}x{N}x{K}"
    out = {}
    for bm, bn, bk in configs:
        def launch(bm=bm, bn=bn, bk=bk):
            c = np.empty((M, N), np.float16)
            h = tutorial_matmul[(_ceil(M, bm) * _ceil(N, bn),)](
                a, b, c, M, N, K, *strides, N, 1, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                GROUP_SIZE_M=8, sanitize=False)
            return c, h
        r = row(f"tutorial {size} {bm}x{bn}x{bk}{suffix}", launch, lambda c: _close(c[:64], ref, 2e-2, 1e-2),
                lambda st, bm=bm, bn=bn, bk=bk: matmul_tile_bound(M, N, K, bm, bn, bk, roofline=st.roofline_cycles,
                                                               order=grouped_order(M, N, bm, bn))[0])
        out[(n, bm, bn, bk)] = r
    return out


def plain(n, rng):
    a = (rng.random((n, n)) - 0.5).astype(np.float16)
    b = (rng.random((n, n)) - 0.5).astype(np.float16)
    ref = a[:64].astype(np.float32) @ b.astype(np.float32)
    bm, bn, bk = 128, 128, 64
    res = {}
    for db in (True, False):
        def launch(db=db):
            c = np.empty((n, n), np.float32)
            h = plain_matmul[(n // bm * (n // bn),)](a, b, c, n, N=n, BM=bm, BN=bn, BK=bk, double_buffer=db,
                                                     sanitize=False)
            return c, h
        res[db] = row(f"plain {n}^3 {bm}x{bn}x{bk} double buffer {'on' if db else 'off'}", launch,
                      lambda c: _close(c[:64], ref, 1e-2, 1e-3),
                      lambda st: matmul_tile_bound(n, n, n, bm, bn, bk, roofline=st.roofline_cycles)[0])
    return res


def persistent(n, rng, configs=((128, 128, 64), (128, 256, 64)), cores=24):
    """Triton's persistent matmul (one program per core, a flat loop over its tiles' K steps): as
    compiled, without the ``unflatten`` pass, and without ``grid-stride`` (its tiles then stay a loop
    of its own instead of the core's programs)."""
    a = (rng.random((n, n)) - 0.5).astype(np.float16)
    b = (rng.random((n, n)) - 0.5).astype(np.float16)
    ref = a[:64].astype(np.float32) @ b.astype(np.float32)
    out = {}
    for bm, bn, bk in configs:
        for off in (None, "unflatten", "grid-stride"):
            def launch(bm=bm, bn=bn, bk=bk, off=off):
                c = np.empty((n, n), np.float16)
                h = persistent_matmul[(min(cores, _ceil(n, bm) * _ceil(n, bn)),)](
                    a, b, c, n, n, n, n, 1, n, 1, n, 1, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                    GROUP_SIZE_M=8, NUM_SMS=cores, sanitize=False, disable_passes=(off,) if off else ())
                return c, h
            out[(bm, bn, bk, off)] = row(
                f"persistent {n}^3 {bm}x{bn}x{bk}{f' ({off} off)' if off else ''}", launch,
                lambda c: _close(c[:64], ref, 2e-2, 1e-2),
                lambda st, bm=bm, bn=bn, bk=bk: matmul_tile_bound(n, n, n, bm, bn, bk, roofline=st.roofline_cycles,
                                                               order=grouped_order(n, n, bm, bn))[0])
    return out


def one_block(n, k, rng):
    """K in one block (no K loop), fp32 out: the product stored by FIX, or a GELU epilogue done a few
    rows at a time from L0C."""
    a = (rng.random((n, k)) - 0.5).astype(np.float16)
    b = (rng.random((k, n)) - 0.5).astype(np.float16)
    p = a[:64].astype(np.float64) @ b.astype(np.float64)
    erf = np.vectorize(math.erf)
    res = {}
    for bm, bn, gelu in ((128, 128, False), (128, 256, True)):
        ref = 0.5 * p * (1 + erf(p / math.sqrt(2))) if gelu else p

        def launch(bm=bm, bn=bn, gelu=gelu):
            c = np.empty((n, n), np.float32)
            h = one_block_matmul[(n // bm * (n // bn),)](a, b, c, N=n, K=k, BM=bm, BN=bn, GELU=gelu, sanitize=False)
            return c, h
        res[(bm, bn, gelu)] = row(f"one K block {n}x{n}x{k} {bm}x{bn}{' GELU' if gelu else ''}", launch,
                                  lambda c, ref=ref: _close(c[:64], ref, 1e-3, 1e-3))
    return res


def attention(heads, seq, d, rng, variants):
    """``variants``: (BLOCK_N, causal, balance) each."""
    q, k, v = ((rng.standard_normal((heads, seq, d)) * 0.5).astype(np.float16) for _ in range(3))
    res = {}
    for bn, causal, balance in variants:
        def launch(bn=bn, causal=causal, balance=balance):
            return fa.attention(q, k, v, BLOCK_M=128, BLOCK_N=bn, causal=causal, sanitize=False,
                                disable_passes=() if balance else ("balance",))

        def check(out, causal=causal):
            r = _attn_ref(q[:1, :256], k[:1], v[:1], causal)
            return _close(out[:1, :256], r, 2e-2, 2e-2)
        label = f"{'causal ' if causal else ''}attention {heads}x{seq}x{d} fp16 128x{bn}{'' if balance else ' no balance'}"
        res[bn, causal, balance] = row(label, launch, check)
    return res


def _attn_ref(q, k, v, causal=False):
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    s = q64 @ np.swapaxes(k64, 1, 2) / math.sqrt(q.shape[-1])
    if causal:          # (the first 256 queries against every key)
        s = np.where(np.arange(s.shape[-1])[None, :] <= np.arange(s.shape[-2])[:, None], s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v64


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="1024^3 only; attention at 2 heads")
    ap.add_argument("--only", default="",
                    help="comma-separated subset: tutorial,plain,attention,layouts,ragged,persistent,oneblock")
    ap.add_argument("--sizes", default="", help="matmul sizes, e.g. 1024,2048 (default 1024,2048)")
    ap.add_argument("--configs", default="", help="tutorial configs, e.g. 128x256x64,64x32x32 (default: all)")
    ap.add_argument("--ddr-at-l2-rate", action="store_true",
                    help="what-if, not the preset: first reads of a line at the L2 rate too (how much of a gap is DDR's)")
    args = ap.parse_args(argv)
    if args.ddr_at_l2_rate:
        for m in {id(m): m for m in MACHINES.values()}.values():
            object.__setattr__(m, "ddr_bytes_per_cycle", m.l2_bytes_per_cycle)
    only = set(filter(None, args.only.split(",")))
    sizes = [int(s) for s in args.sizes.split(",") if s] or ([1024] if args.quick else [1024, 2048])
    configs = [tuple(int(x) for x in c.split("x")) for c in args.configs.split(",") if c] or \
        list(TUTORIAL_CONFIGS + EXTRA_CONFIGS)
    rng = np.random.default_rng(0)
    print("sanitize=False; simulated cycles" + ("; WHAT-IF: DDR at the L2 rate (not the preset)"
                                                 if args.ddr_at_l2_rate else ""))
    print(HEADER)
    summary = []
    if not only or "tutorial" in only:
        tut = {}
        for n in sizes:
            tut.update(tutorial(n, rng, configs))
        ten = [v for (n, *c), v in tut.items() if tuple(c) in TUTORIAL_CONFIGS]
        ok = [v for v in ten if v is not None]
        ratios = [b / st.cycles for st, b in ok]
        summary.append(f"tutorial: {len(ok)}/{len(ten)} compile and are correct, ratio to tile bound min "
                       f"{min(ratios, default=0):.3f}")
        for key in ((2048, 128, 256, 64), (2048, 128, 128, 64)):
            if tut.get(key):
                summary.append(f"{key[1]}x{key[2]}x{key[3]} @2048 eff {tut[key][0].efficiency:.3f}")
    if not only or "plain" in only:
        n = sizes[0]
        p = plain(n, rng)
        if p[True] and p[False]:
            summary.append(f"plain {n}^3 eff {p[True][0].efficiency:.3f}, double buffering "
                           f"{p[False][0].cycles / p[True][0].cycles:.2f}x")
    if not only or "attention" in only:
        heads = 2 if args.quick else 8
        at = attention(heads, 2048, 128, rng, ((64, False, True), (128, False, True), (64, True, True),
                                               (64, True, False)))
        for (bn, causal, balance), r in at.items():
            if r and not causal:
                summary.append(f"attention 128x{bn}: {r[0].cycles} cycles, overlap {overlap(r[0]):.3f}")
        on, off = at[64, True, True], at[64, True, False]
        if on and off:
            summary.append(f"causal attention 128x64: {on[0].cycles} cycles ({off[0].cycles} without balance, "
                           f"cores {min(on[0].core_cycles)}-{max(on[0].core_cycles)})")
    if not only or "layouts" in only:
        n = sizes[0]
        for cm in ("a", "b", "ab"):
            r = tutorial(n, rng, [(128, 128, 64)], column_major=cm)[(n, 128, 128, 64)]
            if r:
                summary.append(f"{'A, B' if cm == 'ab' else cm.upper()} column-major: {r[0].cycles} cycles")
    if not only or "ragged" in only:
        n = sizes[0]
        shape = (n - 24, n - 24, n)
        for cm in ("", "a"):
            r = tutorial(n, rng, [(128, 128, 64), (128, 256, 64)], column_major=cm, shape=shape)
            for (_, bm, bn, bk), v in r.items():
                if v:
                    summary.append(f"{shape[0]}x{shape[1]}x{shape[2]} {bm}x{bn}x{bk}{' A column-major' if cm else ''}: "
                                   f"{v[0].cycles} cycles")
    if not only or "persistent" in only:
        for (bm, bn, bk, off), r in persistent(sizes[0], rng).items():
            if r and off is None:
                summary.append(f"persistent {bm}x{bn}x{bk}: {r[0].cycles} cycles")
    if not only or "oneblock" in only:
        n = sizes[0]
        for (bm, bn, gelu), r in one_block(n, 64, rng).items():
            if r:
                summary.append(f"one K block {bm}x{bn}{' GELU' if gelu else ''}: {r[0].cycles} cycles")
    print("summary: " + "; ".join(summary))


if __name__ == "__main__":
    main()
