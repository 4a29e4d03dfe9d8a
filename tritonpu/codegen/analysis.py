"""Analyses the NPU back end shares: where each value lives, and how long.

* **Homes.**  Block values live in the Unified Buffer (UB); scalar values live in scalar
  registers, except scalars computed by the vector unit (a reduction's result, or arithmetic on
  one), which stay in UB as one-element tiles so that no V -> S round trip is needed.  Loop- and
  branch-carried values take the home of what flows into them (a fixed point).
* **Cube homes.**  A 2-D ``load_tile`` with contiguous rows, or a row or column gather, whose every
  use is a ``tl.dot`` operand (directly or through ``tl.trans``) lives in L1: MTE2 brings it there
  without touching UB.  A
  value a ``for`` loop carries only as the ``acc`` of one dot whose result it yields, starting
  from zeros, lives in L0C across the loop: the cube accumulates in place and FIX drains it once
  after the loop (the loop's result is a UB tile).
* **Views.**  ``expand_dims``, ``reshape``, ``broadcast``, ``permute`` and same-width ``bitcast``
  make no copy: their result is a strided view of their operand's buffer.
* **In place.**  A one-instruction elementwise op may write its result over an operand it reads
  last, except a loaded tile (its buffer belongs to its transfers, so that the next load into it
  does not wait for the store of the result) — unless the function carries ``reuse_loaded_tiles``,
  which buffer planning sets when the kernel fits UB only that way.
* **Groups and live intervals.**  Ops are numbered in program order (an op with regions gets a
  start and an end number around its regions).  Values that must share storage form a group
  (a value and its views; a loop's carried value, its region argument and its result; an if's
  result); a group is live from its first definition to its last use, extended to the end of any
  loop that uses it but is entered after it was defined (the next trip reads it again).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tritonpu.ir import Function, Op, Value
from tritonpu.ir.ops import TILE_LOADS

UB, REG, L1, L0C = "ub", "reg", "l1", "l0c"
NOWHERE = "none"        # a value nothing reads (an L0C accumulator's zeros)
ONCHIP = (UB, L1, L0C)
VIEW_OPS = frozenset(("expand_dims", "reshape", "broadcast", "permute", "bitcast"))
VECTOR_SCALAR_OPS = frozenset(("reduce",))
LOOPS = frozenset(("for", "while"))


def elem_bytes(ty) -> int:
    """Bytes per element on chip: pointers are 8-byte offsets, i1 masks one byte."""
    s = ty.scalar
    if s.is_ptr:
        return 8
    return max(1, s.bits // 8)


def tile_bytes(ty) -> int:
    return elem_bytes(ty) * (ty.numel if ty.is_block else 1)


@dataclass
class Group:
    """Values sharing one home, live over [start, end]."""
    values: list = field(default_factory=list)
    start: int = 1 << 60
    end: int = -1
    home: str = REG
    bytes: int = 0

    @property
    def first(self) -> Value:
        return self.values[0]


def _if_result_of(dot: Op):
    """The result of the ``if`` whose then-branch yields ``dot``'s result (a loop's last trip)."""
    term = dot.parent.terminator
    return dot.parent.parent.results[term.operands.index(dot.result)]


def _const_value(v):
    """The value of a constant (or splat of one), else None."""
    op = v.owner
    while op is not None and op.name == "splat":
        v = op.operands[0]
        op = v.owner
    return op.attrs["value"] if op is not None and op.name == "constant" else None


def _l0c_bytes(ty) -> int:
    """L0C rows are padded to 16 elements of 4 bytes."""
    m, n = ty.shape
    return m * ((n + 15) // 16 * 16) * 4


REUSE_LOADED = "reuse_loaded_tiles"     # function attribute: see buffer_planning.plan


def _loaded(v) -> bool:
    return v.owner is not None and v.owner.name in TILE_LOADS


def _in_place_ok(op) -> bool:
    """The op may write its result over an operand it reads last: one-instruction elementwise work,
    and a dot with an ``acc`` (FIX drains the product in chunks that are added to it row by row)."""
    if op.name == "dot":
        return len(op.operands) == 3 and str(op.operands[2].type.scalar) == str(op.result.type.scalar) \
            and str(op.result.type.scalar) in ("f32", "i32") and len(op.result.type.shape) == 2
    return op.opdef.kind in ("elementwise", "compare", "select", "cast") and op.name != "fma"


class Analysis:
    """Homes, groups and live intervals of one function (read-only over the IR)."""

    def __init__(self, fn: Function):
        self.fn = fn
        self.span: dict[int, tuple[int, int]] = {}     # id(op) -> (start, end)
        self.defined: dict[int, int] = {}               # id(value) -> definition index
        self.trip_start: dict[int, int] = {}            # id(stored tile) -> start of its pipelined loop
        self.last_use: dict[int, int] = {}              # id(value) -> last use index (loop-extended)
        self.group_of: dict[int, Group] = {}
        self.groups: list[Group] = []
        self.home: dict[int, str] = {}
        self._number(fn)
        self.users: dict = {}
        for op in fn.walk():
            for i, v in enumerate(op.operands):
                self.users.setdefault(id(v), []).append((op, i))
        self.l0c_loops: dict = {}        # id(for op) -> {iter index: dot op}
        self.l0c_tails: dict = {}        # id(for op) -> {iter index: the dots of the trips it leaves}
        self.l0c_stored: dict = {}       # id(for op) -> {iter index: the values from the loop's final
        #                                    accumulator to the one FIX stores (ifs, a cast), all in L0C}
        self._cube_homes(fn)
        self._homes(fn)
        self._groups(fn)

    # ---- numbering and uses ----------------------------------------------------------------------
    def _number(self, fn: Function) -> None:
        counter = [0]
        # (set by buffer planning when the kernel only fits UB with loaded tiles reused in place)
        reuse_loaded = bool(fn.attrs.get(REUSE_LOADED))
        for a in fn.args:
            self.defined[id(a)] = 0

        def region(ops, loops):
            for op in ops:
                start = counter[0] = counter[0] + 1
                # A one-instruction elementwise op may write its result over an operand it reads
                # (in place); any other op reads its operands until it ends.
                at = start if _in_place_ok(op) else start + 1
                for v in op.operands:
                    # a loaded tile's buffer belongs to its transfers: computing over it in place would
                    # make the next load into it wait for the store of the result
                    self._use(v, start + 1 if _loaded(v) and not reuse_loaded else at, loops)
                inner = loops + [op] if op.name in LOOPS else loops
                for r in op.regions:
                    for a in r.args:
                        self.defined[id(a)] = start
                    region(r.ops, inner)
                end = counter[0] = counter[0] + 1
                self.span[id(op)] = (start, end)
                for res in op.results:
                    self.defined[id(res)] = end
                pipelined = bool(loops) and loops[-1].attrs.get("double_buffer") == "on"
                if op.name in TILE_LOADS and pipelined:
                    # a tile loaded in a loop keeps its buffer for the rest of the trip, so that the
                    # next trip's load into it waits only for the reads of this one
                    self._trip_end.append((op.result, loops[-1]))
                if op.name in ("store_tile", "scatter_rows") and pipelined and op.operands[-1 if op.name ==
                                                                                   "store_tile" else 3].type.is_block:
                    # likewise a tile being stored: the next trip computes into another buffer
                    # instead of waiting for this store to drain -- it holds its buffer for the
                    # whole trip, so that nothing the next trip computes early lands on it either
                    stored = op.operands[-1 if op.name == "store_tile" else 3]
                    self._trip_end.append((stored, loops[-1]))
                    self.trip_start[id(stored)] = self.defined[id(loops[-1].regions[0].args[0])]
                # loops entered after a value was defined keep it alive to their end
        self._pending = []
        self._trip_end = []
        region(fn.body.ops, [])
        carried_inits = {id(v) for o in fn.walk() if o.name == "for" for v in o.operands[3:]}
        for v, lp in self._trip_end:
            if id(v) not in carried_inits:     # an init lives on in the loop's carried buffer
                self.last_use[id(v)] = max(self.last_use.get(id(v), 0), self.span[id(lp)][1] - 1)
        for v, loops in self._pending:
            d = self.defined.get(id(v), 0)
            for lp in loops:
                s, e = self.span[id(lp)]
                if d < s:
                    self.last_use[id(v)] = max(self.last_use.get(id(v), 0), e)
        del self._pending, self._trip_end

    def _use(self, v: Value, at: int, loops) -> None:
        self.last_use[id(v)] = max(self.last_use.get(id(v), 0), at)
        if loops:
            self._pending.append((v, list(loops)))

    # ---- cube homes --------------------------------------------------------------------------------
    def _dot_operand_only(self, v, seen=None) -> bool:
        """Every use of v is as a dot operand: directly, through tl.trans, or carried by a loop (as
        an init or a yield) into a loop value used that way whose result is unused."""
        seen = set() if seen is None else seen
        if id(v) in seen:
            return True
        seen.add(id(v))
        uses = self.users.get(id(v), [])
        if not uses:
            return False
        for op, i in uses:
            if op.name == "dot" and i in (0, 1):
                continue
            if op.name == "permute" and self._dot_operand_only(op.result, seen):
                continue
            carried = self._carried_by(op, i)
            if carried is not None:
                loop, j = carried
                arg, res = loop.regions[0].args[1 + j], loop.results[j]
                if self._dot_operand_only(arg, seen) and (not self.users.get(id(res))
                                                         or self._dot_operand_only(res, seen)):
                    continue
            return False
        return True

    @staticmethod
    def _carried_by(op, i):
        """(for op, carried index) when operand i of op is a loop's init or a loop body's yield."""
        if op.name == "for" and i >= 3:
            return op, i - 3
        if op.name == "yield" and op.parent is not None and op.parent.parent is not None \
                and op.parent.parent.name == "for":
            return op.parent.parent, i
        return None

    def _cube_homes(self, fn: Function) -> None:
        for op in fn.walk():
            rows_contiguous = op.name in ("gather_rows", "gather_cols") or \
                (op.name == "load_tile" and len(op.result.type.shape) == 2 and _const_value(op.operands[2]) == 1)
            if rows_contiguous and self._dot_operand_only(op.result):
                self.home[id(op.result)] = L1
                for u, _ in self.users.get(id(op.result), []):
                    if u.name == "permute":
                        self.home[id(u.result)] = L1
        for op in fn.walk():
            if op.name == "for":
                self._l0c_carries(op)
        for op in fn.walk():
            if op.name == "for":
                self._l0c_stores(op)
        changed = True
        while changed:              # an L1 init must meet an L1 carry, or neither is in L1
            changed = False
            for op in fn.walk():
                if op.name == "for":
                    changed |= self._l1_carries(op)

    def _l1_carries(self, op: Op) -> bool:
        """Dot operand tiles a loop carries (double-buffered loads) stay in L1 — when its init, the
        value it yields and its uses all can; otherwise none of them is in L1 (returns a change)."""
        body = op.regions[0]
        term = body.terminator
        changed = False
        for i, (init, arg) in enumerate(zip(op.operands[3:], body.args[1:])):
            y = term.operands[i]
            res = op.results[i]
            ends = [init, y]
            if not any(self.home.get(id(v)) == L1 for v in ends):
                continue
            ok = all(self.home.get(id(v)) == L1 for v in ends) and \
                (not self.users.get(id(res)) or self._dot_operand_only(res))
            # (tl.trans views of the carried tile, in the loop and of its result after it)
            views = [u.result for v in (arg, res) for u, _ in self.users.get(id(v), []) if u.name == "permute"]
            for v in [arg, res] + views + ([] if ok else ends):
                want = L1 if ok else UB
                if self.home.get(id(v)) != want:
                    self.home[id(v)] = want
                    changed = True
        return changed

    def _l0c_carries(self, op: Op) -> None:
        """Accumulators a loop keeps in L0C: the carried value is the ``acc`` of a dot whose result
        is the ``acc`` of the next dot ... whose result is yielded (one dot per trip, or two when
        the loop was unrolled by double buffering), starting from zeros."""
        body = op.regions[0]
        term = body.terminator
        for i, (init, arg) in enumerate(zip(op.operands[3:], body.args[1:])):
            if not arg.type.is_block or str(arg.type.scalar) not in ("f32", "i32") or _const_value(init) != 0:
                continue
            chain, v = [], arg
            while True:
                uses = self.users.get(id(v), [])
                if len(uses) != 1:
                    break
                u, k = uses[0]
                if u.name == "dot" and k == 2 and u.parent is body:
                    chain.append(u)
                    v = u.result
                    continue
                break
            if not chain or self.users.get(id(v), []) != [(term, i)]:
                continue
            self.home[id(arg)] = L0C
            for d in chain:
                self.home[id(d.result)] = L0C
            self.l0c_loops.setdefault(id(op), {})[i] = chain
            if init.owner is not None and all(u is op for u, _ in self.users.get(id(init), [])):
                self.home[id(init)] = NOWHERE     # the zeros are made in L0C, never in UB
            # the last trips a pipelined loop leaves (one `if` each) accumulate in the same tile;
            # all but the last if's result feed the next one's dot
            tails, v = [], op.results[i]
            while (t := self._l0c_tail(v)) is not None:
                if tails:
                    self.home[id(v)] = L0C
                tails.append(t)
                self.home[id(t.result)] = L0C
                v = _if_result_of(t)
            if tails:
                self.home[id(op.results[i])] = L0C
                self.l0c_tails.setdefault(id(op), {})[i] = tails

    def _l0c_stores(self, op: Op) -> None:
        """An L0C accumulator whose final value is only stored (2-D, rows contiguous in GM) stays
        in L0C after the loop: FIX writes it to GM itself, converting it on the way (a float
        cast of it that is only stored is that conversion).  The final value may reach the store
        through the results of ``if``s whose every branch yields such an accumulator (the
        versions ``unswitch`` makes of the loop): they all share one L0C tile."""
        for i, chain in self.l0c_loops.get(id(op), {}).items():
            tails = self.l0c_tails.get(id(op), {}).get(i, [])
            final = _if_result_of(tails[-1]) if tails else op.results[i]
            path = [op.results[i], final]
            while True:
                uses = self.users.get(id(final), [])
                if len(uses) != 1 or uses[0][0].name != "yield":
                    break
                region = uses[0][0].parent
                ifop = region.parent if region is not None else None
                if ifop is None or ifop.name != "if" or not self._l0c_value(ifop.results[uses[0][1]]):
                    break
                final = ifop.results[uses[0][1]]
                path.append(final)
            uses = self.users.get(id(final), [])
            cast = uses[0][0] if len(uses) == 1 and uses[0][0].name == "cast" \
                and final.type.scalar.is_float and uses[0][0].result.type.scalar.is_float else None
            stored = final if self._stored_row_major_only(final) else \
                cast.result if cast is not None and self._stored_row_major_only(cast.result) else None
            if stored is not None:
                path.append(stored)
                for v in path:
                    self.home[id(v)] = L0C
                self.l0c_stored.setdefault(id(op), {})[i] = tuple(path[1:])

    def _l0c_value(self, v) -> bool:
        """v is an L0C accumulator: a loop's (its odd last trip's) or an if's whose every branch
        yields one."""
        o = v.owner
        if o is None:
            return False
        if o.name == "for":
            return o.results.index(v) in self.l0c_loops.get(id(o), {})
        if o.name == "dot":
            return self.home.get(id(v)) == L0C
        if o.name == "if":
            j = o.results.index(v)
            return all(r.terminator is not None and self._l0c_value(r.terminator.operands[j]) for r in o.regions)
        return False

    def _stored_row_major_only(self, v) -> bool:
        """``v``'s one use is the value of a 2-D ``store_tile`` with unit column stride."""
        uses = self.users.get(id(v), [])
        if len(uses) != 1 or len(v.type.shape) != 2:
            return False
        u, k = uses[0]
        return u.name == "store_tile" and k == len(u.operands) - 1 and _const_value(u.operands[2]) == 1

    def _l0c_tail(self, r):
        """The dot of a double-buffered loop's odd last trip: ``if c { yield dot(a, b, r) } else
        { yield r }`` right after the loop, ``r`` used nowhere else.  It accumulates into the loop's
        L0C tile in place, and each branch drains L0C once into the if's result."""
        uses = self.users.get(id(r), [])
        dots = [(u, k) for u, k in uses if u.name == "dot" and k == 2]
        if len(dots) != 1 or len(uses) != 2:
            return None
        d = dots[0][0]
        then = d.parent
        ifop = then.parent if then is not None else None
        if ifop is None or ifop.name != "if" or ifop.regions[0] is not then or len(ifop.regions) != 2:
            return None
        j = [x for x, v in enumerate(then.terminator.operands) if v is d.result]
        if len(j) != 1 or self.users.get(id(d.result), []) != [(then.terminator, j[0])]:
            return None
        other = ifop.regions[1].terminator
        if [(u, k) for u, k in uses if u is not d] != [(other, j[0])]:
            return None
        return d

    # ---- homes -------------------------------------------------------------------------------------
    def _homes(self, fn: Function) -> None:
        home = self.home
        for a in fn.args:
            home[id(a)] = REG
        changed = True
        while changed:
            changed = False
            for op in fn.walk():
                for v, h in self._op_homes(op):
                    if home.get(id(v)) in (L1, L0C, NOWHERE):
                        continue
                    if home.get(id(v)) != h and not (home.get(id(v)) == UB and h == REG):
                        home[id(v)] = h
                        changed = True

    def _op_homes(self, op: Op):
        h = self.home
        if op.name == "for":
            carried = op.operands[3:]
            term = op.regions[0].terminator
            yielded = term.operands if term is not None else []
            iv, *iters = op.regions[0].args
            yield iv, REG
            for i, (init, res) in enumerate(zip(carried, op.results)):
                x = self._join(init, yielded[i] if i < len(yielded) else None, res)
                yield iters[i], x
                yield res, x
            return
        if op.name == "if":
            for i, res in enumerate(op.results):
                ins = [r.terminator.operands[i] for r in op.regions if r.terminator is not None]
                yield res, self._join(*ins, res)
            return
        if op.name == "while":
            before, after = op.regions
            cond = before.terminator
            ys = after.terminator.operands if after.terminator is not None else []
            for i, a in enumerate(before.args):
                yield a, self._join(op.operands[i], ys[i] if i < len(ys) else None, a)
            if cond is not None:
                for i, (res, a) in enumerate(zip(op.results, after.args)):
                    x = self._join(cond.operands[1 + i], res, a)
                    yield res, x
                    yield a, x
            return
        for res in op.results:
            if res.type.is_block:
                yield res, UB
            elif op.name in VECTOR_SCALAR_OPS or op.name in TILE_LOADS:
                yield res, UB
            elif op.name in VIEW_OPS and h.get(id(op.operands[0])) == UB:
                yield res, UB       # a one-element tile viewed as a scalar stays where it is
            elif op.opdef.kind in ("elementwise", "compare", "select", "cast") and \
                    any(h.get(id(v)) == UB for v in op.operands):
                yield res, UB
            else:
                yield res, h.get(id(res), REG)

    def _join(self, *vals) -> str:
        return UB if any(v is not None and (v.type.is_block or self.home.get(id(v)) == UB) for v in vals) else REG

    # ---- groups ------------------------------------------------------------------------------------
    def _groups(self, fn: Function) -> None:
        def group(v: Value) -> Group:
            g = self.group_of.get(id(v))
            if g is None:
                g = Group(home=self.home.get(id(v), REG))
                self.groups.append(g)
                self._add(g, v)
            return g

        def merge(g: Group, v: Value):
            old = self.group_of.get(id(v))
            if old is g:
                return
            if old is not None:
                for x in old.values:
                    self._add(g, x)
                self.groups.remove(old)
            else:
                self._add(g, v)

        for a in fn.args:
            group(a)
        for op in fn.walk():
            if op.name in VIEW_OPS and op.results and (op.name != "bitcast"
                                                        or elem_bytes(op.operands[0].type) == elem_bytes(op.result.type)):
                # A view shares its operand's storage -- except a scalar register bitcast to
                # another type: that is an sld into a register of its own (the operand may live on).
                home = self.home.get(id(op.operands[0]), REG)
                copied = (home == REG and op.name == "bitcast"
                          and str(op.operands[0].type) != str(op.result.type))
                if home == self.home.get(id(op.result), REG) and not copied:
                    merge(group(op.operands[0]), op.result)
                    continue
            if op.name == "for":
                for i, (a, r) in enumerate(zip(op.regions[0].args[1:], op.results)):
                    chain = self.l0c_loops.get(id(op), {}).get(i)
                    if chain is not None:
                        for dot in chain:
                            merge(group(a), dot.result)     # accumulated in place in L0C
                        if self.home.get(id(r)) == L0C:     # and after the loop: the odd last
                            tails = self.l0c_tails.get(id(op), {}).get(i, [])   # trips, until FIX stores it
                            stored = self.l0c_stored.get(id(op), {}).get(i, ())
                            between = [_if_result_of(t) for t in tails[:-1]]
                            for v in (r, *[t.result for t in tails], *between, *stored):
                                merge(group(a), v)
                        else:
                            group(r)
                    else:
                        merge(group(a), r)
                group(op.regions[0].args[0])
                continue
            if op.name == "while":
                for a in op.regions[0].args:
                    group(a)
                for a, r in zip(op.regions[1].args, op.results):
                    merge(group(a), r)
                continue
            for r in op.results:
                group(r)
            for reg in op.regions:
                for a in reg.args:
                    group(a)
        for op in fn.walk():
            if op.name == "for":
                self._coalesce_yields(op, merge)
            elif op.name == "if":
                self._coalesce_branches(op, merge)
        for op in fn.walk():        # carried homes are live over the whole op that carries them
            if op.name in ("for", "if", "while"):
                s, e = self.span[id(op)]
                for g in {id(self.group_of[id(v)]): self.group_of[id(v)] for v in op.results}.values():
                    g.start, g.end = min(g.start, s), max(g.end, e)
                for reg in op.regions:
                    for a in reg.args:
                        g = self.group_of[id(a)]
                        g.start, g.end = min(g.start, s), max(g.end, e)

    def _coalesce_yields(self, op: Op, merge) -> None:
        """A tile the loop body computes and yields after the carried tile it replaces was last read
        takes the carried tile's buffer: the next trip finds it in place, no copy at the yield."""
        body = op.regions[0]
        term = body.terminator
        skip = self.l0c_loops.get(id(op), {})
        # a carried tile read once, by an op that may write its result over it, is updated in
        # place (acc = acc * alpha): the result takes the carried buffer
        for i, arg in enumerate(body.args[1:]):
            uses = self.users.get(id(arg), [])
            if i in skip or self.home.get(id(arg)) != UB or len(uses) != 1 or _loaded(term.operands[i]):
                continue        # (a prefetched tile's buffer belongs to its transfers: see _number)
            u = uses[0][0]
            if u.parent is body and _in_place_ok(u) and len(u.results) == 1 and \
                    self.home.get(id(u.result)) == UB and str(u.result.type) == str(arg.type) and \
                    self.group_of[id(u.result)] is not self.group_of[id(arg)] and \
                    len(self.group_of[id(u.result)].values) == 1:
                merge(self.group_of[id(arg)], u.result)
        for i, (arg, y) in enumerate(zip(body.args[1:], term.operands)):
            h = self.home.get(id(arg))
            if i in skip or h not in (UB, L1) or self.home.get(id(y)) != h or y.owner is None:
                continue
            ga, gy = self.group_of[id(arg)], self.group_of[id(y)]
            if ga is gy or any(self._top_op(v.owner, body) is None for v in gy.values if v.owner is not None) \
                    or any(v.owner is None for v in gy.values):
                continue
            if any(id(v) == id(w) for v in gy.values for w in term.operands if w is not y):
                continue
            last = 0
            for v in ga.values:
                if v in op.results:
                    continue
                for u, _ in self.users.get(id(v), []):
                    if u is term:
                        continue
                    top = self._top_op(u, body)
                    if top is None:
                        last = 1 << 60
                        break
                    s, e = self.span[id(top)]
                    last = max(last, s if (top is u and _in_place_ok(u)) else e)
            if all(self.defined[id(v)] > last for v in gy.values):
                merge(ga, y)
        # an initial tile used only to start the loop is built in the carried buffer directly
        for i, (arg, init) in enumerate(zip(body.args[1:], op.operands[3:])):
            h = self.home.get(id(arg))
            if i in skip or h not in (UB, L1) or self.home.get(id(init)) != h:
                continue
            if init.owner is None:
                continue
            ga, gi = self.group_of[id(arg)], self.group_of[id(init)]
            if ga is gi or any(w is init for j, w in enumerate(op.operands) if j != 3 + i):
                continue
            start = self.span[id(op)][0]
            if all(v.owner is not None and v.owner.parent is op.parent and self.defined[id(v)] < start
                   and all(u is op for u, _ in self.users.get(id(v), [])
                           if not (u.parent is op.parent and self.span[id(u)][0] < start))
                   and self.last_use.get(id(v), 0) <= start + 1 for v in gi.values):
                merge(ga, init)

    def _coalesce_branches(self, op: Op, merge) -> None:
        """A tile a branch computes and yields is computed in the if's result buffer."""
        for region in op.regions:
            term = region.terminator
            if term is None:
                continue
            for i, y in enumerate(term.operands):
                if i >= len(op.results):
                    break
                r = op.results[i]
                h = self.home.get(id(r))
                if h not in (UB, L1) or self.home.get(id(y)) != h or y.owner is None:
                    continue
                gr, gy = self.group_of[id(r)], self.group_of[id(y)]
                if gr is gy or any(w is y for j, w in enumerate(term.operands) if j != i):
                    continue
                if all(v.owner is not None and self._top_op(v.owner, region) is not None for v in gy.values):
                    merge(gr, y)
                    self._in_place_chain(y, region, gr, merge)
                elif self._dies_into(op, i, y):
                    merge(gr, y)

    def _in_place_chain(self, y, region, gr: Group, merge) -> None:
        """``y`` computed in place over an operand (``acc * alpha``, a dot over its ``acc``) that
        dies there and lives only in ``region``: that operand (and so on back, a loop's result
        with the tile it carried) takes the same buffer."""
        while y.owner is not None and _in_place_ok(y.owner) and y.owner.results:
            o, nxt = y.owner, None
            s = self.span[id(o)][0]
            for u in o.operands:
                if self.home.get(id(u)) != UB or str(u.type) != str(y.type):
                    continue
                gu = self.group_of.get(id(u))
                if gu is None or gu is gr or gu.end > s:
                    continue
                if all(v.owner is not None and self._top_op(v.owner, region) is not None or
                       (v.owner is None and self._top_op(self._arg_owner(v), region) is not None)
                       for v in gu.values):
                    merge(gr, u)
                    nxt = u
                    break
            if nxt is None:
                return
            y = nxt

    def _arg_owner(self, v):
        """The op whose region has ``v`` as an argument (None for a function argument)."""
        for o in self.fn.walk():
            if any(a is v for r in o.regions for a in r.args):
                return o
        return None

    def _dies_into(self, op: Op, i: int, y) -> bool:
        """``y``, made before the ``if`` and yielded as its result ``i`` by a branch, is read only in
        the if, and every other branch makes its own result ``i`` after its last read of ``y``
        (``if c { yield f(y) } else { yield y }``, a loop's last trip): ``y`` can live in the result's
        buffer from the start."""
        if self._top_op(y.owner, op.regions[0]) is not None if y.owner is not None else False:
            return False
        if not all(any(self._top_op(u, r) is not None for r in op.regions) for u, _ in self.users.get(id(y), [])):
            return False
        for region in op.regions:
            yb = region.terminator.operands[i] if region.terminator is not None else None
            if yb is None or yb is y:
                continue
            last = self.span[id(op)][0]
            for u, _ in self.users.get(id(y), []):
                top = self._top_op(u, region)
                if top is not None:
                    s, e = self.span[id(top)]
                    last = max(last, s if (top is u and _in_place_ok(u)) else e)
            gb = self.group_of[id(yb)]
            if not all(any(v is r for r in op.results) or
                       (v.owner is not None and self._top_op(v.owner, region) is not None and
                        self.defined[id(v)] > last) or
                       (v.owner is None and self._top_op(self._arg_owner(v), region) is not None and
                        self.defined[id(v)] > last) for v in gb.values):
                return False
        return True

    @staticmethod
    def _top_op(o: Op, body):
        """The op of ``body`` that is or contains ``o`` (None when ``o`` is outside ``body``)."""
        while o is not None and o.parent is not body:
            region = o.parent
            o = region.parent if region is not None else None
        return o

    def _add(self, g: Group, v: Value) -> None:
        self.group_of[id(v)] = g
        g.values.append(v)
        d = self.defined.get(id(v), 0)
        g.start = min(g.start, d, self.trip_start.get(id(v), d))
        g.end = max(g.end, self.last_use.get(id(v), d))
        h = self.home.get(id(v))
        g.bytes = max(g.bytes, tile_bytes(v.type) if h != L0C else _l0c_bytes(v.type))
        if h in ONCHIP:
            g.home = h

    # ---- queries -----------------------------------------------------------------------------------
    def is_ub(self, v: Value) -> bool:
        return self.home.get(id(v)) == UB

    def end_of(self, v: Value) -> int:
        return self.group_of[id(v)].end
