"""Analyses the NPU back end shares: where each value lives, and how long.

* **Homes.**  Block values live in the Unified Buffer (UB); scalar values live in scalar
  registers, except scalars computed by the vector unit (a reduction's result, or arithmetic on
  one), which stay in UB as one-element tiles so that no V -> S round trip is needed.  Loop- and
  branch-carried values take the home of what flows into them (a fixed point).
* **Cube homes** (:mod:`cube_homes`).  A 2-D ``load_tile`` with contiguous rows, or a row or
  column gather, whose every use is a ``tl.dot`` operand (directly or through ``tl.trans``) lives
  in L1: MTE2 brings it there without touching UB.  A value a ``for`` loop carries only as the
  ``acc`` of one dot whose result it yields, starting from zeros, lives in L0C across the loop:
  the cube accumulates in place and FIX drains it once after the loop (or stores it to GM).  A
  dot's product only multiplied by a scalar and that only added to a tile waits in L0C: FIX
  drains it scaled onto the tile at the add (``l0c_scaled``, ``l0c_added``).  A dot operand the
  vector unit computes before a loop whose dots read it (``staged``) also gets an L1 tile of its
  own, live to its last use: it is copied there once, where it is made, and when only dots read
  it its UB buffer is free after the copy (buffer planning drops the L1 tiles if L1 has no room).
* **Views.**  ``expand_dims``, ``reshape``, ``broadcast``, ``permute`` and same-width ``bitcast``
  make no copy: their result is a strided view of their operand's buffer.
* **In place.**  A one-instruction elementwise op (and a dot over its vector ``acc``, an
  ``insert_slice`` over the block it writes into) may write its result over an operand it reads last, except a loaded tile (its buffer belongs to its transfers, so that the next load into it
  does not wait for the store of the result) — unless the function carries ``reuse_loaded_tiles``,
  which buffer planning sets when the kernel fits UB only that way.
* **Groups and live intervals.**  Ops are numbered in program order (an op with regions gets a
  start and an end number around its regions).  Values that must share storage form a group
  (a value and its views; a loop's carried value, its region argument and its result; an if's
  result); a group is live from its first definition to its last use, extended to the end of any
  loop that uses it but is entered after it was defined (the next trip reads it again).  Groups
  that can share one buffer are merged (:mod:`coalesce`).
"""
from __future__ import annotations

from tritonpu.codegen.coalesce import Coalescing
from tritonpu.codegen.cube_homes import CubeHomes
from tritonpu.codegen.homes import (L0C, L1, LOOPS, NOWHERE, ONCHIP, REG, REUSE_LOADED, UB,  # noqa: F401
                                    VECTOR_SCALAR_OPS, VIEW_OPS, Group, elem_bytes, in_place_ok, reshape_copies,
                                    l0c_bytes, loaded, panel_tile_of, tile_bytes)
from tritonpu.ir import Function, Op, Value
from tritonpu.ir.ops import TILE_LOADS


class Analysis(CubeHomes, Coalescing):
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
        self.l0c_tails: dict = {}        # id(for op) -> {iter index: the trips it leaves, a list of
        #                                    (chain of dots, the value it leaves), each accumulating into the next}
        self.l0c_continued: dict = {}    # id(for op) -> {iter index: the L0C values it goes on from}
        self.l0c_plain: set = set()      # ids of dots outside loop accumulators whose product stays in L0C
        self.l0c_scaled: dict = {}       # id(dot op) -> the mul by a scalar FIX does as it drains it
        self.l0c_added: dict = {}        # id(add op) -> (dot, mul): FIX drains the scaled product onto
        #                                    the add's other operand (cube_homes._scaled_then_added)
        self.l0c_stored: dict = {}       # id(for op) -> {iter index: the values from the loop's final
        #                                    accumulator to the one FIX stores (ifs, a cast), all in L0C}
        #                                    (id(dot op) -> {0: (its cast,) or ()}: a product only stored)
        self._cube_homes(fn)
        self._homes(fn)
        self._groups(fn)
        self._staged_operands(fn)

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
                at = start if in_place_ok(op) else start + 1
                for k, v in enumerate(op.operands):
                    # a loaded tile's buffer belongs to its transfers: computing over it in place would
                    # make the next load into it wait for the store of the result
                    mine = at if op.name != "insert_slice" or k else start   # (written into its block)
                    self._use(v, start + 1 if loaded(v) and not reuse_loaded else mine, loops)
                    if (pt := panel_tile_of(v)) is not None:
                        # who reads a panel's tile reads its slot register and waits on a miss
                        for w in pt.operands[:2]:
                            self._use(w, at, loops)
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
            if op.name in VIEW_OPS and op.results and not reshape_copies(op) and \
                    (op.name != "bitcast" or elem_bytes(op.operands[0].type) == elem_bytes(op.result.type)):
                # A view shares its operand's storage -- except a scalar register bitcast to
                # another type: that is an sld into a register of its own (the operand may live on).
                home = self.home.get(id(op.operands[0]), REG)
                copied = (home == REG and op.name == "bitcast"
                          and str(op.operands[0].type) != str(op.result.type))
                if home == self.home.get(id(op.result), REG) and not copied:
                    merge(group(op.operands[0]), op.result)
                    continue
            if op.name == "dot" and id(op) in self.l0c_plain:
                # a product kept in L0C outside a loop's accumulator: in its accumulator's tile when
                # that is one (a chain of dots), with the cast FIX stores
                acc = op.operands[2] if len(op.operands) > 2 else None
                g = group(acc) if acc is not None and self.home.get(id(acc)) == L0C else group(op.result)
                merge(g, op.result)
                for v in self.l0c_stored.get(id(op), {}).get(0, ()):
                    merge(g, v)
                if id(op) in self.l0c_scaled:
                    merge(g, self.l0c_scaled[id(op)].result)
                continue
            if op.name == "for":
                for i, (a, r) in enumerate(zip(op.regions[0].args[1:], op.results)):
                    chain = self.l0c_loops.get(id(op), {}).get(i)
                    if chain is not None:
                        for dot in chain:
                            merge(group(a), dot.result)     # accumulated in place in L0C
                        for v in self.l0c_continued.get(id(op), {}).get(i, ()):
                            merge(group(a), v)              # going on in a loop's tile before it
                        if self.home.get(id(r)) == L0C:     # and after the loop: the odd last
                            tails = self.l0c_tails.get(id(op), {}).get(i, [])   # trips, until FIX stores it
                            stored = self.l0c_stored.get(id(op), {}).get(i, ())
                            between = [left for _, left in tails[:-1]]
                            made = [d.result for dots, _ in tails for d in dots if self.home.get(id(d.result)) == L0C]
                            for v in (r, *made, *between, *stored):
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

    def _add(self, g: Group, v: Value) -> None:
        self.group_of[id(v)] = g
        g.values.append(v)
        d = self.defined.get(id(v), 0)
        g.start = min(g.start, d, self.trip_start.get(id(v), d))
        g.end = max(g.end, self.last_use.get(id(v), d))
        h = self.home.get(id(v))
        g.bytes = max(g.bytes, tile_bytes(v.type) if h != L0C else l0c_bytes(v.type))
        if h in ONCHIP:
            g.home = h

    # ---- queries -----------------------------------------------------------------------------------
    def is_ub(self, v: Value) -> bool:
        return self.home.get(id(v)) == UB

    def end_of(self, v: Value) -> int:
        return self.group_of[id(v)].end
