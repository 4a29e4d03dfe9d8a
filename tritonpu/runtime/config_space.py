"""``configs="auto"``: the config space of a launch, derived from its shapes and the machine, pruned
without simulating, then searched.

**Which constexprs are block sizes.**  A ``tl.constexpr`` parameter is tuned when the launch does
not give it and the kernel uses it as an *extent*: an argument of ``tl.arange``, ``tl.zeros``,
``tl.full``, ``reshape``/``view``/``broadcast_to``, ``make_block_ptr``/``make_tensor_descriptor``
(``block_shape``).  Constexprs given at launch (a head dim ``D``, ``GROUP_M=8``) are never tuned.
Each block parameter ``P`` gets a role, read from the kernel's source:

* ``grid``: ``P`` multiplies a value derived from ``tl.program_id`` (``pid * P + tl.arange(0, P)``)
  — it decides how much of the problem a program covers, so the grid must follow it: it is tuned
  only when the grid is a function of ``meta`` that changes with ``P``;
* ``loop``: ``P`` is a loop step (``range(0, n, P)``, ``range(0, tl.cdiv(K, P))``);
* ``cover``: neither — the block must cover its extent (one row per program).

Its *extent* is the launch value of the scalar arguments it is divided into (``tl.cdiv(X, P)``,
``X // P``, ``range(_, X, P)``) or compared with (``offs < X`` where ``offs`` comes from
``tl.arange(0, P)``); without one, the largest dimension of the array arguments.

A constexpr the launch does not give that is no extent but takes part in computing a value
derived from ``tl.program_id`` (``first_pid_m = group_id * GROUP_SIZE_M``) is a *program-order*
parameter (role ``order``): it changes which program runs which block, not the blocks.  Its
candidates are 8, 1, 2, 4; the block search runs at the first, and the search then simulates the
best config found at the others (see **Search**).

**Candidates.**  ``grid``/``loop`` parameters: the powers of two from 16 (a cube fractal side) up
to the extent's next power of two and to the Unified Buffer's capacity in the launch's smallest
element type, plus (unless ``TRITONPU_STRICT_TRITON``) the multiples of 16 in that range that
divide the extent.  ``cover`` parameters: the extent itself and its next power of two.

**Pruning (no simulation).**  (1) *Occupancy*: a config whose grid leaves more than half of the
cores idle on average over its rounds (programs / (rounds × cores) < 0.5) is dropped when another
candidate does better.  (2) *Footprint*: each remaining candidate is compiled for the NPU (no run);
a ``CompilationError`` drops it with the compiler's reason (UB/L1/L0 bytes).  Candidates are
compiled smallest first; one that is at least as large in every block as a candidate that ran
out of UB/L1/L0 is dropped without compiling (footprints grow with blocks; the tests compare this
against full compilation).

**Search.**  When at most ``max_simulations`` candidates are left, all of them are simulated
(exhaustive).  Otherwise each is *probed*: program 0 alone is simulated (≈ 1/programs of a
launch), giving the work each pipe of one program needs no matter what the caches hold (MTE2's
bytes at the L2 rate, the cube, vector, MTE1, FIX and MTE3 busy cycles).  The slowest core runs
``r = ceil(programs / cores)`` programs.  A persistent kernel (the compiler's program loop per
core) may do work that does not depend on the program once per core or once per pair of
programs (a hoisted load of weights, values computed from them), so when ``r > 1`` its first
``q = min(r, 3)`` programs also run on one core: the core's work is then at least ``Wq`` and at
least ``W1 + floor((r - 1) / (q - 1)) × (Wq - W1)`` per pipe (``W1``: program 0's); without
that probe, ``r × W1``.  Either holds when every program does at least program 0's work, which
holds when the blocks divide the problem.  Candidates
are simulated in increasing order of an estimate (:func:`estimate`), ``workers`` at a time, until the best simulated
cycles are no more than the next bound (nothing left can win) or ``max_simulations`` launches have
run.  With program-order parameters, ``min(their other values, max_simulations // 4)``
simulations are kept back from that search; afterwards the best config is simulated at the
other values of each (one parameter after another), as many as are left.  Cost: one compile per unpruned candidate, one program per probe (1 + q for a persistent
kernel), at most ``max_simulations`` full launches.
"""
from __future__ import annotations

import ast
import itertools
import math
import os
import re
from dataclasses import dataclass, field

import numpy as np

from tritonpu.errors import LaunchError

MIN_BLOCK = 16
MAX_CANDIDATES = 400
DEFAULT_MAX_SIMULATIONS = 8
SHAPE_FUNCS = {"arange", "zeros", "full", "reshape", "view", "broadcast_to", "make_block_ptr",
               "make_tensor_descriptor", "rand", "randn", "randint"}
