"""Where tuning trials run: in this process, on a local process pool, or on Ray.

A *sweep* is one launch (its arguments and grid) tried at several configs.  :func:`prepare`
turns it into what a worker needs and nothing else:

* the arrays, once per sweep: numpy copies of the spans the pointer arguments cover (a torch
  tensor becomes its numpy view).  The process pool gets them through one shared-memory block
  per sweep (workers map it, never receive a pickled copy per trial); Ray gets one ``ray.put``
  per sweep (the object store); in-process trials read them directly;
* per config, a :class:`TrialSpec`: the kernel's *frontend IR text* (made here by the kernel's
  own ``@jit`` compile, so a worker never imports the user's module — kernels defined in
  ``__main__``, in a test file or in a closure all work), the grid already evaluated for that
  config, the resolved launch options, the scalar arguments, and the ``TRITONPU_*`` environment.

A worker runs :func:`run_trial`: it rebuilds the kernel from the IR (kept per process by its
key), compiles it for the NPU and, unless only the footprint was asked for, runs it on *fresh
copies* of the sweep's arrays (``reset_to_zero`` arguments zeroed), so every trial starts from
the caller's data whatever ran before it on that worker.  What comes back is a small dict
(:data:`SUMMARY_KEYS`): cycles, roofline, efficiency, the bound pipe, the Unified Buffer bytes,
or the error that stopped it — never arrays.

Guarantee: the simulated cycles are a function of the IR, the options, the scalars and the
array contents only, so every executor returns the same summaries for the same sweep, in the
same (config) order; the tests check it.
"""
from __future__ import annotations

import atexit
import contextlib
import math
import os
import sys
import types
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from tritonpu.errors import CompilationError, LaunchError, TritonpuError

EXECUTORS = ("inprocess", "processes", "ray")
# Fewer configs than this run in-process unless an executor is asked for: a pool's start-up
# (importing tritonpu in each worker) costs about as much as a trial.
INPROCESS_UP_TO = 4
SUMMARY_KEYS = ("cycles", "roofline_cycles", "roofline_bound", "efficiency", "bound_pipe", "pipe_work",
                "programs", "cores", "mte2_bytes", "ddr_saving", "ub_bytes", "error", "reason", "where", "core")


@dataclass
class TrialSpec:
    index: int                # position of the config in the sweep
    name: str                 # kernel name
    key: str                  # the compiled kernel's cache key (a hash of source, specialization, options)
    ir: str                   # frontend IR text
    grid: tuple
    options: dict
    slots: list               # per kernel argument: ("array", i, zero) or ("value", v)
    env: dict = field(default_factory=dict)
    error: str | None = None  # the frontend refused this config (no worker needed)
    where: tuple | None = None  # and the kernel line it named


@dataclass
class Sweep:
    arrays: list              # numpy arrays, one per distinct pointer argument
    specs: list               # TrialSpec per config
    kernels: dict = field(default_factory=dict)   # key -> CompiledKernel (in-process reuse)


def jit_of(fn):
    """The ``@jit`` function under autotune/heuristics wrappers, and the heuristics met on the way."""
    rules = []
    while not getattr(fn, "__tritonpu_jit__", False):
        if hasattr(fn, "values"):
            rules.append(fn.values)
        fn = fn.fn
    return fn, rules


