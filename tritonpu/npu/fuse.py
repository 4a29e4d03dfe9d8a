"""Straight runs of instructions, decoded as one closure.

Guarantees: a run of two or more consecutive instructions none of which chooses the next pc
(every family but control flow), and that no branch or loop enters in the middle, runs as one
generated Python function that calls the instructions' own closures in order and returns the pc
after the run — the interpreter's dispatch once per run instead of once per instruction. The
per-instruction closures stay at their own pcs (a jump may land on a run's first pc only).
Register-only scalar instructions (``mov``, integer/float arithmetic, conversions, compares,
``sel``: their decoders mark the closure with :func:`mark_pure`) are inlined unless a trace
records instructions one by one: the same compute functions, with the scalar clock (and the race
tracker's scalar epoch) advanced by their cycles (count) before the next instruction that is not
inlined issues, and their busy time and instruction count added at the end of the run — exactly
what the instructions one by one leave behind. An exception raised inside a run is attributed to
the instruction that raised it (:func:`failing_pc`).
"""
from __future__ import annotations

import functools

from .state import S

_CONTROL = {"ctrl"}          # families that choose the next pc (they end a run)

_PREFIX = "<npu straight run at pc "


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


def fuse_runs(st, prog, fns):
    """Put a fused closure at the first pc of every straight run of ``fns`` (in place)."""
    inline = st.trace is None
    entries = set()
    for inst in prog.code:
        if inst.target is not None:
            entries.update((inst.target, inst.target + 1))
    straight = [inst.spec.impl not in _CONTROL for inst in prog.code]
    pc, n = 0, len(fns)
    while pc < n:
        end = pc
        while end < n and straight[end] and (end == pc or end not in entries):
            end += 1
        if end - pc >= 2:
            fns[pc] = _compile(st, fns, pc, end, inline)
            pc = end
        else:
            pc = max(end, pc + 1)
    return fns


def _compile(st, fns, start, end, inline):
    names = {"R": st.R, "st": st}
    consts: list = []
    lines = ["def run():"]
    cost = count = 0
    pending = [0, 0]                # scalar cycles and instructions not yet on the clocks

    def catch_up():
        """The scalar clock (and the race tracker's scalar epoch) as the inlined instructions left
        them: the next instruction issues at it, or snapshots it."""
        if not pending[1]:
            return ""
        out = f"st.ts += {pending[0]}; " + (f"st.race.vc[{S}][{S}] += {pending[1]}; " if st.race else "")
        pending[:] = [0, 0]
        return out

    for i, pc in enumerate(range(start, end)):
        pure = getattr(fns[pc], "pure", None) if inline else None
        if pure is None:
            names[f"f{i}"] = fns[pc]
            # one line per instruction: the traceback's line names the instruction that raised
            lines.append(f"    {catch_up()}f{i}()")
            continue
        dst, compute, args, c = pure
        names[f"f{i}"] = compute
        lines.append(f"    R[{dst}] = f{i}({', '.join(_operand(v, consts) for v in args)})")
        cost += c
        count += 1
        pending[0] += c
        pending[1] += 1
    names.update((f"k{j}", v) for j, v in enumerate(consts))
    tail = catch_up()
    if tail:
        lines.append("    " + tail.rstrip("; "))
    if count:
        lines += [f"    st.busy[{S}] += {cost}", f"    st.cnt[{S}] += {count}"]
    lines.append(f"    return {end}")
    exec(_code("\n".join(lines), f"{_PREFIX}{start}>"), names)
    run = names["run"]
    run.fused = (start, end)
    return run


@functools.lru_cache(maxsize=4096)
def _code(source, filename):
    """The compiled run (the cores of a launch decode the same runs: compiled once)."""
    return compile(source, filename, "exec")


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

