"""Cube homes: which values live in L1 (dot operands loaded straight from GM) and in L0C (a loop's
accumulator, its last trips and the value FIX stores; a product that is only stored, read a few
rows at a time, accumulated into by the next dot, or only scaled and added to a tile), and which
dot operands computed in UB are copied into L1 once, where they are made (``staged``) -- part of
:class:`analysis.Analysis`."""
from __future__ import annotations

from tritonpu.codegen.homes import (L0C, L0C_ACCUMULATORS, L1, LOOPS, NOWHERE, SCALED_IN_L0C, UB, Group, const_value, if_result_of,
                                   tile_bytes)
from tritonpu.ir import Function, Op
from tritonpu.ir.ops import slice_geometry


class CubeHomes:
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
            rows_contiguous = op.name in ("gather_rows", "gather_cols", "panel_tile") or \
                (op.name == "load_tile" and len(op.result.type.shape) == 2 and const_value(op.operands[2]) == 1)
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
        for op in fn.walk():        # zeros only L0C accumulators start from: made there
            if op.name == "for" or (op.name == "dot" and self.home.get(id(op.result)) != L0C):
                for v in op.operands[3:] if op.name == "for" else op.operands[2:]:
                    if self._zero_accumulator(v):
                        self.home[id(v)] = NOWHERE
        for op in fn.walk():
            if op.name == "dot" and self.home.get(id(op.result)) != L0C:
                self._plain_dot(op)
        changed = True
        while changed:              # an L1 init must meet an L1 carry, or neither is in L1
            changed = False
            for op in fn.walk():
                if op.name == "for":
                    changed |= self._l1_carries(op)

    def _staged_operands(self, fn: Function) -> None:
        """Dot operands in UB made before a loop whose dots read them (FlashAttention's ``q`` scaled
        before its key loop, or the result of an ``if`` whose branches load it as a tile or element
        by element): each is copied UB -> L1 once, where it is made, into an L1
        tile of its own live until its last use (``self.staged``: id(value) -> that L1 group),
        instead of on every trip.  When the dots are its only readers (and what shares its UB
        buffer -- an if's branch values -- is read no later), its UB buffer is free once the copy
        has read it."""
        self.staged = {}
        self._unstaged_ends = {}
        for op in fn.walk():
            if len(op.results) != 1 or (op.regions and op.name != "if"):
                continue
            v = op.result
            uses = self.users.get(id(v), [])
            dots = [u for u, i in uses if u.name == "dot" and i in (0, 1)]
            if self.home.get(id(v)) != UB or len(v.type.shape) != 2 or \
                    not any(self._in_loop_after(u, self.defined[id(v)]) for u in dots):
                continue
            g = self.group_of[id(v)]
            self.staged[id(v)] = Group([v], self.defined[id(v)], g.end, L1, tile_bytes(v.type))
            self.groups.append(self.staged[id(v)])
            # (an if's result shares its buffer with what its branches yield: read no later)
            if len(dots) == len(uses) and all(x is v or self.last_use.get(id(x), 0) <= self.defined[id(v)]
                                              for x in g.values):
                self._unstaged_ends[id(g)] = g.end
                g.end = self.defined[id(v)] + 1         # (the copy reads it right after it is made)

    def _in_loop_after(self, op: Op, at: int) -> bool:
        """Whether ``op`` is inside a loop entered after program point ``at``."""
        while op is not None:
            if op.name in LOOPS and self.span[id(op)][0] > at:
                return True
            op = op.parent.parent if op.parent is not None else None
        return False

    def unstage(self) -> None:
        """Drop the staged operands (L1 has no room for them): dots copy them UB -> L1 as they run."""
        for g in self.staged.values():
            self.groups.remove(g)
        for g in self.groups:
            g.end = self._unstaged_ends.get(id(g), g.end)
        self.staged, self._unstaged_ends = {}, {}

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
        """Accumulators a loop keeps in L0C (the first ``L0C_ACCUMULATORS`` of them when set): the
        carried value is the ``acc`` of a dot whose result
        is the ``acc`` of the next dot ... whose result is yielded (one dot per trip, or two when
        the loop was unrolled by double buffering), starting from zeros -- or from the L0C
        accumulator of a loop before it that only this loop uses (a K loop split in two, see
        passes/panel_reuse.py: the second goes on in the same tile)."""
        body = op.regions[0]
        term = body.terminator
        most = L0C_ACCUMULATORS.get()
        for i, (init, arg) in enumerate(zip(op.operands[3:], body.args[1:])):
            if not arg.type.is_block or str(arg.type.scalar) not in ("f32", "i32"):
                continue
            if most is not None and len(self.l0c_loops.get(id(op), {})) >= most:
                break           # (compiled again with fewer: the rest accumulate in UB)
            goes_on = const_value(init) != 0
            if goes_on and not (self._l0c_value(init) and self.users.get(id(init), []) == [(op, 3 + i)]):
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
            if goes_on:
                self.l0c_continued.setdefault(id(op), {})[i] = self._l0c_on(init)
            # (else it starts from zeros, made in L0C: see _zero_accumulator)
            # the last trips a pipelined loop leaves (one `if` each) accumulate in the same tile;
            # all but the last if's result feed the next one's dot
            tails, v = [], op.results[i]
            while (t := self._l0c_tail(v)) is not None:
                if tails:
                    self.home[id(v)] = L0C
                tails.append(t)
                for d in t[0]:
                    if d.result is not t[1] or self._l0c_taken_on(d.result):
                        self.home[id(d.result)] = L0C
                v = t[1]
            if tails:
                self.home[id(op.results[i])] = L0C
                self.l0c_tails.setdefault(id(op), {})[i] = tails

    def _l0c_taken_on(self, v) -> bool:
        """The last product of a straight-line chain after a loop may stay in L0C: its one use is
        an ``if``'s yield (the versions of a loop: see _l0c_stores; a branch drains it into a
        result that is not in L0C), or FIX takes it from there (stored, or read a few rows at a
        time).  Any other use reads it drained: ``acc, keep = tl.dot(a, b, acc), acc`` stores the
        last trip's ``acc`` as ``keep`` after the next product has gone on in the tile."""
        uses = self.users.get(id(v), [])
        if len(uses) == 1 and uses[0][0].name == "yield" and uses[0][0].parent is not None \
                and uses[0][0].parent.parent is not None and uses[0][0].parent.parent.name == "if":
            return True
        return self._stored_by_fix(v) is not None or \
            (len(v.type.shape) == 2 and bool(uses) and all(_whole_rows(u) for u, _ in uses))

    def _l0c_stores(self, op: Op) -> None:
        """An L0C accumulator whose final value is only stored (2-D, rows contiguous in GM) stays
        in L0C after the loop: FIX writes it to GM itself, converting it on the way (a float
        cast of it that is only stored is that conversion); one whose final value is only read a
        few rows at a time (``slice {start}``) stays there too: FIX drains those rows.  The final
        value may reach the store through the results of ``if``s whose every branch yields such
        an accumulator (the versions ``unswitch`` makes of the loop): they all share one L0C
        tile."""
        for i, chain in self.l0c_loops.get(id(op), {}).items():
            tails = self.l0c_tails.get(id(op), {}).get(i, [])
            final = tails[-1][1] if tails else op.results[i]
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
            if len(final.type.shape) == 2 and uses and all(_whole_rows(u) for u, _ in uses):
                # an epilogue done a few rows at a time (passes/epilogue_rows.py): FIX drains each
                # slice's rows into UB, the accumulator stays in L0C
                for v in path:
                    self.home[id(v)] = L0C
                self.l0c_stored.setdefault(id(op), {})[i] = tuple(path[1:])
                continue
            # (or stored in one branch, read a few rows at a time in the other: a guarded tile
            # store and its element-by-element fallback, passes/element_rows.py)
            rest = [(u, k) for u, k in uses if not _whole_rows(u)]
            stored = self._stored_by_fix(final, rest if len(rest) < len(uses) else None)
            if stored is not None:
                path.append(stored)
                for v in path:
                    self.home[id(v)] = L0C
                self.l0c_stored.setdefault(id(op), {})[i] = tuple(path[1:])

    def _plain_dot(self, op: Op) -> None:
        """A dot outside a loop's L0C accumulator, with no accumulator, one of zeros made in L0C
        (see ``_zero_accumulator``) or the L0C product of the dot before it: a 2-D result only read
        a few rows at a time (``slice``s of whole rows, see passes/epilogue_rows.py) stays in L0C,
        FIX draining each slice's rows; one only stored (through a float cast too) stays there, FIX
        storing it to GM; one that is only the accumulator of the next dot in the same region (a K
        loop of two dots a trip that runs once) stays there, the next dot accumulating in place."""
        acc = op.operands[2] if len(op.operands) > 2 else None
        chained = acc is not None and acc.owner is not None and acc.owner.name == "dot" and \
            self.home.get(id(acc)) == L0C
        if acc is not None and self.home.get(id(acc)) != NOWHERE and not chained:
            return          # (the product is added to its accumulator on the vector unit)
        if str(op.result.type.scalar) not in ("f32", "i32"):
            return          # (out_dtype=tl.float16: FIX converts it as it drains it)
        uses = self.users.get(id(op.result), [])
        if len(op.result.type.shape) == 2 and uses and all(_whole_rows(u) for u, _ in uses):
            self.home[id(op.result)] = L0C
        elif (stored := self._stored_by_fix(op.result)) is not None:
            self.home[id(op.result)] = self.home[id(stored)] = L0C
            self.l0c_stored[id(op)] = {0: (stored,) if stored is not op.result else ()}
        elif len(uses) == 1 and self._accumulates_in_place(op, *uses[0]):
            self.home[id(op.result)] = L0C      # the next dot accumulates into it in place
        elif (scaled := self._scaled_then_added(op)) is not None:
            # [s *] (A @ B) + T: the product waits in L0C; FIX drains it (scaled) onto T at the add
            mul, add, s = scaled
            self.home[id(op.result)] = L0C
            self.l0c_added[id(add)] = (op, mul)
            if mul is not None:
                self.home[id(mul.result)] = L0C
                self.l0c_scaled[id(op)] = mul
                # the scale is read at the add (FIX scales as it drains): live, and used, until
                # then -- no value sharing its register is made in between
                self.last_use[id(s)] = max(self.last_use.get(id(s), 0), self.span[id(add)][0] + 1)
                self.users.setdefault(id(s), []).append((add, -1))
        else:
            return
        self.l0c_plain.add(id(op))

    def _scaled_then_added(self, op: Op):
        """(the mul, the add, the scale) when a dot's f32 product is only multiplied by a scalar
        and that only added to a whole tile of its type in the dot's region (``qk * scale +
        tl.where(mask, 0, -1e6)``, ``tl.dot(a, b) * alpha + c``), or (None, the add, None) when
        the product is only added to such a tile (``pv = tl.dot(p, v)`` ... ``acc = acc + pv``,
        the vector work in between: the product need not take UB while it waits), the tile
        neither in L0C nor a scaled product itself; else None."""
        uses = self.users.get(id(op.result), [])
        if len(uses) != 1 or str(op.result.type.scalar) != "f32" or len(op.result.type.shape) != 2 or \
                not SCALED_IN_L0C.get():
            return None
        mul, k = uses[0]
        if mul.name == "add":
            mul, s, (add, j) = None, None, uses[0]
        else:
            if mul.name != "mul" or mul.parent is not op.parent or str(mul.result.type) != str(op.result.type):
                return None
            s = mul.operands[1 - k]
            later = self.users.get(id(mul.result), [])
            if s.type.is_block or len(later) != 1:
                return None
            add, j = later[0]
        if add.name != "add" or add.parent is not op.parent or str(add.result.type) != str(op.result.type):
            return None
        t = add.operands[1 - j]
        if str(t.type) != str(op.result.type) or self.home.get(id(t)) not in (None, UB):
            return None
        if t.owner is not None and t.owner.name == "mul" and \
                any(self.home.get(id(v)) == L0C or (v.owner is not None and v.owner.name == "dot")
                    for v in t.owner.operands):
            return None         # (two scaled products added: the other may wait in L0C too)
        return mul, add, s

    @staticmethod
    def _accumulates_in_place(op: Op, user: Op, index: int) -> bool:
        """Whether ``user`` is a dot in ``op``'s region taking ``op``'s product as its accumulator."""
        return user.name == "dot" and index == 2 and user.parent is op.parent and \
            user.result.type == op.result.type

    def _stored_by_fix(self, v, uses=None):
        """The value FIX stores to GM when ``v``'s one use (of ``uses``, if given: the others read
        it a few rows at a time) is a 2-D row-major store, or a float cast of it only stored that
        way (FIX converts on the way); else None."""
        uses = self.users.get(id(v), []) if uses is None else uses
        cast = uses[0][0] if len(uses) == 1 and uses[0][0].name == "cast" \
            and v.type.scalar.is_float and uses[0][0].result.type.scalar.is_float else None
        return v if self._stored_row_major_only(v, uses) else \
            cast.result if cast is not None and self._stored_row_major_only(cast.result) else None

    def _zero_accumulator(self, v) -> bool:
        """``v`` is zeros of an accumulator type whose every use is as the accumulator of a dot
        outside a loop's L0C chain or as the start of a loop's L0C accumulator (which zeroes its
        tile itself): it is made in L0C (a product over k = 0), never in UB.  The versions
        ``unswitch`` makes of a K loop all start from the same zeros."""
        if const_value(v) != 0 or not v.type.is_block or str(v.type.scalar) not in ("f32", "i32"):
            return False
        for u, k in self.users.get(id(v), []):
            if u.name == "dot" and k == 2 and u.result.type == v.type:
                continue
            if u.name == "for" and k >= 3 and self.home.get(id(u.regions[0].args[k - 2])) == L0C:
                continue
            return False
        return True

    def _l0c_on(self, v) -> list:
        """Keep the L0C accumulator ``v`` (a loop's result, or an if's over such) in L0C; the values
        it is made of (one tile with it)."""
        self.home[id(v)] = L0C
        out = [v]
        o = v.owner
        if o is not None and o.name == "if":
            j = o.results.index(v)
            for r in o.regions:
                y = r.terminator.operands[j]
                out += self._l0c_on(y) if y.owner is not None and y.owner.name in ("for", "if") else [y]
        return out

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

    def _stored_row_major_only(self, v, uses=None) -> bool:
        """``v``'s one use (of ``uses``, if given) is the value of a 2-D ``store_tile`` with unit
        column stride."""
        uses = self.users.get(id(v), []) if uses is None else uses
        if len(uses) != 1 or len(v.type.shape) != 2:
            return False
        u, k = uses[0]
        return u.name == "store_tile" and k == len(u.operands) - 1 and const_value(u.operands[2]) == 1

    def _l0c_tail(self, r):
        """(the dots, the value they leave) of a pipelined loop's next last trip after ``r`` (the
        loop's result or the previous such trip's): a chain of dots, each the next one's
        accumulator (one per dot of the loop's trip), ``r`` used nowhere else -- straight-line
        code after ``r`` when the loop's trip count is known (it leaves the last dot's result), else
        ``if c { yield dot(.., dot(a, b, r)) } else { yield r }`` (it leaves the if's result).
        They accumulate into the loop's L0C tile in place; an if's branches each drain L0C once into
        its result, and a straight-line chain's last product stays in L0C only when it is taken on
        from there (_l0c_taken_on)."""
        uses = self.users.get(id(r), [])
        dots = [(u, k) for u, k in uses if u.name == "dot" and k == 2]
        if len(dots) != 1:
            return None
        chain = [dots[0][0]]
        region = chain[0].parent
        while True:
            nxt = self.users.get(id(chain[-1].result), [])
            if len(nxt) != 1 or nxt[0][0].name != "dot" or nxt[0][1] != 2 or nxt[0][0].parent is not region:
                break
            chain.append(nxt[0][0])
        d = chain[-1]
        if len(uses) == 1 and r.owner is not None and r.owner.parent is region:
            return chain, d.result          # straight-line, in r's own region
        ifop = region.parent
        if len(uses) != 2 or ifop is None or ifop.name != "if" or ifop.regions[0] is not region \
                or len(ifop.regions) != 2:
            return None
        j = [x for x, v in enumerate(region.terminator.operands) if v is d.result]
        if len(j) != 1 or self.users.get(id(d.result), []) != [(region.terminator, j[0])]:
            return None
        other = ifop.regions[1].terminator
        if [(u, k) for u, k in uses if u is not chain[0]] != [(other, j[0])]:
            return None
        return chain, if_result_of(d)

def _whole_rows(op) -> bool:
    """``op`` is a ``slice`` of some rows of a 2-D block, every column (what FIX drains from L0C)."""
    if op.name != "slice":
        return False
    offsets, steps = slice_geometry(op)
    return not any(offsets[1:]) and steps == [1, 1] and op.result.type.shape[1:] == op.operands[0].type.shape[1:]
