"""``tritonpu.autotune``, ``tritonpu.Config`` and ``tritonpu.heuristics`` with Triton's signatures.

Until the tuner lands, an autotuned kernel runs its first config (after ``prune_configs_by``), and
records the choice in ``best_config``.
"""
from __future__ import annotations

from tritonpu.errors import LaunchError


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
        return dict(self.kwargs, num_warps=self.num_warps, num_stages=self.num_stages, num_ctas=self.num_ctas)

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
        self.best_config = None

    def run(self, *args, grid, **kwargs):
        named = self._named(args, kwargs)
        configs = self.configs
        prune = self.prune_configs_by.get("early_config_prune")
        if prune is not None:
            configs = list(prune(configs, named, **kwargs)) or configs
        config = configs[0]
        for k in config.kwargs:
            if k in kwargs:
                raise LaunchError(f"conflicting meta-parameter `{k}`: given at launch and by the autotuner config")
        self.best_config = config
        if config.pre_hook is not None:
            config.pre_hook({**named, **config.all_kwargs()})
        return self.fn.run(*args, grid=grid, **kwargs, **config.all_kwargs())


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
