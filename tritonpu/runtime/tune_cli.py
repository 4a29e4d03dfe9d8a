"""``tritonpu tune FILE.py``: run a script with its kernel launches tuned, show and keep the results.

* Every ``@tritonpu.autotune`` kernel the script launches is swept (its list, or ``configs="auto"``)
  on the executor asked for (``--executor``, ``--workers``: they set ``TRITONPU_EXECUTOR`` and
  ``TRITONPU_WORKERS``).
* ``--kernel NAME`` also tunes the plain ``@jit`` launches of NAME: each launch's block
  parameters (see :mod:`.config_space`) are searched with ``configs="auto"`` — the values the
  script gives are replaced when the grid follows them (``grid=lambda meta: ...``) or they are loop
  steps, and kept otherwise — and the launch then runs with the best config, so the script's own
  results stay right.  Without ``--kernel`` every autotuned kernel is reported.
* Per sweep it prints a table (config, status, cycles, efficiency, the pipe that bounds it, the
  lower bound that ranked it, why a config was pruned or not simulated), with a progress bar on a
  terminal; all rows go to a CSV (``--csv``, default ``tritonpu-tune.csv``).
* The best config per kernel and key is kept in the on-disk cache (``TRITONPU_CACHE_DIR``), so the
  next ``tritonpu tune`` — and any run with ``cache_results=True``, ``configs="auto"`` or
  ``TRITONPU_AUTOTUNE_CACHE=1`` — starts tuned (``--retune`` sweeps again).
"""
from __future__ import annotations

import csv
import os
import sys

from tritonpu.errors import TritonpuError
from tritonpu.runtime import hooks
from tritonpu.runtime.cli import run_script

COLUMNS = ("kernel", "key", "config", "status", "cycles", "efficiency", "bound_pipe", "lower_bound", "ub_bytes",
           "reason")


def add_tune_command(sub) -> None:
    p = sub.add_parser("tune", help="run a kernel script with its launches autotuned on the virtual NPU",
                       description="Run FILE.py as a script; sweep every autotuned kernel it launches (and, "
                                   "with --kernel, the plain launches of that kernel over its block sizes), "
                                   "print a table per sweep, write a CSV and keep the best config per key "
                                   "on disk so the next run starts tuned.")
    p.add_argument("file", help="the Python script to run")
    p.add_argument("--kernel", metavar="NAME", help="tune this kernel only (its plain @jit launches too)")
    p.add_argument("--executor", choices=["inprocess", "processes", "ray"],
                   help="where the trials run (default: a process pool for more than a handful of configs)")
    p.add_argument("--workers", type=int, help="parallel trials (default: the CPUs, or the Ray cluster's)")
    p.add_argument("--max-simulations", type=int, default=None,
                   help="simulation budget of a configs='auto' search (default 8)")
    p.add_argument("--csv", metavar="OUT.csv", default="tritonpu-tune.csv", help="where to write every row")
    p.add_argument("--retune", action="store_true", help="sweep again even when the disk holds a choice")
    p.add_argument("script_args", nargs="*", help="arguments passed to the script (after --)")
    p.set_defaults(func=tune_command)


class _Direct:
    """The plain launch of a @jit function, for an Autotuner to wrap (no re-entry of the patch)."""

    __tritonpu_jit__ = False

    def __init__(self, jit, run):
        self.fn, self._run = jit, run
        self.__name__ = jit.__name__
        self.arg_names = jit.arg_names

    def run(self, *args, grid, **kwargs):
        return self._run(self.fn, *args, grid=grid, **kwargs)


