"""The order a core runs its grid programs in: round robin, or one contiguous run of programs each.

The persistent loop (persistent.py) gives core c of C the grid programs c, c + C, c + 2C, ... .
An L1 panel (panel_reuse.py) keeps a dot operand's tiles for the core's *next* program, which
gains only when that program loads the same ones.  Under round robin it does when the grid's
order repeats with a period dividing C (Triton's grouped order with GROUP_SIZE_M 8 on 24 cores);
with ``pid_m = pid // num_pid_n`` and num_pid_n not dividing C (16 column blocks on 24 cores) no
two programs in a row of a core share an operand, while in contiguous runs -- core c runs
programs ``start_c .. start_c + n_c - 1``, ``n_c = P // C`` plus one for the first ``P % C``
cores -- all but one in num_pid_n do.  Runs are not taken where round robin shares nearly as much:
their cores read disjoint parts of the operands at the same time, so each core's first reads of
a line come from DDR, which round robin's neighbouring programs share (measured, 1024^3 grouped
64x64x32: 20327 cycles round robin, 21949 in runs).

Guarantees.  :func:`shares` counts, for the tags of a panel's candidates evaluated for every
program, how many of a core's programs share a tag with the program the core ran just before,
in each order.  :func:`run_in_order` rewrites the program loop ``for t in range(c, P, C)`` so
that trip t runs program ``start_c + t // C`` (``start_c = c * (P // C) + min(c, P % C)``): a
bijection of the same programs onto the same cores' trips, each program still run exactly once,
by one core, with ``set_program`` naming it -- so it only changes which core runs a program and
when; it is applied only to kernels whose programs cannot observe one another (no atomics, no
load of an argument the kernel writes), whose results it therefore leaves bitwise unchanged.
"""
from __future__ import annotations

import numpy as np

from tritonpu.ir import Function, Op
from tritonpu.ir import types as T
from tritonpu.passes.rewrite import root, written_by
from tritonpu.passes.persistent import CORES
from tritonpu.passes.specialize import launch_array, launch_scalar, launch_value

_READS = ("load", "load_tile", "gather_rows", "gather_cols")


def independent(fn: Function) -> bool:
    """Whether the kernel's programs cannot see one another's work: no atomics, and nothing loaded
    from an argument the kernel writes."""
    written = written_by(fn.body.ops)
    if None in written:
        return False
    for o in fn.walk():
        if o.name.startswith("atomic") or o.name == "print" or (o.name == "store_tile" and o.attrs.get("atomic")):
            return False
        if o.name in _READS:
            r = root(o.operands[0])
            if r is None or id(r) in written:
                return False
    return True


def programs_and_cores(fn: Function, P: Op):
    """(programs, cores running them) of the program loop ``P`` at this launch, or None."""
    total, cores = launch_value(fn, [], P.operands[1]), launch_scalar(CORES)
    if total is None or cores is None or total < 2:
        return None
    return int(total), min(int(cores), int(total))


def tags(fn: Function, P: Op, chain: list, leaves: list, programs: int):
    """The values ``leaves`` take in each program (an array of shape (programs, len(leaves))),
    computed by ``chain`` from the program id at this launch, or None when the launch's arguments
    do not give them."""
    pid = P.regions[0].args[0]
    known = {id(pid): np.arange(programs, dtype=pid.type.scalar.np)}
    cols = []
    for v in leaves:
        x = known[id(v)] if v is pid else launch_array(fn, chain, v, known)
        if x is None:
            return None
        cols.append(np.broadcast_to(np.asarray(x, dtype=np.int64), (programs,)))
    return np.stack(cols, axis=1)


def shares(tag_sets: list, programs: int, cores: int) -> tuple[int, int]:
    """(round robin, runs): the number of programs that share one of ``tag_sets``' tags (per
    candidate, per program) with the program their core ran just before."""
    def same(a, b):
        hit = np.zeros(len(a), bool)
        for t in tag_sets:
            hit |= (t[a] == t[b]).all(axis=1)
        return int(hit.sum())

    p = np.arange(programs)
    robin = same(p[:-cores], p[cores:]) if programs > cores else 0
    q, r = divmod(programs, cores)
    starts = {c * q + min(c, r) for c in range(1, cores)}
    nxt = np.array([x for x in range(1, programs) if x not in starts], dtype=np.int64)
    runs = same(nxt - 1, nxt) if len(nxt) else 0
    return robin, runs


def run_in_order(fn: Function, P: Op) -> None:
    """Give each core of the program loop ``P`` one contiguous run of programs (see the module)."""
    core, total, cores = P.operands[:3]
    body = P.regions[0]
    trip = body.args[0]
    loc = P.loc
    pre: list = []

    def mk(name, operands, into):
        o = Op(name, operands, [T.i32], loc=loc)
        into.append(o)
        return o.result

    q, r = mk("div", [total, cores], pre), mk("rem", [total, cores], pre)
    start = mk("add", [mk("mul", [core, q], pre), mk("minimum", [core, r], pre)], pre)
    head: list = []
    pid = mk("add", [start, mk("div", [trip, cores], head)], head)
    pid.name = "program"
    for o in P.walk():
        if o is not P:
            o.operands = [pid if v is trip else v for v in o.operands]
    body.ops[0:0] = head
    at = fn.body.ops.index(P)
    fn.body.ops[at:at] = pre
    for o in head:
        o.parent = body
    for o in pre:
        o.parent = fn.body
