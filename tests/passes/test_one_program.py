"""One program per core (passes/one_program.py): a launch whose grid has no more programs than cores
runs its program loop at most once per core, so that loop carries no flags to a next trip; the
decision is a guard on the grid and the core count, and the bits never change."""
from __future__ import annotations

import os
import sys

import numpy as np

import tritonpu
import tritonpu.language as tl

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from cube import plain_matmul  # noqa: E402


def _launch(M, N, K, cores, **opts):
    rng = np.random.default_rng(M + N + K)
    a = (rng.random((M, K)) - 0.5).astype(np.float32)
    b = (rng.random((K, N)) - 0.5).astype(np.float32)
    c = np.full((M, N), 7, np.float32)
    h = plain_matmul[((M // 64) * (N // 64),)](a, b, c, K, N=N, BM=64, BN=64, BK=32, cores=cores, sanitize=True,
                                               **opts)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)
    return c, h


def test_one_program_per_core_carries_nothing_over():
    """16 programs on 24 cores: the program loop gets ``one_trip``, the emitted program no
    loop-carried pair of it (no flag set before the loop and drained after it), the same bits, and
    fewer cycles (measured 1279 -> 1256: the pairs' sets, waits and drains ordered nothing)."""
    c, h = _launch(256, 256, 64, cores=24)
    off, h_off = _launch(256, 256, 64, cores=24, disable_passes=("one-program",))
    assert "one_trip = true" in h.asm["one-program"]
    assert c.tobytes() == off.tobytes()
    assert _around_the_loop(h) == []
    assert len(_around_the_loop(h_off)) == 24       # 12 pairs set before the loop, 12 drains after
    assert h.stats.cycles < h_off.stats.cycles


def _around_the_loop(h) -> list:
    """The flag instructions before the program's first loop and after its last."""
    isa = h.asm["isa"].splitlines()
    first = next(i for i, ln in enumerate(isa) if ln.startswith("for "))
    last = max(i for i, ln in enumerate(isa) if ln.startswith("endfor"))
    return [ln for ln in isa[:first] + isa[last:] if "_flag" in ln]


def test_more_programs_than_cores_keep_the_carried_flags():
    c, h = _launch(256, 256, 64, cores=3)
    assert "one_trip" not in h.asm["one-program"]


def test_the_decision_is_a_guard():
    """The same kernel and shapes on 24 cores, then 3, then 24: each launch takes the compile its
    core count decides (16 programs on 3 cores run several per core: a loop that carried nothing
    would still be right, but slower -- what the guard protects is the flags the loop needs)."""
    for cores, applied in ((24, True), (3, False), (24, True), (16, True), (15, False)):
        c, h = _launch(256, 256, 64, cores=cores)
        assert ("one_trip = true" in h.asm["one-program"]) == applied, cores


@tritonpu.jit
def rows_sum(x_ptr, o_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0) * tl.num_programs(1) + tl.program_id(1)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(o_ptr + row, tl.sum(acc, axis=0))


def test_a_2d_grid_counts_all_its_programs():
    """A (4, 2) grid is 8 programs: on 8 cores one each, on 7 cores not."""
    x = np.random.default_rng(1).random((8, 1000)).astype(np.float32)
    for cores, applied in ((8, True), (7, False)):
        o = np.zeros(8, np.float32)
        h = rows_sum[(4, 2)](x, o, 1000, BLOCK=256, cores=cores, sanitize=True)
        assert ("one_trip = true" in h.asm["one-program"]) == applied
        np.testing.assert_allclose(o, x.sum(axis=1), rtol=1e-5)


def test_a_persistent_program_does_not_wait_for_its_own_end():
    """A persistent kernel's launch runs one program per core, so its code runs once on a core
    (codegen/pipeline.py marks it ``one_trip``): the first loads before its program loop (the
    pipelined loop's prologue) wait for no flag -- before, the first waited for MTE1's reads of
    its L1 slot at the program's own end, a trip that never came.  (With ``one-program`` off, so
    the program loop carries its flags: 16 programs of one K step each on 24 cores.)"""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((512, 64)).astype(np.float16), rng.standard_normal((64, 512)).astype(np.float16))
    c = np.zeros((512, 512), np.float32)
    h = plain_matmul[(16,)](a, b, c, 64, N=512, BM=128, BN=128, BK=64, cores=24, sanitize=True,
                            disable_passes=("one-program",))
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
    isa = [ln.strip() for ln in h.asm["isa"].splitlines()]
    first = next(i for i, ln in enumerate(isa) if ln.startswith("for "))
    assert [ln for ln in isa[:first] if ln.startswith("mov.gm.")]
    assert not [ln for ln in isa[:first] if ln.startswith("wait_flag")]
