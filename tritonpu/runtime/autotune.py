"""``tritonpu.autotune``, ``tritonpu.Config`` and ``tritonpu.heuristics`` with Triton's signatures.

The tuner times configs the way an NPU user wants them timed: on the virtual NPU, by simulated
cycles.  The first launch for a new value of the ``key`` arguments runs every config (after
``prune_configs_by``) on copies of the array arguments — the caller's arrays see only the final
run — skips configs that do not compile (a block too big for the chip), keeps the one with the
fewest cycles in ``best_config`` (all figures in ``configs_timings``) and reuses it for that key.
On the ``ref`` and ``cpu`` backends, which have no cycle model, the first config runs.  A sweep
shows a tqdm progress bar on a terminal (the ``progress`` extra; silent otherwise).
"""
from __future__ import annotations

import os

import numpy as np

from tritonpu.errors import CompilationError, LaunchError
from tritonpu.runtime.arrays import as_array, gm_span


class Config:
    def __init__(self, kwargs, num_warps=4, num_stages=2, num_ctas=1, maxnreg=None, pre_hook=None, **extra):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook
        self.extra = extra

    def all_kwargs(self) -> dict:
        from tritonpu.runtime.options import ALL
        extra = {k: v for k, v in self.extra.items() if k in ALL}      # triton-ascend: Config(..., multibuffer=)
        return dict(self.kwargs, **extra, num_warps=self.num_warps, num_stages=self.num_stages,
                    num_ctas=self.num_ctas)

    def __repr__(self):
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"num_warps: {self.num_warps}", f"num_stages: {self.num_stages}", f"num_ctas: {self.num_ctas}"]
        return ", ".join(parts)


class _Wrapped:
    """Common part of Autotuner and Heuristics: forwards to the wrapped kernel."""

    __tritonpu_jit__ = False

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.arg_names = fn.arg_names

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)

    def _named(self, args, kwargs) -> dict:
        named = dict(zip(self.arg_names, args))
        named.update(kwargs)
        return named


class Autotuner(_Wrapped):
    def __init__(self, fn, configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None,
                 pre_hook=None, post_hook=None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None,
                 cache_results=False):
        super().__init__(fn)
        if not configs:
            configs = [Config({})]
        self.configs = list(configs)
        self.key = list(key)
        self.prune_configs_by = prune_configs_by or {}
        self.reset_to_zero = list(reset_to_zero or [])
        self.best_config = None
        self.configs_timings: dict = {}
        self.cache: dict = {}

    def _key(self, named: dict) -> tuple:
        out = []
        for k in self.key:
            v = named.get(k)
            out.append((tuple(v.shape), str(v.dtype)) if isinstance(v, np.ndarray) else v)
        return tuple(out)

    def run(self, *args, grid, **kwargs):
        named = self._named(args, kwargs)
        configs = self.configs
        prune = self.prune_configs_by.get("early_config_prune")
        if prune is not None:
            configs = list(prune(configs, named, **kwargs)) or configs
        for config in configs:
            for k in config.kwargs:
                if k in kwargs:
                    raise LaunchError(f"conflicting meta-parameter `{k}`: given at launch and by the autotuner "
                                      "config")
        key = self._key(named)
        config = self.cache.get(key)
        if config is None:
            config = self._tune(configs, args, grid, kwargs, named)
            self.cache[key] = config
        self.best_config = config
        if config.pre_hook is not None:
            config.pre_hook({**named, **config.all_kwargs()})
        return self.fn.run(*args, grid=grid, **kwargs, **config.all_kwargs())

    def _tune(self, configs, args, grid, kwargs, named):
        from tritonpu.runtime.jit import DEFAULT_BACKEND
        backend = kwargs.get("backend") or os.environ.get("TRITONPU_BACKEND") or DEFAULT_BACKEND
        if len(configs) == 1 or backend != "npu":
            return configs[0]
        from tritonpu.profile.progress import bar
        timings, first_error = {}, None
        for config in bar(configs, total=len(configs), desc=f"autotune {self.__name__}"):
            trial = [_trial_copy(a) for a in args]
            trial_kwargs = {k: _trial_copy(v) for k, v in kwargs.items()}
            for name in self.reset_to_zero:
                if name in self.arg_names[:len(trial)]:
                    trial[self.arg_names.index(name)][...] = 0
            try:
                h = self.fn.run(*trial, grid=grid, **trial_kwargs, **config.all_kwargs())
            except CompilationError as e:        # does not fit the chip: not a candidate
                first_error = first_error or e
                continue
            timings[config] = h.stats.cycles
        if not timings:
            raise first_error
        self.configs_timings = timings
        return min(timings, key=timings.get)


def _trial_copy(value):
    """A copy of an array argument (numpy, torch, ...) for a tuning trial, so trials leave the
    caller's data alone; a strided view is copied with the span it covers, so the kernel's strides
    still address it.  Other values as they are."""
    if isinstance(value, (int, float, bool, str, type(None))):
        return value
    arr = as_array(value)
    return value if arr is None else gm_span(arr, "argument").copy()


class Heuristics(_Wrapped):
    def __init__(self, fn, values: dict):
        super().__init__(fn)
        self.values = values

    def run(self, *args, grid, **kwargs):
        named = self._named(args, kwargs)
        for name, rule in self.values.items():
            kwargs[name] = rule({**named, **kwargs})
            named[name] = kwargs[name]
        return self.fn.run(*args, grid=grid, **kwargs)


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, pre_hook=None,
             post_hook=None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None, cache_results=False):
    def decorator(fn):
        return Autotuner(fn, configs, key, prune_configs_by, reset_to_zero, restore_value, pre_hook, post_hook,
                         warmup, rep, use_cuda_graph, do_bench, cache_results)
    return decorator


def heuristics(values: dict):
    def decorator(fn):
        return Heuristics(fn, values)
    return decorator
