"""Double buffering: a loop's tile loads are issued one trip ahead, into two buffers used in turn.

Guarantees: in a ``for`` loop with a positive step, every ``load_tile``/``gather_rows`` at the top
of the body whose address (pointer, strides, extents) is computed from the induction variable,
loop-invariant values and carried scalars whose next value is computed the same way, and which
reads a kernel argument that nothing in the loop writes (a prefetch runs before the trip's
stores: it must not be able to see one; with ``may_alias = true`` — the launch passed arrays that
share memory — a loop that writes anything prefetches nothing), is prefetched: the loop is unrolled by two; before it, the first trip's tiles are loaded into
buffer A (carried); each pair of trips loads trip i+1's tiles into buffer B before trip i's work,
runs trip i on A, loads trip i+2's tiles back into A (carried to the next pair) and runs trip i+1
on B — straight-line code, so the sync pass can set each flag right after its transfer; an odd
trip count leaves one trip, run after the loop on the tiles already in A.  A prefetch for a trip that does not exist reads nothing (its first
valid extent along the last dimension is 0, the others full), so no address outside the
program's own accesses is touched, and every trip
computes, reads and writes exactly what it did before.  MTE2 then brings trip i+1 while the vector
unit and the cube work on trip i and MTE3 drains trip i-1; the sync pass orders the two buffers.
When the on-chip space does not allow the second buffers the loop is left as it is and marked
``{double_buffer = "off: ..."}`` in the IR.  The launch option ``double_buffer=False`` (CLI
``--no-double-buffer``) leaves this pass out.
"""
from __future__ import annotations

from tritonpu.errors import CompilationError
from tritonpu.ir import Function, Op, Region, Value
from tritonpu.ir import types as T
from tritonpu.passes.manager import Pass, register

_LOADS = ("load_tile", "gather_rows")


def _positive_step(v) -> bool:
    from tritonpu.passes.persistent import GRID_ARGS
    op = v.owner
    if op is None:
        return v.name in GRID_ARGS          # grid sizes (num_programs under the persistent loop)
    if op.name == "constant":
        return isinstance(op.attrs["value"], int) and op.attrs["value"] > 0
    return op.name == "num_programs"


class _Loop:
    """What one for op offers for prefetching."""

    def __init__(self, op: Op, may_alias: bool = False):
        self.op = op
        self.may_alias = may_alias
        self.body = op.regions[0]
        self.term = self.body.terminator
        self.iv, *self.iters = self.body.args
        self.in_body = {id(o) for o in self.body.ops}
        self.defs = {id(r): o for o in self.body.ops for r in o.results}

    def slice(self, values, allowed_args, loads=()) -> list | None:
        """Body ops computing ``values`` (program order), or None if that needs anything but pure ops,
        the loads in ``loads`` (ids), the induction variable and ``allowed_args``."""
        need, stack = set(), list(values)
        while stack:
            v = stack.pop()
            o = self.defs.get(id(v))
            if o is None:
                if v.owner is None and v in self.body.args and v is not self.iv and \
                        all(v is not a for a in allowed_args):
                    return None
                continue
            if id(o) in need:
                continue
            if o.regions or o.opdef.terminator or (o.opdef.effects and id(o) not in loads):
                return None
            need.add(id(o))
            stack.extend(o.operands)
        return [o for o in self.body.ops if id(o) in need]

    def next_computable(self) -> list:
        """Carried values whose next value is a pure function of the trip's scalars."""
        ok = [a for a in self.iters if not a.type.is_block]
        while True:
            keep = [a for a in ok if self.slice([self.term.operands[self.iters.index(a)]], ok) is not None]
            if len(keep) == len(ok):
                return ok
            ok = keep

    def candidates(self, nexts) -> list:
        """Loads to prefetch: not the first-trip loads of an inner pipelined loop (already ahead),
        and none from an argument the loop writes (a prefetch would read before that write)."""
        inits = {id(v) for o in self.body.ops if o.name == "for" for v in o.operands[3:]}
        written = _written_roots(self.body)
        out = []
        for o in self.body.ops:
            if o.name not in _LOADS or id(o.result) in inits:
                continue
            root = _root(o.operands[0])
            if root is None or None in written or id(root) in written or (written and self.may_alias):
                continue
            out.append(o)
        # a load whose address needs another prefetched load (a gather's indices) is prefetched after it
        while True:
            ids = {id(o) for o in out}
            keep = [o for o in out if self.slice(o.operands, nexts, ids) is not None]
            if len(keep) == len(out):
                return out
            out = keep


_WRITES = {"store": 0, "store_tile": 0, "scatter_rows": 0, "atomic_rmw": 0, "atomic_cas": 0}
_POINTER_PATH = ("addptr", "splat", "broadcast", "expand_dims", "reshape", "permute")


