"""L0C by halves: an accumulator too large for two in L0C is drained and restarted half by half.

When one accumulator takes more than half of L0C (128x256 fp32: all of it), no second one fits
beside it (``l0c_ring``), and the next program's products wait for FIX to drain the last one.  The
emitter issues such an accumulator by row halves (``emit_cube._l0c_halves``: each product as two
``mmad``s, the store as two drains) and records the halves' zeroing products and drains; this
rewrite, on the emitted program before sync insertion, makes the halves overlap: FIX drains the
first half while the cube still writes the second, and the next program's first product into the
second half waits for that half's drain after the first half's product, not ahead of it.

Guarantee.  :func:`by_halves` rewrites ``nodes`` in place:

- **drains start after their half's products.**  For each recorded drain D (FIX, reading an L0C
  range R) in a block whose nearest earlier node writing R on the cube is an ``If`` (the K loop's
  versions), each branch gets a :class:`~tritonpu.codegen.asmlist.Fence` on FIX reading R right
  after its last cube write of R -- when that is an instruction of the branch's own straight-line
  code (recursively through a last ``If``) with no FIX instruction after it on that path.  The sync
  pass then sets the cube's flag for R there, in the branch, not after the ``If`` behind the other
  half's products too.  A fence adds an order and does no work: nothing else changes.
- **the first product that runs zeroes.**  A recorded zeroing product Z (``mmad`` with k = 0 and
  ``init=1`` on R) whose block holds after it a product U on R at its own top level (U runs on
  every path, after Z), where every access to R in between -- in loops and branches too -- is a
  cube ``mmad`` on exactly R with ``init=0``: Z becomes ``mov sX, 1`` (``sX`` a register no
  instruction names), those products and U read ``init=sX``, and each but U is followed by ``mov
  sX, 0``.  The first of them that runs starts from zero, the others accumulate, as after Z: the
  same bits (``init=1`` starts from +0.0, as Z's zeros did; integers are exact).  The cube's first
  write of R is then that product -- after the other half's first product, so its wait for R's
  drain overlaps that work.  Z stays when no register is free or the conditions do not hold.
"""
from __future__ import annotations

from .asmlist import Fence, If, Instr, Loop, While, free_registers, instrs


def by_halves(nodes: list, zeros: list, drains: list) -> None:
    """Apply both rewrites for the recorded zeroing products and drains (see the module)."""
    for d in drains:
        _fence_drain(nodes, d)
    free = free_registers(nodes)
    for z in zeros:
        if not free:
            break
        if _first_product_zeroes(nodes, z, free[0]):
            free.pop(0)


def _l0c(accesses) -> list:
    return [(a.lo, a.hi) for a in accesses if a.space == "l0c"]


def _overlaps(accesses, r) -> bool:
    return any(lo < r[1] and r[0] < hi for lo, hi in _l0c(accesses))


def _cube_writes(nodes, r) -> bool:
    return any(i.pipe == "M" and _overlaps(i.writes, r) for i in instrs(nodes))


def _blocks(nodes):
    """Every block (list of nodes) in ``nodes``, itself first."""
    yield nodes
    for n in nodes:
        if isinstance(n, Loop):
            yield from _blocks(n.body)
        elif isinstance(n, If):
            yield from _blocks(n.then)
            yield from _blocks(n.orelse)
        elif isinstance(n, While):
            yield from _blocks(n.before)
            yield from _blocks(n.after)


def _where(nodes, ins):
    """(block, index) of the instruction ``ins`` (by identity), or None."""
    for b in _blocks(nodes):
        for j, n in enumerate(b):
            if n is ins:
                return b, j
    return None


def _fence_drain(nodes: list, drain: Instr) -> None:
    at = _where(nodes, drain)
    if at is None or len(_l0c(drain.reads)) != 1:
        return
    block, j = at
    r = _l0c(drain.reads)[0]
    k = next((k for k in range(j - 1, -1, -1) if _cube_writes([block[k]], r)), None)
    if k is not None and isinstance(block[k], If) and not any(i.pipe == "FIX" for i in instrs(block[k + 1:j])):
        _fence_after_last(block[k].then, r)
        _fence_after_last(block[k].orelse, r)


def _fence_after_last(branch: list, r) -> None:
    k = next((k for k in range(len(branch) - 1, -1, -1) if _cube_writes([branch[k]], r)), None)
    if k is None or any(i.pipe == "FIX" for i in instrs(branch[k + 1:])):
        return
    n = branch[k]
    if isinstance(n, If):
        _fence_after_last(n.then, r)
        _fence_after_last(n.orelse, r)
    elif isinstance(n, Instr):
        branch.insert(k + 1, Fence("", "FIX", reads=tuple(a for a in n.writes if a.space == "l0c")))


def _first_product_zeroes(nodes: list, z: Instr, reg: str) -> bool:
    at = _where(nodes, z)
    if at is None or "init=1" not in z.text or len(_l0c(z.writes)) != 1:
        return False
    block, j = at
    r = _l0c(z.writes)[0]
    chain = []
    for n in block[j + 1:]:
        touching = [i for i in instrs([n], heads=True) if _overlaps(i.reads + i.writes, r)]
        if any(not _product_on(i, r) for i in touching):
            return False
        chain += touching
        if isinstance(n, Instr) and touching:
            break
    else:
        return False        # no product on R that surely runs
    if any(_where(nodes, i) is None for i in chain):
        return False        # (in a guarded body: not rewritten)
    z.text, z.pipe, z.reads, z.writes = f"mov {reg}, 1", "S", (), ()
    z.comment = "the first product that runs zeroes its half of the accumulator"
    last = chain[-1]
    for i in chain:
        i.text = i.text.replace("init=0", f"init={reg}")
        if i is not last:
            b, k = _where(nodes, i)
            b.insert(k + 1, Instr(f"mov {reg}, 0", "S"))
    return True


def _product_on(i: Instr, r) -> bool:
    """Whether ``i`` is an accumulating product (``init=0``) writing exactly the range ``r``."""
    return i.pipe == "M" and i.text.startswith("mmad") and i.text.endswith("init=0") and _l0c(i.writes) == [r]
