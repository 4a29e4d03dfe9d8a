"""Loads through Triton's wrapped offsets ``(c + arange) % m`` whose wrapped lanes no store reads
(``passes/lanes.py``) are tiles up to the wrap, padded past it -- one form whether the block wraps
or not; any other use of those lanes keeps the exact gather.  Results are checked against numpy
(the wrapped reads emulated) and, for the padded form, bit for bit against the same kernel
compiled with the gather."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.passes import memory_analysis
from tritonpu.testing import filecheck
from tpu_util import cube_product

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from cube import tutorial_matmul as tutorial  # noqa: E402  (Triton's tutorial as published)


def _elements(x):
    return tuple(s // x.itemsize for s in x.strides)


def _tutorial(a, b, bm, bn, bk, kernel=tutorial, **launch):
    M, K = a.shape
    N = b.shape[1]
    c = np.full((M, N), -7, np.float16)
    grid = (tritonpu.cdiv(M, bm) * tritonpu.cdiv(N, bn),)
    h = kernel[grid](a, b, c, M, N, K, *_elements(a), *_elements(b), *_elements(c),
                       BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=4, **launch)
    return c, h


def _operands(M, N, K, seed=0):
    rng = np.random.default_rng(seed)
    return ((rng.random((M, K)) - 0.5).astype(np.float16), (rng.random((K, N)) - 0.5).astype(np.float16))


def _reference(a, b):
    return cube_product(a, b).astype(np.float16)


def _executed(mnemonic: str, h) -> int:
    """How many instructions starting with ``mnemonic`` a traced launch ran."""
    return sum(1 for e in h.stats.trace_events
               if e.get("ph") == "X" and e["args"].get("text", "").lstrip().startswith(mnemonic))


def test_the_tutorials_wrapped_loads_are_tiles_padded_past_the_wrap():
    a, b = _operands(100, 72, 48)
    c, h = _tutorial(a, b, 64, 64, 32)
    np.testing.assert_allclose(c.astype(np.float32), _reference(a, b).astype(np.float32), atol=2e-3, rtol=2e-3)
    # per load: `if c >= 0 and c + BM - 1 does not overflow { the tile up to the wrap, padded } else
    # { gather }` -- one form whether the block wraps or not
    filecheck(h.asm["memory-analysis"], """