def _root(ptr):
    """The kernel argument a pointer (or block of pointers) points into, or None if unknown."""
    v = ptr
    while v.owner is not None and v.owner.name in _POINTER_PATH:
        v = v.owner.operands[0]
    if v.owner is not None and v.owner.name == "select":
        a, b = _root(v.owner.operands[1]), _root(v.owner.operands[2])
        return a if a is not None and a is b else None
    return v if v.owner is None and v.type.is_ptr else None


def _written_roots(region) -> set:
    """id() of every argument some op in ``region`` (nested too) may write; None if one is unknown."""
    return written_by(region.ops)


def written_by(ops) -> set:
    """id() of every argument one of ``ops`` (nested too) may write; None if one is unknown."""
    out = set()
    for top in ops:
        for o in top.walk():
            if o.name in _WRITES:
                r = _root(o.operands[_WRITES[o.name]])
                out.add(id(r) if r is not None else None)
    return out


def loop_like(loop: Op, args: list, ops: list) -> Op:
    """A ``for`` with ``loop``'s bounds, initial values, attributes and result names, and a body
    of region arguments ``args`` and ``ops``."""
    body = Region(args, ops)
    for o in ops:
        o.parent = body
    new = Op("for", list(loop.operands), [r.type for r in loop.results], dict(loop.attrs), [body], loop.loc)
    for a, b in zip(loop.results, new.results):
        b.name = a.name
    return new


def _clone(ops, mapping: dict, into: list, skip=()) -> None:
    """Clone ``ops`` (with their regions) into ``into``, operands through ``mapping`` (updated)."""
    for o in ops:
        if id(o) in skip:
            continue
        into.append(_clone_op(o, mapping))


def _clone_op(o: Op, mapping: dict) -> Op:
    regions = []
    for r in o.regions:
        args = [Value(a.type, a.name) for a in r.args]
        for a, b in zip(r.args, args):
            mapping[id(a)] = b
        inner: list = []
        _clone(r.ops, mapping, inner)
        nr = Region(args, inner)
        for x in inner:
            x.parent = nr
        regions.append(nr)
    n = Op(o.name, [mapping.get(id(v), v) for v in o.operands], [r.type for r in o.results], dict(o.attrs),
           regions, o.loc)
    for a, b in zip(o.results, n.results):
        b.name = a.name
        mapping[id(a)] = b
    return n


