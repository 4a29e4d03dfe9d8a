"""Launch: bind arguments, decode once, run the grid over the cores, collect statistics.

Guarantees: GM parameters are views of the caller's arrays (C-contiguous, dtype as declared; no
copies, results written in place); grid programs go round-robin over ``cores`` (default: the
preset's 24) — program p runs on core p mod cores, each core runs its programs in turn with its
clocks, flags and on-chip memory carried over; the cores advance together, 500 simulated cycles
at a time, so that the shared L2 model sees their GM reads in time order — the core whose read
of a line comes first in simulated time pays its DDR read, not the core simulated first: a core
pauses when its next read's time (its MTE2 queue's end, or its issue time) passes the slice, and
within a slice the cores go in the order of their next read (ties in a rotating order) — except
for programs with scalar atomics or device prints/asserts, whose cores take turns so that the
order they observe is program order: core after core, but a core that runs ``_QUANTUM``
instructions without finishing gives way to the next ones (a program spinning on a flag that a
later program sets gets it); a program that runs more than ``max_steps`` instructions is stopped
with a :class:`LaunchError` at the nearest instruction with a kernel line (never a hang).
A core runs a program on the reference engine (``_execute``: one decoded closure per instruction)
or on the program's translation (``translate``), as ``engine_choice`` picks; both do the same work
in the same order (``engines.check_engines`` compares them).
"""
from __future__ import annotations

import gc
import os
from collections import OrderedDict

import threading

import numpy as np

from tritonpu.dtypes import SCALARS, from_numpy
from tritonpu.isa import machine as get_machine
from tritonpu.profile.progress import Deferred

from . import gmmaps, translate
from .errors import LaunchError, NpuError
from .ops_scalar import to_type
from .registry import decode
from .gm_races import LIMIT as GM_RACE_LIMIT, GmRaces
from .state import MTE2, State
from .stats import Stats


def normalize_grid(grid):
    if isinstance(grid, (int, np.integer)):
        grid = (int(grid),)
    grid = tuple(int(g) for g in grid)
    if not 1 <= len(grid) <= 3 or any(g < 1 for g in grid):
        raise LaunchError(f"grid must be 1 to 3 positive sizes, got {grid}")
    return grid + (1,) * (3 - len(grid))


def make_gm(p, base_dir=None):
    """The array a standalone run creates for a ``.gm`` declaration."""
    dt = SCALARS[p.dtype].np
    shape = p.shape
    init = p.init
    n = int(np.prod(shape))
    if init == "zeros":
        return np.zeros(shape, dt)
    if init == "ones":
        return np.ones(shape, dt)
    if init == "arange":
        return np.arange(n).astype(dt).reshape(shape)
    if init == "random":
        rng = np.random.default_rng(p.seed)
        if dt.kind == "b":
            return rng.integers(0, 2, shape).astype(dt)
        if dt.kind in "iu":
            lo = 0 if dt.kind == "u" else -8
            return rng.integers(lo, lo + 16, shape).astype(dt)
        return rng.standard_normal(shape).astype(dt)
    if isinstance(init, list):
        if len(init) not in (1, n):
            raise LaunchError(f".gm {p.name}: {len(init)} initial values for {n} elements")
        return np.array(init * (n if len(init) == 1 else 1)).astype(dt).reshape(shape)
    if isinstance(init, tuple) and init[0] == "file":
        import os
        path = init[1]
        if base_dir and not os.path.isabs(path):
            path = os.path.join(base_dir, path)
        try:
            a = np.load(path)
        except (OSError, ValueError) as e:
            raise LaunchError(f".gm {p.name}: cannot read its init file {path!r}: {e}") from None
        if a.size != n:
            raise LaunchError(f".gm {p.name}: {path} holds {a.size} elements, expected {n}")
        return np.ascontiguousarray(a.astype(dt).reshape(shape))
    raise LaunchError(f".gm {p.name}: bad init {init!r}")


def _as_array(name, x):
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)
    try:
        return np.asarray(memoryview(x))
    except TypeError:
        raise LaunchError(f"argument {name!r} must be a numpy array (or expose the buffer or "
                          f"DLPack protocol), got {type(x).__name__}") from None


_KEEP_DECODED = 8            # programs whose decodings are kept for relaunches (most recent)
_DECODED_LOCK = threading.Lock()
_DECODED_LRU: OrderedDict = OrderedDict()     # (id(prog), key) -> prog


