"""``tritonpu.autotune``, ``tritonpu.Config`` and ``tritonpu.heuristics`` with Triton's signatures.

The tuner times configs the way an NPU user wants them timed: on the virtual NPU, by simulated
cycles.  The first launch for a new value of the ``key`` arguments runs every config (after
``prune_configs_by``) on copies of the array arguments — the caller's arrays see only the final
run — skips configs that do not compile (a block too big for the chip), keeps the one with the
fewest cycles in ``best_config`` (all figures in ``configs_timings``) and reuses it for that key.
On the ``ref`` and ``cpu`` backends, which have no cycle model, the first config runs.  A sweep
shows a tqdm progress bar on a terminal (the ``progress`` extra; silent otherwise).

Beyond Triton: ``executor=`` (``"inprocess"``, ``"processes"``, ``"ray"``, or ``TRITONPU_EXECUTOR``;
see :mod:`.executors`) and ``workers=`` say where the trials run — the choice and every timing
are the same on each; ``configs="auto"`` derives the configs from the launch and the machine
(:mod:`.config_space`), simulating at most ``max_simulations`` of them.  ``kernel.report`` holds
the last sweep's rows (config, status, cycles, efficiency, bound pipe, why pruned).  With
``cache_results=True``, ``configs="auto"`` or ``TRITONPU_AUTOTUNE_CACHE=1`` the choice per key is
kept on disk (``TRITONPU_AUTOTUNE_CACHE=0``: never; ``=refresh``: sweep again and replace it) and a
later process starts tuned.
"""
from __future__ import annotations

import os

import numpy as np

