"""Buffer coalescing: values that can share one buffer (a loop's yield and its carried tile, an
if's result and what its branches make, in-place updates) -- part of :class:`analysis.Analysis`.

Values made and read only in exclusive branches of an ``if`` (the versions ``unswitch`` makes of
a loop, each starting from the same initial tile) never live at the same time: a read in another
branch does not keep a buffer from being shared.

The guarantee: two groups are merged only when no value of one is still to be read where a value
of the other is made, on a path where both run (``_interferes``) -- a merge never writes over a
value before its last read."""
from __future__ import annotations

from tritonpu.codegen.homes import L1, LOOPS, UB, Group, in_place_ok, loaded
from tritonpu.ir import Op


class Coalescing:
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
            if i in skip or self.home.get(id(arg)) != UB or len(uses) != 1 or loaded(term.operands[i]):
                continue        # (a prefetched tile's buffer belongs to its transfers: see _number)
            u = uses[0][0]
            if u.parent is body and in_place_ok(u) and len(u.results) == 1 and \
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
                if v in op.results or (v.owner is not None and self._top_op(v.owner, body) is None):
                    continue    # made outside the body (the init before it, the odd trips after it)
                for u, _ in self.users.get(id(v), []):
                    if u is term and any(w is v for j, w in enumerate(term.operands) if j != i):
                        last = 1 << 60      # yielded into another slot too (a, b = b, f(a)): read
                        break               # at the trip's end, after y would have replaced it
                    if u is term or _writes_over(u, v, y):
                        continue
                    top = self._top_op(u, body)
                    if top is None:
                        last = 1 << 60
                        break
                    s, e = self.span[id(top)]
                    last = max(last, s if (top is u and in_place_ok(u)) else e)
            if all(self.defined[id(v)] > last for v in gy.values):
                merge(ga, y)
                self._in_place_chain(y, body, ga, merge)    # (an unrolled body's acc * alpha + dot, twice)
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
            if all((v.owner is not None and self.defined[id(v)] < start and
                    self._no_loop_between(v.owner.parent, op)
                    and all(u is op or self._elsewhere(u, op) for u, _ in self.users.get(id(v), [])
                            if not (u.parent is op.parent and self.span[id(u)][0] < start)))
                   or self._exclusive(v, op) for v in gi.values) and not self._interferes(ga, gi):
                merge(ga, init)

    @staticmethod
    def _no_loop_between(region, op: Op) -> bool:
        """``op`` is inside ``region`` with no loop around it there: a value of ``region`` is made
        anew before each time ``op`` runs."""
        r = op.parent
        while r is not region:
            if r is None or r.parent is None or r.parent.name in ("for", "while"):
                return False
            r = r.parent.parent
        return True

    def _exclusive(self, v, op: Op) -> bool:
        """``v`` is made and read only where ``op`` does not run (another version of the loop, in
        the other branch of an ``if`` around ``op``, that started from the same initial tile)."""
        o = v.owner if v.owner is not None else self._arg_owner(v)
        return o is not None and self._elsewhere(o, op) and \
            all(self._elsewhere(u, op) for u, _ in self.users.get(id(v), []))

    def _elsewhere(self, u: Op, op: Op) -> bool:
        """``u`` runs only where ``op`` does not: in a branch of an ``if`` whose other branch holds
        ``op`` (``if trips { for (init) ... } else { yield init }``)."""
        r = op.parent
        while r is not None and r.parent is not None:
            owner = r.parent
            if owner.name == "if" and any(self._top_op(u, other) is not None
                                          for other in owner.regions if other is not r):
                return True
            r = owner.parent
        return False

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
                if self._interferes(gr, gy):
                    continue        # (the result's buffer already holds a value still read here)
                if all(v.owner is not None and self._top_op(v.owner, region) is not None for v in gy.values):
                    merge(gr, y)
                    self._in_place_chain(y, region, gr, merge, i)
                elif self._dies_into(op, i, y):
                    merge(gr, y)

    def _interferes(self, ga: Group, gb: Group) -> bool:
        """A value of one group is live where a value of the other is made (on a path where both
        run: not in exclusive branches) -- one buffer cannot hold both.  (An if's result buffer
        that a branch's tile already took holds, say, a tile loaded before the if that the other
        branch reads while computing its own result.)"""
        return any(self._live_at(v, w) or self._live_at(w, v) for v in ga.values for w in gb.values)

    def _live_at(self, v, w) -> bool:
        """``v`` is made before ``w`` and read after ``w`` is made, where ``w``'s maker runs."""
        d = self.defined.get(id(w), 0)
        if self.defined.get(id(v), 0) > d:
            return False
        ow = w.owner if w.owner is not None else self._arg_owner(w)
        for u, _ in self.users.get(id(v), []):
            if ow is not None and u is not ow and self._elsewhere(u, ow):
                continue
            if _writes_over(u, v, w) or (u is ow and u.name in LOOPS):
                continue        # w computed over v in place, or a loop starting from v: v's last read
            if self._read_at(v, u) > d:
                return True
        return False

    def _in_place_chain(self, y, region, gr: Group, merge, result: int | None = None) -> None:
        """``y`` computed in place over an operand (``acc * alpha``, a dot over its ``acc``) that
        dies there and lives only in ``region`` -- or, ``region`` being the branch of an ``if``
        yielding its result ``result``, dies into that result (a loop before the ``if`` whose result
        the other branch yields as it is): that operand (and so on back, a loop's result with the
        tile it carried) takes the same buffer."""
        chain = [y]
        owner = region.parent

        def clobbers(u) -> bool:
            """Writing ``u`` into the buffer would overwrite a value sharing it that is still to be
            read then (the other branch's yield, made before the if and read in this branch)."""
            d = self.defined[id(u)]
            return any(v.owner is not owner and not any(v is c for c in chain) and
                       self.defined.get(id(v), 0) <= d < self.last_use.get(id(v), 0) for v in gr.values)

        while y.owner is not None and in_place_ok(y.owner) and y.owner.results:
            o, nxt = y.owner, None
            s = self.span[id(o)][0]
            for u in o.operands:
                if self.home.get(id(u)) != UB or str(u.type) != str(y.type) or not _writes_over(o, u, y):
                    continue
                gu = self.group_of.get(id(u))
                if gu is None or gu is gr or self._live_after(gu, s, region) or clobbers(u):
                    continue
                if all(v.owner is not None and self._top_op(v.owner, region) is not None or
                       (v.owner is None and self._top_op(self._arg_owner(v), region) is not None)
                       for v in gu.values) or \
                        (result is not None and region.parent.name == "if" and
                         self._dies_into(region.parent, result, u)):
                    merge(gr, u)
                    chain.append(u)
                    nxt = u
                    break
            if nxt is None:
                return
            y = nxt

    def _live_after(self, g: Group, s: int, region) -> bool:
        """Whether a value of ``g`` is made or read after step ``s`` -- not counting reads in the other
        branches of the ``if`` that ``region`` is a branch of (they run only where this one does not)."""
        owner = region.parent
        others = [r for r in owner.regions if r is not region] if owner is not None and owner.name == "if" else []
        for v in g.values:
            d = self.defined.get(id(v), 0)
            if d > s:
                return True
            for u, _ in self.users.get(id(v), []):
                if not any(self._top_op(u, r) is not None for r in others) and self._read_at(v, u) > s:
                    return True
        return False

    def _read_at(self, v, u: Op) -> int:
        """The last step at which ``u`` reads ``v`` (a loop entered after ``v`` was made reads it
        in every trip: until the loop's end)."""
        d = self.defined.get(id(v), 0)
        at = self.span[id(u)][0] + (0 if in_place_ok(u) else 1)
        o = u.parent.parent if u.parent is not None else None
        while o is not None:
            if o.name in LOOPS and self.span[id(o)][0] > d:
                at = max(at, self.span[id(o)][1])
            o = o.parent.parent if o.parent is not None else None
        return at

    def _arg_owner(self, v):
        """The op whose region has ``v`` as an argument (None for a function argument)."""
        owners = self.__dict__.get("_arg_owners")
        if owners is None:      # one walk for the analysis, not one per question
            owners = self._arg_owners = {id(a): o for o in self.fn.walk() for r in o.regions for a in r.args}
        return owners.get(id(v))

    def _made_before_loop(self, op: Op, values) -> bool:
        """One of ``values`` is made before a loop the op is in: every trip reads it again (a
        block hoisted out of the program loop, ``acc = tl.zeros(...)`` yielded by the branch of
        an if that skips the K loop) -- writing over it would leave the next trip another value."""
        p = op.parent.parent if op.parent is not None else None
        while p is not None:
            if p.name in ("for", "while"):
                start = self.span[id(p)][0]
                if any(self.defined.get(id(v), 0) < start for v in values):
                    return True
            p = p.parent.parent if p.parent is not None else None
        return False

    def _dies_into(self, op: Op, i: int, y) -> bool:
        """Every value that shares ``y``'s storage (``y``, what it views, what views it) is read
        only inside the ``if`` and made before it or in the branch that yields ``y`` as result
        ``i``, and every other branch makes its own result ``i`` after its last read of any of
        them (``if c { yield f(y) } else { yield y }``, a loop's last trip): they can all live in
        the result's buffer."""
        gy = self.group_of[id(y)]
        ours = [v for v in gy.values if not any(v is r for r in op.results)]
        if self._made_before_loop(op, ours):
            return False                # read again by the next trip of a loop around the if

        def inside(u):
            return any(self._top_op(u, r) is not None for r in op.regions)

        begin = self.span[id(op)][0]
        if any(not inside(u) and not self._elsewhere(u, op) and self._read_at(v, u) >= begin
               for v in ours for u, _ in self.users.get(id(v), [])):
            return False                # read after the if (or beside it): its buffer must stay
        for region in op.regions:
            yb = region.terminator.operands[i] if region.terminator is not None else None
            if yb is None or any(yb is v for v in ours):
                continue
            last = self.span[id(op)][0]
            for v in ours:
                for u, _ in self.users.get(id(v), []):
                    top = self._top_op(u, region)
                    if top is not None:
                        s, e = self.span[id(top)]
                        last = max(last, s if (top is u and in_place_ok(u)) else e)
            gb = self.group_of[id(yb)]
            end = self.span[id(op)][1]
            if not all(any(v is r for r in op.results) or self.defined[id(v)] > end or   # (made after the if)
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


def _writes_over(u: Op, v, y) -> bool:
    """``u`` computes ``y`` and may write it over its operand ``v`` in place (``acc * alpha``, a dot
    over its ``acc``): ``v`` read there does not keep ``y`` out of ``v``'s buffer."""
    return y.owner is u and in_place_ok(u) and (u.name != "dot" or u.operands[2] is v)
