"""Buffer planning: a Unified Buffer address for every value that lives on chip.

Guarantees: every value that lives on chip gets an address in its space — UB, L1 (dot operands
staged there) or L0C (accumulators) — as the attribute named after the space.  In UB: every UB-resident value (see :mod:`tritonpu.codegen.analysis`: blocks, and scalars
the vector unit computes) gets a byte address in UB, written as the attribute ``ub`` on the op
that defines it (a list, one per result, on ``for``/``if``; ``while`` also gets ``ub_out`` for its
results).  Addresses are multiples of the UB alignment (32 B); two groups whose live intervals
overlap never overlap in UB; a group's space is reused once it is dead (first fit, in order of
definition).  A view (``expand_dims``, ``reshape``, ``broadcast``, ``permute``, same-width
``bitcast``) shares its operand's address.  The function attribute ``ub_peak`` is the bytes the
plan needs; if that exceeds the machine's UB, a ``CompilationError`` names the largest value live
at the peak, its size and the capacity.  A tile loaded after a loop (in the same region: the next
loop's first tiles, issued ahead) is kept clear of everything live in that loop when the space has
room for it, so that its load does not wait for the loop's last reads of a buffer it would reuse
and MTE2 can bring it while the loop still runs; when there is no room, it is planned as it
stands.  The chunks of rows of an epilogue (``rows_chunk``, passes/epilogue_rows.py) are planned
apart when the space has room: each chunk's drained rows clear of the chunk before, its stored
tiles clear of the chunk after.  An L1 panel (``panel_tile``, passes/panel_reuse.py) holds
tiles for the core's later programs: its region, the size of the largest panel, is L1's first
bytes for the whole kernel, and everything else in L1 is planned after it.  A dot operand staged
into L1 once (``cube_homes._staged_operands``) gets its L1 address as ``l1_stage`` on the op that
makes it -- when L1 holds those tiles beside the rest of its plan and what the dots still copy
there as they run; otherwise none is staged.
"""
from __future__ import annotations

import contextvars
import copy

from tritonpu.codegen.analysis import L1, ONCHIP, REUSE_LOADED, UB, Analysis
from tritonpu.codegen.homes import panel_slot_bytes, tile_bytes
from tritonpu.errors import CompilationError
from tritonpu.ir.ops import TILE_LOADS
from tritonpu.isa.machines import machine as get_machine
from tritonpu.passes.manager import Pass, register


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _place(groups, align: int, cap: int, by_start: bool) -> tuple[int, dict, list]:
    """First fit in the order given (``by_start``: in order of start, so a group placed earlier
    that has ended is dead for every later one): (peak, id(group) -> address, the groups live where
    the peak first passed ``cap`` with the peak then -- or the peak's, if it never did)."""
    placed: list = []        # (addr, end_addr, group)
    addrs: dict = {}
    peak, at_peak = 0, []
    for g in groups:
        if by_start:
            placed = [a for a in placed if a[2].end >= g.start]
            live = list(placed)
        else:
            live = [a for a in placed if a[2].start <= g.end and g.start <= a[2].end]
        size = _align(max(g.bytes, 1), align)
        at = 0
        for lo, hi, _ in sorted(live, key=lambda a: a[0]):
            if at + size <= lo:
                break
            at = max(at, _align(hi, align))
        placed.append((at, at + size, g))
        addrs[id(g)] = at
        if at + size > peak:
            if peak <= cap:
                at_peak = (at + size, live + [placed[-1]])
            peak = at + size
    return peak, addrs, at_peak