@register
class DoubleBuffer(Pass):
    name = "double-buffer"

    def run(self, fn: Function) -> None:
        # inner loops first: an outer loop's unrolled copies then carry the pipelined inner loops
        for op in reversed([o for o in fn.walk() if o.name == "for"]):
            if op.attrs.get("double_buffer"):
                continue
            self._loop(fn, op)

    def _loop(self, fn: Function, op: Op) -> None:
        lb, ub, step = op.operands[:3]
        if not _positive_step(step):
            return
        lp = _Loop(op, bool(fn.attrs.get("may_alias")))
        nexts = lp.next_computable()
        loads = lp.candidates(nexts)
        if not loads:
            return
        region = op.parent
        saved = list(region.ops)
        new_ops = self._rewrite(lp, loads, nexts)
        rest = new_ops[-1]
        _replace_all_uses(fn, op.results, rest.results)
        i = region.ops.index(op)
        region.ops[i:i + 1] = new_ops
        for o in new_ops:
            o.parent = region
        from tritonpu.passes.buffer_planning import plan
        try:
            plan(fn, reuse=False)
        except CompilationError as e:
            region.ops = saved
            _replace_all_uses(fn, rest.results, op.results)
            reason = str(e).split("error: ", 1)[-1].split(" at once")[0]
            op.attrs["double_buffer"] = f"off: {reason} with two buffers per load"

    def _rewrite(self, lp: _Loop, loads: list, nexts: list) -> list:
        op = lp.op
        lb, ub, step = op.operands[:3]
        inits = op.operands[3:]
        loc = op.loc
        out: list = []

        def mk(name, operands, ty, into, **attrs):
            o = Op(name, operands, [ty], attrs, loc=loc)
            into.append(o)
            return o.result

        def exists(iv, into):
            return mk("cmp", [iv, ub], T.i1, into, pred="lt")

        def load_at(iv, iters_map, ok, into):
            """Clone the candidate loads at trip ``iv`` with the carried scalars ``iters_map``;
            their first valid extent is 0 unless ``ok``."""
            m = {id(lp.iv): iv, **iters_map}
            ids = {id(ld) for ld in loads}
            addr = lp.slice([v for ld in loads for v in ld.operands], nexts, ids)
            order = {id(o): k for k, o in enumerate(lp.body.ops)}
            cloned = {}
            for o in sorted({id(o): o for o in addr + loads}.values(), key=lambda o: order[id(o)]):
                if id(o) not in ids:
                    into.append(_clone_op(o, m))
                    continue
                n = _clone_op(o, m)
                # a trip that does not exist reads nothing: its last valid extent is 0; the others
                # are full, so no fill is needed either (the tile is all pad and never used)
                for k, full in _extents(o):
                    v = n.operands[k]
                    alt = mk("constant", [], v.type, into, value=full)
                    n.operands[k] = mk("select", [ok, v, alt], v.type, into)
                into.append(n)
                cloned[id(o)] = n.result
            return [cloned[id(ld)] for ld in loads]

        def next_iters(iv, iters_vals, into):
            """Carried scalars of the following trip: their yield slices at (iv, iters)."""
            m = {id(lp.iv): iv}
            m.update({id(a): v for a, v in zip(lp.iters, iters_vals)})
            ys = [lp.term.operands[lp.iters.index(a)] for a in nexts]
            _clone(lp.slice(ys, nexts) or [], m, into)
            return {id(a): m.get(id(y), y) for a, y in zip(nexts, ys)}

        # prologue: trip lb into buffer A
        first = exists(lb, out)
        xa0 = load_at(lb, {id(a): v for a, v in zip(lp.iters, inits)}, first, out)
        two = mk("mul", [step, mk("constant", [], step.type, out, value=2)], step.type, out)
        last_pair = mk("sub", [ub, step], ub.type, out)      # a pair starts at iv when iv + step < ub
        # the pair of trips iv (on A) and iv + step (on B), straight-line
        body: list = []
        iv = Value(lp.iv.type, lp.iv.name)
        iters = [Value(a.type, a.name) for a in lp.iters]
        xa = [Value(ld.result.type, ld.result.name) for ld in loads]
        iv1 = mk("add", [iv, step], iv.type, body)
        ok1 = exists(iv1, body)
        nxt = next_iters(iv, iters, body)
        xb = load_at(iv1, nxt, ok1, body)
        skip = {id(ld) for ld in loads}
        m = {id(lp.iv): iv, **{id(a): v for a, v in zip(lp.iters, iters)},
             **{id(ld.result): x for ld, x in zip(loads, xa)}}
        _clone(lp.body.ops[:-1], m, body, skip)
        x1 = [m.get(id(y), y) for y in lp.term.operands]
        iv2 = mk("add", [iv, two], iv.type, body)
        ok2 = exists(iv2, body)
        nxt2 = next_iters(iv1, x1, body)
        xa2 = load_at(iv2, nxt2, ok2, body)
        m2 = {id(lp.iv): iv1, **{id(a): v for a, v in zip(lp.iters, x1)},
              **{id(ld.result): x for ld, x in zip(loads, xb)}}
        _clone(lp.body.ops[:-1], m2, body, skip)
        body.append(Op("yield", [m2.get(id(y), y) for y in lp.term.operands] + xa2, [], loc=loc))
        new_region = Region([iv] + iters + xa, body)
        for o in body:
            o.parent = new_region
        loop = Op("for", [lb, last_pair, two] + list(inits) + xa0,
                  [a.type for a in lp.iters] + [x.type for x in xa], dict(op.attrs), [new_region], loc)
        loop.attrs["double_buffer"] = "on"
        out.append(loop)
        # an odd trip count leaves one trip, its tiles already in A: iv = lb + pairs * 2 * step
        span = mk("sub", [last_pair, lb], lb.type, out)
        span = mk("maximum", [span, mk("constant", [], lb.type, out, value=0)], lb.type, out)
        pairs = mk("div", [mk("add", [span, mk("sub", [two, mk("constant", [], lb.type, out, value=1)],
                                                lb.type, out)], lb.type, out), two], lb.type, out)
        iv_r = mk("add", [lb, mk("mul", [pairs, two], lb.type, out)], lb.type, out)
        ok_r = exists(iv_r, out)
        xs = list(loop.results[:len(lp.iters)])
        tail = list(loop.results[len(lp.iters):])
        m3 = {id(lp.iv): iv_r, **{id(a): v for a, v in zip(lp.iters, xs)},
              **{id(ld.result): x for ld, x in zip(loads, tail)}}
        then: list = []
        _clone(lp.body.ops[:-1], m3, then, skip)
        then.append(Op("yield", [m3.get(id(y), y) for y in lp.term.operands], [], loc=loc))
        regions = [Region([], then), Region([], [Op("yield", xs, [], loc=loc)])]
        for r in regions:
            for o in r.ops:
                o.parent = r
        rest = Op("if", [ok_r], [a.type for a in lp.iters], regions=regions, loc=loc)
        for a, b in zip(op.results, rest.results):
            b.name = a.name
        out.append(rest)
        return out


def _extents(ld: Op) -> list:
    """(operand index, value for a trip that does not exist) of each valid extent of a load."""
    if ld.name == "gather_rows":
        return [(2, 0)]                                  # valid_cols
    shape = ld.result.type.shape
    rank = len(shape)
    return [(1 + rank + d, 0 if d == rank - 1 else shape[d]) for d in range(rank)]


def _replace_all_uses(fn: Function, old, new) -> None:
    mapping = {id(a): b for a, b in zip(old, new)}
    for o in fn.walk():
        o.operands = [mapping.get(id(v), v) for v in o.operands]
