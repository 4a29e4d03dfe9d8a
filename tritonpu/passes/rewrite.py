"""IR facts and rewriting helpers that several passes share.

* What a tile load is (``TILE_LOADS``) and which of its operands are valid extents
  (``load_extents``), what a pointer points into (``root``) and which arguments a piece of code
  may write (``written_by``).
* The ops of a loop body that compute a value from outside the loop only (``invariant_slice``).
* What a ``for`` loop's body computes from what (``LoopView``: the slice of ops computing a tile
  load's operands, the carried scalars whose next value is a pure function of the trip's).
* What one trip of a loop costs, estimated from its shapes (``trip_work``).
* Cloning ops with their regions through a value mapping (``clone``, ``clone_op``), a ``for``
  like another with a new body (``loop_like``), replacing every use of values (``replace_all_uses``).
* The values a ``for`` loop carries that always hold their initial value (``init_carries``).
"""
from __future__ import annotations

import copy

from tritonpu.ir import Function, Op, Region, Value
from tritonpu.ir import types as T
from tritonpu.ir.ops import TILE_LOADS  # noqa: F401  (shared with the passes from here)
_WRITES = {"store": 0, "store_tile": 0, "scatter_rows": 0, "atomic_rmw": 0, "atomic_cas": 0}
_POINTER_PATH = ("addptr", "splat", "broadcast", "expand_dims", "reshape", "permute")


def positive_step(v) -> bool:
    """A loop step known to be positive: a positive constant, or a grid size."""
    from tritonpu.passes.persistent import GRID_ARGS
    op = v.owner
    if op is None:
        return v.name in GRID_ARGS          # grid sizes (num_programs under the persistent loop)
    if op.name == "constant":
        return isinstance(op.attrs["value"], int) and op.attrs["value"] > 0
    return op.name == "num_programs"


_CYCLE = object()      # root(): the path came back to a carried pointer already being resolved


def root(ptr, _seen=()):
    """The kernel argument a pointer (or block of pointers) points into, or None if unknown.  A
    pointer a loop carries points into one argument when its initial value and every value the
    loop yields for it do (``src, dst = dst, src`` over two arguments: None)."""
    v = ptr
    while v.owner is not None and v.owner.name in _POINTER_PATH:
        v = v.owner.operands[0]
    if v.owner is not None and v.owner.name == "select":
        return _agree([root(x, _seen) for x in v.owner.operands[1:3]], _seen)
    if v.owner is not None or not v.type.is_ptr:
        return None
    if v.region is None:
        return v                            # a kernel argument
    if id(v) in _seen:
        return _CYCLE
    sources = _carried_from(v)
    if not sources:
        return None
    return _agree([root(x, _seen + (id(v),)) for x in sources], _seen)


def _agree(roots, seen):
    if any(r is None for r in roots):
        return None
    real = [r for r in roots if r is not _CYCLE]
    if not real:
        return _CYCLE if seen else None
    return real[0] if all(r is real[0] for r in real) else None


def _carried_from(arg) -> list:
    """The values a region argument takes: a loop's initial value and what its trips yield."""
    reg, op = arg.region, arg.region.parent
    if op is None:
        return []
    k = reg.args.index(arg)
    if op.name == "for" and k > 0:
        term = reg.terminator
        return [op.operands[2 + k]] + ([term.operands[k - 1]] if term is not None else [])
    if op.name == "while":
        before, after = op.regions
        if reg is before:
            term = after.terminator
            return [op.operands[k]] + ([term.operands[k]] if term is not None else [])
        term = before.terminator
        return [term.operands[1 + k]] if term is not None else []
    return []


def written_by(ops) -> set:
    """id() of every argument one of ``ops`` (nested too) may write; None if one is unknown."""
    out = set()
    for top in ops:
        for o in top.walk():
            if o.name in _WRITES:
                r = root(o.operands[_WRITES[o.name]])
                out.add(id(r) if r is not None else None)
    return out


def invariant_slice(body: Region, v):
    """Body ops computing v from values outside the loop (program order), or None."""
    defs = {id(r): o for o in body.ops for r in o.results}
    need, stack = set(), [v]
    while stack:
        x = stack.pop()
        o = defs.get(id(x))
        if o is None:
            if any(x is a for a in body.args):
                return None
            continue
        if id(o) in need:
            continue
        if o.regions or o.opdef.effects or o.opdef.terminator:
            return None
        need.add(id(o))
        stack.extend(o.operands)
    return [o for o in body.ops if id(o) in need]


