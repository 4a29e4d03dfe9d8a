"""Autotune sweeps on the in-process, process-pool and Ray executors: the same choice and the same
timings wherever the trials ran; arrays shipped once, summaries (not arrays) back; trials on
copies of the caller's data; a kernel from a script's ``__main__`` on a pool."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tritonpu
from tritonpu.errors import LaunchError
from tritonpu.runtime import executors

sys.path.insert(0, os.path.dirname(__file__))
import tune_kernels as tk  # noqa: E402

MM_CONFIGS = [tritonpu.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k})
              for m, n, k in ((32, 32, 32), (64, 32, 32), (32, 64, 64), (64, 64, 32), (128, 128, 32))]


def _matmul_sweep(executor, workers=2):
    rng = np.random.default_rng(1)
    M, N, K = 128, 96, 64
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    kern = tritonpu.autotune(configs=MM_CONFIGS, key=["M", "N", "K"], executor=executor, workers=workers)(tk.matmul)
    kern[tk.matmul_grid(M, N)](a, b, c, M, N, K, K, N, N, GROUP_M=4, sanitize=False)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), atol=1e-2, rtol=1e-2)
    timings = {tuple(sorted(cfg.kwargs.items())): cyc for cfg, cyc in kern.configs_timings.items()}
    return kern, timings


@pytest.fixture(scope="module")
def inprocess_sweep():
    return _matmul_sweep("inprocess")


def test_process_pool_gives_the_choice_and_every_timing_of_the_in_process_sweep(inprocess_sweep):
    ref, ref_timings = inprocess_sweep
    kern, timings = _matmul_sweep("processes")
    assert kern.result.executor == "processes" and ref.result.executor == "inprocess"
    assert 0 < kern.result.seconds and 0 < ref.result.seconds      # the sweep's own wall time
    assert len(timings) == len(MM_CONFIGS) and timings == ref_timings
    assert kern.best_config.kwargs == ref.best_config.kwargs
    assert [r.as_dict() for r in kern.report] == [r.as_dict() for r in ref.report]


def test_ray_gives_the_choice_and_every_timing_of_the_in_process_sweep(inprocess_sweep):
    pytest.importorskip("ray")
    ref, ref_timings = inprocess_sweep
    kern, timings = _matmul_sweep("ray")
    assert kern.result.executor == "ray"
    assert timings == ref_timings and kern.best_config.kwargs == ref.best_config.kwargs


def test_trials_run_on_copies_and_the_callers_arrays_see_only_the_final_launch():
    n = 5000
    x = np.random.default_rng(0).random(n).astype(np.float32)
    out = np.ones(n, np.float32)
    configs = [tritonpu.Config({"BLOCK": b}) for b in (256, 512, 1024, 2048, 4096)]
    kern = tritonpu.autotune(configs=configs, key=["n"], executor="processes", workers=2)(tk.accumulate)
    kern[lambda meta: (tritonpu.cdiv(n, meta["BLOCK"]),)](x, out, n)
    np.testing.assert_array_equal(out, 1 + x)            # added once: trials worked on copies
    assert {c.kwargs["BLOCK"] for c in kern.configs_timings} == {256, 512, 1024, 2048, 4096}


def test_a_bfloat16_argument_goes_to_the_pool_with_its_dtype():
    """The shared-memory layout sends the dtype itself: bfloat16's ``dtype.str`` is '<V2', which
    the workers read back as raw bytes (the trial then refused the argument)."""
    import ml_dtypes
    n = 1000
    x = np.random.default_rng(0).random(n).astype(ml_dtypes.bfloat16)
    out = np.ones(n, ml_dtypes.bfloat16)
    configs = [tritonpu.Config({"BLOCK": b}) for b in (64, 128, 256, 512, 1024)]
    kern = tritonpu.autotune(configs=configs, key=["n"], executor="processes", workers=2)(tk.accumulate)
    kern[lambda meta: (tritonpu.cdiv(n, meta["BLOCK"]),)](x, out, n)
    np.testing.assert_array_equal(out, (np.float32(1) + x.astype(np.float32)).astype(ml_dtypes.bfloat16))
    assert len(kern.configs_timings) == 5 and kern.result.executor == "processes"


def test_a_trial_returns_a_summary_not_arrays():
    n = 1000
    x = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    sweep = executors.prepare(tk.accumulate, (x, out, n), {}, lambda m: (tritonpu.cdiv(n, m["BLOCK"]),),
                              [tritonpu.Config({"BLOCK": 256})])
    assert len(sweep.arrays) == 2 and sweep.arrays[0] is not x       # shipped once, as copies
    r = executors.run_trial(sweep.specs[0], sweep.arrays)
    assert r["cycles"] > 0 and r["error"] is None and r["bound_pipe"]
    assert not any(isinstance(v, np.ndarray) for v in r.values())
    assert (sweep.arrays[1] == 0).all()                                 # the shipped arrays stay as sent


def test_ray_missing_is_an_error_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(LaunchError, match=r"pip install 'tritonpu\[ray\]'"):
        executors.get("ray")


def test_executor_from_the_environment_and_unknown_names(monkeypatch):
    monkeypatch.setenv("TRITONPU_EXECUTOR", "processes")
    monkeypatch.setenv("TRITONPU_WORKERS", "2")
    ex = executors.get(None)
    assert ex.name == "processes" and ex.workers == 2
    monkeypatch.delenv("TRITONPU_EXECUTOR")
    assert executors.get(None, n_configs=2).name == "inprocess"        # a handful: in-process
    with pytest.raises(LaunchError, match="unknown executor"):
        executors.get("threads")


def test_a_kernel_defined_in_a_scripts_main_runs_on_the_pool_and_the_script_runs_once(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        import tritonpu
        import tritonpu.language as tl

        @tritonpu.autotune(configs=[tritonpu.Config({"BLOCK": b}) for b in (128, 256, 512, 1024, 2048)],
                           key=["n"], executor="processes", workers=2)
        @tritonpu.jit
        def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

        n = 3000
        x = np.arange(n, dtype=np.float32)
        out = np.zeros(n, np.float32)
        scale[lambda meta: (tritonpu.cdiv(n, meta["BLOCK"]),)](x, out, n)
        assert (out == 2 * x).all()
        print("LAUNCHED", scale.result.executor, len(scale.configs_timings))
    """))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TRITONPU_PROGRESS": "0"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.count("LAUNCHED") == 1 and "LAUNCHED processes 5" in r.stdout