def prepare(fn, args, kwargs, grid, configs, reset_to_zero=()) -> Sweep:
    """The sweep of ``fn[grid](*args, **kwargs, **config)`` over ``configs`` (see the module doc)."""
    from tritonpu.language import core as tl
    from tritonpu.runtime import options as launch_options
    from tritonpu.runtime.arrays import as_array, gm_span
    from tritonpu.runtime.jit import _normalize_grid
    jit, rules = jit_of(fn)
    env = {k: v for k, v in os.environ.items() if k.startswith("TRITONPU_")}
    arrays, index = [], {}
    specs, kernels = [], {}
    for i, config in enumerate(configs):
        kw = {**kwargs, **config.all_kwargs()}
        named = {**dict(zip(jit.arg_names, args)), **kw}
        for values in reversed(rules):
            for name, rule in values.items():
                kw[name] = named[name] = rule(named)
        try:
            bound, options = jit.bind(args, dict(kw))
            options, _ = launch_options.resolve(options)
            params, runtime = jit.specialize(bound)
            kernel = jit.compile(params, options)
            g = _normalize_grid(grid, {**bound, **options})
        except CompilationError as e:
            specs.append(TrialSpec(i, jit.__name__, "", "", (), {}, [], env, error=_first_line(e), where=_where(e)))
            continue
        kernels[kernel.key] = kernel
        options = {k: v for k, v in options.items() if k not in ("backend", "check", "trace")}
        slots = []
        for p, v in zip(kernel.fn.args, runtime):
            if p.type.is_ptr:
                arr = gm_span(as_array(v, p.name), p.name)
                ident = (arr.__array_interface__["data"][0], arr.nbytes, arr.dtype.str)
                if ident not in index:
                    index[ident] = len(arrays)
                    arrays.append(np.array(arr, copy=True))
                slots.append(("array", index[ident], p.name in reset_to_zero))
            else:
                slots.append(("value", tl._unwrap(v)))
        specs.append(TrialSpec(i, kernel.name, kernel.key, kernel.asm["ir"], tuple(g), options, slots, env))
    return Sweep(arrays, specs, kernels)


def _first_line(e) -> str:
    return str(getattr(e, "message", None) or e).strip().splitlines()[0]


def _where(e) -> tuple | None:
    """(file, line, column) of a CompilationError that points at the kernel's source, else None."""
    return (e.file, e.line, e.col) if getattr(e, "file", None) and getattr(e, "line", None) else None


# ---- the trial itself (runs in a worker) ------------------------------------------------------
_KERNELS: OrderedDict = OrderedDict()          # key -> CompiledKernel, per process
_KEEP = 32
_LOCK = threading.Lock()


def _kernel(spec: TrialSpec, known: dict | None):
    k = (known or {}).get(spec.key)
    if k is not None:
        return k
    with _LOCK:
        k = _KERNELS.get(spec.key)
        if k is None:
            from tritonpu.ir import parse_function
            from tritonpu.runtime.jit import CompiledKernel
            k = CompiledKernel(spec.name, parse_function(spec.ir), {"ir": spec.ir}, spec.key)
            _KERNELS[spec.key] = k
            while len(_KERNELS) > _KEEP:
                _KERNELS.popitem(last=False)
        _KERNELS.move_to_end(spec.key)
        return k


class _Env:
    """The sweep's ``TRITONPU_*`` variables for the trial, the worker's own put back after."""

    def __init__(self, env):
        self.env = env

    def __enter__(self):
        self.saved = {k: v for k, v in os.environ.items() if k.startswith("TRITONPU_")}
        if self.saved != self.env:
            for k in self.saved:
                os.environ.pop(k)
            os.environ.update(self.env)

    def __exit__(self, *exc):
        if self.saved != self.env:
            for k in self.env:
                os.environ.pop(k, None)
            os.environ.update(self.saved)


