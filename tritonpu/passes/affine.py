"""Affine offsets and per-dimension mask bounds of block pointers, for memory analysis.

:class:`Analyzer` reads a block of pointers as ``p + c + sum_d i_d * s_d`` (plus at most one data
term that varies along one dimension only: an index vector) and a mask as per-dimension upper
bounds, building the scalar ops that compute them with a :class:`Builder`; anything else raises
:class:`NotAffine`.  ``(c + arange) % m`` is affine under assumptions the caller guards (the block
does not wrap around), or, with ``wrap_as_data``, an index vector, or, with ``wrap_as_cut``, affine
up to the lane where it wraps around (the offsets' ``cut``: lanes past it are left out of the
access, for a caller that has shown nothing reads them -- see :mod:`tritonpu.passes.lanes`).
``where(c + arange < m, c + arange, 0)`` (Triton's persistent-matmul tutorial clamps its offsets so)
is the same: affine while no lane is clamped (``c + size <= m``, guarded), an index vector, or
affine up to the first clamped lane.
"""
from __future__ import annotations

from tritonpu.dtypes import convert
from tritonpu.ir import Op
from tritonpu.ir import types as T


class NotAffine(Exception):
    pass


class Builder:
    """Scalar ops inserted before one op; ints are folded, values combined as i64 when types differ."""

    def __init__(self, at: Op):
        self.at = at
        self.ops: list[Op] = []

    def op(self, name, operands, ty, **attrs):
        o = Op(name, operands, [ty], attrs, loc=self.at.loc)
        self.ops.append(o)
        return o.result

    def value(self, t, ty=None):
        if isinstance(t, int):
            return self.op("constant", [], ty or T.i32, value=t)
        return t

    def _unify(self, a, b):
        ta = a.type if not isinstance(a, int) else None
        tb = b.type if not isinstance(b, int) else None
        ty = T.i64 if T.i64 in (ta, tb) else (ta or tb or T.i32)
        return self.cast(a, ty), self.cast(b, ty), ty

    def cast(self, a, ty):
        if isinstance(a, int):
            return self.value(a, ty)
        if a.type != ty:
            return self.op("cast", [a], ty)
        return a

    def add(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if a == 0 if isinstance(a, int) else False:
            return b
        if b == 0 if isinstance(b, int) else False:
            return a
        x, y, ty = self._unify(a, b)
        return self.op("add", [x, y], ty)

    def mul(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        for p, q in ((a, b), (b, a)):
            if isinstance(p, int) and p == 0:
                return 0
            if isinstance(p, int) and p == 1:
                return q
        x, y, ty = self._unify(a, b)
        return self.op("mul", [x, y], ty)

    def sub(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        if isinstance(b, int):
            return self.add(a, -b)
        x, y, ty = self._unify(a, b)
        return self.op("sub", [x, y], ty)

    def cmp(self, a, b, pred):
        """``a pred b`` as an i1, both sides in one integer type."""
        x, y, _ = self._unify(a, b)
        return self.op("cmp", [x, y], T.i1, pred=pred)

    def neg(self, a):
        return -a if isinstance(a, int) else self.mul(a, -1)

    def binop(self, name, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return {"maximum": max, "minimum": min}[name](a, b)
        x, y, ty = self._unify(a, b)
        return self.op(name, [x, y], ty)


def const_of(v):
    """The Python value of a constant (scalar or splat-of-constant block), else None."""
    op = v.owner
    if op is None:
        return None
    if op.name == "constant":
        return op.attrs["value"]
    if op.name == "splat":
        return const_of(op.operands[0])
    return None


class Aff:
    """c + sum_d i_d * strides[d] (+ ``data``, for rank 2: a [R, 1] data tensor along the rows,
    ``data_dim`` 0, or a [1, C] one along the columns, ``data_dim`` 1).  ``cut``: {dim: (bound,
    (x, m))} -- the offsets are these only for lanes i_dim < bound, where ``x % m`` has not wrapped
    around (or ``where(x < m, x, 0)`` not clamped): ``Analyzer(wrap_as_cut=True)``; at most one
    dimension."""

    def __init__(self, c, strides, data=None, data_dim=0, cut=None):
        self.c, self.strides, self.data, self.data_dim = c, list(strides), data, data_dim
        self.cut = cut or {}

    @property
    def rowdata(self):
        return self.data if self.data is not None and self.data_dim == 0 else None

    @property
    def coldata(self):
        return self.data if self.data is not None and self.data_dim == 1 else None

    @property
    def uniform(self) -> bool:
        return all(isinstance(s, int) and s == 0 for s in self.strides) and self.data is None


class Analyzer:
    def __init__(self, b: Builder, loops=None, wrap_as_data=False, wrap_as_cut=False):
        self.b = b
        self.loops = loops or {}        # for-loop region argument -> (loop, index): range facts
        self.assumptions: list = []      # i1 scalars the structured form needs (else: element path)
        # a [R, 1] i1 block of data the mask of a rank-2 access takes per row (``(idx < n)[:, None]``):
        # only a row gather or scatter can apply it (its row mask); see ``mask``
        self.row_mask = None
        # `(c + arange) % m` as data (an index vector) instead of affine-unless-it-wraps: the form
        # of the guarded access's other branch, for when the block does wrap around
        self.wrap_as_data = wrap_as_data
        self.wrap_as_cut = wrap_as_cut
        self.cut: dict = {}             # the access's cut (see Aff), once memory analysis took it
        self.fn = None                  # the function, for launch-value guards (set by the caller)

    def _arg_nonneg(self, v) -> bool:
        """Whether the kernel's scalar argument ``v`` is >= 0 at this launch -- a guard then
        recompiles for a launch where it is not (a block pointer's offset ``pid1 * N + pid0 * BM``
        then needs no lower-bound check)."""
        if self.fn is None or v.type.is_block or not v.type.is_int or not any(v is a for a in self.fn.args):
            return False
        from tritonpu.passes.specialize import decide
        zero = Op("constant", [], [v.type], {"value": 0})
        cond = Op("cmp", [v, zero.result], [T.i1], {"pred": "ge"})
        return decide(self.fn, [zero, cond], cond.result) is True

    # ---- offsets ----------------------------------------------------------------------------------
    def affine(self, v) -> Aff:
        try:
            return self._affine(v)
        except NotAffine:
            # a data-dependent term that varies along rows only ([R, 1], broadcast later) or along
            # columns only ([1, C])
            if v.type.is_block and len(v.type.shape) == 2 and v.type.scalar.is_int:
                if v.type.shape[1] == 1:
                    return Aff(0, [0, 0], v, 0)
                if v.type.shape[0] == 1:
                    return Aff(0, [0, 0], v, 1)
            raise

    def _affine(self, v) -> Aff:
        rank = len(v.type.shape) if v.type.is_block else 0
        k = const_of(v)
        if isinstance(k, bool) or (k is not None and not isinstance(k, int)):
            raise NotAffine
        if k is not None:
            return Aff(k, [0] * rank)
        op = v.owner
        if op is None:
            if rank:
                raise NotAffine
            return Aff(v, [])
        b = self.b
        if not v.type.is_block:
            if v.type.is_int:
                return Aff(v, [])
            raise NotAffine
        name = op.name
        if name == "splat":
            return Aff(self.scalar(op.operands[0]), [0] * rank)
        if name == "arange":
            return Aff(op.attrs["start"], [1])
        if name in ("add", "sub"):
            x, y = (self.affine(o) for o in op.operands)
            if name == "sub":
                if y.data is not None:
                    raise NotAffine
                y = Aff(b.neg(y.c), [b.neg(s) for s in y.strides], cut=y.cut)
            return Aff(b.add(x.c, y.c), [b.add(s, t) for s, t in zip(x.strides, y.strides)], *_one_data(x, y),
                       cut=_one_cut(x, y))
        if name == "mul":
            x, y = (self._try(o) for o in op.operands)
            for p, q in ((x, y), (y, x)):
                if p is not None and p.uniform and not p.cut and q is not None and q.data is None:
                    return Aff(b.mul(q.c, p.c), [b.mul(s, p.c) for s in q.strides], cut=q.cut)
            raise NotAffine
        if name == "rem" and v.type.scalar.is_int:
            # (c + i_d) % m with a uniform m: affine as long as the block does not wrap around
            # (0 <= c and c % m + size_d <= m); the load or store is guarded by that condition
            if self.wrap_as_data:
                raise NotAffine
            x, y = self.affine(op.operands[0]), self.affine(op.operands[1])
            live = [d for d, st in enumerate(x.strides) if not (isinstance(st, int) and st == 0)]
            if x.data is not None or not y.uniform or len(live) != 1 or x.strides[live[0]] != 1:
                raise NotAffine
            d = live[0]
            if x.cut or y.cut:
                raise NotAffine
            c = b.op("rem", list(b._unify(x.c, y.c)[:2]), b._unify(x.c, y.c)[2]) \
                if not (isinstance(x.c, int) and isinstance(y.c, int)) else x.c % y.c
            # (c + i) % m is c % m + i while c >= 0 (a negative c takes the remainder's sign: -m + i
            # is -m + i, not i), c + i does not wrap around the integer type, and c % m + i < m
            ty = op.operands[0].type.scalar
            if not ty.is_signed:
                raise NotAffine
            if not nonneg(x.c, self.loops, args=self._arg_nonneg):
                self.assumptions.append(b.op("cmp", list(b._unify(x.c, 0)[:2]), T.i1, pred="ge"))
            top = (1 << (ty.bits - 1)) - v.type.shape[d]        # c + size_d - 1 <= the type's max
            if isinstance(x.c, int):
                if x.c > top:
                    raise NotAffine
            else:
                self.assumptions.append(b.op("cmp", list(b._unify(x.c, top)[:2]), T.i1, pred="le"))
            if self.wrap_as_cut:
                # lanes i_d < m - c % m are c % m + i_d; the rest are cut
                return Aff(c, x.strides, cut={d: (b.sub(y.c, c), tuple(op.operands))})
            end = b.add(c, v.type.shape[d])
            self.assumptions.append(b.op("cmp", list(b._unify(end, y.c)[:2]), T.i1, pred="le"))
            return Aff(c, x.strides)
        if name == "select" and v.type.scalar.is_int and (clamp := _clamped(op)) is not None:
            # where(x < m, x, 0) with x = c + i_d, m uniform: x while no lane reaches m (the access
            # is guarded by c + size_d <= m); with wrap_as_cut, x for lanes i_d < m - c, the rest cut
            if self.wrap_as_data:
                raise NotAffine
            x, y = self.affine(clamp[0]), self.affine(clamp[1])
            live = [d for d, st in enumerate(x.strides) if not (isinstance(st, int) and st == 0)]
            if x.data is not None or not y.uniform or len(live) != 1 or x.strides[live[0]] != 1 or x.cut or y.cut:
                raise NotAffine
            d = live[0]
            if self.wrap_as_cut:
                return Aff(x.c, x.strides, cut={d: (b.sub(y.c, x.c), clamp)})
            end = b.add(x.c, v.type.shape[d])
            self.assumptions.append(b.op("cmp", list(b._unify(end, y.c)[:2]), T.i1, pred="le"))
            return Aff(x.c, x.strides)
        if name == "shl":
            k = const_of(op.operands[1])
            if not isinstance(k, int) or not 0 <= k < 31:
                raise NotAffine
            x = self.affine(op.operands[0])
            if x.data is not None:
                raise NotAffine
            return Aff(b.mul(x.c, 1 << k), [b.mul(s, 1 << k) for s in x.strides], cut=x.cut)
        if name == "expand_dims":
            x = self.affine(op.operands[0])
            if x.data is not None:
                raise NotAffine
            ax = op.attrs["axis"]
            return Aff(x.c, x.strides[:ax] + [0] + x.strides[ax:], cut=_expand_cut(x.cut, ax))
        if name == "broadcast":
            x = self.affine(op.operands[0])
            if x.data is not None and op.operands[0].type.shape[x.data_dim] != v.type.shape[x.data_dim]:
                raise NotAffine
            return x
        if name == "cast" and op.operands[0].type.scalar.is_int and v.type.scalar.is_int and \
                v.type.scalar.bits >= op.operands[0].type.scalar.bits:
            return self.affine(op.operands[0])
        raise NotAffine

    def _try(self, v):
        try:
            return self.affine(v)
        except NotAffine:
            return None

    def scalar(self, v):
        k = const_of(v)
        if isinstance(k, int) and not isinstance(k, bool):
            return k
        if not v.type.is_int:
            raise NotAffine
        return v

    inductions: dict = {}

    def pointer(self, v):
        """(scalar base pointer, offsets Aff in elements)."""
        op = v.owner
        rank = len(v.type.shape)
        if op is None:
            ind = self.inductions.get(id(v))
            if ind is None:
                raise NotAffine
            base, off = self.pointer(ind[0])
            return base, Aff(self.b.add(off.c, ind[1]), off.strides, off.data, off.data_dim, off.cut)
        if op.name == "splat":
            return op.operands[0], Aff(0, [0] * rank)
        if op.name == "addptr":
            base, off = self.pointer(op.operands[0])
            x = self.affine(op.operands[1])
            return base, Aff(self.b.add(off.c, x.c), [self.b.add(s, t) for s, t in zip(off.strides, x.strides)],
                              *_one_data(off, x), cut=_one_cut(off, x))
        if op.name == "expand_dims":
            base, off = self.pointer(op.operands[0])
            if off.data is not None:
                raise NotAffine
            ax = op.attrs["axis"]
            return base, Aff(off.c, off.strides[:ax] + [0] + off.strides[ax:], cut=_expand_cut(off.cut, ax))
        if op.name == "broadcast":
            return self.pointer(op.operands[0])
        raise NotAffine

    # ---- masks ------------------------------------------------------------------------------------
    def mask(self, v, shape):
        """Per-dimension upper bounds (None: no bound) such that mask[i] == all(i_d < bound_d) --
        and ``row_mask[i_0]`` when a rank-2 mask has a conjunct of data per row (``row_mask``)."""
        rank = len(shape)
        k = const_of(v)
        if k is not None:
            return [None] * rank if k else [0] + [None] * (rank - 1)
        op = v.owner
        if op is None:
            raise NotAffine
        b = self.b
        if op.name == "splat":
            cond = op.operands[0]
            return [b.op("select", [cond, b.value(shape[0]), b.value(0)], T.i32)] + [None] * (rank - 1)
        if op.name == "and":
            x, y = (self.mask(o, shape) for o in op.operands)
            return [p if q is None else q if p is None else b.binop("minimum", p, q) for p, q in zip(x, y)]
        if op.name == "expand_dims":
            ax = op.attrs["axis"]
            inner = list(shape[:ax]) + list(shape[ax + 1:])
            x = self.mask(op.operands[0], inner)
            return x[:ax] + [None] + x[ax:]
        if op.name == "broadcast":
            src_shape = op.operands[0].type.shape
            try:
                x = self.mask(op.operands[0], src_shape)
            except NotAffine:
                if rank != 2 or list(src_shape) != [shape[0], 1]:
                    raise
                # data per row: the access's row mask (a conjunction of them if there are several)
                m = op.operands[0]
                self.row_mask = m if self.row_mask is None else b.op("and", [self.row_mask, m], m.type)
                return [None, None]
            out = []
            for bound, n, m in zip(x, src_shape, shape):
                if bound is not None and n == 1 and m != 1:
                    ok = b.op("cmp", list(b._unify(bound, 1)[:2]), T.i1, pred="ge")
                    bound = b.op("select", [ok, b.value(m), b.value(0)], T.i32)
                out.append(bound)
            return out
        if op.name == "cmp" and (below := self._below_divisor(op)) is not None:
            ok = b.op("cmp", list(b._unify(below, 0)[:2]), T.i1, pred="gt")
            return [b.op("select", [ok, b.value(shape[0]), b.value(0)], T.i32)] + [None] * (rank - 1)
        if op.name == "cmp":
            pred = op.attrs["pred"]
            x, y = (self.affine(o) for o in op.operands)
            if x.data is not None or y.data is not None or x.cut or y.cut:
                raise NotAffine
            # a lower bound `idx >= 0` (block pointers' boundary checks) that holds for every index
            lo, zero = (x, y) if pred == "ge" else (y, x) if pred == "le" else (None, None)
            if lo is not None and zero.uniform and const_of(op.operands[1 if pred == "ge" else 0]) == 0 and \
                    all(isinstance(st, int) and st >= 0 for st in lo.strides):
                if not nonneg(lo.c, self.loops, args=self._arg_nonneg):
                    # where the compiler cannot tell (a tile index computed by division, or loaded):
                    # the access is guarded by it -- by a value it is provably at least, defined
                    # outside the loops where it can be (a block pointer advanced from a loaded
                    # offset: the offset it starts from), so that the guard can leave the loop --
                    # and the other branch keeps the bound
                    w = floor_of(lo.c, self.loops, self._arg_nonneg)
                    self.assumptions.append(b.op("cmp", list(b._unify(w, 0)[:2]), T.i1, pred="ge"))
                return [None] * rank
            if pred in ("gt", "ge"):
                x, y = y, x
                pred = "lt" if pred == "gt" else "le"
            if pred not in ("lt", "le"):
                raise NotAffine
            # x < y  (x <= y is x < y + 1):  sum_d i_d s_d < y.c - x.c  with s = x.strides - y.strides
            room = b.sub(y.c, x.c)
            if pred == "le":
                room = b.add(room, 1)
            strides = [b.sub(s, t) for s, t in zip(x.strides, y.strides)]
            live = [d for d, s in enumerate(strides) if not (isinstance(s, int) and s == 0)]
            bounds = [None] * rank
            if not live:
                ok = b.op("cmp", list(b._unify(room, 0)[:2]), T.i1, pred="gt")
                if rank:
                    bounds[0] = b.op("select", [ok, b.value(shape[0]), b.value(0)], T.i32)
                return bounds
            if len(live) != 1 or not isinstance(strides[live[0]], int) or strides[live[0]] <= 0:
                raise NotAffine
            d, s = live[0], strides[live[0]]
            # i_d * s < room  <=>  i_d < ceil(room / s)
            bound = room
            if s != 1:
                bound = b.binop("maximum", bound, 0)
                bound = b.add(bound, s - 1)
                if isinstance(bound, int):
                    bound //= s
                else:
                    bound = b.op("div", [bound, b.value(s, bound.type)], bound.type)
            bounds[d] = bound
            return bounds
        raise NotAffine

    def _below_divisor(self, op):
        """``m`` when the comparison is ``a % m < m`` (or ``m > a % m``) for a uniform ``m`` and
        ``a >= 0`` -- true exactly when ``m > 0`` (the remainder takes the dividend's sign): the
        ``offs_am < M`` mask a kernel may keep beside the tutorial's ``% M`` offsets.  Else None."""
        pred = op.attrs["pred"]
        if pred not in ("lt", "gt"):
            return None
        lhs, rhs = op.operands if pred == "lt" else op.operands[::-1]
        r = lhs.owner
        while r is not None and r.name in ("expand_dims", "broadcast", "reshape"):
            r = r.operands[0].owner
        if r is None or r.name != "rem" or not r.result.type.scalar.is_int:
            return None
        m, d = uniform_scalar(rhs), uniform_scalar(r.operands[1])
        if m is None or m is not d or not nonneg(r.operands[0], self.loops, args=self._arg_nonneg):
            return None
        return m

    def clamp(self, bound, n):
        if bound is None:
            return n
        if isinstance(bound, int):
            return max(0, min(bound, n))
        return self.b.binop("minimum", self.b.binop("maximum", bound, 0), n)


def _clamped(op: Op):
    """(x, m) when ``op`` is ``select(x < m, x, 0)`` -- ``tl.where(x < m, x, 0)`` -- else None."""
    cond, t, f = op.operands
    c = cond.owner
    if c is None or c.name != "cmp" or c.attrs["pred"] != "lt" or c.operands[0] is not t or const_of(f) != 0 or \
            isinstance(const_of(f), bool):
        return None
    return t, c.operands[1]


def _one_cut(x: Aff, y: Aff) -> dict:
    """The cut of a sum of two offsets (at most one may have one)."""
    if x.cut and y.cut:
        raise NotAffine
    return x.cut or y.cut


def _expand_cut(cut: dict, ax: int) -> dict:
    """``cut`` after a unit dimension is inserted at ``ax``."""
    return {d + (d >= ax): v for d, v in cut.items()}


def _one_data(x: Aff, y: Aff) -> tuple:
    """The data term of a sum of two offsets (at most one may have one)."""
    if x.data is not None and y.data is not None:
        raise NotAffine
    return (x.data, x.data_dim) if x.data is not None else (y.data, y.data_dim)


def nonneg(v, loops: dict, assumed=frozenset(), args=None) -> bool:
    """True when the integer scalar ``v`` (a Value or an int) is provably >= 0.  ``loops`` maps a
    for-loop region argument to (loop, index); ``args(v)``, when given, says whether the kernel's
    scalar argument ``v`` is (a launch-value guard: see passes/specialize.py)."""
    if isinstance(v, int):
        return v >= 0
    if id(v) in assumed:
        return True
    op = v.owner
    if op is None:
        # a loop's induction variable or carried value that starts >= 0 and does not go down
        if id(v) not in loops:
            return bool(args is not None and args(v))
        loop, i = loops[id(v)]
        if i == 0:      # start + j * step, j >= 0 (a step of num_programs too: persistent loops)
            return nonneg(loop.operands[2], loops, assumed, args) and nonneg(loop.operands[0], loops, assumed, args)
        init, nxt = loop.operands[3 + i - 1], loop.regions[0].terminator.operands[i - 1]
        return nonneg(init, loops, assumed, args) and nonneg(nxt, loops, assumed | {id(v)}, args)
    k = const_of(v)
    if k is not None:
        return isinstance(k, int) and not isinstance(k, bool) and k >= 0
    if op.name in ("program_id", "num_programs"):
        return True
    if op.name == "arange":
        return op.attrs["start"] >= 0
    if op.name in ("add", "mul", "maximum", "minimum", "div", "rem", "and") or \
            (op.name in ("splat", "broadcast", "expand_dims", "reshape") and op.operands):
        if op.name == "maximum":
            return any(nonneg(o, loops, assumed, args) for o in op.operands)
        return all(nonneg(o, loops, assumed, args) for o in op.operands)
    if op.name == "cast" and op.operands[0].type.scalar.is_int and v.type.scalar.is_int and \
            v.type.scalar.bits >= op.operands[0].type.scalar.bits:
        return nonneg(op.operands[0], loops, assumed, args)
    if op.name == "sub":        # x - k with x >= k: cdiv's (n + d - 1) // d
        k = const_of(op.operands[1])
        return isinstance(k, int) and not isinstance(k, bool) and _at_least(op.operands[0], k, loops, assumed, args)
    return False


def floor_of(v, loops: dict, args=None):
    """A value provably <= the integer scalar ``v``, taken from outside the loops where it can be:
    a loop's induction variable or carried value that does not go down (a start plus a step or an
    increment >= 0) is at least where it starts; ``x + y`` with ``y >= 0`` is at least ``x``."""
    if isinstance(v, int):
        return v
    op = v.owner
    if op is None:
        if id(v) not in loops:
            return v
        loop, i = loops[id(v)]
        if i == 0:
            return floor_of(loop.operands[0], loops, args) if nonneg(loop.operands[2], loops, args=args) else v
        init, nxt = loop.operands[3 + i - 1], loop.regions[0].terminator.operands[i - 1]
        n = nxt.owner
        if n is not None and n.name == "add" and any(o is v for o in n.operands):
            d = n.operands[1] if n.operands[0] is v else n.operands[0]
            if nonneg(d, loops, frozenset({id(v)}), args):
                return floor_of(init, loops, args)
        return v
    if op.name == "add":
        x, y = op.operands
        if nonneg(y, loops, args=args):
            return floor_of(x, loops, args)
        if nonneg(x, loops, args=args):
            return floor_of(y, loops, args)
    return v


def _at_least(v, k: int, loops: dict, assumed, args) -> bool:
    """True when the integer scalar ``v`` is provably >= ``k``: a constant, or a constant plus a
    value that is provably >= the rest."""
    c = const_of(v)
    if c is not None:
        return isinstance(c, int) and not isinstance(c, bool) and c >= k
    if k <= 0 and nonneg(v, loops, assumed, args):
        return True
    op = v.owner
    if op is not None and op.name == "add":
        for x, y in (op.operands, op.operands[::-1]):
            c = const_of(y)
            if isinstance(c, int) and not isinstance(c, bool) and _at_least(x, k - c, loops, assumed, args):
                return True
    return False


def uniform_scalar(v):
    """The scalar Value a block is made of by splats and broadcasts (``v`` itself when a scalar),
    else None."""
    while v.type.is_block:
        o = v.owner
        if o is None or o.name not in ("splat", "broadcast", "expand_dims", "reshape"):
            return None
        v = o.operands[0]
    return v


def uniform_other(v):
    """The scalar fill value of a uniform ``other`` (splat, constant, or a cast of one), else None."""
    op = v.owner
    if op is not None and op.name == "splat":
        return op.operands[0]
    if op is not None and op.name == "cast" and const_of(op.operands[0]) is not None:
        ty = op.result.type.scalar
        value = convert(const_of(op.operands[0]), op.operands[0].type.scalar.kind, ty.kind).item()
        return Op("constant", [], [ty], {"value": value}, loc=op.loc)
    if op is not None and op.name == "constant" and op.result.type.is_block:
        o = Op("constant", [], [op.result.type.scalar], {"value": op.attrs["value"]}, loc=op.loc)
        return o
    return None