def _first_fit(groups, align: int, cap: int, space: str, addr_of: dict, fn=None) -> int:
    """Addresses by first fit in order of definition; when that leaves no room (live tiles of
    different lifetimes fragment the space), first fit again largest group first."""
    peak, addrs, at_peak = _place(sorted(groups, key=lambda g: (g.start, -g.bytes)), align, cap, True)
    if peak > cap:
        alt = _place(sorted(groups, key=lambda g: (-g.bytes, g.start)), align, cap, False)
        if alt[0] <= cap:
            peak, addrs, at_peak = alt
    addr_of.update(addrs)
    if peak > cap:
        peak, live = at_peak[0], max(at_peak[1], key=lambda a: a[1] - a[0])[2]
        v = live.first
        # (a loop-carried group starts with the region argument: its source is where a
        # member is computed)
        where = next((x.owner.loc for x in live.values if x.owner is not None), None)
        name = f"`{v.name}`" if v.name else _addresses(v, fn) or f"a {v.type} value"
        full = {"ub": "Unified Buffer", "l1": "L1", "l0c": "L0C"}[space]
        ty = max((x.type for x in live.values), key=tile_bytes)   # (the group's largest: a view may be smaller)
        raise CompilationError.at(
            f"the kernel needs {peak} bytes of {full} at once but {space.upper()} holds {cap}: {name} "
            f"({ty}) alone takes {live.bytes} bytes; use smaller blocks", where)
    return peak


def _addresses(v, fn) -> str | None:
    """For an unnamed block that only addresses memory (pointers, or offsets added to one) of loads
    and stores done element by element: what it is, in the user's terms; else None."""
    if fn is None or not v.type.is_block:
        return None
    users: dict = {}
    for o in fn.walk():
        for x in o.operands:
            users.setdefault(id(x), []).append(o)
    todo, seen, accesses = [v], set(), []
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        for u in users.get(id(x), []):
            if u.name in ("load", "store", "atomic_rmw", "atomic_cas") and u.operands[0] is x and \
                    all(o is not x for o in u.operands[1:]):
                accesses.append(u)
            elif u.name in ("addptr", "add", "sub", "mul", "shl", "cast", "expand_dims", "broadcast", "reshape") \
                    and len(u.results) == 1 and u.result.type.is_block:
                todo.append(u.result)
            else:
                return None
    if not accesses:
        return None
    kinds = sorted({"store" if a.name == "store" else "load" for a in accesses})
    return f"the addresses of an element-by-element {' and '.join(kinds)} (not a tile the compiler moves whole)"


def _check_l1_carries(an: Analysis) -> None:
    """A tile a loop carries in L1 must start and stay in the loop's carried buffer: nothing copies
    L1 to L1 (the machine has no such path), so an initial or yielded L1 tile planned elsewhere
    cannot be moved into it."""
    for op in an.fn.walk():
        if op.name != "for":
            continue
        body = op.regions[0]
        ends = zip(body.args[1:], op.operands[3:], body.terminator.operands if body.terminator else ())
        for arg, init, y in ends:
            if an.home.get(id(arg)) != L1:
                continue
            g = an.group_of.get(id(arg))
            for v, what in ((init, "initial"), (y, "yielded")):
                if an.group_of.get(id(v)) is not g:
                    raise CompilationError.at(
                        f"the loop carries a {arg.type} dot operand in L1, but its {what} value cannot be "
                        "built in the carried buffer (L1 has no copy path to itself)", op.loc)


# Passes that rewrite a loop and keep the rewrite only if the kernel still fits (stagger,
# double-buffer) ask ``trial_plan``.  Quickly, it plans the function as it stands; the cleanup pass
# that runs before buffer planning (cse, dce) can still change what is live together, so when the
# final plan then overflows, the compile is run again with ``TRIAL_AFTER_CLEANUP`` set: each trial
# plans a cleaned-up copy, exactly what buffer planning will see.
TRIAL_AFTER_CLEANUP = contextvars.ContextVar("trial_after_cleanup", default=False)
# Tiles loaded after a loop kept clear of its tiles (see the module docstring).  The plan leaves
# less room for the temporaries emission adds; when they then do not fit, the compile is run
# again with this off (codegen/pipeline.py).
EARLY_STARTS = contextvars.ContextVar("early_starts", default=True)
# Elementwise work planned in place over loaded tiles from the first plan on (see ``plan``): set
# when the tiles fit without it but emission's temporaries then did not (codegen/pipeline.py).
REUSE_FIRST = contextvars.ContextVar("reuse_loaded_first", default=False)
# Bytes of UB every plan leaves free: set when the tiles fit but emission's temporaries then did
# not, to what those needed (codegen/pipeline.py).  The passes that split work until it fits
# (epilogue-rows, tiling) and those that keep a rewrite only if it fits (stagger, double-buffer)
# then judge against the UB that is left, and the temporaries go above the plan's peak.
UB_HEADROOM = contextvars.ContextVar("ub_headroom", default=0)


