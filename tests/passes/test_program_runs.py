"""Which programs a core runs in a row (passes/program_runs.py, chosen by panel reuse)."""
import re

import numpy as np

import tritonpu
import tritonpu.language as tl
from tritonpu.passes.program_runs import shares


def _runs(programs, cores):
    """Each core's programs in contiguous runs, the first ``programs % cores`` cores one more."""
    q, r = divmod(programs, cores)
    out, at = [], 0
    for c in range(cores):
        n = q + (c < r)
        out.append(list(range(at, at + n)))
        at += n
    return out


def test_shares_counts_the_programs_that_share_a_tag_with_the_one_their_core_ran_before():
    programs, cores, num_pid_n = 256, 24, 16
    pid = np.arange(programs)
    a_tag = (pid // num_pid_n)[:, None]          # pid_m: the rows of A a program reads
    b_tag = (pid % num_pid_n)[:, None]           # pid_n: the columns of B
    robin = sum(any((t[p] == t[p + cores]).all() for t in (a_tag, b_tag)) for p in range(programs - cores))
    runs = sum(any((t[x] == t[y]).all() for t in (a_tag, b_tag))
               for run in _runs(programs, cores) for x, y in zip(run, run[1:]))
    assert robin == 0 and runs > 200
    assert shares([a_tag, b_tag], programs, cores) == (robin, runs)


def test_a_tag_of_no_values_is_shared_by_every_program():
    # a load whose address does not depend on the program: every core's next program shares it
    assert shares([np.zeros((100, 0), np.int64)], 100, 24) == (76, 100 - 24)


@tritonpu.jit
def _mm_2d_grid(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                ATOMIC: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    if ATOMIC:
        tl.atomic_add(c_ptr + rm[:, None] * N + rn[None, :], acc)
    else:
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def _launch(atomic, cores=None):
    M, N, K, B = 512, 256, 128, 32
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    h = _mm_2d_grid[(M // B, N // B)](a, b, c, M, N, K, BM=B, BN=B, BK=B, ATOMIC=atomic, cores=cores)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
    return h, (M // B) * (N // B), B * K * 2


def test_a_grid_whose_round_robin_shares_nothing_runs_in_contiguous_runs_and_reuses_b():
    """Grid (16, 8) on 24 cores: under round robin a core's next program is 24 ahead -- another
    row block and another column block, nothing to keep in L1.  In runs of 5 or 6 programs (x
    fastest) a core's programs share B's column block: B's tiles come from GM once per run of
    equal pid_n, A's once per program."""
    h, programs, tile = _launch(False)
    assert re.search(r"%program = add %\w+, %\w+ : i32 loc\S*\n\s*set_program %program", h.asm["cleanup"])
    b_loads = sum(len({p // 16 for p in run}) for run in _runs(programs, 24))
    assert h.stats.bytes_by_path["gm->l1"] == programs * tile + b_loads * tile, h.stats.bytes_by_path


def test_programs_that_may_see_each_other_keep_round_robin():
    """An atomic update (or a load of what the kernel writes) may let one program see another's
    work: the order the grid gives is kept."""
    h, programs, tile = _launch(True)
    assert "set_program %pid" in h.asm["cleanup"] and "%program" not in h.asm["cleanup"]


def test_each_launch_runs_the_order_its_own_values_choose():
    """The choice is a guard of the compile that took it: on 4 cores round robin's next program
    (4 ahead, the same row of the grid) shares B, so that launch compiles again and keeps round
    robin; a launch on the 24 cores again reuses the first compile."""
    h24, _, _ = _launch(False)
    h4, _, _ = _launch(False, cores=4)
    again, _, _ = _launch(False)
    assert "%program" in h24.asm["cleanup"] and "%program" in again.asm["cleanup"]
    assert "set_program %pid" in h4.asm["cleanup"] and "%program" not in h4.asm["cleanup"]
    arts = [a for arts in _mm_2d_grid.backend_artifacts.values() for a in arts] if hasattr(
        _mm_2d_grid, "backend_artifacts") else None
    assert arts is None or len(arts) >= 2


@tritonpu.jit
def _mm_tril(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # tril(A) @ B: the K loop of row block m runs m + 1 blocks -- programs do unequal work
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BN)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, (pid_m + 1) * BM, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        a = tl.where(rm[:, None] >= (k + rk)[None, :], a, 0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a.to(tl.float16), b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def test_programs_of_unequal_work_keep_round_robin_and_no_panel_that_would_never_hit():
    """Runs would share B far more often here, but they put a row block's programs -- equal K loops
    -- on one core, and the cores would end unevenly (measured at 512x1024x512: 9337 -> 15685
    cycles): a K loop whose trip count depends on the program keeps round robin.  There no
    program shares B with its core's previous one (24 ahead: another column block), so no panel
    either: its versions only cost (11534 cycles against 9337 without)."""
    M, N, B = 256, 1024, 64
    rng = np.random.default_rng(4)
    a = rng.standard_normal((M, M)).astype(np.float16)
    b = rng.standard_normal((M, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    h = _mm_tril[((M // B) * (N // B),)](a, b, c, M, N, M, BM=B, BN=B, BK=32)
    ref = np.tril(a.astype(np.float32)) @ b.astype(np.float32)
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-2)
    assert "panel_fill" not in h.asm["panel-reuse"] and "%program" not in h.asm["cleanup"]
    off = np.zeros_like(c)
    h_off = _mm_tril[((M // B) * (N // B),)](a, b, off, M, N, M, BM=B, BN=B, BK=32,
                                             disable_passes=("panel-reuse",))
    assert off.tobytes() == c.tobytes() and h.stats.cycles == h_off.stats.cycles