from tritonpu.errors import CompilationError, LaunchError
from tritonpu.runtime.arrays import as_array


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
                 cache_results=False, executor=None, workers=None, max_simulations=None):
        super().__init__(fn)
        self.auto = isinstance(configs, str)
        if self.auto and configs != "auto":
            raise LaunchError(f"autotune: configs must be a list of Config or \"auto\", got {configs!r}")
        if not configs or self.auto:
            configs = [] if self.auto else [Config({})]
        self.configs = list(configs)
        self.executor, self.workers, self.max_simulations = executor, workers, max_simulations
        self.cache_results = cache_results
        self.report: list = []
        self.result = None
        self.key = list(key)
        self.prune_configs_by = prune_configs_by or {}
        self.reset_to_zero = list(reset_to_zero or [])
        self.hooks = [n for n, h in (("pre_hook", pre_hook), ("post_hook", post_hook)) if h is not None]
        self.best_config = None
        self.configs_timings: dict = {}
        self.cache: dict = {}
        self.from_disk = False          # the last key's config came from disk (no sweep)

    released: tuple = ()        # block values given at launch that `tritonpu tune --kernel` may tune instead

    def _key(self, named: dict) -> tuple:
        out = []
        for k in self.key:
            v = named.get(k)
            if isinstance(v, np.generic):       # a numpy scalar keys by its value, like a Python one
                v = v.item()
            arr = None if isinstance(v, (int, float, bool, str, type(None))) else as_array(v)
            out.append((tuple(arr.shape), str(arr.dtype)) if arr is not None else v)
        return tuple(out)

    def run(self, *args, grid, **kwargs):
        released = {n: kwargs.pop(n) for n in self.released if n in kwargs}
        self._released_values = released
        named = self._named(args, kwargs)
        configs = self.configs
        prune = self.prune_configs_by.get("early_config_prune")
        if prune is not None:
            kept = prune(configs, named, **kwargs)
            if not kept:
                raise LaunchError(f"autotune of `{self.__name__}`: no valid configs after pruning: "
                                  f"early_config_prune returned {kept!r} for {len(configs)} configs; it must "
                                  "return at least one (as in Triton)")
            configs = list(kept)
        configs = self._top_k(configs, named, kwargs)
        for config in configs:
            for k in config.kwargs:
                if k in kwargs:
                    raise LaunchError(f"conflicting meta-parameter `{k}`: given at launch and by the autotuner "
                                      "config")
        key = self._key(named) + tuple(sorted(released.items()))
        config = self.cache.get(key)
        if config is None:
            config = self._tune(configs, args, grid, kwargs, named, key)
            self.cache[key] = config
            if (len(configs) > 1 or self.auto) and not self.from_disk:
                # as Triton does after a sweep (on every backend, whether or not it simulated one):
                # the reset_to_zero arguments start this launch at zero
                for name in self.reset_to_zero:
                    arr = as_array(named.get(name))
                    if arr is not None:
                        arr[...] = 0
        self.best_config = config
        if config.pre_hook is not None:
            config.pre_hook({**named, **config.all_kwargs()})
        handle = self.fn.run(*args, grid=grid, **kwargs, **config.all_kwargs())
        if self.hooks and getattr(handle, "notes", None) is not None:
            handle.notes.append(f"autotune {' and '.join(self.hooks)} not called: each config ran on fresh copies "
                                "of the arguments (reset_to_zero= zeroes its copies), so nothing needs resetting or "
                                "restoring; this launch of the chosen config ran on your arrays")
        return handle

    def _top_k(self, configs, named, kwargs):
        """Triton's ``prune_configs_by={"perf_model": f, "top_k": k}``: the ``k`` configs (an int, or a
        fraction of the list) that ``f(**arguments, **launch keywords, **config)`` estimates fastest."""
        model = self.prune_configs_by.get("perf_model")
        if model is None:
            return configs
        top_k = self.prune_configs_by.get("top_k", 10)
        if isinstance(top_k, float) and top_k <= 1.0:
            top_k = int(len(self.configs) * top_k)
        elif not isinstance(top_k, int):
            raise LaunchError(f"autotune: top_k must be an int or a fraction <= 1.0, got {top_k!r}")
        if len(configs) <= top_k:
            return configs
        estimate = {i: model(**{**named, **kwargs, **c.all_kwargs()}) for i, c in enumerate(configs)}
        bad = next((i for i, e in estimate.items()
                    if isinstance(e, bool) or not isinstance(e, (int, float, np.number))), None)
        if bad is not None:
            raise LaunchError(f"autotune of `{self.__name__}`: perf_model returned {estimate[bad]!r} for config "
                              f"{configs[bad]}; it must return a number (an estimated time) for every config")
        return [configs[i] for i in sorted(estimate, key=estimate.get)[:max(top_k, 1)]]

    def _tune(self, configs, args, grid, kwargs, named, key=()):
        self.from_disk = False
        from tritonpu.runtime import tuner
        from tritonpu.runtime.jit import DEFAULT_BACKEND
        backend = kwargs.get("backend") or os.environ.get("TRITONPU_BACKEND") or DEFAULT_BACKEND
        if backend != "npu" and self.auto:
            return self._fallback(args, grid, kwargs)
        if (len(configs) == 1 and not self.auto) or backend != "npu":
            return configs[0]
        disk = self._disk_key(key, configs, kwargs)
        if disk is not None and os.environ.get("TRITONPU_AUTOTUNE_CACHE", "").strip() != "refresh":
            entry = tuner.load_best(disk)
            config = self._from_disk(entry, configs) if entry else None
            if config is not None:              # tuned by an earlier process
                self.from_disk = True
                self.result, self.report, self.configs_timings = None, [], {}
                from tritonpu.runtime import hooks
                hooks.tuned(self, key, None, cached=entry)
                return config
        if self.auto:
            result = tuner.search_auto(self.fn, args, kwargs, grid, self.reset_to_zero, self.executor, self.workers,
                                       self.max_simulations, self.__name__, self._released_values)
        else:
            result = tuner.sweep_list(self.fn, configs, args, kwargs, grid, self.reset_to_zero, self.executor,
                                      self.workers, self.__name__)
        self.result, self.report = result, result.rows
        self.configs_timings = result.timings
        if disk is not None:
            tuner.store_best(disk, result, self.__name__)
        from tritonpu.runtime import hooks
        hooks.tuned(self, key, result)
        return result.best

    def _disk_key(self, key, configs, kwargs):
        flag = os.environ.get("TRITONPU_AUTOTUNE_CACHE", "").strip()
        if flag in ("0", "false", "no") or not (self.cache_results or self.auto or flag):
            return None
        from tritonpu.runtime import tuner
        space = "auto" if self.auto else repr([sorted(c.all_kwargs().items()) for c in configs])
        launch = {k: repr(v) for k, v in kwargs.items() if as_array(v) is None or isinstance(v, (int, float))}
        try:
            return tuner.disk_key(self.fn, repr(key), space, launch)
        except CompilationError:        # no source to hash: nothing kept on disk
            return None

    def _from_disk(self, entry, configs):
        c = entry["config"]
        if self.auto:
            return Config(c["kwargs"], num_warps=c.get("num_warps", 4), num_stages=c.get("num_stages", 2),
                          num_ctas=c.get("num_ctas", 1))
        for config in configs:
            if config.kwargs == c["kwargs"] and config.num_warps == c.get("num_warps") \
                    and config.num_stages == c.get("num_stages"):
                return config
        return None

    def _fallback(self, args, grid, kwargs):
        """``configs="auto"`` off the NPU (no cycles to compare): the middle candidate of each block."""
        from tritonpu.runtime import config_space, executors
        jit, _ = executors.jit_of(self.fn)
        tuned, _, _ = config_space.space(jit, args, kwargs, grid, 24)
        return Config({p.name: p.values[0 if p.role == "order" else (len(p.values) - 1) // 2] for p in tuned})


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
             post_hook=None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None, cache_results=False,
             executor=None, workers=None, max_simulations=None):
    """Triton's ``autotune``; ``configs="auto"``, ``executor=``, ``workers=`` and ``max_simulations=``
    are tritonpu's (see the module doc)."""
    def decorator(fn):
        return Autotuner(fn, configs, key, prune_configs_by, reset_to_zero, restore_value, pre_hook, post_hook,
                         warmup, rep, use_cuda_graph, do_bench, cache_results, executor, workers, max_simulations)
    return decorator


def heuristics(values: dict):
    def decorator(fn):
        return Heuristics(fn, values)
    return decorator