_RESOURCE = re.compile(r"Unified Buffer|\bUB\b|\bL0[ABC]?\b|\bL1\b|bytes of")


@dataclass
class BlockParam:
    name: str
    role: str                      # "grid", "loop" or "cover"
    extent_names: list = field(default_factory=list)
    extent: int | None = None
    values: list = field(default_factory=list)


def _names(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _call_name(node) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _closure(deps: dict, seeds: set) -> set:
    """Names whose definitions (transitively) use any of ``seeds``."""
    out = set(seeds)
    changed = True
    while changed:
        changed = False
        for name, uses in deps.items():
            if name not in out and uses & out:
                out.add(name)
                changed = True
    return out


def analyse(fn_ast: ast.FunctionDef, constexprs: set, scalar_args: set, order: bool = False) -> dict:
    """name -> BlockParam (values not filled) for the constexprs in ``constexprs`` used as extents
    (and with ``order``, the program-order parameters among the others, role ``order``)."""
    deps: dict = {}
    for node in ast.walk(fn_ast):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            used = _names(node.value)
            for t in targets:
                for n in _names(t):
                    deps.setdefault(n, set()).update(used)
        elif isinstance(node, ast.For):
            for n in _names(node.target):
                deps.setdefault(n, set()).update(_names(node.iter))
    pid_seeds = set()
    for node in ast.walk(fn_ast):
        if isinstance(node, ast.Assign) and any(isinstance(c, ast.Call) and _call_name(c) == "program_id"
                                                for c in ast.walk(node.value)):
            for t in node.targets:
                pid_seeds |= _names(t)
    pid = _closure(deps, pid_seeds)
    params: dict = {}
    for node in ast.walk(fn_ast):
        if isinstance(node, ast.Call) and _call_name(node) in SHAPE_FUNCS:
            for a in list(node.args) + [k.value for k in node.keywords]:
                for n in _names(a) & constexprs:
                    params.setdefault(n, BlockParam(n, "cover"))
    # program-order parameters: constexprs that are no extent but take part in computing a value
    # derived from the program id (GROUP_SIZE_M in ``first_pid_m = group_id * GROUP_SIZE_M``)
    ordering = set()
    for node in ast.walk(fn_ast):
        if order and isinstance(node, ast.Assign):
            used = _names(node.value)
            targets = set().union(*(_names(t) for t in node.targets))
            if used & (constexprs - set(params)) and (used & (pid | pid_seeds) or targets & pid):
                ordering |= used & (constexprs - set(params))
    if not params:
        return params
    roles = {n: set() for n in params}
    extents = {n: set() for n in params}
    for node in ast.walk(fn_ast):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            for a, b in ((node.left, node.right), (node.right, node.left)):
                if isinstance(a, ast.Name) and a.id in params and (_names(b) & (pid | pid_seeds) or any(
                        isinstance(c, ast.Call) and _call_name(c) == "program_id" for c in ast.walk(b))):
                    roles[a.id].add("grid")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv) and isinstance(node.right, ast.Name) \
                and node.right.id in params:
            extents[node.right.id] |= _names(node.left) & scalar_args
        if isinstance(node, ast.Call) and _call_name(node) == "cdiv" and len(node.args) == 2 \
                and isinstance(node.args[1], ast.Name) and node.args[1].id in params:
            extents[node.args[1].id] |= _names(node.args[0]) & scalar_args
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and _call_name(node.iter) == "range":
            ra = node.iter.args
            if len(ra) == 3 and isinstance(ra[2], ast.Name) and ra[2].id in params:
                roles[ra[2].id].add("loop")
                extents[ra[2].id] |= _names(ra[1]) & scalar_args
            for c in ast.walk(node.iter):
                if isinstance(c, ast.Call) and _call_name(c) == "cdiv" and len(c.args) == 2 \
                        and isinstance(c.args[1], ast.Name) and c.args[1].id in params:
                    roles[c.args[1].id].add("loop")
    # offsets built from tl.arange(_, P), and what is computed from them
    ranged = {p: set() for p in params}
    for node in ast.walk(fn_ast):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            for c in ast.walk(node.value):
                if isinstance(c, ast.Call) and _call_name(c) == "arange":
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for p in set().union(*(_names(a) for a in c.args)) & set(params):
                        for t in targets:
                            ranged[p] |= _names(t)
    compared = {p: set() for p in params}
    for node in ast.walk(fn_ast):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Lt, ast.LtE)):
            lhs = _names(node.left)
            for p in params:
                if lhs & _closure(deps, ranged[p]) or any(
                        isinstance(c, ast.Call) and _call_name(c) == "arange" and p in _names(c)
                        for c in ast.walk(node.left)):
                    compared[p] |= _names(node.comparators[0]) & scalar_args
    for n, p in params.items():
        p.role = "grid" if "grid" in roles[n] else "loop" if "loop" in roles[n] else "cover"
        p.extent_names = sorted(extents[n] or compared[n])
    for n in sorted(ordering):
        params[n] = BlockParam(n, "order")
    return params


