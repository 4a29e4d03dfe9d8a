"""Straight runs of register-only scalar instructions, decoded as one closure.

Guarantees: a run of two or more consecutive instructions that only compute a register from
registers and constants (``mov``, integer/float arithmetic, conversions, compares, ``sel``; their
decoders mark the closure with :func:`mark_pure`), and that no branch or loop enters in the
middle, runs as one generated Python function: the same compute functions in the same order, then
one timing update (the scalar clock, its busy time and instruction count, by the run's total) —
which is what the instructions one by one would have left, since nothing observes the scalar
clock between them. The function returns the pc after the run; the per-instruction closures stay
at their own pcs (jumps may land on the run's first instruction only). Runs are fused only when
nothing records instructions one by one (no trace, no race tracker). An exception raised inside
a run is attributed to the instruction that raised it (:func:`failing_pc`).
"""
from __future__ import annotations

from .state import S

_PREFIX = "<npu scalar run at pc "


def mark_pure(run, dst, compute, args, cost):
    """Mark decoded closure ``run`` as ``R[dst] = compute(*args)`` costing ``cost`` scalar cycles;
    ``args`` are program Vals (registers with an offset, or static values)."""
    run.pure = (dst, compute, args, cost)
    return run


def _operand(v, consts):
    if v.reg is None:
        consts.append(v.value())
        return f"k{len(consts) - 1}"
    k = v.const + v.symval
    return f"R[{v.reg}]" if k == 0 else f"(R[{v.reg}] + {k!r})"


def fuse_scalar_runs(st, prog, fns):
    """Put a fused closure at the first pc of every fusable run of ``fns`` (in place)."""
    if st.trace is not None or st.race is not None:
        return fns
    entries = set()
    for inst in prog.code:
        if inst.target is not None:
            entries.update((inst.target, inst.target + 1))
    pc, n = 0, len(fns)
    while pc < n:
        end = pc
        while end < n and hasattr(fns[end], "pure") and (end == pc or end not in entries):
            end += 1
        if end - pc >= 2:
            fns[pc] = _compile(st, fns, pc, end)
            pc = end
        else:
            pc = max(end, pc + 1)
    return fns


def _compile(st, fns, start, end):
    names = {"R": st.R, "st": st}
    consts: list = []
    lines = ["def run():"]
    cost = 0
    for i, pc in enumerate(range(start, end)):
        dst, compute, args, c = fns[pc].pure
        names[f"f{i}"] = compute
        ops = ", ".join(_operand(v, consts) for v in args)
        lines.append(f"    R[{dst}] = f{i}({ops})")          # line i + 2 <-> pc start + i
        cost += c
    names.update((f"k{j}", v) for j, v in enumerate(consts))
    lines += [f"    st.ts += {cost}", f"    st.busy[{S}] += {cost}",
              f"    st.cnt[{S}] += {end - start}", f"    return {end}"]
    code = compile("\n".join(lines), f"{_PREFIX}{start}>", "exec")
    exec(code, names)
    run = names["run"]
    run.fused = (start, end)
    return run


def failing_pc(fns, pc, exc):
    """The pc of the instruction that raised ``exc`` while ``fns[pc]`` ran: inside a fused run,
    the one on the traceback's line of the generated function; otherwise ``pc``."""
    span = getattr(fns[pc], "fused", None)
    if span is None:
        return pc
    tb = exc.__traceback__
    name = f"{_PREFIX}{span[0]}>"
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == name:
            return min(span[0] + tb.tb_lineno - 2, span[1] - 1)
        tb = tb.tb_next
    return pc