def run_trial(spec: TrialSpec, arrays, mode: str = "simulate", known: dict | None = None) -> dict:
    """One config of a sweep: ``mode`` ``"compile"`` (footprint only: nothing runs), ``"probe"``
    (compile, then run program 0 alone: the work one program does) or ``"simulate"`` (the whole
    grid).  Returns a summary dict; errors are reported in it (``error``: ``"compile"`` or
    ``"run"``, ``reason``: the message's first line), never raised."""
    out = dict.fromkeys(SUMMARY_KEYS)
    out["index"] = spec.index
    if spec.error is not None:
        out.update(error="compile", reason=spec.error, where=spec.where)
        return out
    from tritonpu.codegen.pipeline import artifact, launch_npu
    kernel = _kernel(spec, known)
    scalars = {p.name: s[1] for p, s in zip(kernel.fn.args, spec.slots) if s[0] == "value"}
    with _Env(spec.env):
        try:
            art = artifact(kernel, spec.options, scalars)
        except CompilationError as e:
            out.update(error="compile", reason=_first_line(e), where=_where(e))
            return out
        out["ub_bytes"] = art.ub_bytes
        if mode == "compile":
            return out
        grid = (1, 1, 1) if mode == "probe" else spec.grid
        try:
            stats = launch_npu(kernel, _fresh(spec, arrays), grid, spec.options)
            # A persistent kernel's core runs its programs as one loop: work that does not depend
            # on the program (a hoisted load of weights, a constant) may be done once per core, or
            # once per pair of programs, so program 0 alone can do more than each later one.  When
            # a core of the launch runs several programs, the first ``q`` of them (up to 3) also
            # run on one core: what the later ones add is measured, not assumed.
            rounds = -(-math.prod(spec.grid) // int(spec.options.get("cores") or _cores()))
            first = _first_programs(spec.grid, min(rounds, 3)) if mode == "probe" and art.persistent else None
            stats_q = None if first is None else launch_npu(kernel, _fresh(spec, arrays), first[1],
                                                            {**spec.options, "cores": 1})
        except CompilationError as e:
            out.update(error="compile", reason=_first_line(e), where=_where(e))
            return out
        except (TritonpuError, LaunchError) as e:
            out.update(error="run", reason=f"{type(e).__name__}: {_first_line(e)}")
            return out
    out.update(_summary(stats))
    if stats_q is not None:
        core = _summary(stats_q)
        out["core"] = {"programs": first[0], "pipe_work": core["pipe_work"], "cycles": core["cycles"],
                       "ddr_saving": core["ddr_saving"]}
    return out


def _fresh(spec: TrialSpec, arrays) -> list:
    """The trial's arguments: fresh copies of the sweep's arrays (``reset_to_zero`` ones zeroed)."""
    trial = []
    for s in spec.slots:
        if s[0] == "array":
            a = np.array(arrays[s[1]], copy=True)
            if s[2]:
                a[...] = 0
            trial.append(a)
        else:
            trial.append(s[1])
    return trial


def _first_programs(grid, q: int):
    """(n, grid): a grid of the first ``n`` programs along one axis, ``2 <= n <= q``, or None."""
    best = max(grid)
    n = min(q, best)
    if n < 2:
        return None
    axis = next(a for a, g in enumerate(grid) if g >= n)
    return n, tuple(n if a == axis else 1 for a in range(3))


def _cores() -> int:
    from tritonpu.isa import MACHINES
    return MACHINES["ascend910b"].cores


def _summary(st) -> dict:
    slow = max(range(len(st.core_cycles)), key=lambda i: st.core_cycles[i]) if st.core_cycles else 0
    busy = st.pipe_busy_by_core[slow] if st.pipe_busy_by_core else dict(st.pipe_busy)
    m = st.machine
    # The work of the busiest core's pipes that no cache state can shorten: MTE2's bytes at the
    # L2 rate (a line read again), the other pipes' busy cycles (they do not depend on caches).
    mte2_bytes = sum(b for p, b in st.bytes_by_path.items() if m.paths[p].pipe.lower() == "mte2")
    work = {k: int(v) for k, v in busy.items() if k not in ("scalar", "mte2")}
    work["mte2"] = int(mte2_bytes / st.cores_used / m.l2_bytes_per_cycle) if st.cores_used else 0
    pipes = {k: v for k, v in busy.items() if k != "scalar"}
    return {"cycles": int(st.cycles), "roofline_cycles": float(st.roofline_cycles),
            "roofline_bound": st.roofline_bound, "efficiency": float(st.efficiency),
            "bound_pipe": max(pipes, key=pipes.get) if pipes else "", "pipe_work": work,
            "programs": int(st.programs), "cores": int(st.cores), "mte2_bytes": int(mte2_bytes),
            "ddr_saving": float(mte2_bytes * (1 / m.ddr_bytes_per_cycle - 1 / m.l2_bytes_per_cycle))}


# ---- executors -------------------------------------------------------------------------------
class InProcess:
    """Trials one after another in this process (the compiled NPU code is kept for the launch
    that follows the sweep)."""

    name = "inprocess"
    workers = 1

    def run(self, sweep: Sweep, specs, mode="simulate"):
        for spec in specs:
            yield run_trial(spec, sweep.arrays, mode, sweep.kernels)


def _mp_context():
    import multiprocessing as mp
    method = os.environ.get("TRITONPU_MP_START") or ("forkserver" if "forkserver" in mp.get_all_start_methods()
                                                     else "spawn")
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(["tritonpu.runtime.executors", "tritonpu.codegen.pipeline", "tritonpu.npu"])
    return ctx


@contextlib.contextmanager
def _no_main():
    """Workers started meanwhile do not re-run the caller's ``__main__`` (multiprocessing's spawn
    and forkserver re-import it in each worker: a script would launch its kernels again there).
    They need nothing from it: a trial carries its kernel as IR."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


_ATTACHED: dict = {}      # in a worker: shared-memory name -> (SharedMemory, arrays)


def _attach(shm_name, layout):
    got = _ATTACHED.get(shm_name)
    if got is None:
        from multiprocessing import shared_memory
        for old in list(_ATTACHED):           # one sweep at a time: let the previous block go
            _ATTACHED.pop(old)[0].close()
        shm = shared_memory.SharedMemory(name=shm_name)
        arrays = [np.ndarray(shape, np.dtype(dt), buffer=shm.buf, offset=off) for off, shape, dt in layout]
        got = _ATTACHED[shm_name] = (shm, arrays)
    return got[1]


def _pool_trial(spec, shm_name, layout, mode):
    return run_trial(spec, _attach(shm_name, layout) if shm_name else [], mode)


class Processes:
    """A local process pool (``concurrent.futures``, forkserver start), kept for the process's
    life and reused by later sweeps; the arrays of a sweep go into one shared-memory block."""

    name = "processes"
    _pools: dict = {}

    def __init__(self, workers=None):
        self.workers = int(workers or os.cpu_count() or 1)

    def _pool(self):
        pool = Processes._pools.get(self.workers)
        if pool is None:
            from concurrent.futures import ProcessPoolExecutor
            pool = Processes._pools[self.workers] = ProcessPoolExecutor(self.workers, mp_context=_mp_context())
        return pool

    def run(self, sweep: Sweep, specs, mode="simulate"):
        from concurrent.futures import as_completed
        from multiprocessing import shared_memory
        layout, off = [], 0
        for a in sweep.arrays:
            off = -(-off // 64) * 64
            layout.append((off, a.shape, a.dtype))      # the dtype itself: bfloat16's .str is '<V2'
            off += a.nbytes
        shm = shared_memory.SharedMemory(create=True, size=max(off, 1)) if sweep.arrays else None
        try:
            for (o, _, _), a in zip(layout, sweep.arrays):
                np.ndarray(a.shape, a.dtype, buffer=shm.buf, offset=o)[...] = a
            pool = self._pool()
            with _no_main():
                futures = [pool.submit(_pool_trial, s, shm.name if shm else None, layout, mode) for s in specs]
            for f in as_completed(futures):
                yield f.result()
        finally:
            if shm is not None:
                shm.close()
                shm.unlink()

    @classmethod
    def shutdown(cls):
        for pool in cls._pools.values():
            pool.shutdown(wait=False, cancel_futures=True)
        cls._pools.clear()


atexit.register(Processes.shutdown)


def ray_module():
    try:
        import ray
    except ImportError:
        raise LaunchError("executor='ray' needs Ray, an optional extra: pip install 'tritonpu[ray]' "
                          "(or pip install ray)") from None
    return ray


class Ray:
    """Trials on Ray actors, one per worker.  Connects to ``RAY_ADDRESS`` when it is set (a cluster
    started with ``ray start --head``), else starts a local runtime with all of this machine's CPUs
    (once per process).  At most ``workers`` trials run at once (default: the cluster's CPUs).  The
    actors (one CPU each) are kept for the process's life and reused by later sweeps, like the
    process pool; each keeps the kernels it compiled (:func:`run_trial`), and a trial goes to the
    free actor that already compiled its kernel when there is one — a compile costs about half a
    simulation, so a sweep run again, or several sweeps of one kernel, compile each config once.
    The arrays go into the object store once per sweep; each trial returns a summary dict.  The
    cluster's nodes need tritonpu installed (the same version: the kernel travels as IR)."""

    name = "ray"
    _actors: list = []        # actor handles, created as sweeps need them
    _keys: list = []          # per actor: the kernel keys it compiled (the last _KEEP, as _KERNELS)
    _actor_class = None

    def __init__(self, workers=None):
        self.ray = ray_module()
        self.workers = workers
        if not self.ray.is_initialized():
            Ray._actors, Ray._keys = [], []      # handles of an earlier runtime are gone with it
            address = os.environ.get("RAY_ADDRESS")
            kw = {"address": address} if address else {"num_cpus": os.cpu_count() or 1, "include_dashboard": False}
            self.ray.init(ignore_reinit_error=True, log_to_driver=False, **kw)
        if self.workers is None:
            self.workers = int(self.ray.cluster_resources().get("CPU", 1))
        if Ray._actor_class is None:
            Ray._actor_class = self.ray.remote(num_cpus=1, max_restarts=0)(_RayWorker)

    def _actor(self, i):
        while len(Ray._actors) <= i:
            Ray._actors.append(Ray._actor_class.remote())
            Ray._keys.append(OrderedDict())
        return Ray._actors[i]

    @staticmethod
    def _pick(todo, i, others):
        """The next trial for actor ``i``: one whose kernel it compiled, else one no other actor
        compiled, else the first (``todo`` is in the sweep's order: largest grids first)."""
        mine = Ray._keys[i]
        for pos, s in enumerate(todo):
            if s.key in mine:
                return todo.pop(pos)
        for pos, s in enumerate(todo):
            if not any(s.key in Ray._keys[j] for j in others):
                return todo.pop(pos)
        return todo.pop(0)

    def run(self, sweep: Sweep, specs, mode="simulate"):
        ref = self.ray.put(sweep.arrays)
        todo = list(specs)
        n = max(1, min(self.workers, len(todo)))
        actors = [self._actor(i) for i in range(n)]
        free, busy = list(range(n)), {}
        while todo or busy:
            while free and todo:
                i = free.pop(0)
                spec = self._pick(todo, i, [j for j in range(n) if j != i])
                busy[actors[i].trial.remote(spec, ref, mode)] = i
                keys = Ray._keys[i]
                keys[spec.key] = True
                keys.move_to_end(spec.key)
                while len(keys) > _KEEP:
                    keys.popitem(last=False)
            done, _ = self.ray.wait(list(busy), num_returns=1)
            free.append(busy.pop(done[0]))
            yield self.ray.get(done[0])


class _RayWorker:
    """A Ray actor: runs trials in its process, which keeps the kernels it compiled."""

    def trial(self, spec, arrays, mode):
        return run_trial(spec, arrays, mode)


def get(executor=None, workers=None, n_configs: int = 0):
    """The executor asked for: an object with ``run(sweep, specs, mode)``, or a name — ``None``
    reads ``TRITONPU_EXECUTOR``, and without it a sweep of more than :data:`INPROCESS_UP_TO`
    configs runs on a process pool when the machine has more than one CPU."""
    if executor is not None and not isinstance(executor, str):
        return executor
    name = executor or os.environ.get("TRITONPU_EXECUTOR") or ""
    if workers is None and os.environ.get("TRITONPU_WORKERS"):
        workers = int(os.environ["TRITONPU_WORKERS"])
    name = name.strip().lower().replace("-", "").replace("_", "")
    if name in ("", "auto"):
        name = "processes" if n_configs > INPROCESS_UP_TO and (workers or os.cpu_count() or 1) > 1 else "inprocess"
    if name in ("inprocess", "serial", "local"):
        return InProcess()
    if name in ("processes", "process", "pool"):
        return Processes(workers)
    if name == "ray":
        return Ray(workers)
    raise LaunchError(f"unknown executor {executor or os.environ.get('TRITONPU_EXECUTOR')!r}; choose one of "
                      f"{', '.join(EXECUTORS)}")


def run(executor, sweep: Sweep, indices=None, mode="simulate", progress=None) -> dict:
    """Run the sweep's configs ``indices`` (default all) on ``executor``; returns index ->
    summary.  ``progress(summary)`` is called as each one finishes."""
    specs = [sweep.specs[i] for i in (range(len(sweep.specs)) if indices is None else indices)]
    out = {}
    local = [s for s in specs if s.error is not None]           # nothing to send anywhere
    # the largest grids first (the most simulation work, as a rule): a long trial started last
    # would leave the other workers idle at the end of the sweep
    remote = sorted((s for s in specs if s.error is None), key=lambda s: -math.prod(s.grid or (1,)))
    for s in local:
        out[s.index] = run_trial(s, [], mode)
        if progress:
            progress(out[s.index])
    if remote:
        for r in executor.run(sweep, remote, mode):
            out[r["index"]] = r
            if progress:
                progress(r)
    return out