def _pow2_upto(lo: int, hi: int) -> list:
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    return out


ORDER_VALUES = (8, 1, 2, 4)      # a program-order parameter: the first during the block search, then the rest


def candidates_for(p: BlockParam, ub_elems: int, strict: bool) -> list:
    if p.role == "order":
        return list(ORDER_VALUES)
    ext = p.extent
    if p.role == "cover":
        if ext is None:
            return []
        vals = {1 << max(0, (ext - 1).bit_length())}
        if not strict:
            vals.add(ext)
        return sorted(vals)
    hi = ub_elems if ext is None else min(ub_elems, 1 << max(0, (ext - 1).bit_length()))
    hi = max(hi, MIN_BLOCK)
    vals = set(_pow2_upto(MIN_BLOCK, hi))
    if ext is not None and not strict:
        vals |= {d for d in range(MIN_BLOCK, min(ext, hi) + 1, MIN_BLOCK) if ext % d == 0}
    return sorted(vals)


@dataclass
class Candidate:
    kwargs: dict
    programs: int = 0
    status: str = "candidate"      # candidate, pruned, probed, simulated
    reason: str = ""
    bound: float | None = None
    estimate: float | None = None
    result: dict | None = None


def block_params(jit, args, kwargs) -> list:
    """The launch's block parameters with their candidate values (see the module doc)."""
    given = set(jit.arg_names[:len(args)]) | set(kwargs)
    constexprs = {n for n in jit.constexpr_names if n not in given}
    named = dict(zip(jit.arg_names, args))
    named.update(kwargs)
    scalars = {n for n, v in named.items() if isinstance(v, (int, np.integer)) and not isinstance(v, bool)}
    params = analyse(jit.ast, constexprs, scalars, order=True)
    arrays = [a for a in (_as_np(v) for v in named.values()) if a is not None]
    biggest = max((max(a.shape) for a in arrays if a.ndim), default=None)
    smallest = min((a.dtype.itemsize for a in arrays), default=4)
    from tritonpu.isa import MACHINES
    ub = MACHINES["ascend910b"].capacity["ub"]
    strict = os.environ.get("TRITONPU_STRICT_TRITON", "0") not in ("", "0")
    out = []
    for p in params.values():
        vals = [int(named[n]) for n in p.extent_names if n in named]
        p.extent = max(vals) if vals else biggest
        p.values = candidates_for(p, 1 << (ub // smallest).bit_length() - 1, strict)
        out.append(p)
    return out


def _as_np(v):
    from tritonpu.runtime.arrays import as_array
    if isinstance(v, (int, float, bool, str, type(None))):
        return None
    try:
        return as_array(v)
    except Exception:
        return None


def space(jit, args, kwargs, grid, cores: int, released: dict | None = None):
    """(block params, candidates, excluded: name -> why not tuned).  Occupancy pruning applied.
    ``released``: block values the launch gave that may be tuned instead (``tritonpu tune
    --kernel``); the ones that cannot be keep their value in every candidate."""
    released = dict(released or {})
    from tritonpu.runtime.jit import _normalize_grid
    params = block_params(jit, args, kwargs)
    excluded = {}
    base_meta = {**dict(zip(jit.arg_names, args)), **kwargs}
    tuned = []
    for p in params:
        if p.role == "grid":
            if not callable(grid):
                excluded[p.name] = "the grid is fixed: pass grid=lambda meta: ... using meta[%r]" % p.name
                continue
            try:
                mid = {**released, **{q.name: q.values[len(q.values) // 2] for q in params if q.values}}
                a = _normalize_grid(grid, {**base_meta, **mid, p.name: p.values[0]})
                b = _normalize_grid(grid, {**base_meta, **mid, p.name: p.values[-1]})
            except Exception:
                a = b = None
            if a == b and len(p.values) > 1:
                excluded[p.name] = f"the grid does not change with {p.name}"
                continue
        if not p.values:
            excluded[p.name] = "no extent found to size it"
            continue
        tuned.append(p)
    restore = {n: released[n] for n in released if n in excluded or n not in {p.name for p in params}}
    if excluded:
        missing = [n for n in excluded if jit.signature.parameters[n].default is jit.signature.empty
                   and n not in restore]
        if missing:
            raise LaunchError(f"configs='auto' cannot tune `{missing[0]}` ({excluded[missing[0]]}) and the launch "
                              f"does not give it; give {missing[0]}= at launch or fix the grid")
    blocks = [p for p in tuned if p.role != "order"]
    first = {p.name: p.values[0] for p in tuned if p.role == "order"}     # the others: see tuner.search_auto
    names = [p.name for p in blocks]
    combos = list(itertools.product(*[p.values for p in blocks]))
    if len(combos) > MAX_CANDIDATES:          # keep the ones nearest the middle of each range
        mids = [math.log2(np.median(p.values)) for p in blocks]
        combos.sort(key=lambda c: sum(abs(math.log2(v) - m) for v, m in zip(c, mids)))
        combos = combos[:MAX_CANDIDATES]
    cands = []
    for combo in combos:
        kw = {**restore, **dict(zip(names, combo)), **first}
        try:
            g = _normalize_grid(grid, {**base_meta, **kw})
            programs = g[0] * g[1] * g[2]
        except Exception as e:
            c = Candidate(kw, 0, "pruned", f"grid: {e}")
            cands.append(c)
            continue
        cands.append(Candidate(kw, programs))
    occ = {id(c): c.programs / (math.ceil(c.programs / cores) * cores) for c in cands if c.programs}
    if occ and max(occ.values()) >= 0.5:
        for c in cands:
            if c.status == "candidate" and occ.get(id(c), 0) < 0.5:
                c.status = "pruned"
                c.reason = (f"occupancy: {c.programs} programs on {cores} cores fill {occ.get(id(c), 0):.2f} "
                            "of them per round")
    return tuned, cands, excluded


def is_resource_error(reason: str) -> bool:
    return bool(_RESOURCE.search(reason or ""))


def dominated(c: Candidate, failed: list):
    """A candidate that ran out of UB/L1/L0 and is no larger than ``c`` in any block, or None."""
    for f in failed:
        if all(c.kwargs[k] >= v for k, v in f.kwargs.items()):
            return f
    return None


def _warm(result: dict) -> float:
    """Least cycles of one program when its reads come from L2: the probe (program 0 alone, every
    line read from DDR) less what reading all its bytes at the L2 rate instead would save."""
    work = max((result.get("pipe_work") or {}).values(), default=0)
    return max(work, (result.get("cycles") or 0) - (result.get("ddr_saving") or 0.0))


def _core_work(result: dict, programs: int, cores: int) -> dict:
    """Per pipe, the least work of the busiest core, which runs ``r = ceil(programs / cores)``
    programs.  Without ``result["core"]`` (the first ``q`` programs on one core, probed for
    persistent kernels when ``r > 1``) each program does program 0's work: ``r × W1``.  With it:
    at least ``Wq`` (``r >= q``), and ``W1`` plus, for each run of ``q - 1`` later programs, what
    programs 1 .. q-1 added (``Wq - W1``) -- work hoisted out of the programs, done once per
    core or once per pair of programs, is not counted once per program."""
    rounds = math.ceil(programs / cores)
    first = result.get("pipe_work") or {}
    core = result.get("core")
    if not core or rounds == 1:
        return {k: rounds * v for k, v in first.items()}
    q, wq = core["programs"], core["pipe_work"]
    runs = (rounds - 1) // (q - 1)
    return {k: max(wq.get(k, 0), v + runs * max(0, wq.get(k, 0) - v)) for k, v in first.items()}


def lower_bound(result: dict, programs: int, cores: int) -> float:
    """Least cycles of the whole launch from a probe (see the module doc): the slowest core's
    busiest pipe does at least :func:`_core_work`, and the core takes at least the warm time of
    the programs probed on it."""
    warm = _warm(result)
    core = result.get("core")
    if core and math.ceil(programs / cores) >= core["programs"]:
        warm = max(warm, _warm(core))
    return max(max(_core_work(result, programs, cores).values(), default=0), warm)


def estimate(result: dict, programs: int, cores: int) -> float:
    """The order the search simulates in: one program's warm time, plus for each later program of
    the slowest core what a later program adds on average (program 0's warm time again without a
    probe of the first programs of a core): the cycles the probe's later programs took, never less
    than their pipes' work.  Their DDR reads are not discounted: they overlap other pipes' work
    (and a line read again comes from L2), so the probe's all-bytes-from-DDR saving overstates
    them -- subtracted, it hid each program's fixed cost (the accumulator's drain, the first
    tiles' latency) and ranked configs whose later programs reuse an operand too well.  No overlap
    between the programs of a core assumed.  A ranking, not a bound."""
    rounds = math.ceil(programs / cores)
    core = result.get("core")
    if not core:
        return rounds * _warm(result)
    q = core["programs"]
    work = max(max(core["pipe_work"].get(k, 0) - v, 0) for k, v in (result.get("pipe_work") or {"": 0}).items())
    later = max(work, core["cycles"] - result["cycles"], 0)
    return _warm(result) + (rounds - 1) * later / (q - 1)
