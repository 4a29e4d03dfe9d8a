"""Memory analysis: block loads and stores with structured addresses become tile transfers.

Guarantees: a ``load``/``store`` of a rank-1, rank-2 or rank-3 block whose pointer is
``p + c + sum_d i_d * s_d`` (``p`` a scalar pointer, ``c`` and ``s_d`` scalars: built from
``splat``, ``arange``, ``+``, ``-``, ``*`` by a uniform value, ``<<`` by a constant,
``expand_dims``, ``broadcast`` and integer widening) and whose mask is a conjunction of
per-dimension bounds (``i_d * k + c' < n`` and its ``<=``/``>``/``>=`` forms, ``k`` a positive
constant, or uniform conditions) is replaced by ``load_tile``/``store_tile`` with the base pointer
``p + c``, the strides ``s_d`` (none a negative constant) and the valid extents ``clamp(bound_d, 0, size_d)`` computed by
scalar ops inserted before it; ``other`` becomes the tile's fill value when it is uniform (else a
``select`` after the load).  A rank-2 access whose offsets add a data-dependent per-row term
(``idx[:, None] * D + cols[None, :]``, an embedding lookup) with contiguous columns becomes
``gather_rows``/``scatter_rows``; a load whose per-column term is data (``rows[:, None] * s +
idx[None, :]``) becomes ``gather_cols``.  An offset ``(c + arange) % m`` is affine while the block does not wrap around:
the access is guarded by that condition, and the other branch treats the offsets as an index vector
(a row or column gather), so no pointer block is materialised either way.  Everything else is left
as it is (the NPU back end then moves it element by element).  The rewrite keeps the program's meaning exactly: the same elements are read
and written, masked-off elements are neither read nor written, and the fill values are the same.
Pointer arithmetic and masks left without uses are removed by ``dce``.
"""
from __future__ import annotations

from tritonpu.ir import Function, Op, Region, Value
from tritonpu.ir import types as T
from tritonpu.passes.manager import Pass, register


class _NotAffine(Exception):
    pass