def load_extents(ld: Op) -> list:
    """(operand index, value for a trip that does not exist) of each valid extent of a tile load:
    a trip that does not exist reads nothing (its last extent 0, the others full)."""
    if ld.name == "gather_rows":
        return [(2, 0)]                                  # valid_cols
    if ld.name == "gather_cols":
        return [(3, 0)]                                  # valid_rows
    shape = ld.result.type.shape
    rank = len(shape)
    return [(1 + rank + d, 0 if d == rank - 1 else shape[d]) for d in range(rank)]


def region_of(args: list, ops: list) -> Region:
    """A region of arguments ``args`` holding ``ops`` (their parent set)."""
    r = Region(args, ops)
    for o in ops:
        o.parent = r
    return r


def loop_like(loop: Op, args: list, ops: list) -> Op:
    """A ``for`` with ``loop``'s bounds, initial values, attributes and result names, and a body
    of region arguments ``args`` and ``ops``."""
    body = region_of(args, ops)
    new = Op("for", list(loop.operands), [r.type for r in loop.results], dict(loop.attrs), [body], loop.loc)
    for a, b in zip(loop.results, new.results):
        b.name = a.name
    return new


def clone(ops, mapping: dict, into: list, skip=()) -> None:
    """Clone ``ops`` (with their regions) into ``into``, operands through ``mapping`` (updated)."""
    for o in ops:
        if id(o) in skip:
            continue
        into.append(clone_op(o, mapping))


def clone_op(o: Op, mapping: dict) -> Op:
    regions = []
    for r in o.regions:
        args = [Value(a.type, a.name) for a in r.args]
        for a, b in zip(r.args, args):
            mapping[id(a)] = b
        inner: list = []
        clone(r.ops, mapping, inner)
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


def _constant_of(v):
    """(type, value) of a scalar constant or a splat of one, else None."""
    o = v.owner
    c = o.operands[0] if o is not None and o.name == "splat" and o.operands else v
    if c.owner is not None and c.owner.name == "constant" and not c.type.is_block:
        return str(v.type), repr(c.owner.attrs["value"])
    return None


def init_carries(loop: Op, resolve=None, constants: bool = False):
    """(index, init) for each of the values ``for`` op ``loop`` carries unchanged: its body yields the
    value's region argument or its initial value itself (after ``resolve``, a value -> value map
    of values already known to be others) -- or, with ``constants``, a constant (or a splat of
    one) equal to an initial value that is one (the accumulator a trip resets to the zeros it
    starts from).  Each holds its initial value on every trip and after the loop.  A generator:
    ``resolve`` may learn a carry's answer before the next carry is looked at."""
    resolve = resolve or (lambda v: v)
    body = loop.regions[0]
    for i, (arg, y) in enumerate(zip(body.args[1:], body.terminator.operands)):
        init = resolve(loop.operands[3 + i])
        if y is arg or resolve(y) is init or \
                (constants and _constant_of(init) is not None and _constant_of(init) == _constant_of(y)):
            yield i, init


def replace_all_uses(fn: Function, old, new) -> None:
    mapping = {id(a): b for a, b in zip(old, new)}
    for o in fn.walk():
        o.operands = [mapping.get(id(v), v) for v in o.operands]


class LoopView:
    """What one ``for`` op offers for rewriting its tile loads (prefetching, keeping them on chip)."""

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
        """Loads to prefetch: not the first-trip loads of an inner pipelined loop nor the loads of
        its straight-line last trips (already ahead: a ``prefetch`` group), and none from an
        argument the loop writes (a prefetch would read before that write)."""
        inits = {id(v) for o in self.body.ops if o.name == "for" for v in o.operands[3:]}
        written = written_by(self.body.ops)
        out = []
        for o in self.body.ops:
            if o.name not in TILE_LOADS or id(o.result) in inits or "prefetch" in o.attrs:
                continue
            arg = root(o.operands[0])
            if arg is None or None in written or id(arg) in written or (written and self.may_alias):
                continue
            out.append(o)
        # a load whose address needs another prefetched load (a gather's indices) is prefetched after it
        while True:
            ids = {id(o) for o in out}
            keep = [o for o in out if self.slice(o.operands, nexts, ids) is not None]
            if len(keep) == len(out):
                return out
            out = keep


def trip_count(lb: Value, ub: Value, step: Value, ops: list, loc) -> Value:
    """ceil((ub - lb) / step), built as ops appended to ``ops``: a loop's trip count (<= 0 when it
    runs none)."""
    def mk(name, operands, **attrs):
        o = Op(name, operands, [lb.type], attrs, loc=loc)
        ops.append(o)
        return o.result
    one = mk("constant", [], value=1)
    return mk("div", [mk("add", [mk("sub", [ub, lb]), mk("sub", [step, one])]), step])