def trial_plan(fn) -> None:
    """Raise ``CompilationError`` if ``fn`` does not fit on chip (see ``TRIAL_AFTER_CLEANUP``)."""
    if TRIAL_AFTER_CLEANUP.get():
        from tritonpu.passes.dce import Cleanup
        fn = copy.deepcopy(fn)
        Cleanup().run(fn)
    plan(fn, reuse=False)


def plan(fn, machine="ascend910b", reuse: bool = True) -> tuple[Analysis, dict]:
    """(analysis, id(group) -> address in its space); raises CompilationError when a space overflows
    or a tile carried in L1 would need an L1-to-L1 copy.  When UB overflows, the plan is tried
    again with elementwise work done in place over loaded tiles (``reuse_loaded_tiles`` on the
    function: a row as large as half of UB then fits, at the price of its next load waiting for
    the store); the first error is raised if that does not fit either.  ``reuse=False``: no
    second try (tiling and double buffering ask whether a kernel fits without it).  Under
    ``REUSE_FIRST`` the first plan already reuses loaded tiles."""
    if reuse and REUSE_FIRST.get():
        fn.attrs[REUSE_LOADED] = True
    try:
        return _plan(fn, machine)
    except CompilationError as e:
        if not reuse or fn.attrs.get(REUSE_LOADED) or "Unified Buffer" not in e.message:
            raise
        fn.attrs[REUSE_LOADED] = True
        try:
            return _plan(fn, machine)
        except CompilationError:
            del fn.attrs[REUSE_LOADED]
            raise e from None


def trial_peaks(fn) -> dict:
    """The bytes each on-chip space needs for ``fn`` as it stands (``fn`` is planned: pass a copy),
    judged as ``trial_plan`` does; raises CompilationError if it does not fit."""
    if TRIAL_AFTER_CLEANUP.get():
        from tritonpu.passes.dce import Cleanup
        Cleanup().run(fn)
    plan(fn, reuse=False)
    return {space: fn.attrs.get("ub_peak" if space == UB else f"{space}_peak", 0) for space in ONCHIP}


def _panels(groups) -> tuple[list, int]:
    """(the groups of L1 panels' tiles, the bytes of the one region they share): the panels of a
    kernel hold one operand at a time (passes/panel_reuse.py) and must outlive its programs, so
    they get one region for the whole kernel, at L1 address 0 (where ``panel_fill`` writes)."""
    out, size = [], 0
    for g in groups:
        for v in g.values:
            if v.owner is not None and v.owner.name == "panel_tile":
                out.append(g)
                size = max(size, v.owner.attrs["slots"] * panel_slot_bytes(v.type))
                break
    return out, size


def _loaded_after_loops(an: Analysis, fn) -> dict:
    """id(group) -> the start of the loop right before it, for the groups holding a tile that is
    loaded after a loop in that loop's region (the next loop's prologue, an epilogue's operand)."""
    out: dict = {}

    def visit(ops):
        before = None                   # the start of the last loop seen in this region
        for op in ops:
            if op.name in TILE_LOADS and before is not None:
                g = an.group_of.get(id(op.result))
                if g is not None and g.start > before:
                    out[id(g)] = min(out.get(id(g), g.start), before)
            for reg in op.regions:
                visit(reg.ops)
            if op.name in ("for", "while"):
                before = an.span[id(op)][0]
    visit(fn.body.ops)
    return out


