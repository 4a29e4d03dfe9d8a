"""L0C ring: the programs a core runs in turn accumulate in alternate halves of L0C.

A persistent matmul drains each program's accumulator with FIX at the program's end; with one
accumulator in L0C the next program's first ``mmad`` waits for that drain, and the cube idles for
it at every change of program.  When the programs' L0C tiles fit half of L0C, the trips of the
persistent loop take turns over the two halves: FIX drains program i's accumulator while the cube
computes program i+1's in the other half.

Guarantee.  :func:`ring_l0c` rewrites, in place, a persistent program loop (``Loop.programs``)
of an emitted program, before sync insertion, whose body addresses L0C only at constant addresses
below half of L0C, and where on every path through the body the cube's (M's) L0C accesses all
come before the other pipes' (FIX's drains), with a place between them that is not inside a loop:
- every L0C operand of the body is addressed ``l0c[R+addr]``, where ``R`` -- a scalar register no
  instruction of the program names -- is 0 before the loop and flips between 0 and the half at
  the end of each trip; so trip t and trip t+1 touch disjoint halves, trip t and t+2 the same one;
- a :class:`~tritonpu.codegen.asmlist.Fence` on M goes there, on every path (in both branches of
  an ``if`` that holds the drains), reading the space ``l0c:ring``, which every non-M L0C access of
  the body also writes; so the sync pass makes M wait there for the previous trip's drains (in M's
  queue: after this trip's products, before the next trip's, which write the half those drains
  read);
- the loop is marked ``l0c_ring``: at its back edge the sync pass does not carry what M is not
  yet ordered after among the trip's non-M L0C accesses (the next trip writes the other half; the
  trip after it is ordered by the fence).
Nothing is changed otherwise (more than half of L0C, an L0C read of bytes the trip may not have
written first -- what an earlier program left there --, cube work after a drain or in one loop
with it, no free register, the loop not the program's last node, or no drain to overlap).  Results are bitwise
the same: each program computes the same products, in another place.
"""
from __future__ import annotations

import re

from .asmlist import Access, Fence, If, Instr, Loop, While, free_registers, instrs

_L0C_OPERAND = re.compile(r"\bl0c\[([^\],]*)")
RING_SPACE = "l0c:ring"


def ring_l0c(nodes: list, capacity: int, align: int) -> bool:
    """Apply the ring to the persistent loop among ``nodes`` (top level); True when it did."""
    k = next((i for i, n in enumerate(nodes) if isinstance(n, Loop) and n.programs), None)
    if k is None or any(instrs([n]) for n in nodes[k + 1:]):
        return False
    loop = nodes[k]
    half = capacity // 2 // align * align
    body = instrs(loop.body)
    l0c = [i for i in body if any(a.space == "l0c" for a in i.reads + i.writes)]
    on = {id(i): i.pipe for i in l0c}           # (by identity: equal texts are distinct instructions)
    if not l0c or any(a.space == "l0c" and a.hi > half for i in l0c for a in i.reads + i.writes):
        return False
    if any(not m.group(1).isdigit() for i in l0c for m in _L0C_OPERAND.finditer(i.text)):
        return False
    if not any(p == "M" for p in on.values()) or not any(p != "M" for p in on.values()):
        return False
    if _fresh(loop.body, frozenset(), align) is None:
        return False
    fences = _fences(loop.body, on)
    if fences is None:
        return False
    free = free_registers(nodes)
    if not free:
        return False
    reg = free[0]
    for i in l0c:
        i.text = _L0C_OPERAND.sub(lambda m: f"l0c[{reg}+{m.group(1)}", i.text)
        if i.pipe != "M":
            i.writes = tuple(i.writes) + (Access(RING_SPACE, 0, 1),)
    for where, j in reversed(fences):        # (from the last: earlier indices stay valid)
        where.insert(j, Fence("", "M", reads=(Access(RING_SPACE, 0, 1),)))
    loop.body.append(Instr(f"sub.i32 {reg}, {half}, {reg}", "S", comment="L0C half of the next program"))
    nodes.insert(k, Instr(f"mov {reg}, 0", "S", comment="programs alternate halves of L0C"))
    loop.l0c_ring = True
    return True


def _fresh(nodes: list, written: frozenset, granule: int):
    """The L0C granules ``nodes`` surely write, added to ``written``; None when some L0C read may
    find bytes that this trip has not written on its way there (a value an earlier program left in
    L0C: in the other half, under the ring)."""
    for n in nodes:
        if isinstance(n, Instr):
            for a in n.reads:
                if a.space == "l0c" and not set(range(a.lo // granule, -(-a.hi // granule))) <= written:
                    return None
            for a in n.writes:
                if a.space == "l0c":
                    written = written | set(range(-(-a.lo // granule), a.hi // granule))
        elif isinstance(n, If):
            if _fresh(n.test, written, granule) is None:
                return None
            then, orelse = _fresh(n.then, written, granule), _fresh(n.orelse, written, granule)
            if then is None or orelse is None:
                return None
            written = then & orelse
        elif isinstance(n, Loop):           # (may run no trip; a later trip finds at least as much)
            if _fresh(n.body, written, granule) is None:
                return None
        elif isinstance(n, While):          # (``before`` and the test run at least once)
            first = _fresh(n.before + n.test, written, granule)
            if first is None or _fresh(n.after, first, granule) is None:
                return None
            written = first
    return written


def _fences(nodes: list, on: dict):
    """[(list, index)]: where fences go so that each path through ``nodes`` meets one, after every
    cube (M) access of L0C on that path and before every other pipe's; None when there is no such
    place (a loop holding both, or cube work after the drain)."""
    def has(ns, cube):
        return any((on.get(id(i)) == "M") == cube for i in instrs(ns) if id(i) in on)
    j = next((j for j, n in enumerate(nodes) if has([n], False)), len(nodes))
    if has(nodes[j + 1:], True):
        return None
    if j == len(nodes) or not has([nodes[j]], True):
        return [(nodes, j)]
    n = nodes[j]
    if not isinstance(n, If):
        return None
    then, orelse = _fences(n.then, on), _fences(n.orelse, on)
    return None if then is None or orelse is None else then + orelse
