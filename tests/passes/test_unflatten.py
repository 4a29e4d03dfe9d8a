"""A flat loop whose counter cycles through a period as two loops (passes/unflatten.py): Triton's
persistent matmul (tutorial 09 of Triton 3.0, triton-ascend's sample)."""
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.ir import parse_function
from tritonpu.passes import PassManager

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from cube import persistent_matmul  # noqa: E402  (the tutorial's kernel)


@tritonpu.jit
def _nested_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                   GROUP_SIZE_M: tl.constexpr, NUM_SMS: tl.constexpr):
    # the persistent matmul written as two loops, by hand
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    tiles_per_SM = num_tiles // NUM_SMS
    if start_pid < num_tiles % NUM_SMS:
        tiles_per_SM += 1
    tile_id = start_pid - NUM_SMS
    offs_k_for_mask = tl.arange(0, BLOCK_SIZE_K)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for _t in range(0, tiles_per_SM):
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
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(0, k_tiles):
            offs_k = ki * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
            a = tl.load(a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak),
                        mask=offs_k_for_mask[None, :] < K - ki * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn),
                        mask=offs_k_for_mask[:, None] < K - ki * BLOCK_SIZE_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator)
        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :], accumulator.to(tl.float16),
                 mask=c_mask)


def _launch(M, N, K, bm, bn, bk, sms, kernel=persistent_matmul, **kw):
    rng = np.random.default_rng(M * 7 + N * 3 + K)
    a = (rng.random((M, K)) - 0.5).astype(np.float16)
    b = (rng.random((K, N)) - 0.5).astype(np.float16)
    c = np.full((M, N), 7.0, np.float16)
    h = kernel[(sms,)](a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
                       BLOCK_SIZE_K=bk, GROUP_SIZE_M=2, NUM_SMS=sms, **kw)
    return a, b, c, h


@pytest.mark.parametrize("M,N,K,bm,bn,bk,sms", [
    (256, 256, 256, 64, 64, 32, 24),      # 16 tiles on 24 programs: 8 own none
    (200, 136, 100, 64, 64, 32, 5),       # ragged: tiles wrap their offsets, K's last step masked
    (128, 192, 64, 32, 64, 64, 4),        # one K step per tile
    (96, 64, 160, 32, 32, 32, 3),         # 6 tiles on 3 programs, five K steps each
])
def test_the_persistent_matmul_computes_what_it_does_written_as_two_loops(M, N, K, bm, bn, bk, sms):
    """Right, and bitwise what the kernel written as two loops by hand gives (the flat loop's UB
    accumulator, without the pass, adds each K step's product: the same within rounding)."""
    a, b, c, h = _launch(M, N, K, bm, bn, bk, sms)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), ref, atol=2e-2, rtol=1e-2)
    _, _, nested, _ = _launch(M, N, K, bm, bn, bk, sms, kernel=_nested_matmul)
    assert c.tobytes() == nested.tobytes()
    _, _, flat, h_flat = _launch(M, N, K, bm, bn, bk, sms, disable_passes=("unflatten",))
    np.testing.assert_allclose(c.astype(np.float32), flat.astype(np.float32), atol=2e-3, rtol=2e-3)
    # two loops: the tile's first step before the inner loop, its store after it; no counter left
    ir = h.asm["unflatten"]
    inner = ir[ir.index("= for", ir.index("= for") + 1):]
    inner = inner[:inner.index("yield")]
    assert " if " not in inner and "select" not in inner, inner
    assert ir.count("= for") == 2 and "store" in ir[ir.index("yield", ir.index("dot")):]
    assert h.stats.cycles < h_flat.stats.cycles


def test_at_128x256_the_accumulator_lives_in_l0c_and_it_compiles():
    """Carried through the flat loop, the 128x256 fp32 accumulator was a UB tile stored from inside
    the loop and did not fit; two loops keep it in L0C, as the tutorial's own kernel does."""
    a, b, c, h = _launch(256, 512, 128, 128, 256, 64, 4)
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), atol=2e-2, rtol=1e-2)
    with pytest.raises(tritonpu.CompilationError, match="Unified Buffer"):
        _launch(256, 512, 128, 128, 256, 64, 4, disable_passes=("unflatten",))


