"""The autotuner on the NPU: configs timed by simulated cycles, trials on copies of the arrays,
configs that do not fit the chip skipped, one choice per key."""
import numpy as np
import pytest

import tritonpu as triton
import tritonpu.language as tl

CONFIGS = [triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 2048}), triton.Config({"BLOCK": 65536})]


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def accumulate(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=m) + tl.load(x_ptr + offs, mask=m), mask=m)


def test_tuner_picks_the_config_with_fewest_cycles_and_runs_the_kernel_once_on_the_real_arrays():
    n = 20000
    x = np.random.default_rng(0).random(n).astype(np.float32)
    out = np.ones(n, np.float32)
    accumulate[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    timings = accumulate.configs_timings
    assert len(timings) == 3 and accumulate.best_config is min(timings, key=timings.get)
    assert accumulate.best_config.kwargs["BLOCK"] == 2048
    np.testing.assert_array_equal(out, 1 + x)       # trial runs worked on copies: added once
    # the same key reuses the choice without timing again
    accumulate.configs_timings = {}
    accumulate[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    assert accumulate.configs_timings == {}
    np.testing.assert_array_equal(out, (1 + x) + x)


@triton.autotune(configs=[triton.Config({"BLOCK": 1 << 17}), triton.Config({"BLOCK": 1024})], key=["n"])
@triton.jit
def row_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


def test_configs_that_do_not_fit_the_chip_are_skipped():
    x = np.arange(1000, dtype=np.float32)
    out = np.zeros(1, np.float32)
    row_sum[(1,)](x, out, 1000)
    assert row_sum.best_config.kwargs["BLOCK"] == 1024 and len(row_sum.configs_timings) == 1
    assert out[0] == x.sum()


def test_on_the_reference_backend_the_first_config_runs():
    n = 100
    x = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)

    @triton.autotune(configs=CONFIGS, key=["n"])
    @triton.jit
    def acc2(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
    acc2[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n, backend="ref")
    assert acc2.best_config is CONFIGS[0] and acc2.configs_timings == {}
    np.testing.assert_array_equal(out, x)


def test_perf_model_and_top_k_keep_the_configs_the_model_ranks_fastest():
    # Triton's prune_configs_by={"perf_model": f, "top_k": k}: only the k best estimates are simulated
    seen = []

    def model(**kw):
        seen.append((kw["n"], kw["BLOCK"], kw["num_warps"]))
        return {64: 3.0, 256: 1.0, 1024: 2.0, 2048: 9.0}[kw["BLOCK"]]      # says 256, then 1024

    @triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (64, 256, 1024, 2048)], key=["n"],
                     prune_configs_by={"perf_model": model, "top_k": 2})
    @triton.jit
    def copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    n = 5000
    x, out = np.arange(n, dtype=np.float32), np.zeros(n, np.float32)
    copy[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    assert sorted(c.kwargs["BLOCK"] for c in copy.configs_timings) == [256, 1024]
    assert sorted(seen) == [(n, 64, 4), (n, 256, 4), (n, 1024, 4), (n, 2048, 4)]
    np.testing.assert_array_equal(out, x)


def test_autotune_hooks_are_noted_not_silently_dropped():
    calls = []

    @triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"],
                     pre_hook=lambda args, reset_only=False: calls.append("pre"),
                     post_hook=lambda args, exception: calls.append("post"))
    @triton.jit
    def inc(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

    x = np.zeros(300, np.float32)
    h = inc[lambda meta: (triton.cdiv(300, meta["BLOCK"]),)](x, 300)
    assert (x == 1).all() and calls == []
    assert "autotune pre_hook and post_hook not called: each config ran on fresh copies of the arguments " \
           "(reset_to_zero= zeroes its copies), so nothing needs resetting or restoring; this launch of the " \
           "chosen config ran on your arrays" in h.notes


def _pruned_to_fit(configs, nargs, **kw):
    return [c for c in configs if c.kwargs["BLOCK"] >= nargs["n"]]


@triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 1024})], key=["n"],
                 prune_configs_by={"early_config_prune": _pruned_to_fit})
@triton.jit
def one_block_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


@pytest.mark.parametrize("backend", ["npu", "ref"])
def test_a_numpy_scalar_key_keys_by_its_value(backend):
    """n = np.int64(100) then np.int64(1000): the second launch is a new key (the prune keeps
    BLOCK 1024 only), not the first one's BLOCK 128 summing 128 of the 1000 elements."""
    one_block_sum.cache.clear()
    for n in (np.int64(100), np.int64(1000)):
        x, out = np.ones(int(n), np.float32), np.zeros(1, np.float32)
        one_block_sum[(1,)](x, out, n, backend=backend)
        assert out[0] == n
    assert one_block_sum.best_config.kwargs["BLOCK"] == 1024


@pytest.mark.parametrize("backend", ["npu", "ref"])
def test_a_prune_that_keeps_no_config_is_an_error(backend):
    one_block_sum.cache.clear()
    x, out = np.ones(5000, np.float32), np.zeros(1, np.float32)
    with pytest.raises(triton.LaunchError, match=r"autotune of `one_block_sum`: no valid configs after pruning: "
                                                 r"early_config_prune returned \[\] for 2 configs"):
        one_block_sum[(1,)](x, out, 5000, backend=backend)
    assert out[0] == 0


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"],
                 reset_to_zero=["acc_ptr"])
@triton.jit
def total(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(acc_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


@pytest.mark.parametrize("backend", ["npu", "cpu", "ref"])
def test_reset_to_zero_zeroes_the_arguments_before_the_tuning_launch_runs(backend):
    """As Triton after a sweep: the tuning launch starts from zero (64, not 100 + 64); a launch
    with the key already tuned accumulates onto what is there."""
    total.cache.clear()
    x, acc = np.ones(64, np.float32), np.full(1, 100.0, np.float32)
    total[lambda m: (triton.cdiv(64, m["BLOCK"]),)](x, acc, 64, backend=backend)
    assert acc[0] == 64
    total[lambda m: (triton.cdiv(64, m["BLOCK"]),)](x, acc, 64, backend=backend)
    assert acc[0] == 128


def test_a_perf_model_that_returns_no_number_is_an_error():
    kern = triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (64, 128, 256)], key=["n"],
                           prune_configs_by={"perf_model": lambda **kw: None, "top_k": 1})(accumulate.fn)
    x, out = np.ones(300, np.float32), np.zeros(300, np.float32)
    with pytest.raises(triton.LaunchError, match=r"perf_model returned None for config BLOCK: 64, .*; it must "
                                                 r"return a number \(an estimated time\) for every config"):
        kern[lambda meta: (triton.cdiv(300, meta["BLOCK"]),)](x, out, 300)
    assert not out.any()