class _Builder:
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
        if ty == T.i64 and not (-2**31 <= (a if isinstance(a, int) else 0) < 2**31
                                 and -2**31 <= (b if isinstance(b, int) else 0) < 2**31):
            pass
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

    def neg(self, a):
        return -a if isinstance(a, int) else self.mul(a, -1)

    def binop(self, name, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return {"maximum": max, "minimum": min}[name](a, b)
        x, y, ty = self._unify(a, b)
        return self.op(name, [x, y], ty)


def _const(v):
    """The Python value of a constant (scalar or splat-of-constant block), else None."""
    op = v.owner
    if op is None:
        return None
    if op.name == "constant":
        return op.attrs["value"]
    if op.name == "splat":
        return _const(op.operands[0])
    return None


class _Aff:
    """c + sum_d i_d * strides[d] (+ ``data``, for rank 2: a [R, 1] data tensor along the rows,
    ``data_dim`` 0, or a [1, C] one along the columns, ``data_dim`` 1)."""

    def __init__(self, c, strides, data=None, data_dim=0):
        self.c, self.strides, self.data, self.data_dim = c, list(strides), data, data_dim

    @property
    def rowdata(self):
        return self.data if self.data is not None and self.data_dim == 0 else None

    @property
    def coldata(self):
        return self.data if self.data is not None and self.data_dim == 1 else None

    @property
    def uniform(self) -> bool:
        return all(isinstance(s, int) and s == 0 for s in self.strides) and self.data is None


class _Analyzer:
    def __init__(self, b: _Builder, loops=None, wrap_as_data=False):
        self.b = b
        self.loops = loops or {}        # for-loop region argument -> (loop, index): range facts
        self.assumptions: list = []      # i1 scalars the structured form needs (else: element path)
        # `(c + arange) % m` as data (an index vector) instead of affine-unless-it-wraps: the form
        # of the guarded access's other branch, for when the block does wrap around
        self.wrap_as_data = wrap_as_data

    # ---- offsets ----------------------------------------------------------------------------------
    def affine(self, v) -> _Aff:
        try:
            return self._affine(v)
        except _NotAffine:
            # a data-dependent term that varies along rows only ([R, 1], broadcast later) or along
            # columns only ([1, C])
            if v.type.is_block and len(v.type.shape) == 2 and v.type.scalar.is_int:
                if v.type.shape[1] == 1:
                    return _Aff(0, [0, 0], v, 0)
                if v.type.shape[0] == 1:
                    return _Aff(0, [0, 0], v, 1)
            raise

    def _affine(self, v) -> _Aff:
        rank = len(v.type.shape) if v.type.is_block else 0
        k = _const(v)
        if isinstance(k, bool) or (k is not None and not isinstance(k, int)):
            raise _NotAffine
        if k is not None:
            return _Aff(k, [0] * rank)
        op = v.owner
        if op is None:
            if rank:
                raise _NotAffine
            return _Aff(v, [])
        b = self.b
        if not v.type.is_block:
            if v.type.is_int:
                return _Aff(v, [])
            raise _NotAffine
        name = op.name
        if name == "splat":
            return _Aff(self.scalar(op.operands[0]), [0] * rank)
        if name == "arange":
            return _Aff(op.attrs["start"], [1])
        if name in ("add", "sub"):
            x, y = (self.affine(o) for o in op.operands)
            if name == "sub":
                if y.data is not None:
                    raise _NotAffine
                y = _Aff(b.neg(y.c), [b.neg(s) for s in y.strides])
            return _Aff(b.add(x.c, y.c), [b.add(s, t) for s, t in zip(x.strides, y.strides)], *_one_data(x, y))
        if name == "mul":
            x, y = (self._try(o) for o in op.operands)
            for p, q in ((x, y), (y, x)):
                if p is not None and p.uniform and q is not None and q.data is None:
                    return _Aff(b.mul(q.c, p.c), [b.mul(s, p.c) for s in q.strides])
            raise _NotAffine
        if name == "rem" and v.type.scalar.is_int:
            # (c + i_d) % m with a uniform m: affine as long as the block does not wrap around
            # (0 <= c % m and c % m + size_d <= m); the load or store is guarded by that condition
            if self.wrap_as_data:
                raise _NotAffine
            x, y = self.affine(op.operands[0]), self.affine(op.operands[1])
            live = [d for d, st in enumerate(x.strides) if not (isinstance(st, int) and st == 0)]
            if x.data is not None or not y.uniform or len(live) != 1 or x.strides[live[0]] != 1:
                raise _NotAffine
            d = live[0]
            c = b.op("rem", list(b._unify(x.c, y.c)[:2]), b._unify(x.c, y.c)[2]) \
                if not (isinstance(x.c, int) and isinstance(y.c, int)) else x.c % y.c
            end = b.add(c, v.type.shape[d])
            ok = b.op("cmp", list(b._unify(end, y.c)[:2]), T.i1, pred="le")
            nonneg = b.op("cmp", list(b._unify(c, 0)[:2]), T.i1, pred="ge")
            self.assumptions += [ok, nonneg]
            return _Aff(c, x.strides)
        if name == "shl":
            k = _const(op.operands[1])
            if not isinstance(k, int) or not 0 <= k < 31:
                raise _NotAffine
            x = self.affine(op.operands[0])
            if x.data is not None:
                raise _NotAffine
            return _Aff(b.mul(x.c, 1 << k), [b.mul(s, 1 << k) for s in x.strides])
        if name == "expand_dims":
            x = self.affine(op.operands[0])
            if x.data is not None:
                raise _NotAffine
            ax = op.attrs["axis"]
            return _Aff(x.c, x.strides[:ax] + [0] + x.strides[ax:])
        if name == "broadcast":
            x = self.affine(op.operands[0])
            if x.data is not None and op.operands[0].type.shape[x.data_dim] != v.type.shape[x.data_dim]:
                raise _NotAffine
            return x
        if name == "cast" and op.operands[0].type.scalar.is_int and v.type.scalar.is_int and \
                v.type.scalar.bits >= op.operands[0].type.scalar.bits:
            return self.affine(op.operands[0])
        raise _NotAffine

    def _try(self, v):
        try:
            return self.affine(v)
        except _NotAffine:
            return None

    def scalar(self, v):
        k = _const(v)
        if isinstance(k, int) and not isinstance(k, bool):
            return k
        if not v.type.is_int:
            raise _NotAffine
        return v

    inductions: dict = {}

    def pointer(self, v):
        """(scalar base pointer, offsets _Aff in elements)."""
        op = v.owner
        rank = len(v.type.shape)
        if op is None:
            ind = self.inductions.get(id(v))
            if ind is None:
                raise _NotAffine
            base, off = self.pointer(ind[0])
            return base, _Aff(self.b.add(off.c, ind[1]), off.strides, off.data, off.data_dim)
        if op.name == "splat":
            return op.operands[0], _Aff(0, [0] * rank)
        if op.name == "addptr":
            base, off = self.pointer(op.operands[0])
            x = self.affine(op.operands[1])
            return base, _Aff(self.b.add(off.c, x.c), [self.b.add(s, t) for s, t in zip(off.strides, x.strides)],
                              *_one_data(off, x))
        if op.name == "expand_dims":
            base, off = self.pointer(op.operands[0])
            if off.data is not None:
                raise _NotAffine
            ax = op.attrs["axis"]
            return base, _Aff(off.c, off.strides[:ax] + [0] + off.strides[ax:])
        if op.name == "broadcast":
            return self.pointer(op.operands[0])
        raise _NotAffine

    # ---- masks ------------------------------------------------------------------------------------
    def mask(self, v, shape):
        """Per-dimension upper bounds (None: no bound) such that mask[i] == all(i_d < bound_d)."""
        rank = len(shape)
        k = _const(v)
        if k is not None:
            return [None] * rank if k else [0] + [None] * (rank - 1)
        op = v.owner
        if op is None:
            raise _NotAffine
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
            x = self.mask(op.operands[0], src_shape)
            out = []
            for bound, n, m in zip(x, src_shape, shape):
                if bound is not None and n == 1 and m != 1:
                    ok = b.op("cmp", list(b._unify(bound, 1)[:2]), T.i1, pred="ge")
                    bound = b.op("select", [ok, b.value(m), b.value(0)], T.i32)
                out.append(bound)
            return out
        if op.name == "cmp":
            pred = op.attrs["pred"]
            x, y = (self.affine(o) for o in op.operands)
            if x.data is not None or y.data is not None:
                raise _NotAffine
            # a lower bound `idx >= 0` (block pointers' boundary checks) that holds for every index
            lo, zero = (x, y) if pred == "ge" else (y, x) if pred == "le" else (None, None)
            if lo is not None and zero.uniform and _const(op.operands[1 if pred == "ge" else 0]) == 0 and \
                    all(isinstance(st, int) and st >= 0 for st in lo.strides) and _nonneg(lo.c, self.loops):
                return [None] * rank
            if pred in ("gt", "ge"):
                x, y = y, x
                pred = "lt" if pred == "gt" else "le"
            if pred not in ("lt", "le"):
                raise _NotAffine
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
                raise _NotAffine
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
        raise _NotAffine

    def clamp(self, bound, n):
        if bound is None:
            return n
        if isinstance(bound, int):
            return max(0, min(bound, n))
        return self.b.binop("minimum", self.b.binop("maximum", bound, 0), n)


def _one_data(x: _Aff, y: _Aff) -> tuple:
    """The data term of a sum of two offsets (at most one may have one)."""
    if x.data is not None and y.data is not None:
        raise _NotAffine
    return (x.data, x.data_dim) if x.data is not None else (y.data, y.data_dim)


def _nonneg(v, loops: dict, assumed=frozenset()) -> bool:
    """True when the integer scalar ``v`` (a Value or an int) is provably >= 0.  ``loops`` maps a
    for-loop region argument to (loop, index)."""
    if isinstance(v, int):
        return v >= 0
    if id(v) in assumed:
        return True
    op = v.owner
    if op is None:
        # a loop's induction variable or carried value that starts >= 0 and only grows
        if id(v) not in loops:
            return False
        loop, i = loops[id(v)]
        if i == 0:
            step = _const(loop.operands[2])
            return isinstance(step, int) and step > 0 and _nonneg(loop.operands[0], loops, assumed)
        init, nxt = loop.operands[3 + i - 1], loop.regions[0].terminator.operands[i - 1]
        return _nonneg(init, loops, assumed) and _nonneg(nxt, loops, assumed | {id(v)})
    k = _const(v)
    if k is not None:
        return isinstance(k, int) and not isinstance(k, bool) and k >= 0
    if op.name in ("program_id", "num_programs"):
        return True
    if op.name == "arange":
        return op.attrs["start"] >= 0
    if op.name in ("add", "mul", "maximum", "minimum", "div", "rem", "and") or \
            (op.name in ("splat", "broadcast", "expand_dims", "reshape") and op.operands):
        if op.name == "maximum":
            return any(_nonneg(o, loops, assumed) for o in op.operands)
        return all(_nonneg(o, loops, assumed) for o in op.operands)
    if op.name == "cast" and op.operands[0].type.scalar.is_int and v.type.scalar.is_int and \
            v.type.scalar.bits >= op.operands[0].type.scalar.bits:
        return _nonneg(op.operands[0], loops, assumed)
    return False


def _uniform_other(v):
    """The scalar fill value of a uniform ``other`` (splat, constant, or a cast of one), else None."""
    op = v.owner
    if op is not None and op.name == "splat":
        return op.operands[0]
    if op is not None and op.name == "cast" and _const(op.operands[0]) is not None:
        k = _const(op.operands[0])
        ty = op.result.type.scalar
        value = float(k) if ty.is_float else int(k)
        return Op("constant", [], [ty], {"value": value}, loc=op.loc)
    if op is not None and op.name == "constant" and op.result.type.is_block:
        o = Op("constant", [], [op.result.type.scalar], {"value": op.attrs["value"]}, loc=op.loc)
        return o
    return None


@register
class MemoryAnalysis(Pass):
    name = "memory-analysis"

    def run(self, fn: Function) -> None:
        self.fn = fn
        self.inductions: dict = {}
        self.loops = {id(a): (o, i) for o in fn.walk() if o.name == "for" for i, a in enumerate(o.regions[0].args)}
        self._region(fn.body)

    def _region(self, region: Region) -> None:
        new_ops = []
        for op in region.ops:
            if op.name == "for":
                new_ops.extend(self._induction_pointers(op))
            for r in op.regions:
                self._region(r)
            repl = None
            if op.name in ("load", "store") and op.operands[0].type.is_block and \
                    1 <= len(op.operands[0].type.shape) <= 3:
                repl = self._rewrite(op)
            if repl is None:
                new_ops.append(op)
                continue
            for o in repl:
                o.parent = region
            new_ops.extend(repl)
        region.ops = new_ops

    def _induction_pointers(self, op: Op) -> list:
        """Pointer blocks a loop advances by a uniform step (``p += BLOCK_K * stride``) get a scalar
        carried offset beside them, so loads through them stay structured: p = init + offset."""
        body = op.regions[0]
        term = body.terminator
        pre = []
        for i, arg in enumerate(body.args[1:]):
            if not arg.type.is_block or not arg.type.scalar.is_ptr:
                continue
            step_op = term.operands[i].owner
            if step_op is None or step_op.name != "addptr" or step_op.operands[0] is not arg:
                continue
            step = step_op.operands[1]
            src = step.owner
            if src is not None and src.name == "splat":
                delta = src.operands[0]
            elif _const(step) is not None and isinstance(_const(step), int):
                delta = None
            else:
                continue
            zero = Op("constant", [], [T.i64], {"value": 0}, loc=op.loc)
            pre.append(zero)
            d_arg = Value(T.i64, f"{arg.name or 'p'}_off")
            body.args.append(d_arg)
            res = Value(T.i64, None, op, len(op.results))
            op.results.append(res)
            op.operands.append(zero.result)
            yb = _Builder(term)
            if delta is None:
                nxt = yb.add(d_arg, _const(step))
            else:
                nxt = yb.add(d_arg, yb.cast(delta, T.i64) if delta.type != T.i64 else delta)
            for o in yb.ops:
                o.parent = body
            body.ops[-1:-1] = yb.ops
            term.operands.append(nxt)
            self.inductions[id(arg)] = (op.operands[3 + i], d_arg)
        return pre

    def _rewrite(self, op: Op):
        an = self._analyzer(op)
        res = self._rewrite_fast(op, an.b, an)
        if res is None:
            return None
        ops, val = res
        if not an.assumptions:
            if val is not None:
                _replace(op.result, val, self.fn)
            return ops
        # guarded: `if assumptions { structured transfer } else { what a wrap-around needs }`: the
        # wrapped offsets as an index vector (a gather of rows or columns), else the original op
        b = an.b
        n_pure = len(b.ops)
        pure, fast = ops[:n_pure], ops[n_pure:]
        cond = an.assumptions[0]
        for c in an.assumptions[1:]:
            cond = b.op("and", [cond, c], T.i1)
        pure += b.ops[n_pure:]
        wrapped = self._analyzer(op, wrap_as_data=True)
        res = self._rewrite_fast(op, wrapped.b, wrapped)
        slow, slow_val = res if res is not None and not wrapped.assumptions else ([op], op.result if val is not None else None)
        loc = op.loc
        results = [op.result.type] if val is not None else []
        guard = Op("if", [cond], results, loc=loc)
        guard.regions = [Region([], fast + [Op("yield", [val] if val is not None else [], [], loc=loc)]),
                         Region([], slow + [Op("yield", [slow_val] if val is not None else [], [], loc=loc)])]
        for r in guard.regions:
            r.parent = guard
            for o in r.ops:
                o.parent = r
        if val is not None:        # users of the loaded value now read the guard's result
            inside = {id(o) for r in guard.regions for o in r.ops}
            for o in self.fn.walk():
                if id(o) not in inside:
                    o.operands = [guard.result if v is op.result else v for v in o.operands]
        return pure + [guard]

    def _analyzer(self, op: Op, wrap_as_data: bool = False) -> "_Analyzer":
        an = _Analyzer(_Builder(op), self.loops, wrap_as_data)
        an.inductions = self.inductions
        return an

    def _rewrite_fast(self, op: Op, b: "_Builder", an: "_Analyzer"):
        """(ops, the loaded value or None for a store) of the structured form, or None."""
        is_load = op.name == "load"
        ptr = op.operands[0]
        shape = ptr.type.shape
        mask = op.operands[1 if is_load else 2] if len(op.operands) > (1 if is_load else 2) else None
        try:
            base, off = an.pointer(ptr)
            bounds = an.mask(mask, shape) if mask is not None else [None] * len(shape)
        except _NotAffine:
            return None
        if any(isinstance(st, int) and st < 0 for st in off.strides):
            return None         # descending addresses: transfers move ascending segments only
        valids = [b.value(an.clamp(bd, n)) for bd, n in zip(bounds, shape)]
        if not (isinstance(off.c, int) and off.c == 0):
            base = b.op("addptr", [base, b.value(off.c)], base.type)
        if off.rowdata is not None:
            return self._rows(op, b, base, off, bounds, valids, is_load)
        if off.coldata is not None:
            return self._cols(op, b, base, off, bounds, valids, is_load)
        strides = [b.value(s) for s in off.strides]
        if is_load:
            other = op.operands[2] if len(op.operands) > 2 else None
            fill = self._fill(b, other)
            tile = Op("load_tile", [base] + strides + valids + ([fill] if fill is not None else []),
                      [op.result.type], loc=op.loc)
            if other is not None and fill is None:
                sel = Op("select", [mask, tile.result, other], [op.result.type], loc=op.loc)
                return b.ops + [tile, sel], sel.result
            return b.ops + [tile], tile.result
        store = Op("store_tile", [base] + strides + valids + [op.operands[1]], [], loc=op.loc)
        return b.ops + [store], None

    @staticmethod
    def _fill(b: "_Builder", other):
        """The uniform fill value of ``other`` as a scalar (its ops added to ``b``), else None."""
        fill = _uniform_other(other) if other is not None else None
        if isinstance(fill, Op):
            b.ops.append(fill)
            return fill.result
        return fill

    @staticmethod
    def _index_vector(b: "_Builder", data, n, stride):
        """A [n] vector of element offsets: ``data`` ([n, 1] or [1, n]) plus ``arange(n) * stride``."""
        ity = data.type.scalar
        vec = b.op("reshape", [data], T.block(ity, [n]))
        if not (isinstance(stride, int) and stride == 0):
            ar = b.op("arange", [], T.block(T.i32, [n]), start=0, end=n)
            s = b.cast(stride, ity) if not isinstance(stride, int) else b.value(stride, ity)
            if ity != T.i32:
                ar = b.op("cast", [ar], T.block(ity, [n]))
            step = b.op("mul", [ar, b.op("splat", [s], T.block(ity, [n]))], T.block(ity, [n]))
            vec = b.op("add", [vec, step], T.block(ity, [n]))
        return vec

    @staticmethod
    def _lane_mask(b: "_Builder", n, valid):
        """A [n] i1 vector: lane < valid."""
        ar = b.op("arange", [], T.block(T.i32, [n]), start=0, end=n)
        lim = b.cast(valid, T.i32)
        return b.op("cmp", [ar, b.op("splat", [lim], T.block(T.i32, [n]))], T.block(T.i1, [n]), pred="lt")

    def _masked_fill(self, op, b, extra, n):
        """Append ``other``'s fill to a gather's optional operands (a mask of all lanes first when
        there is none); None when ``other`` is not uniform."""
        other = op.operands[2] if len(op.operands) > 2 else None
        fill = self._fill(b, other)
        if other is not None and fill is None:
            return None
        if fill is not None:
            if not extra:
                extra = [b.op("splat", [b.op("constant", [], T.i1, value=True)], T.block(T.i1, [n]))]
            extra = extra + [fill]
        return extra

    def _rows(self, op, b, base, off, bounds, valids, is_load):
        if not (isinstance(off.strides[1], int) and off.strides[1] == 1):
            return None
        R = op.operands[0].type.shape[0]
        rows = self._index_vector(b, off.rowdata, R, off.strides[0])
        extra = [self._lane_mask(b, R, valids[0])] if bounds[0] is not None else []
        if is_load:
            extra = self._masked_fill(op, b, extra, R)
            if extra is None:
                return None
            g = Op("gather_rows", [base, rows, valids[1]] + extra, [op.result.type], loc=op.loc)
            return b.ops + [g], g.result
        s = Op("scatter_rows", [base, rows, valids[1], op.operands[1]] + extra, [], loc=op.loc)
        return b.ops + [s], None

    def _cols(self, op, b, base, off, bounds, valids, is_load):
        """Columns picked by an index vector (``x[:, (c + arange) % n]`` when it wraps around): a
        gather of columns, each a run of rows ``row stride`` apart.  Loads only."""
        if not is_load or (isinstance(off.strides[0], int) and off.strides[0] < 0):
            return None
        C = op.operands[0].type.shape[1]
        cols = self._index_vector(b, off.coldata, C, off.strides[1])
        extra = [self._lane_mask(b, C, valids[1])] if bounds[1] is not None else []
        extra = self._masked_fill(op, b, extra, C)
        if extra is None:
            return None
        g = Op("gather_cols", [base, cols, b.value(off.strides[0]), valids[0]] + extra, [op.result.type],
               loc=op.loc)
        return b.ops + [g], g.result


def _replace(old, new, fn: Function) -> None:
    """Replace every use of ``old`` by ``new``."""
    for o in fn.walk():
        o.operands = [new if v is old else v for v in o.operands]