def trip_work(lp: LoopView, loads=(), fills=()) -> tuple:
    """(MTE2, cube, vector) cycles of one trip of ``lp``'s loop, estimated from the shapes: the
    tiles ``loads`` and L1 panel ``fills`` bring at the L2 rate, its dots on the cube, its block
    ops on the vector unit."""
    return ops_work(lp.body.ops, loads, fills)


def ops_work(ops: list, loads=(), fills=()) -> tuple:
    """(MTE2, cube, vector) cycles of ``ops`` run once (the ops in their regions counted once),
    estimated from the shapes as :func:`trip_work` does."""
    import math

    from tritonpu.codegen.homes import tile_bytes
    from tritonpu.isa.machines import machine
    m = machine("ascend910b")
    mte2 = (sum(tile_bytes(ld.result.type) for ld in loads) +
            sum(math.prod(f.attrs["shape"]) * f.operands[2].type.scalar.pointee.bits // 8 for f in fills)) \
        / m.l2_bytes_per_cycle
    cube = vector = 0
    for o in (x for op in ops for x in op.walk()):
        if o.name == "dot":
            (mm, k), n = o.operands[0].type.shape[-2:], o.operands[1].type.shape[-1]
            k0 = m.cube_k0.get(str(o.operands[0].type.scalar), 16)
            cube += -(-mm // 16) * -(-n // 16) * -(-k // k0)
        elif o.results and o.results[0].type.is_block and o.opdef.kind in ("elementwise", "compare", "select",
                                                                             "cast", "reduce"):
            vector += -(-tile_bytes(o.results[0].type) // m.vector_repeat_bytes)
    return mte2, cube, vector


# ---- trying a rewrite on a copy ------------------------------------------------------------------
# Block ops that work element by element (tiling and epilogue-rows split them by rows).
ELEMENTWISE_KINDS = {"elementwise", "compare", "select", "splat", "broadcast", "constant", "arange"}


def fits_on_chip(fn, reuse=False, apart=False) -> bool:
    """Whether the blocks fit on chip as they are (buffer planning's judgement; ``reuse``: also
    with work done in place over loaded tiles, its last resort -- which then stays set on ``fn``;
    ``apart``: with each chunk of rows planned clear of the one before, see buffer_planning)."""
    from tritonpu.errors import CompilationError
    from tritonpu.passes.buffer_planning import plan
    try:
        an, _ = plan(fn, reuse=reuse)
    except CompilationError:
        return False
    return an.chunks_apart or not apart


def users_of(fn) -> dict:
    """id(value) -> [(op, operand index)] for every use in ``fn``."""
    out: dict = {}
    for o in fn.walk():
        for i, v in enumerate(o.operands):
            out.setdefault(id(v), []).append((o, i))
    return out


def feeds_element_access(fn, v) -> bool:
    """Whether the 2-D block ``v`` (of more than one row) leads, through pure ops making such
    blocks, only to the operands of one 2-D element-by-element ``load`` or ``store`` (which
    passes/element_rows.py can do a few rows at a time, computing ``v`` again per chunk)."""
    def two_d(x):
        return x.type.is_block and len(x.type.shape) == 2 and x.type.shape[0] > 1
    users = users_of(fn)
    todo, seen, accesses = [v], set(), set()
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        uses = [u for u, _ in users.get(id(x), [])]
        if not two_d(x) or not uses:
            return False
        for u in uses:
            if u.name in ("load", "store") and two_d(u.operands[0]):
                accesses.add(id(u))
                continue
            if u.regions or u.opdef.effects or len(u.results) != 1:
                return False
            todo.append(u.result)
    return len(accesses) == 1


def copy_function(fn):
    """An independent copy of ``fn`` to try a rewrite on: its ops cloned through a value map, their
    attributes' lists and dicts copied too (before: printed and parsed again -- a 16384-element
    ``tl.sort`` spent 48 s of a 167 s compile parsing its trial copies)."""
    mapping: dict = {}
    args = [Value(a.type, a.name) for a in fn.args]
    mapping.update({id(a): b for a, b in zip(fn.args, args)})
    body_args = [Value(a.type, a.name) for a in fn.body.args]
    mapping.update({id(a): b for a, b in zip(fn.body.args, body_args)})
    ops: list = []
    clone(fn.body.ops, mapping, ops)
    body = Region(body_args, ops)
    for o in ops:
        o.parent = body
    for o in (x for top in ops for x in top.walk()):
        o.attrs = {k: copy.deepcopy(v) if isinstance(v, (list, dict)) else v for k, v in o.attrs.items()}
    return Function(fn.name, args, body, copy.deepcopy(fn.attrs))


def split_that_fits(fn, n: int, split, apart=False, most=None, least=1) -> int | None:
    """The largest power of two ``t`` below ``n`` (at most ``most``, at least ``least``) that
    divides it and for which ``split(f, t)`` makes a copy of ``fn`` fit on chip (``apart``: see
    ``fits_on_chip``) -- then ``split(fn, t)`` is done -- or None.  ``split`` returning False
    gives up."""
    t = n
    while t > max(1, least):
        t //= 2
        if n % t or t < least or (most is not None and t > most):
            continue
        trial = copy_function(fn)
        if split(trial, t) is False:
            return None
        if fits_on_chip(trial, apart=apart):
            split(fn, t)
            return t
    return None


def shift_rows(op: Op, off: Value, t: int, new) -> None:
    """``op`` (a ``load_tile`` or ``store_tile``) moved ``off`` rows further, its valid rows
    ``clamp(valid - off, 0, t)``: the work of a tile of ``t`` rows starting at row ``off`` of the
    block it moved.  ``new(name, operands, type, **attrs)`` makes (and places) the ops for that."""
    def i64(v):
        return v if v.type == T.i64 else new("cast", [v], T.i64)
    rank = len((op.result.type if op.name == "load_tile" else op.operands[-1].type).shape)
    ptr, s0, v0 = op.operands[0], op.operands[1], op.operands[1 + rank]
    step = new("mul", [i64(off), i64(s0)], T.i64)
    op.operands[0] = new("addptr", [ptr, step], ptr.type)
    left = new("sub", [i64(v0), i64(off)], T.i64)
    left = new("maximum", [left, new("constant", [], T.i64, value=0)], T.i64)
    op.operands[1 + rank] = new("minimum", [left, new("constant", [], T.i64, value=t)], T.i64)


def sink_into_branches(fn: Function, region: Region, outer: Op, only=(0, 1), copy=False) -> None:
    """Pure ops before ``outer`` (an ``if`` in ``region``) used only inside one of its branches
    (of those ``only`` names: 0 then, 1 else) move into that branch: the other path does not
    compute them, nor keep their values alive.  ``copy``: a pure op making a block used only
    inside ``outer``, in both branches, is computed in each instead (once on either path: a branch
    that stores it may then take it where it is, an accumulator in L0C); in the ``only`` branches
    it reads a 2-D block made before ``outer`` through a ``slice`` of all its rows (an L0C
    accumulator is then drained by FIX in that branch alone)."""
    inside = [set(id(o) for top in r.ops for o in top.walk()) for r in outer.regions]
    users: dict = {}
    for o in fn.walk():
        for v in o.operands:
            users.setdefault(id(v), []).append(o)
    moved = True
    while moved:
        moved = False
        at = region.ops.index(outer)
        for o in reversed(region.ops[:at]):
            if o.regions or o.opdef.effects or o.opdef.terminator or not o.results:
                continue
            us = [u for r in o.results for u in users.get(id(r), [])]
            if not us:
                continue
            for k, ids in enumerate(inside):
                if k in only and all(id(u) in ids for u in us):
                    region.ops.remove(o)
                    outer.regions[k].ops.insert(0, o)
                    o.parent = outer.regions[k]
                    ids.add(id(o))
                    moved = True
                    break
            if not moved and copy and len(o.results) == 1 and o.result.type.is_block and \
                    all(id(u) in inside[0] | inside[1] for u in us):
                region.ops.remove(o)
                for v in o.operands:
                    users[id(v)] = [u for u in users.get(id(v), []) if u is not o]
                for k, ids in enumerate(inside):
                    mapping: dict = {}
                    c = clone_op(o, mapping)
                    for u in us:
                        if id(u) in ids:
                            u.operands = [c.result if v is o.result else v for v in u.operands]
                    made = [c]
                    if k in only:       # (the other branch reads a block of rows through a view of them all)
                        for j, v in enumerate(c.operands):
                            t = v.type
                            if t.is_block and len(t.shape) == 2 and t.shape[0] > 1 and not t.scalar.is_ptr:
                                whole = Op("slice", [v], [t], {"offsets": [0, 0]}, loc=c.loc)
                                c.operands[j] = whole.result
                                made.insert(0, whole)
                    for m in reversed(made):
                        outer.regions[k].ops.insert(0, m)
                        m.parent = outer.regions[k]
                        ids.add(id(m))
                        for v in m.operands:
                            users.setdefault(id(v), []).append(m)
                    users[id(c.result)] = [u for u in us if id(u) in ids]
                moved = True
            if moved:
                break