def _patch_plain_launches(name: str, max_simulations):
    """Route the launches of the @jit function called ``name`` through a configs="auto" tuner."""
    from tritonpu.runtime.autotune import Autotuner
    from tritonpu.runtime.jit import JITFunction
    original = JITFunction.run
    tuners: dict = {}

    def run(self, *args, grid, warmup=False, **kwargs):
        if self.__name__ != name or warmup:
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        t = tuners.get(id(self))
        if t is None:
            key = [n for n in self.arg_names if n not in self.constexpr_names]
            t = tuners[id(self)] = Autotuner(_Direct(self, original), "auto", key, max_simulations=max_simulations)
            t.released = tuple(self.constexpr_names)
        return t.run(*args, grid=grid, **kwargs)

    JITFunction.run = run
    return lambda: setattr(JITFunction, "run", original)


def format_table(rows: list) -> str:
    order = {"best": 0, "simulated": 1, "not simulated": 2, "failed": 3, "pruned": 4}
    rows = sorted(rows, key=lambda r: (order.get(r["status"], 5), r["cycles"] or 0, r["lower_bound"] or 0))
    head = f"{'config':<52}{'status':<15}{'cycles':>9}{'eff':>7}  {'bound pipe':<11}{'lower bd':>9}  why"
    lines = [head, "-" * len(head)]
    for r in rows:
        eff = f"{r['efficiency']:.3f}" if r["efficiency"] is not None else ""
        lines.append(f"{r['config'][:51]:<52}{r['status']:<15}{r['cycles'] or '':>9}{eff:>7}  {r['bound_pipe'] or '':<11}"
                     f"{r['lower_bound'] or '':>9}  {(r['reason'] or '')[:110]}")
    return "\n".join(lines)


def tune_command(args) -> int:
    if not os.path.isfile(args.file):
        print(f"tritonpu tune: no such file: {args.file}", file=sys.stderr)
        return 2
    saved_env = {k: os.environ.get(k) for k in ("TRITONPU_EXECUTOR", "TRITONPU_WORKERS", "TRITONPU_AUTOTUNE_CACHE")}
    if args.executor:
        os.environ["TRITONPU_EXECUTOR"] = args.executor
    if args.workers:
        os.environ["TRITONPU_WORKERS"] = str(args.workers)
    if args.executor == "ray":
        from tritonpu.runtime.executors import ray_module
        try:
            ray_module()
        except TritonpuError as e:
            print(f"tritonpu tune: {e}", file=sys.stderr)
            return 2
    os.environ["TRITONPU_AUTOTUNE_CACHE"] = "refresh" if args.retune else "1"
    all_rows: list = []

    def on_tuned(tuner, key, result, cached):
        if args.kernel and tuner.__name__ != args.kernel:
            return
        label = f"{tuner.__name__} key={key}"
        if result is None:
            c = cached["config"]["kwargs"]
            print(f"// ---- {label}: tuned before (on disk): "
                  + ", ".join(f"{k}={v}" for k, v in c.items()), flush=True)
            rows = cached.get("rows") or []
        else:
            rows = [r.as_dict() for r in result.rows]
            print(f"// ---- {label}: {result.strategy} search on {result.executor}, {result.simulations} "
                  f"simulations of {len(rows)} configs", flush=True)
        print(format_table(rows), flush=True)
        all_rows.extend({"kernel": tuner.__name__, "key": repr(key), **r} for r in rows)
    hooks.add_tune_listener(on_tuned)
    restore = _patch_plain_launches(args.kernel, args.max_simulations) if args.kernel else (lambda: None)
    saved_argv = sys.argv
    sys.argv = [args.file] + list(args.script_args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.file)))
    try:
        code = run_script(args.file)
    finally:
        restore()
        hooks.remove_tune_listener(on_tuned)
        sys.argv = saved_argv
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if all_rows:
        with open(args.csv, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
            w.writeheader()
            w.writerows(all_rows)
        print(f"// {len(all_rows)} rows written to {args.csv}", flush=True)
    elif code == 0:                         # (the script's own error was reported)
        print("tritonpu tune: no autotuned launch ran"
              + (f" of `{args.kernel}`" if args.kernel else " (use --kernel NAME to tune plain launches)"),
              file=sys.stderr)
    return code