def _fit(groups, earlies: list, align: int, cap: int, space: str, addr_of: dict, fn=None) -> tuple[int, int]:
    """(peak, the index of the first of ``earlies`` -- dicts id(group) -> (an earlier start, a
    later end) -- with which the groups fit live over those spans, or -1): ``_first_fit`` with
    that one, else with the groups as they stand."""
    for k, early in enumerate(earlies):
        mine = [g for g in groups if id(g) in early]
        if not mine:
            continue
        saved = [(g.start, g.end) for g in mine]
        trial: dict = {}
        try:
            for g in mine:
                start, end = early[id(g)]
                g.start, g.end = min(g.start, start), max(g.end, end)
            peak = _first_fit(groups, align, cap, space, trial, fn)
        except CompilationError:
            continue
        else:
            addr_of.update(trial)
            return peak, k
        finally:
            for g, (start, end) in zip(mine, saved):
                g.start, g.end = start, end
    return _first_fit(groups, align, cap, space, addr_of, fn), -1


def _chunks_apart(an: Analysis, fn) -> dict:
    """id(group) -> (start, end) for the chunks of rows of an epilogue (``rows_chunk`` = 0, 1, ...,
    passes/epilogue_rows.py): each chunk's first tile (the rows FIX drains from L0C) is planned
    clear of the chunk before, and each chunk's stored tiles clear of the chunk after -- so FIX
    drains the next chunk while the vector unit works on this one, and the vector unit works on
    it while MTE3 stores the one before, instead of each waiting for the last store to free its
    buffers.  (A chunk's other tiles are planned as they stand: written in place over each other.)"""
    out: dict = {}
    for op in fn.walk():
        for reg in op.regions:
            _chunk_spans(an, reg.ops, out)
    _chunk_spans(an, fn.body.ops, out)
    return out


def _chunk_spans(an: Analysis, ops, out: dict) -> None:
    spans: dict = {}                    # chunk -> (its first op's start, its last op's end)
    for op in ops:
        q = op.attrs.get("rows_chunk")
        if q is not None:
            s, e = an.span[id(op)]
            lo, hi = spans.get(q, (s, e))
            spans[q] = (min(lo, s), max(hi, e))
    for op in ops:
        q = op.attrs.get("rows_chunk")
        if q is None:
            continue
        if op.name == "slice" and q - 1 in spans:
            g = an.group_of.get(id(op.result))
            if g is not None:
                out[id(g)] = (spans[q - 1][0], g.end)
        if op.name == "store_tile" and q + 1 in spans:
            g = an.group_of.get(id(op.operands[-1]))
            if g is not None:
                out[id(g)] = (g.start, spans[q + 1][1])


def _dot_scratch(an: Analysis) -> int:
    """The L1 a dot needs above the plan at most: its operands in UB, copied there as it runs (see
    codegen/emit_cube.py; what is staged once is planned)."""
    need = 0
    for op in an.fn.walk():
        if op.name == "dot":
            need = max(need, sum(_align(tile_bytes(v.type), 512) for v in op.operands[:2]
                                 if an.home.get(id(v)) == UB and id(v) not in an.staged))
    return need


def _room_for_staged(an: Analysis, earlies, m, fn) -> bool:
    """Whether L1 holds the plan with the staged dot operands (cube_homes._staged_operands) beside
    what the dots still copy as they run."""
    groups = [g for g in an.groups if g.home == L1]
    panels, region = _panels(groups)
    groups = [g for g in groups if not any(g is p for p in panels)]
    cap = m.capacity[L1] - region - _dot_scratch(an)
    if cap <= 0:
        return False
    try:
        _fit(groups, earlies, m.align[L1], cap, L1, {}, fn)
    except CompilationError:
        return False
    return True


