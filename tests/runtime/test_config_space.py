"""configs="auto": which constexprs are block sizes, their candidates, pruning that never drops a
config that compiles, and a search whose choice matches the exhaustive one."""
import os
import sys

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.codegen.pipeline import compile_npu
from tritonpu.errors import CompilationError, LaunchError
from tritonpu.runtime import config_space as cs
from tritonpu.runtime import executors, tuner

sys.path.insert(0, os.path.dirname(__file__))
import tune_kernels as tk  # noqa: E402


def _params(jit, args, kwargs):
    return {p.name: p for p in cs.block_params(jit, args, kwargs)}


def test_block_parameters_their_roles_and_extents():
    a = np.zeros((200, 96), np.float16)
    b = np.zeros((96, 80), np.float16)
    c = np.zeros((200, 80), np.float32)
    p = _params(tk.matmul, (a, b, c, 200, 80, 96, 96, 80, 80), {"GROUP_M": 8})
    assert set(p) == {"BLOCK_M", "BLOCK_N", "BLOCK_K"}                  # GROUP_M is given, not an extent
    assert (p["BLOCK_M"].role, p["BLOCK_M"].extent) == ("grid", 200)
    assert (p["BLOCK_N"].role, p["BLOCK_N"].extent) == ("grid", 80)
    assert (p["BLOCK_K"].role, p["BLOCK_K"].extent) == ("loop", 96)
    assert p["BLOCK_M"].values == [16, 32, 64, 128, 256]                # powers of two up to 200's
    assert p["BLOCK_N"].values == [16, 32, 64, 80, 128]                 # ... and multiples of 16 dividing it
    assert p["BLOCK_K"].values == [16, 32, 48, 64, 96, 128]
    x = np.zeros((4, 1000), np.float32)
    s = _params(tk.row_softmax, (x, x, 1000), {})
    assert s["BLOCK"].role == "cover" and s["BLOCK"].values == [1000, 1024]
    r = _params(tk.row_sum, (x, x, 1000), {"D": 16})
    assert set(r) == {"BLOCK"} and r["BLOCK"].role == "loop" and r["BLOCK"].extent == 1000


def test_a_grid_block_with_a_fixed_grid_is_not_tuned_and_the_error_says_why():
    x = np.zeros(4096, np.float32)
    kern = tritonpu.autotune(configs="auto", key=["n"])(tk.accumulate)
    with pytest.raises(LaunchError, match="BLOCK.*grid is fixed"):
        kern[(4,)](x, x, 4096)


@tritonpu.jit
def block_sum(x_ptr, out_ptr, n, m, BLOCK: tl.constexpr, INNER: tl.constexpr):
    acc = tl.zeros([INNER], dtype=tl.float32)
    for start in range(0, n, INNER):
        acc += tl.load(x_ptr + start + tl.arange(0, INNER), mask=start + tl.arange(0, INNER) < n, other=0.0)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < m, other=0.0)
    tl.store(out_ptr + tl.program_id(0), tl.sum(v * v, axis=0) + tl.sum(acc, axis=0))


def test_footprint_pruning_never_drops_a_config_that_compiles():
    n, m = 100_000, 20_000
    x = np.ones(n, np.float32)
    out = np.zeros(1, np.float32)
    res = tuner.search_auto(block_sum, (x, out, n, m), {}, (1,), max_simulations=2, executor="inprocess")
    pruned = [r for r in res.rows if r.status == "pruned"]
    assert pruned, "the sweep should have met configs that do not fit"
    dominated = [r for r in pruned if r.reason.startswith("no smaller")]
    compiled = [r for r in pruned if not r.reason.startswith("no smaller")]
    assert compiled and all(cs.is_resource_error(r.reason) for r in compiled)
    sample = dominated[:3] + compiled[:2]
    for r in sample:                   # full compilation agrees: each of them does not compile
        sweep = executors.prepare(block_sum, (x, out, n, m), {}, (1,), [r.config])
        spec = sweep.specs[0]
        with pytest.raises(CompilationError):
            compile_npu(spec.ir, {**spec.options, "scalars": {"n": n, "m": m}})
    assert res.best.kwargs["BLOCK"] >= m


