"""The sweeps behind ``tritonpu.autotune``: a given config list, or ``configs="auto"``.

Both return a :class:`Result`: the chosen config, ``timings`` (config -> simulated cycles, the
configs that ran) and ``rows`` — one :class:`Row` per config considered, with its status
(``best``, ``simulated``, ``pruned``, ``not simulated``, ``failed``), cycles, efficiency, the pipe
that bounds it, the lower bound that ranked it and, for the others, why.  The choice is the
config with the fewest cycles, ties going to the earlier config in the list (for ``"auto"``:
the candidate order), so it does not depend on the executor or on the order trials finish in.

Results can be kept on disk (:func:`load_best` / :func:`store_best`, under the kernel cache
folder): one entry per kernel source, autotune key value, config space and ``TRITONPU_*``
settings, so a later process starts tuned.
"""
from __future__ import annotations

import hashlib
import math
import os
import time
from dataclasses import dataclass, field

from tritonpu.errors import CompilationError, LaunchError
from tritonpu.runtime import config_space as cs
from tritonpu.runtime import executors


@dataclass
class Row:
    config: object
    status: str
    cycles: int | None = None
    efficiency: float | None = None
    bound_pipe: str = ""
    bound: float | None = None
    ub_bytes: int | None = None
    reason: str = ""
    where: tuple | None = None          # (file, line, column) of a config's CompilationError

    def as_dict(self) -> dict:
        return {"config": _config_text(self.config), "status": self.status, "cycles": self.cycles,
                "efficiency": None if self.efficiency is None else round(self.efficiency, 4),
                "bound_pipe": self.bound_pipe, "lower_bound": None if self.bound is None else int(self.bound),
                "ub_bytes": self.ub_bytes, "reason": self.reason}


@dataclass
class Result:
    best: object
    timings: dict = field(default_factory=dict)
    rows: list = field(default_factory=list)
    simulations: int = 0
    executor: str = "inprocess"
    strategy: str = "list"
    seconds: float = 0.0      # wall time of the sweep (preparing and running the trials)


def _config_text(config) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.kwargs.items()) or "(defaults)"


def _bar(desc, total):
    """A progress bar (tqdm on a terminal, else nothing) as an ``update(summary)`` callable."""
    from tritonpu.profile.progress import enabled
    if not enabled() or total <= 1:
        return None, (lambda: None)
    try:
        from tqdm import tqdm
    except ImportError:
        return None, (lambda: None)
    b = tqdm(total=total, desc=desc, leave=False)
    return (lambda r: b.update(1)), b.close


def _run(ex, sweep, indices, mode, desc):
    if indices is None:
        indices = list(range(len(sweep.specs)))
    update, close = _bar(desc, len(indices))
    try:
        return executors.run(ex, sweep, indices, mode, update)
    finally:
        close()


def _fill(row, r):
    row.cycles, row.efficiency, row.bound_pipe = r["cycles"], r["efficiency"], r["bound_pipe"] or ""
    row.ub_bytes = r["ub_bytes"]


def _pick(rows):
    ran = [(r.cycles, i) for i, r in enumerate(rows) if r.status == "simulated"]
    if not ran:
        return None
    best = min(ran)[1]
    rows[best].status = "best"
    return rows[best]


def sweep_list(fn, configs, args, kwargs, grid, reset_to_zero=(), executor=None, workers=None,
               name="kernel") -> Result:
    """Every config of the list simulated; configs that do not compile are skipped (pruned)."""
    t0 = time.perf_counter()
    ex = executors.get(executor, workers, len(configs))
    sweep = executors.prepare(fn, args, kwargs, grid, configs, reset_to_zero)
    results = _run(ex, sweep, None, "simulate", f"autotune {name}")
    rows, timings = [], {}
    for i, config in enumerate(configs):
        r = results[i]
        row = Row(config, "simulated")
        if r["error"] == "compile":
            row.status, row.reason, row.where = "pruned", r["reason"], r.get("where")
        elif r["error"] == "run":
            row.status, row.reason = "failed", r["reason"]
        else:
            _fill(row, r)
            timings[config] = r["cycles"]
        rows.append(row)
    best = _pick(rows)
    if best is None:
        failed = next((r for r in rows if r.status == "failed"), None)
        if failed is not None:
            raise LaunchError(f"autotune {name}: config {_config_text(failed.config)}: {failed.reason}")
        # the kernel's line of the first config that names one (a source error is every config's)
        where = next((r.where for r in rows if r.where), None) or (None, None, None)
        raise CompilationError(f"autotune {name}: no config compiles: "
                               + "; ".join(f"{_config_text(r.config)}: {r.reason}" for r in rows), *where)
    if any(r.status == "failed" for r in rows):        # a config that does not run is the user's bug
        failed = next(r for r in rows if r.status == "failed")
        raise LaunchError(f"autotune {name}: config {_config_text(failed.config)}: {failed.reason}")
    return Result(best.config, timings, rows, len(timings), ex.name, "list", time.perf_counter() - t0)


