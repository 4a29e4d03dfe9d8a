"""Buffer planning: a Unified Buffer address for every value that lives on chip.

Guarantees: every UB-resident value (see :mod:`tritonpu.codegen.analysis`: blocks, and scalars
the vector unit computes) gets a byte address in UB, written as the attribute ``ub`` on the op
that defines it (a list, one per result, on ``for``/``if``; ``while`` also gets ``ub_out`` for its
results).  Addresses are multiples of the UB alignment (32 B); two groups whose live intervals
overlap never overlap in UB; a group's space is reused once it is dead (first fit, in order of
definition).  A view (``expand_dims``, ``reshape``, ``broadcast``, ``permute``, same-width
``bitcast``) shares its operand's address.  The function attribute ``ub_peak`` is the bytes the
plan needs; if that exceeds the machine's UB, a ``CompilationError`` names the largest value live
at the peak, its size and the capacity.
"""
from __future__ import annotations

from tritonpu.codegen.analysis import UB, Analysis
from tritonpu.errors import CompilationError
from tritonpu.isa.machines import machine as get_machine
from tritonpu.passes.manager import Pass, register


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def plan(fn, machine="ascend910b") -> tuple[Analysis, dict]:
    """(analysis, id(group) -> address); raises CompilationError when UB overflows."""
    m = get_machine(machine)
    align, cap = m.align["ub"], m.capacity["ub"]
    an = Analysis(fn)
    groups = sorted((g for g in an.groups if g.home == UB), key=lambda g: (g.start, -g.bytes))
    active: list = []        # (addr, end_addr, group)
    addr_of: dict = {}
    peak = 0
    for g in groups:
        active = [a for a in active if a[2].end >= g.start]
        size = _align(max(g.bytes, 1), align)
        at = 0
        for lo, hi, _ in sorted(active, key=lambda a: a[0]):
            if at + size <= lo:
                break
            at = max(at, _align(hi, align))
        active.append((at, at + size, g))
        addr_of[id(g)] = at
        if at + size > peak:
            peak = at + size
            if peak > cap:
                live = max(active, key=lambda a: a[1] - a[0])[2]
                v = live.first
                where = v.owner.loc if v.owner is not None else None
                name = f"`{v.name}`" if v.name else f"a {v.type} value"
                raise CompilationError(
                    f"the kernel needs {peak} bytes of Unified Buffer at once but UB holds {cap}: {name} "
                    f"({v.type}) alone takes {live.bytes} bytes; use smaller blocks",
                    getattr(where, "file", None), getattr(where, "line", None))
    fn.attrs["ub_peak"] = peak
    return an, addr_of


def annotate(fn, an: Analysis, addr_of: dict) -> None:
    def addr(v):
        g = an.group_of.get(id(v))
        return addr_of.get(id(g)) if g is not None else None

    for op in fn.walk():
        for k in ("ub", "ub_out"):
            op.attrs.pop(k, None)
        if op.name == "while":
            a = [addr(v) for v in op.regions[0].args]
            if any(x is not None for x in a):
                op.attrs["ub"] = [x if x is not None else -1 for x in a]
        if not op.results:
            continue
        addrs = [addr(r) for r in op.results]
        if all(x is None for x in addrs):
            continue
        key = "ub_out" if op.name == "while" else "ub"
        if len(addrs) == 1 and op.name not in ("for", "if", "while"):
            op.attrs[key] = addrs[0]
        else:
            op.attrs[key] = [x if x is not None else -1 for x in addrs]


@register
class BufferPlanning(Pass):
    name = "buffer-planning"

    def run(self, fn) -> None:
        an, addr_of = plan(fn, fn.attrs.get("machine", "ascend910b") if isinstance(fn.attrs.get("machine"), str)
                           else "ascend910b")
        annotate(fn, an, addr_of)