def _plan(fn, machine):
    m = get_machine(machine)
    an = Analysis(fn)
    _check_l1_carries(an)
    addr_of: dict = {}
    early = {k: (v, 0) for k, v in _loaded_after_loops(an, fn).items()} if EARLY_STARTS.get() else {}
    apart = _chunks_apart(an, fn)
    # the spans tried, the first that fits taken: both kinds, then each alone
    both = dict(early)
    for k, (s, e) in apart.items():
        both[k] = (min(s, both.get(k, (s, e))[0]), e)
    earlies = [both, early, apart] if apart else [early]
    an.early_starts = False             # (whether the plan used them: see EARLY_STARTS)
    an.chunks_apart = not apart         # (whether the chunks of rows are planned apart, if any)
    if an.staged and not _room_for_staged(an, earlies, m, fn):
        an.unstage()
    for space in ONCHIP:
        groups = [g for g in an.groups if g.home == space]
        panels, region = _panels(groups) if space == L1 else ([], 0)
        if panels:
            if region > m.capacity[space]:
                raise CompilationError.at(
                    f"the kernel needs {region} bytes of L1 at once but L1 holds {m.capacity[space]}: its L1 panel "
                    "alone takes them", panels[0].first.owner.loc)
            groups = [g for g in groups if not any(g is p for p in panels)]
            peak, used = _fit(groups, earlies, m.align[space], m.capacity[space] - region, space, addr_of, fn)
            an.early_starts |= used in (0, 1) and bool(early)
            peak += region
            for g in groups:
                addr_of[id(g)] += region
            for g in panels:
                addr_of[id(g)] = 0
            fn.attrs[f"{space}_peak"] = peak
            continue
        cap = m.capacity[space] - (UB_HEADROOM.get() if space == UB else 0)
        peak, used = _fit(groups, earlies, m.align[space], cap, space, addr_of, fn)
        an.early_starts |= used in (0, 1) and bool(early)
        if space == UB and apart:
            an.chunks_apart = used in (0, 2)
        key = "ub_peak" if space == UB else f"{space}_peak"
        if space == UB or groups:
            fn.attrs[key] = peak
        else:
            fn.attrs.pop(key, None)
    return an, addr_of


def annotate(fn, an: Analysis, addr_of: dict) -> None:
    def addr(v, space):
        g = an.group_of.get(id(v))
        if g is None or g.home != space:
            return None
        return addr_of.get(id(g))

    for op in fn.walk():
        op.attrs.pop("l1_stage", None)
        for space in ONCHIP:
            for k in (space, space + "_out"):
                op.attrs.pop(k, None)
        for space in ONCHIP:
            if op.name == "while":
                a = [addr(v, space) for v in op.regions[0].args]
                if any(x is not None for x in a):
                    op.attrs[space] = [x if x is not None else -1 for x in a]
            if op.name == "for":
                a = [addr(v, space) for v in op.regions[0].args[1:]]
                r = [addr(v, space) for v in op.results]
                if any(x is not None for x in a) and a != r:     # carried apart from the results
                    op.attrs[space + "_carry"] = [x if x is not None else -1 for x in a]
            if not op.results:
                continue
            addrs = [addr(r, space) for r in op.results]
            if all(x is None for x in addrs):
                continue
            key = space + "_out" if op.name == "while" else space
            if len(addrs) == 1 and op.name not in ("for", "if", "while"):
                op.attrs[key] = addrs[0]
            else:
                op.attrs[key] = [x if x is not None else -1 for x in addrs]
    for i, g in an.staged.items():
        g.first.owner.attrs["l1_stage"] = addr_of[id(g)]     # (copied there once it is made)


@register
class BufferPlanning(Pass):
    name = "buffer-planning"

    def run(self, fn) -> None:
        an, addr_of = plan(fn, fn.attrs.get("machine", "ascend910b") if isinstance(fn.attrs.get("machine"), str)
                           else "ascend910b")
        fn.__dict__["early_starts"] = an.early_starts       # (not an IR attribute)
        annotate(fn, an, addr_of)