CHECK: , %M : i32
CHECK: {pred = "ge"} : i1
CHECK: {pred = "le"} : i1
CHECK: = sub %M, %
CHECK: = if %
CHECK-NEXT: = load_tile %
CHECK: } {
CHECK: = gather_rows %
CHECK: , %N : i32
CHECK: = sub %N, %
CHECK: = if %
CHECK-NEXT: = load_tile %
CHECK: } {
CHECK: = gather_cols %
CHECK-NOT: load_tile
CHECK: store_tile
""")


@pytest.mark.parametrize("M,N,K,bm,bn,bk,a_cm,b_cm", [
    (100, 72, 48, 64, 64, 32, False, False),
    (200, 300, 160, 128, 256, 64, False, False),
    (130, 250, 96, 128, 128, 64, True, False),
    (33, 65, 40, 32, 64, 32, False, True),
    (20, 50, 64, 64, 32, 32, True, True),
])
def test_padded_wrapped_lanes_give_the_gathers_bits(monkeypatch, M, N, K, bm, bn, bk, a_cm, b_cm):
    """Row- or column-major operands, blocks larger than the matrix: the same bits as the exact
    gather of the wrapped offsets, and every unstored element untouched."""
    a, b = _operands(M, N, K, seed=M + N)
    if a_cm:
        a = np.asfortranarray(a)
    if b_cm:
        b = np.asfortranarray(b)
    c, h = _tutorial(a, b, bm, bn, bk, trace=True)
    monkeypatch.setattr(memory_analysis, "wrapped_lanes_unread", lambda *args: False)
    exact, h_exact = _tutorial(a, b, bm, bn, bk, kernel=tritonpu.jit(tutorial.fn), trace=True)
    np.testing.assert_array_equal(c, exact)
    np.testing.assert_allclose(c.astype(np.float32), _reference(a, b).astype(np.float32), atol=2e-3, rtol=2e-3)
    assert _executed("gather", h) == 0 and _executed("gather", h_exact) > 0
    assert h.stats.cycles < h_exact.stats.cycles


@tritonpu.jit
def wrapped_copy(x_ptr, out_ptr, n, bound, R: tl.constexpr, B: tl.constexpr, MODE: tl.constexpr):
    """out[r, pid*B + i] = x[r, (pid*B + i) % n] (row stride n), stored under a mask that depends on
    MODE; the wrapped lanes reach the store in every mode but the first."""
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    rows = tl.arange(0, R)
    v = tl.load(x_ptr + rows[:, None] * n + (offs % n)[None, :])
    o = out_ptr + rows[:, None] * (tl.num_programs(0) * B) + offs[None, :]
    if MODE == 0:       # the bound of the wrap: lanes past it are never stored
        tl.store(o, v * 2, mask=offs[None, :] < n)
    elif MODE == 1:     # no mask: the wrapped lanes are stored
        tl.store(o, v * 2)
    elif MODE == 2:     # another bound
        tl.store(o, v * 2, mask=offs[None, :] < bound)
    else:               # a sum across the wrapped lanes, stored per row
        tl.store(out_ptr + rows * (tl.num_programs(0) * B) + pid, tl.sum(v, axis=1))


def _copied(v, offs, n, B, mode):
    """What ``wrapped_copy`` / ``clamped_copy`` leave in ``out`` (-7 where nothing is stored), the
    lanes read being ``v`` (rows x every program's offsets)."""
    want = np.full(v.shape, -7, np.float32)
    if mode == 0:
        want[:, offs < n] = 2 * v[:, offs < n]
    elif mode == 1:
        want[:] = 2 * v
    elif mode == 2:
        want[:, offs < n - 3] = 2 * v[:, offs < n - 3]
    else:
        for p in range(len(offs) // B):
            want[:, p] = v[:, p * B:(p + 1) * B].sum(axis=1)
    return want


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_wrapped_lanes_that_reach_memory_are_read_exactly(mode):
    R, B, n = 8, 32, 40
    grid = 3                                    # programs 1 and 2 wrap (offsets 32..95 % 40)
    rng = np.random.default_rng(mode)
    x = rng.standard_normal((R, n)).astype(np.float32)
    out = np.full((R, grid * B), -7, np.float32)
    h = wrapped_copy[(grid,)](x, out, n, n - 3, R=R, B=B, MODE=mode)
    offs = np.arange(grid * B)
    np.testing.assert_allclose(out, _copied(x[:, offs % n], offs, n, B, mode), rtol=1e-6, atol=1e-6)
    ma = h.asm["memory-analysis"]
    # the padded tile's valid extent is n - c % n
    padded = any(f"= sub %n, {r} :" in ma for r in re.findall(r"(%\d+) = rem %\w+, %n : i32", ma))
    assert ma.count("load_tile") == 1 and padded == (mode == 0), ma


@tritonpu.jit
def wrapped_k(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BK: tl.constexpr):
    """The K offsets wrap (`% K`): lanes the dot reduces over, never padded -- even under a store
    mask that bounds the same expression along the product's columns."""
    pid = tl.program_id(0)
    rm = tl.arange(0, BM)
    x = pid * BK + tl.arange(0, BK)
    rk = x % K
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BK + tl.arange(0, BK)[None, :])
    acc = tl.dot(a, b)
    tl.store(c_ptr + pid * BM * BK + rm[:, None] * BK + tl.arange(0, BK)[None, :], acc, mask=x[None, :] < K)


def test_wrapped_lanes_a_dot_reduces_over_are_read_exactly():
    BM, BK, K = 16, 16, 24
    rng = np.random.default_rng(5)
    a = (rng.random((BM, K)) - 0.5).astype(np.float16)
    b = (rng.random((K, BK)) - 0.5).astype(np.float16)
    c = np.full((2, BM, BK), -7, np.float32)
    h = wrapped_k[(2,)](a, b, c, K, BM=BM, BK=BK)
    for pid in range(2):
        ks = (pid * BK + np.arange(BK)) % K     # program 1 reads K rows 16..23, then 0..7 again
        want = cube_product(a[:, ks], b[ks, :])
        cols = pid * BK + np.arange(BK) < K
        np.testing.assert_allclose(c[pid][:, cols], want[:, cols], rtol=1e-5, atol=1e-5)
        assert (c[pid][:, ~cols] == -7).all()
    assert h.asm["memory-analysis"].count("load_tile") == 2, h.asm["memory-analysis"]


@tritonpu.jit
def carried(x_ptr, out_ptr, n, NB, B: tl.constexpr, GROW: tl.constexpr):
    """A loaded block carried to the loop's next trip, where the store's `offs < m` has other
    lanes: the blocks are visited last to first (GROW 0), or the modulus grows by one a trip (1)."""
    prev = tl.zeros([B], dtype=tl.float32)
    for k in range(0, NB):
        if GROW:
            offs = tl.arange(0, B)
            m = n + k
        else:
            offs = (NB - 1 - k) * B + tl.arange(0, B)
            m = n
        cur = tl.load(x_ptr + offs % m)
        tl.store(out_ptr + k * B + tl.arange(0, B), prev, mask=offs < m)
        prev = prev * GROW + cur


@pytest.mark.parametrize("grow", [0, 1])
def test_wrapped_lanes_carried_to_another_trip_are_read_exactly(grow):
    """(Found by a probe: the padded lanes of one trip were stored by the next.)"""
    n, NB, B = 20 if grow else 100, 4, 32
    x = np.random.default_rng(3).standard_normal(n + NB).astype(np.float32)
    out = np.full(NB * B, -7, np.float32)
    carried[(1,)](x, out, n, NB, B=B, GROW=grow)
    want, prev = np.full_like(out, -7), np.zeros(B, np.float32)
    for k in range(NB):
        offs, m = (np.arange(B), n + k) if grow else ((NB - 1 - k) * B + np.arange(B), n)
        keep = offs < m
        want[k * B + np.arange(B)[keep]] = prev[keep]
        prev = prev * grow + x[offs % m]
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


@tritonpu.jit
def negative_start(x_ptr, out_ptr, n, shift, B: tl.constexpr):
    """Offsets from -shift: Triton's `%` keeps the dividend's sign, so -n + i is -n + i, not i."""
    offs = -shift + tl.arange(0, B)
    v = tl.load(x_ptr + n + offs % n)
    tl.store(out_ptr + shift + offs, v, mask=offs < n)


@pytest.mark.parametrize("n,B", [(20, 32), (100, 32)])
def test_a_negative_multiple_of_the_modulus_is_no_wrap_around(n, B):
    """(Found by a probe: `c % m == 0` passed for c = -m, with or without the padded form.)"""
    x = np.arange(2 * n + 1, dtype=np.float32)
    out = np.full(B, -7, np.float32)
    negative_start[(1,)](x, out, n, n, B=B)
    offs = -n + np.arange(B)
    want = np.full(B, -7, np.float32)
    keep = offs < n
    want[(n + offs)[keep]] = x[n + np.fmod(offs, n)][keep]
    np.testing.assert_array_equal(out, want)


@tritonpu.jit
def look_alike(x_ptr, out_ptr, idx_ptr, c, n, f, B: tl.constexpr, CASE: tl.constexpr):
    """Store masks that look like the wrap's bound and are not (found by a probe)."""
    pid = tl.program_id(0)
    offs = c + pid * B + tl.arange(0, B)
    if CASE == 0:       # a modulus that is uniform but not a splat: no crash, read exactly
        m = tl.zeros_like(offs) + n
        v = tl.load(x_ptr + offs % m)
        tl.store(out_ptr + pid * B + tl.arange(0, B), v, mask=offs < n)
    elif CASE == 1:     # x differs from the mask's by a constant -0.0 against 0.0 (== says equal)
        ka = (1.0 / (f * 0.0) < 0).to(tl.int32) * 10
        kb = (1.0 / (f * -0.0) < 0).to(tl.int32) * 10
        v = tl.load(x_ptr + (offs + kb) % n)
        tl.store(out_ptr + pid * B + tl.arange(0, B), v, mask=offs + ka < n)
    else:               # c + i wraps around int32: lanes past the wrap have x < n again
        v = tl.load(x_ptr + offs % n)
        tl.store(out_ptr + tl.load(idx_ptr + pid * B + tl.arange(0, B)), v, mask=offs < n)


@pytest.mark.parametrize("case", [0, 1, 2])
def test_wrapped_lanes_under_look_alike_masks_are_read_exactly(case):
    # case 2: lanes 0..6 are 2**31 - 7.. 2**31 - 1 (masked off), lane 7 is -2**31, whose % 8 is 0
    B, P, n, c = (8, 1, 8, 2**31 - 7) if case == 2 else (32, 4, 100, 0)
    x = np.random.default_rng(case).standard_normal(n).astype(np.float32)
    out = np.full(P * B, -7, np.float32)
    look_alike[(P,)](x, out, np.arange(P * B, dtype=np.int32), c, n, 1.0, B=B, CASE=case)
    lanes = (c + np.arange(P * B, dtype=np.int64) + 2**31) % 2**32 - 2**31     # int32 arithmetic
    read = lanes + (10 if case == 1 else 0)
    want = np.where(lanes < n, x[np.fmod(read, n)], np.float32(-7))
    np.testing.assert_array_equal(out, want)


@tritonpu.jit
def clamped_copy(x_ptr, out_ptr, n, bound, R: tl.constexpr, B: tl.constexpr, MODE: tl.constexpr):
    """out[r, pid*B + i] = x[r, where(pid*B + i < n, pid*B + i, 0)] (Triton's persistent-matmul
    clamp), stored under a mask that depends on MODE as in ``wrapped_copy``."""
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    rows = tl.arange(0, R)
    v = tl.load(x_ptr + rows[:, None] * n + tl.where(offs < n, offs, 0)[None, :])
    o = out_ptr + rows[:, None] * (tl.num_programs(0) * B) + offs[None, :]
    if MODE == 0:
        tl.store(o, v * 2, mask=offs[None, :] < n)
    elif MODE == 1:
        tl.store(o, v * 2)
    elif MODE == 2:
        tl.store(o, v * 2, mask=offs[None, :] < bound)
    else:
        tl.store(out_ptr + rows * (tl.num_programs(0) * B) + pid, tl.sum(v, axis=1))


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_clamped_lanes_are_padded_only_where_no_store_reads_them(mode):
    """``tl.where(offs < n, offs, 0)`` offsets are a tile while no lane is clamped (a guard), and a
    tile up to the first clamped lane, padded past it, when no stored byte depends on those lanes
    (mode 0); when one does, the clamped lanes read column 0 exactly (an index-vector gather)."""
    R, B, n = 8, 32, 40
    grid = 3                                    # program 1 clamps lanes 8.., program 2 all of them
    rng = np.random.default_rng(10 + mode)
    x = rng.standard_normal((R, n)).astype(np.float32)
    out = np.full((R, grid * B), -7, np.float32)
    h = clamped_copy[(grid,)](x, out, n, n - 3, R=R, B=B, MODE=mode, trace=True)
    offs = np.arange(grid * B)
    np.testing.assert_allclose(out, _copied(x[:, np.where(offs < n, offs, 0)], offs, n, B, mode), rtol=1e-6, atol=1e-6)
    assert "load_tile" in h.asm["memory-analysis"]
    assert (_executed("gather", h) == 0) == (mode == 0), _executed("gather", h)


@tritonpu.jit
def persistent_clamped(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                       NUM_SMS: tl.constexpr):
    """Triton's persistent matmul tutorial (09), pointer form: its offsets clamped by tl.where."""
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = 8 * num_pid_n
    for tile_id in range(start_pid, num_tiles, NUM_SMS):
        group_id = tile_id // num_pid_in_group
        first_pid_m = group_id * 8
        group_size_m = min(num_pid_m - first_pid_m, 8)
        pid_m = first_pid_m + (tile_id % group_size_m)
        pid_n = (tile_id % num_pid_in_group) // group_size_m
        offs_am = pid_m * BM + tl.arange(0, BM)
        offs_bn = pid_n * BN + tl.arange(0, BN)
        offs_am = tl.where(offs_am < M, offs_am, 0)
        offs_bn = tl.where(offs_bn < N, offs_bn, 0)
        offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BM), BM)
        offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BN), BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in range(tl.cdiv(K, BK)):
            offs_k = ki * BK + tl.arange(0, BK)
            a = tl.load(a_ptr + offs_am[:, None] * K + offs_k[None, :], mask=offs_k[None, :] < K, other=0.0)
            b = tl.load(b_ptr + offs_k[:, None] * N + offs_bn[None, :], mask=offs_k[:, None] < K, other=0.0)
            acc = tl.dot(a, b, acc)
        offs_cm = pid_m * BM + tl.arange(0, BM)
        offs_cn = pid_n * BN + tl.arange(0, BN)
        tl.store(c_ptr + offs_cm[:, None] * N + offs_cn[None, :], acc.to(tl.float16),
                 mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@pytest.mark.parametrize("M,N,K,bm,bn,bk", [(200, 136, 100, 64, 64, 32), (256, 256, 128, 128, 128, 64)])
def test_the_persistent_tutorials_clamped_loads_are_tiles(monkeypatch, M, N, K, bm, bn, bk):
    """Tutorial 09's clamped rows of A and columns of B reach only accumulator lanes its store masks
    out: tiles up to M / N, padded -- the same bits as the exact gather, no gather run (before, the
    clamp made every load a gather: 256x256x128 at 128x128x64 on 4 programs took 6167 cycles
    against 2002 without the clamp)."""
    a, b = _operands(M, N, K, seed=M)
    launch = dict(BM=bm, BN=bn, BK=bk, NUM_SMS=4, trace=True)
    c = np.full((M, N), -7, np.float16)
    h = persistent_clamped[(4,)](a, b, c, M, N, K, **launch)
    monkeypatch.setattr(memory_analysis, "wrapped_lanes_unread", lambda *args: False)
    exact = np.full((M, N), -7, np.float16)
    h_exact = tritonpu.jit(persistent_clamped.fn)[(4,)](a, b, exact, M, N, K, **launch)
    np.testing.assert_array_equal(c, exact)
    np.testing.assert_allclose(c.astype(np.float32), _reference(a, b).astype(np.float32), atol=2e-3, rtol=2e-3)
    assert _executed("gather", h) == 0 and (M % bm == 0 or _executed("gather", h_exact) > 0)