@tritonpu.jit
def _counter_read_after(X, Out, n_tiles, STEPS: tl.constexpr, B: tl.constexpr):
    # the counter's last value is stored after the loop: the loop stays flat
    k = -1
    acc = tl.zeros([B], dtype=tl.float32)
    for _ in range(0, STEPS * n_tiles):
        k = tl.where(k == STEPS - 1, 0, k + 1)
        acc += tl.load(X + k * B + tl.arange(0, B))
    tl.store(Out + tl.arange(0, B), acc)
    tl.store(Out + B, k.to(tl.float32))


@tritonpu.jit
def _counter_only(X, Out, n_tiles, STEPS: tl.constexpr, B: tl.constexpr):
    k = -1
    acc = tl.zeros([B], dtype=tl.float32)
    for _ in range(0, STEPS * n_tiles):
        k = tl.where(k == STEPS - 1, 0, k + 1)
        acc += tl.load(X + k * B + tl.arange(0, B))
    tl.store(Out + tl.arange(0, B), acc)


def test_a_counter_read_after_the_loop_keeps_it_flat_and_a_plain_one_splits_it():
    x = np.arange(3 * 32, dtype=np.float32)
    ref = 4 * x.reshape(3, 32).sum(0)
    out = np.zeros(33, np.float32)
    h = _counter_read_after[(1,)](x, out, 4, STEPS=3, B=32)
    np.testing.assert_array_equal(out, np.append(ref, 2.0))
    assert h.asm["unflatten"].count("= for") == 1
    out = np.zeros(32, np.float32)
    h = _counter_only[(1,)](x, out, 4, STEPS=3, B=32)
    np.testing.assert_array_equal(out, ref)
    ir = h.asm["unflatten"]
    assert ir.count("= for") == 2 and "select" not in ir, ir
    out0 = np.zeros(32, np.float32)
    _counter_only[(1,)](x, out0, 0, STEPS=3, B=32)              # no tile: no trip
    np.testing.assert_array_equal(out0, np.zeros(32, np.float32))


def test_without_the_launch_values_the_loop_stays_flat():
    """``C >= 1`` is decided from the launch's arguments (a guard); ``tritonpu opt`` on IR text
    has none, and the pass leaves the loop alone."""
    x = np.arange(3 * 32, dtype=np.float32)
    h = _counter_only[(1,)](x, np.zeros(32, np.float32), 4, STEPS=3, B=32)
    fn = parse_function(h.asm["ir"])
    PassManager(["canonicalize", "unflatten"]).run(fn)
    assert str(fn).count("= for") == 1


def test_a_launch_at_another_shape_asks_the_guard_again():
    """The guard "k_tiles >= 1" keeps copies of the ops it reads: a later pass gave one of the
    function's ops an equal constant from elsewhere, and the next launch at another shape, asking
    the guard, failed with an internal KeyError (before session 35)."""
    for M, N, K in [(300, 500, 200), (256, 256, 64), (64, 64, 0)]:
        rng = np.random.default_rng(M)
        a = (rng.random((M, K)) - 0.5).astype(np.float16)
        b = (rng.random((K, N)) - 0.5).astype(np.float16)
        c = np.full((M, N), 7, np.float16)
        h = persistent_matmul[(3,)](a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64,
                                    BLOCK_SIZE_K=32, GROUP_SIZE_M=8, NUM_SMS=3, cores=3,
                                    disable_passes=("grid-stride",))
        # (K = 0: the flat loop runs no trip, as in Triton: nothing is stored)
        want = a.astype(np.float32) @ b.astype(np.float32) if K else np.full((M, N), 7, np.float32)
        np.testing.assert_allclose(c.astype(np.float32), want, rtol=2e-2, atol=2e-2)
        loops = [ln for ln in h.asm["unflatten"].splitlines() if re.search(r"(^|= )for ", ln.strip())]
        assert len(loops) == (2 if K > 0 else 1)       # K = 0: no K step, the loop stays flat