def _matmul_args(M, N, K):
    """tk.matmul's arguments for an M x N x K fp16 product into fp32."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    return (a, b, np.zeros((M, N), np.float32), M, N, K, K, N, N)


def test_auto_finds_the_exhaustive_best_and_only_skips_what_its_bound_rules_out():
    M, N, K = 96, 64, 64
    args = _matmul_args(M, N, K)
    kw = {"GROUP_M": 4, "sanitize": False}
    grid = tk.matmul_grid(M, N)
    full = tuner.search_auto(tk.matmul, args, kw, grid, max_simulations=10_000, executor="inprocess")
    assert full.strategy == "exhaustive"
    cyc = {tuple(sorted(r.config.kwargs.items())): r.cycles for r in full.rows if r.cycles}
    lean = tuner.search_auto(tk.matmul, args, kw, grid, max_simulations=4, executor="inprocess")
    assert lean.strategy == "bound" and lean.simulations <= 4
    best = min(cyc.values())
    got = cyc[tuple(sorted(lean.best.kwargs.items()))]
    assert got <= best * 1.03
    for r in lean.rows:               # the lower bound of every probed config holds
        k = tuple(sorted(r.config.kwargs.items()))
        if r.bound is not None and k in cyc:
            assert r.bound <= cyc[k], (r.config, r.bound, cyc[k])


def test_an_auto_tuned_launch_is_right_and_the_next_process_starts_tuned(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITONPU_CACHE_DIR", str(tmp_path))
    x = np.random.default_rng(0).random((8, 300)).astype(np.float32)
    out = np.zeros_like(x)
    kern = tritonpu.autotune(configs="auto", key=["n_cols"], executor="inprocess")(tk.row_softmax)
    kern[(8,)](out, x, 300)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    assert kern.best_config.kwargs["BLOCK"] in (300, 512) and kern.configs_timings
    again = tritonpu.autotune(configs="auto", key=["n_cols"], executor="inprocess")(tk.row_softmax)
    seen = []
    from tritonpu.runtime import hooks
    listener = lambda t, key, result, cached: seen.append((result, cached))  # noqa: E731
    hooks.add_tune_listener(listener)
    try:
        again[(8,)](out, x, 300)
    finally:
        hooks.remove_tune_listener(listener)
    assert seen and seen[0][0] is None and seen[0][1]["config"]["kwargs"] == kern.best_config.kwargs
    assert again.configs_timings == {} and again.best_config.kwargs == kern.best_config.kwargs


def test_work_a_core_does_once_for_several_programs_is_not_counted_per_program():
    """weighted_rows' f(w) does not depend on the program: a core's program loop does it once for
    several programs.  Program 0 alone does it, so rounds × program 0 over-counts; the bound must
    still hold and the search must still find the config that wins (BLOCK 2048, one block per row:
    13612 cycles, the others >= 23523 -- the old bound ranked it last and left it unsimulated)."""
    rows, cols = 192, 2048
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    w = rng.standard_normal(cols).astype(np.float32)
    args = (x, w, np.zeros_like(x), cols)
    lean = tuner.search_auto(tk.weighted_rows, args, {"sanitize": False}, (rows,), max_simulations=2,
                             executor="inprocess")
    assert lean.strategy == "bound" and lean.simulations <= 2
    assert lean.best.kwargs == {"BLOCK": 2048}
    rows_by_block = {r.config.kwargs["BLOCK"]: r for r in lean.rows}
    for block in (512, 2048):
        sweep = executors.prepare(tk.weighted_rows, args, {"sanitize": False}, (rows,), [tritonpu.Config({"BLOCK": block})])
        full = executors.run_trial(sweep.specs[0], sweep.arrays, "simulate", sweep.kernels)
        assert rows_by_block[block].bound <= full["cycles"], (block, rows_by_block[block].bound, full["cycles"])


def test_a_program_order_parameter_is_tuned_on_the_best_blocks_within_the_budget():
    """GROUP_M is no extent, but it decides which program runs which block: left out of the launch,
    it is tuned -- the block search runs at GROUP_M 8, then the best blocks at the other values, in
    the simulations kept back for them (before, the launch was refused: GROUP_M could not be tuned)."""
    M, N, K = 96, 64, 64
    args = _matmul_args(M, N, K)
    p = _params(tk.matmul, args, {})
    assert p["GROUP_M"].role == "order" and sorted(p["GROUP_M"].values) == [1, 2, 4, 8]
    assert {p[n].role for n in ("BLOCK_M", "BLOCK_N", "BLOCK_K")} <= {"grid", "loop"}
    res = tuner.search_auto(tk.matmul, args, {"sanitize": False}, tk.matmul_grid(M, N), max_simulations=8,
                            executor="inprocess")
    assert res.simulations <= 8
    ran = [r for r in res.rows if r.cycles is not None]
    blocks = {k: v for k, v in res.best.kwargs.items() if k != "GROUP_M"}
    groups = sorted(r.config.kwargs["GROUP_M"] for r in ran
                    if {k: v for k, v in r.config.kwargs.items() if k != "GROUP_M"} == blocks)
    assert groups == [1, 2, 8]                        # 2 of the 8 simulations kept back: GROUP_M 1, then 2
    assert all(r.config.kwargs["GROUP_M"] == 8 for r in ran if r not in ran[-2:])
    assert res.timings[res.best] == min(r.cycles for r in ran)
    kern = tritonpu.autotune(configs="auto", key=["M"], executor="inprocess", max_simulations=4)(tk.matmul)
    kern[tk.matmul_grid(M, N)](*args, sanitize=False)
    a, b, c = args[:3]
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=1e-2)
    assert "GROUP_M" in kern.best_config.kwargs


def test_the_estimate_counts_what_later_programs_take_not_less_for_their_ddr_reads():
    """A probe's later programs (q = 3 on one core) took 22000 cycles more than program 0 for
    16000 cycles of cube work: the 6000 are their fixed cost (accumulator drain, first tiles).  Their
    DDR reads overlapped the cube, so the probe's all-bytes-from-DDR saving (26000 more than program
    0's) must not be subtracted -- it left pipe work alone, and a panel config whose later
    programs reuse an operand ranked ahead of a faster cube-bound one (2048^3: 112011 against
    103534 cycles, the faster left unsimulated)."""
    probe = {"cycles": 25000, "ddr_saving": 23000, "pipe_work": {"cube": 8000, "mte2": 9500},
             "core": {"programs": 3, "cycles": 47000, "ddr_saving": 49000,
                      "pipe_work": {"cube": 24000, "mte2": 19000}}}
    # warm program 0: max(9500 of MTE2 work, 25000 - 23000); each of the 10 later rounds: 22000 / 2
    assert cs.estimate(probe, 256, 24) == 9500 + 10 * 11000
    # later programs that take less than their pipe work (a slice of the probe overlapped): the work
    probe["core"]["cycles"] = 35000
    assert cs.estimate(probe, 256, 24) == 9500 + 10 * 8000
    # without a core probe: every round takes program 0's warm time
    del probe["core"]
    assert cs.estimate(probe, 256, 24) == 11 * 9500