def search_auto(fn, args, kwargs, grid, reset_to_zero=(), executor=None, workers=None, max_simulations=None,
                name="kernel", released=None) -> Result:
    """``configs="auto"`` (see :mod:`config_space` for the rules, the pruning and the search)."""
    t0 = time.perf_counter()
    from tritonpu.isa import MACHINES
    from tritonpu.runtime.autotune import Config
    jit, _ = executors.jit_of(fn)
    cores = int(kwargs.get("cores") or MACHINES["ascend910b"].cores)
    budget = int(max_simulations or cs.DEFAULT_MAX_SIMULATIONS)
    tuned, cands, excluded = cs.space(jit, args, kwargs, grid, cores, released)
    configs = [Config(c.kwargs) for c in cands]
    rows = [Row(cfg, "pruned" if c.status == "pruned" else "candidate", reason=c.reason)
            for cfg, c in zip(configs, cands)]
    live = [i for i, c in enumerate(cands) if c.status == "candidate"]
    order_params = [p for p in tuned if p.role == "order"]
    # program-order parameters are searched last, on the best blocks: keep simulations back for them
    reserve = min(sum(len(p.values) - 1 for p in order_params), budget // 4) if order_params else 0
    budget -= reserve
    ex = executors.get(executor, workers, len(live) if len(live) <= budget else 2 * budget)
    sweep = executors.prepare(fn, args, kwargs, grid, [configs[i] for i in live], reset_to_zero)
    at = {i: k for k, i in enumerate(live)}          # candidate index -> index in the sweep
    sims = 0
    if len(live) <= budget:
        strategy = "exhaustive"
        results = _run(ex, sweep, list(range(len(live))), "simulate", f"autotune {name}")
        sims = len(live)
        for i in live:
            _settle(rows[i], cands[i], results[at[i]], None, cores)
    else:
        strategy = "bound"
        order = sorted(live, key=lambda i: (math.prod(cands[i].kwargs.values()), i))
        failed, pending = [], order
        wave = max(4, 2 * ex.workers)
        while pending:
            batch, rest = [], []
            for i in pending:
                f = cs.dominated(cands[i], failed)
                if f is not None:
                    rows[i].status = cands[i].status = "pruned"
                    rows[i].reason = (f"no smaller in any block than {_config_text(Config(f.kwargs))}, which does "
                                      f"not fit: {f.reason}")
                elif len(batch) < wave:
                    batch.append(i)
                else:
                    rest.append(i)
            results = _run(ex, sweep, [at[i] for i in batch], "probe", f"autotune {name}: footprint")
            for i in batch:
                _settle(rows[i], cands[i], results[at[i]], "probe", cores)
                if cands[i].status == "pruned" and cs.is_resource_error(cands[i].reason):
                    failed.append(cands[i])
            pending = rest
        ranked = sorted((i for i in live if cands[i].status == "probed"), key=lambda i: (cands[i].estimate, i))
        best = None
        while ranked and sims < budget:
            if best is not None:              # what can no longer win is not simulated
                ranked = [i for i in ranked if cands[i].bound < best]
                if not ranked:
                    break
            batch, ranked = ranked[:min(ex.workers, budget - sims)], ranked[min(ex.workers, budget - sims):]
            results = _run(ex, sweep, [at[i] for i in batch], "simulate", f"autotune {name}: simulate")
            sims += len(batch)
            for i in batch:
                _settle(rows[i], cands[i], results[at[i]], None, cores)
                if rows[i].status == "simulated":
                    best = rows[i].cycles if best is None else min(best, rows[i].cycles)
        for i in live:
            if cands[i].status != "probed":
                continue
            rows[i].status = "not simulated"
            rows[i].reason = (f"lower bound {cands[i].bound:.0f} >= best {best} cycles" if best is not None
                              and cands[i].bound >= best else f"simulation budget ({budget}) spent")
    budget += reserve
    if order_params:
        sims += _refine_order(order_params, rows, fn, args, kwargs, grid, reset_to_zero, ex, budget - sims, name)
    timings = {r.config: r.cycles for r in rows if r.status == "simulated"}
    best_row = _pick(rows)
    if best_row is None:
        raise CompilationError(f"autotune {name}: no candidate of configs='auto' compiles and runs: "
                               + "; ".join(f"{_config_text(r.config)}: {r.reason}" for r in rows[:5]))
    out = Result(best_row.config, timings, rows, sims, ex.name, strategy, time.perf_counter() - t0)
    out.excluded = excluded
    out.params = tuned
    return out


def _refine_order(order, rows, fn, args, kwargs, grid, reset_to_zero, ex, budget, name) -> int:
    """The program-order parameters (``config_space``: values that only change which program
    runs which block, e.g. GROUP_SIZE_M), one after another on the best config so far: its other
    values, as many as ``budget`` allows.  Returns the simulations spent; adds a row each."""
    from tritonpu.runtime.autotune import Config
    spent = 0
    for p in order:
        done = [r for r in rows if r.status == "simulated"]
        if not done or spent >= budget:
            break
        best = min(done, key=lambda r: r.cycles)
        tries = [Config({**best.config.kwargs, p.name: v}) for v in p.values
                 if v != best.config.kwargs[p.name]][:budget - spent]
        sweep = executors.prepare(fn, args, kwargs, grid, tries, reset_to_zero)
        results = _run(ex, sweep, None, "simulate", f"autotune {name}: {p.name}")
        spent += len(tries)
        for k, config in enumerate(tries):
            row = Row(config, "simulated")
            r = results[k]
            if r["error"]:
                row.status, row.reason = ("pruned" if r["error"] == "compile" else "failed"), r["reason"]
            else:
                _fill(row, r)
            rows.append(row)
    return spent


def _settle(row, cand, r, mode, cores):
    if r["error"] == "compile":
        row.status = cand.status = "pruned"
        row.reason = cand.reason = r["reason"]
    elif r["error"] == "run":
        row.status = cand.status = "failed"
        row.reason = cand.reason = r["reason"]
    elif mode == "probe":
        cand.status, row.status = "probed", "probed"
        cand.bound = row.bound = cs.lower_bound(r, cand.programs, cores)
        cand.estimate = cs.estimate(r, cand.programs, cores)
        row.ub_bytes = r["ub_bytes"]
    else:
        bound = row.bound
        _fill(row, r)
        row.status = cand.status = "simulated"
        row.bound = bound


# ---- results on disk ---------------------------------------------------------------------------
_NOT_SETTINGS = ("TRITONPU_EXECUTOR", "TRITONPU_WORKERS", "TRITONPU_PROGRESS", "TRITONPU_CACHE_DIR",
                 "TRITONPU_AUTOTUNE_CACHE", "TRITONPU_MP_START")


def disk_key(fn, key: tuple, space: str, launch: dict) -> str:
    from tritonpu import __version__
    from tritonpu.runtime.cache import compiler_fingerprint
    jit, _ = executors.jit_of(fn)
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("TRITONPU_") and k not in _NOT_SETTINGS)
    text = repr(("autotune", jit.source_hash(), jit.src.file, jit.__qualname__, key, space, sorted(launch.items()),
                 env, __version__, compiler_fingerprint()))
    return "autotune-" + hashlib.sha256(text.encode()).hexdigest()[:32]


def load_best(key: str):
    from tritonpu.runtime import cache
    entry = cache.load(key)
    if not entry or not isinstance(entry.get("config"), dict):
        return None
    return entry


def store_best(key: str, result: Result, kernel: str) -> None:
    from tritonpu.runtime import cache
    c = result.best
    cache.store(key, {"kernel": kernel, "config": {"kwargs": c.kwargs, "num_warps": c.num_warps,
                                                  "num_stages": c.num_stages, "num_ctas": c.num_ctas},
                      "rows": [r.as_dict() for r in result.rows], "strategy": result.strategy,
                      "simulations": result.simulations})