class _FakeRay:
    """Ray's calls the executor makes, run at once: an actor method returns its result's ref."""

    def __init__(self):
        self.in_flight, self.most, self.ran = set(), 0, []     # ran: (actor, spec key) in order

    def put(self, arrays):
        return "ref"

    def wait(self, pending, num_returns):
        return pending[:1], pending[1:]

    def get(self, ref):
        self.in_flight.discard(ref)
        return {"trial": ref}

    def actor(self, i):
        fake = self

        class Method:
            def remote(self, spec, ref, mode):
                fake.ran.append((i, spec.key))
                ref = len(fake.ran)
                fake.in_flight.add(ref)
                fake.most = max(fake.most, len(fake.in_flight))
                return ref

        return type("Actor", (), {"trial": Method()})()


def _fake_ray_executor(monkeypatch, workers):
    fake = _FakeRay()
    monkeypatch.setattr(executors.Ray, "_actors", [])
    monkeypatch.setattr(executors.Ray, "_keys", [])
    monkeypatch.setattr(executors.Ray, "_actor_class",
                        type("ActorClass", (), {"remote": lambda self: fake.actor(len(executors.Ray._actors))})())
    ex = object.__new__(executors.Ray)
    ex.ray, ex.workers = fake, workers
    return fake, ex


def _specs(keys):
    return [executors.TrialSpec(i, "k", key, "", (1, 1, 1), {}, []) for i, key in enumerate(keys)]


def test_ray_runs_at_most_workers_trials_at_once(monkeypatch):
    # the local runtime is started with every CPU once per process; `workers` bounds the trials
    # in flight (a first sweep with 1 worker left later 2-worker sweeps on one CPU)
    fake, ex = _fake_ray_executor(monkeypatch, 2)
    sweep = type("Sweep", (), {"arrays": ()})()
    out = list(ex.run(sweep, _specs("abcdefg")))
    assert len(out) == 7 and fake.most == 2 and len(executors.Ray._actors) == 2


def test_ray_sends_a_trial_to_the_actor_that_compiled_its_kernel(monkeypatch):
    fake, ex = _fake_ray_executor(monkeypatch, 2)
    sweep = type("Sweep", (), {"arrays": ()})()
    list(ex.run(sweep, _specs("abcd")))
    first = dict((key, actor) for actor, key in fake.ran)
    fake.ran.clear()
    list(ex.run(sweep, _specs("dcba")))                  # the same kernels again, another order
    assert dict((key, actor) for actor, key in fake.ran) == first
    fake.ran.clear()
    ex.workers = 1                                       # fewer workers: the first actor, reused
    list(ex.run(sweep, _specs("ab")))
    assert [actor for actor, _ in fake.ran] == [0, 0] and len(executors.Ray._actors) == 2