def _remember(prog, key) -> None:
    """Mark ``prog``'s decoding ``key`` as just used; forget the least recent beyond the limit."""
    _DECODED_LRU.pop((id(prog), key), None)
    _DECODED_LRU[(id(prog), key)] = prog
    while len(_DECODED_LRU) > _KEEP_DECODED:
        (_, old_key), old = _DECODED_LRU.popitem(last=False)
        old.__dict__.get("_decoded", {}).pop(old_key, None)


def bind(st, prog, args, base_dir=None):
    names = prog.__dict__.get("_param_names")
    if names is None:
        names = prog.__dict__["_param_names"] = frozenset(p.name for p in prog.params)
    extra = args.keys() - names
    if extra:
        raise LaunchError(f"unknown argument(s) {sorted(extra)}; parameters: "
                          f"{[p.name for p in prog.params]}")
    arrays = {}
    line = st.m.l2_line_bytes
    for p in prog.params:
        x = args.get(p.name)
        if p.kind == "gm":
            if x is None:
                if p.declared_by != ".gm":
                    raise LaunchError(f"missing GM argument {p.name!r}")
                x = make_gm(p, base_dir)
            a = _as_array(p.name, x)
            try:
                k = from_numpy(a.dtype).name
            except KeyError:
                k = str(a.dtype)
            if k != p.dtype:
                raise LaunchError(f"argument {p.name!r} has dtype {k}, the kernel declares {p.dtype}")
            if not a.flags.c_contiguous:
                raise LaunchError(f"argument {p.name!r} must be C-contiguous (no copy is made)")
            arrays[p.name] = a
            u8 = a.reshape(-1).view(np.uint8)
            st.gm[p.name] = u8
            st.gm_seen[p.name] = np.zeros(u8.size // line + 2, np.bool_)
            st.gm_read[p.name] = gmmaps.ByteMap(u8.size)
            st.gm_written[p.name] = gmmaps.ByteMap(u8.size)
        else:
            if x is None:
                x = p.init
            if x is None:
                raise LaunchError(f"missing scalar argument {p.name!r}")
            if isinstance(x, np.ndarray):
                x = x.item()
            st.scalar_args[p.slot] = to_type(x, SCALARS[p.dtype].np)
    st.gm_races = None
    if st.sanitize:
        sizes = {name: u8.size for name, u8 in st.gm.items()}
        if sum(sizes.values()) <= GM_RACE_LIMIT:
            st.gm_races = GmRaces(sizes, {n: a.dtype.itemsize for n, a in arrays.items()})
    return arrays


ENGINES = ("auto", "translate", "interpret", "check")

# ``auto`` translates a program once its launches have executed this many times its length in
# instructions: a translation costs ~0.1 ms per instruction to compile and saves 0.3-0.6 us per
# instruction executed, so it pays for itself after some 200-300 runs through the program.
TRANSLATE_AFTER = 200


def engine_choice(engine=None) -> str:
    """The engine a launch runs on: ``engine``, else ``TRITONPU_NPU_ENGINE``, else ``auto``.
    ``translate``: each program translated to one Python function (``translate``); ``interpret``:
    the reference engine, an instruction's decoded closure at a time; ``auto``: the reference
    until the program is hot (``TRANSLATE_AFTER``), then its translation; ``check``: both,
    comparing every result and statistic (the differential test)."""
    engine = engine or os.environ.get("TRITONPU_NPU_ENGINE") or "auto"
    if engine not in ENGINES:
        raise LaunchError(f"unknown NPU engine {engine!r}; choose one of {', '.join(ENGINES)} "
                          "(launch option engine= or TRITONPU_NPU_ENGINE)")
    return engine


def launch(prog, args, grid=(1,), machine="ascend910b", sanitize=True, trace=False, cores=None,
           max_steps=50_000_000, base_dir=None, engine=None):
    engine = engine_choice(engine)
    if engine == "check":
        from .engines import check_engines
        return check_engines(launch, prog, args, grid=grid, machine=machine, sanitize=sanitize,
                             trace=trace, cores=cores, max_steps=max_steps, base_dir=base_dir)
    # Decoding makes thousands of closures and the run thousands of small tuples, none of them in
    # reference cycles: the cyclic garbage collector would only rescan them (a third of a
    # launch's time), so it is paused for the launch.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _launch(prog, args, grid, machine, sanitize, trace, cores, max_steps, base_dir, engine)
    finally:
        if was_enabled:
            gc.enable()


def _runners(states, fnss, prog, engine):
    """Per core: ``run(max_steps, horizon)`` -> the generator that runs one of its programs."""
    code = prog.code
    if engine == "auto":
        hot = code and (prog.__dict__.get("_executed", 0) >= TRANSLATE_AFTER * len(code) or "_translated" in prog.__dict__)
        engine = "translate" if hot else "interpret"
    if engine == "interpret":
        return [lambda max_steps, horizon, fns=fns, st=st: _execute(fns, code, st, max_steps, horizon)
                for st, fns in zip(states, fnss)]
    reads = _gm_reads(prog)
    return [translate.runner(prog, st, fns, reads) for st, fns in zip(states, fnss)]


def _launch(prog, args, grid, machine, sanitize, trace, cores, max_steps, base_dir, engine):
    m = get_machine(machine)
    grid = normalize_grid(grid)
    nprog = grid[0] * grid[1] * grid[2]
    ncores = int(cores) if cores is not None else m.cores
    if ncores < 1:
        raise LaunchError(f"cores must be >= 1, got {cores}")
    used = min(ncores, nprog)
    # decoding binds closures to the cores' states (they look the GM arrays and the L2 and
    # roofline maps up at run time): a relaunch of a recent program reuses them
    nctx = used
    key = (m.name, bool(sanitize), bool(trace))
    with _DECODED_LOCK:         # a decoding is one launch's state: checked out while it runs
        cache = prog.__dict__.setdefault("_decoded", {})
        entry = cache.pop(key, None)
    if entry is not None and len(entry[0]) >= nctx:
        states, fnss = entry[0][:nctx], entry[1][:nctx]
        for c in states:
            c.new_launch()
        arrays = bind(states[0], prog, args, base_dir)
        for c in states[1:]:
            c.trace, c.records, c.gm_races = states[0].trace, states[0].records, states[0].gm_races
    else:
        st = State(prog, m, sanitize, trace)
        arrays = bind(st, prog, args, base_dir)
        states = [st] + [_sharing(State(prog, m, sanitize, trace), st) for _ in range(nctx - 1)]
        fnss = [decode(c, prog) for c in states]
    try:
        runners = _runners(states, fnss, prog, engine)
        for c in states:
            c.grid, c.nprog = grid, nprog
        bar = Deferred(used, f"simulating {prog.name} (cores done)")
        try:
            with np.errstate(all="ignore"):
                if nctx == 1:
                    for _ in _core(states[0], runners[0], 0, 1, None, max_steps):
                        pass
                    bar.update(1)
                elif not _interleavable(prog):
                    # core after core, in program order (what scalar atomics' old values and prints
                    # show); a core that runs _QUANTUM instructions without finishing gives way to
                    # the next ones and comes back after them: a program spinning on a flag that a
                    # later program sets (a GPU runs them side by side) does not wait forever
                    horizon = [_FOREVER, None, _QUANTUM]
                    runs = [_core(states[c], runners[c], c, used, horizon, max_steps) for c in range(used)]
                    while runs:
                        runs = [run for run in runs if next(run, _DONE) is not _DONE]
                        bar.update(used - len(runs))
                else:
                    # the cores advance together, a slice of simulated time at a time, so that the
                    # shared L2 sees their GM reads in time order (the first to reach a line pays the
                    # DDR read): within a slice, the core whose reads come first goes first (ties:
                    # a rotating order, so no core is always the first)
                    horizon = [0, _gm_reads(prog), 0]
                    runs = [(states[c], _core(states[c], runners[c], c, used, horizon, max_steps))
                            for c in range(used)]
                    turn = 0
                    while runs:
                        horizon[0] += _SLICE
                        k = turn % len(runs)
                        order = sorted(runs[k:] + runs[:k], key=lambda run: _read_time(run[0]))
                        runs = [run for run in order if next(run[1], _DONE) is not _DONE]
                        turn += 1
                        bar.update(used - len(runs), cycles=horizon[0])
        except KeyboardInterrupt:
            raise KeyboardInterrupt(f"the launch of {prog.name} was interrupted (Ctrl-C) after "
                                    f"{max(c.ts for c in states)} simulated cycles of a core") from None
        finally:
            bar.close()
        st = states[0]
        if nctx > 1:                    # per-core results in core order
            st.core_cycles[:] = [c.core_cycles[0] for c in states]
            st.busy_by_core[:] = [c.busy_by_core[0] for c in states]
            st.count_by_core[:] = [c.count_by_core[0] for c in states]
        stats = Stats.from_state(st, prog, arrays, ncores, used)
        prog.__dict__["_executed"] = prog.__dict__.get("_executed", 0) + sum(stats.instr_count.values())
    finally:
        # the decoding kept for relaunches pins neither the caller's arrays nor the per-byte maps
        for d in (states[0].gm, states[0].gm_seen, states[0].gm_read, states[0].gm_written):
            d.clear()
        with _DECODED_LOCK:     # back for the next launch (one a concurrent launch returned stays)
            if key not in cache or len(cache[key][0]) < len(states):
                cache[key] = (states, fnss)
            _remember(prog, key)
    return stats


_SLICE = 500                        # cycles of simulated time the cores advance by in turn
_QUANTUM = 100_000                  # instructions a core runs before others may, when cores take turns
_FOREVER = 1 << 62
_DONE = object()


def _gm_reads(prog) -> list:
    """Per instruction: whether it may read GM (an MTE2 transfer or gather, a scalar instruction with
    a GM operand).  (Found once per program.)"""
    reads = prog.__dict__.get("_gm_reads")
    if reads is None:
        reads = prog.__dict__["_gm_reads"] = [
            inst.spec.pipe == "MTE2" or (inst.spec.pipe == "S" and any(getattr(a, "space", None) == "gm"
                                                                       for a in inst.args))
            for inst in prog.code]
    return reads


def _read_time(st) -> int:
    """When the core's next GM read happens: a transfer waits for MTE2 (whose queue can hold
    thousands of cycles of work the scalar unit issued long before), a scalar load happens at issue."""
    return max(st.ts, st.clk[MTE2])


def _interleavable(prog) -> bool:
    """Whether the cores may be simulated in slices of time: not when the program's observable
    order across cores matters — device prints and asserts, scalar atomics (their old values) —
    which then run core after core, in program order.  Atomic transfers return nothing: they
    interleave like any transfer (their float sums in the order simulated time gives them, one
    of the orders Triton allows).  (Found once per program.)"""
    ok = prog.__dict__.get("_interleavable")
    if ok is None:
        ok = prog.__dict__["_interleavable"] = not any(inst.spec.impl in ("satomic", "dbg") for inst in prog.code)
    return ok


def _sharing(st, first):
    """``st`` for another core of ``first``'s launch: the GM arrays, L2 and roofline maps, scalar
    arguments and launch-wide accumulators are the same objects (its own: registers, on-chip
    memories, clocks, flags, loops, race tracker)."""
    for name in ("gm", "gm_seen", "gm_read", "gm_written", "scalar_args", "bytes_by_path", "macs",
                 "stalls", "queue_wait", "trace", "records", "gm_races"):
        setattr(st, name, getattr(first, name))
    return st


def _core(st, run, core, used, horizon, max_steps):
    """Run ``core``'s programs (p = core, core + used, ...); a generator that pauses whenever the
    core's time passes ``horizon[0]`` (``horizon[1]``: which instructions read GM), or after
    ``horizon[2]`` instructions when that is not 0 (never when ``horizon`` is None)."""
    st.reset_core(core)
    gx, gy = st.grid[0], st.grid[1]
    for pid in range(core, st.nprog, used):
        st.start_program(pid, (pid % gx, (pid // gx) % gy, pid // (gx * gy)))
        yield from run(max_steps, horizon)
        st.end_program()
    st.finish_core()


def _execute(fns, code, st, max_steps, horizon):
    """Run the decoded program from pc 0 to its end; pause (yield) once the core's time has passed
    ``horizon[0]``: its issue time (checked every 16 instructions), and before a GM read, that
    read's time — a transfer issued early happens when MTE2 gets to it (never when ``horizon`` is
    None)."""
    pc, n, steps = 0, len(fns), 0
    reads = horizon[1] if horizon is not None else None
    quantum = horizon[2] if horizon is not None else 0
    turn_ends = quantum
    try:
        while pc < n:
            if reads is not None and reads[pc] and _read_time(st) > horizon[0]:
                yield
            r = fns[pc]()
            pc = pc + 1 if r is None else r
            steps += 1
            if not steps & 15:
                if horizon is not None and (st.ts > horizon[0] or (quantum and steps >= turn_ends)):
                    turn_ends = steps + quantum
                    yield
                if steps > max_steps:
                    raise translate.too_many_steps(code, pc, st, max_steps)
    except NpuError as e:
        raise e.attach(code[min(pc, n - 1)], st.core, st.gpid)
    except Exception as e:
        raise LaunchError(f"{type(e).__name__}: {e}").attach(code[min(pc, n - 1)], st.core,
                                                             st.gpid) from e
