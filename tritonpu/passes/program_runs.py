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
in each order.  :class:`Choice` says, for a launch's values, RUNS when runs are allowed (panel
reuse allows them where every program does the same work), share at all, at least twice as
often as round robin, and round robin with fewer than half; else ROBIN, or NONE when no program
shares in round robin either (a panel would never hit) -- and it is a guard: a launch whose
values choose otherwise compiles again, so no launch runs the order another launch chose.
:func:`run_in_order` rewrites the program loop ``for t in range(c, P, C)`` so that trip t runs program ``start_c + t // C`` (``start_c = c * (P // C) + min(c, P % C)``): a
bijection of the same programs onto the same cores' trips, each program still run exactly once,
by one core, with ``set_program`` naming it -- so it only changes which core runs a program and
when; it is applied only to kernels whose programs cannot observe one another (no atomics, no
load of an argument the kernel writes; no prints, whose order a user reads), whose results it
therefore leaves bitwise unchanged.
"""

from __future__ import annotations

import numpy as np

from tritonpu.ir import Function, Op
from tritonpu.ir import types as T
from tritonpu.passes.persistent import CORES
from tritonpu.passes.rewrite import TILE_LOADS, clone_op, root, written_by
from tritonpu.passes.specialize import lanes, slice_of


def independent(fn: Function) -> bool:
    """Whether the kernel's programs cannot see one another's work: no atomics, nothing loaded from
    an argument the kernel writes -- and no prints, whose order a user reads."""
    written = written_by(fn.body.ops)
    if None in written:
        return False
    for o in fn.walk():
        if o.name.startswith("atomic") or o.name == "print" or (o.name == "store_tile" and o.attrs.get("atomic")):
            return False
        if o.name == "load" or o.name in TILE_LOADS:
            r = root(o.operands[0])
            if r is None or id(r) in written:
                return False
    return True


RUNS, ROBIN, NONE = "runs", "round robin", "none"


class PerProgram:
    """Scalars the program loop computes from the program id and the launch's scalar arguments,
    evaluated for every program of a launch at once (for a choice of order that is a guard: it is
    asked again, for other launches' values, with copies of the ops it read)."""

    def __init__(self, pid, scalar_ops: list, total, cands: list, args: dict):
        self.pid, self.scalar_ops, self.total, self.cands, self.args = pid, scalar_ops, total, cands, args

    @classmethod
    def of(cls, fn: Function, P: Op, cands: list):
        """For the program loop ``P`` and ``cands`` ([(chain, leaves)]: the ops computing scalars
        from the program id, and the scalars wanted), or None when they do not follow from the
        program id and the launch's scalar values alone."""
        pid, total = P.regions[0].args[0], P.operands[1]
        slices = [slice_of(fn, total)]
        seen = {id(pid)}
        for chain, leaves in cands:
            seen |= {id(r) for o in chain for r in o.results}
            for x in [x for o in chain for x in o.operands] + list(leaves):
                if id(x) not in seen:
                    seen.add(id(x))
                    slices.append(slice_of(fn, x))
        if None in slices:
            return None
        args = {k: name for _, names in slices for k, name in names.items()}
        args[CORES] = CORES
        # (copies: later passes change the ops, and this choice is asked again at later launches;
        # a value two slices compute is read from its last copy, which every copy made later reads)
        mapping: dict = {}
        scalar_ops = [clone_op(o, mapping) for ops, _ in slices for o in ops]
        frozen = []
        for chain, leaves in cands:
            chain = [clone_op(o, mapping) for o in chain]
            frozen.append((chain, [mapping.get(id(v), v) for v in leaves]))
        return cls(pid, scalar_ops, mapping.get(id(total), total), frozen, args)

    def evaluate(self, scalars: dict):
        """(programs, [per candidate: an int64 array of (programs, leaves)]) for a launch with
        these scalar values -- (programs, None) when there are fewer than two; None when the
        values lack its grid."""
        if any(name not in scalars for name in self.args.values()):
            return None
        env = lanes(self.scalar_ops, {k: scalars[name] for k, name in self.args.items() if k != CORES}, 1)
        n = int(np.asarray(env[id(self.total)]).reshape(-1)[0])
        if n < 2:
            return n, None
        env[id(self.pid)] = np.arange(n, dtype=self.pid.type.scalar.np)
        out = []
        for chain, leaves in self.cands:
            lanes(chain, env, n)
            # (no leaves: every program has the same values)
            out.append(np.stack([np.broadcast_to(np.asarray(env[id(v)], dtype=np.int64), (n,))
                                 for v in leaves], axis=1) if leaves else np.zeros((n, 0), np.int64))
        return n, out


class Choice(PerProgram):
    """The order a launch runs its programs in, and whether a panel can hit in it, for any launch's
    scalar values -- a guard (``args``, ``holds``) for the compile that took it.  Its candidates'
    leaves are the tags of a panel's candidates."""

    def __init__(self, *a):
        super().__init__(*a)
        self.may_run = False        # runs allowed (programs independent, of equal work)
        self.expected = ROBIN

    def order(self, scalars: dict):
        """RUNS, ROBIN or NONE (no program shares a tag with its core's previous one in the order
        taken: a panel would never hit) for a launch with these scalar values; None when they lack
        its grid."""
        got = self.evaluate(scalars)
        if got is None:
            return None
        n, tag_sets = got
        if tag_sets is None:
            return NONE
        robin, runs = shares(tag_sets, n, min(int(scalars[CORES]), n))
        if self.may_run and runs > 0 and runs >= 2 * robin and 2 * robin < n:
            return RUNS
        return ROBIN if robin else NONE

    def holds(self, scalars: dict) -> bool:
        return (self.order(scalars) or ROBIN) == self.expected


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
    follows = np.ones(programs, bool)          # a program its core ran another one just before
    follows[[c * q + min(c, r) for c in range(cores)]] = False
    nxt = p[follows]
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
