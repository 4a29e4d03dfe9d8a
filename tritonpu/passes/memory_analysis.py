"""Memory analysis: block loads and stores with structured addresses become tile transfers.

Guarantees: a ``load``/``store`` of a rank-1, rank-2 or rank-3 block whose pointer is
``p + c + sum_d i_d * s_d`` (``p`` a scalar pointer, ``c`` and ``s_d`` scalars: built from
``splat``, ``arange``, ``+``, ``-``, ``*`` by a uniform value, ``<<`` by a constant,
``expand_dims``, ``broadcast`` and integer widening) and whose mask is a conjunction of
per-dimension bounds (``i_d * k + c' < n`` and its ``<=``/``>``/``>=`` forms, ``k`` a positive
constant, or uniform conditions) is replaced by ``load_tile``/``store_tile`` with the base pointer
``p + c``, the strides ``s_d`` (none negative: a stride computed at run time is >= 0 by its
arithmetic, or by the launch's arguments -- a guard -- or else by a check in the program; that
check's other branch, and a launch whose arguments make the stride negative, pick the rows
(columns) ``arange * s_d`` apart by an index vector -- a gather or scatter of rows, each row
contiguous, or a gather of columns -- and keep the op only when neither fits) and the valid extents ``clamp(bound_d, 0, size_d)`` computed by
scalar ops inserted before it; ``other`` becomes the tile's fill value when it is uniform (else a
``select`` after the load).  A rank-2 access whose offsets add a data-dependent per-row term
(``idx[:, None] * D + cols[None, :]``, an embedding lookup) with contiguous columns becomes
``gather_rows``/``scatter_rows``; a load whose per-column term is data (``rows[:, None] * s +
idx[None, :]``) becomes ``gather_cols``.  An offset ``(c + arange) % m`` is affine while the
block does not wrap around (``c >= 0``, ``c % m + size <= m``, ``c + size - 1`` within the offset
type): the access is guarded by that condition, and the other branch treats the offsets as an
index vector (a row or column gather), so no pointer block is materialised either way.  A load
whose wrapped lanes reach no stored byte (:mod:`tritonpu.passes.lanes`: Triton's matmul tutorial,
whose store masks ``offs_cm < M`` leave out the rows the wrapped rows of ``a`` make) is instead
the tile up to the wrap, padded past it -- one form whether the block wraps or not, guarded by
the first and last conditions only.  A lower bound ``c + i_d >= 0`` (a block pointer's boundary
check) whose ``c`` is not provably >= 0 is likewise an assumption the access is guarded by, the
other branch keeping the op.  The pure ops that only a guard's other branch reads (the op's pointer
block and mask) move into that branch, so the structured path does not compute them; a block both
branches read and nothing else (the value a guarded store stores) is computed in each.  Everything
else is left as it is (the NPU back end then
moves it element by element).  The rewrite keeps the program's meaning exactly: the same
elements are read and written, masked-off elements are neither read nor written (and stored
elements never depend on the padded lanes), and the fill values are the same.
A rank-2 load whose every use is a ``dot`` operand (directly or through ``tl.trans``) and whose
rows are not contiguous (column-major: ``x @ W.T`` with ``W`` row-major) loads the transpose --
a ``load_tile`` with the strides swapped, or a ``gather_cols`` where the rows are picked by data --
and views it transposed (``permute``); a ``tl.trans`` of it reads that tile itself.
An ``atomic_add``/``max``/``min`` whose old values are not used, of a type the DMA accumulates
(int8, int16, fp16, bf16, int32, fp32), is rewritten like a store, the transfer carrying
``atomic=<kind>``: the same elements are combined into GM, each exactly once.
Pointer arithmetic and masks left without uses are removed by ``dce``.
"""
from __future__ import annotations

from tritonpu.ir import Function, Op, Region, Value
from tritonpu.ir import types as T
from tritonpu.passes.affine import Analyzer, Builder, NotAffine, const_of, nonneg, uniform_other
from tritonpu.passes.lanes import wrapped_lanes_unread
from tritonpu.passes.rewrite import sink_into_branches
from tritonpu.passes.specialize import decide, for_a_launch
from tritonpu.passes.manager import Pass, register


@register
class MemoryAnalysis(Pass):
    name = "memory-analysis"

    def run(self, fn: Function) -> None:
        self.fn = fn
        self.users: dict = {}
        for o in fn.walk():
            for v in o.operands:
                self.users.setdefault(id(v), []).append(o)
        self.used = set(self.users)
        self.inductions: dict = {}
        self.loops = {id(a): (o, i) for o in fn.walk() if o.name == "for" for i, a in enumerate(o.regions[0].args)}
        self.guards: list = []
        self._region(fn.body)
        for guard in self.guards:   # what only the other branch reads is computed there
            sink_into_branches(fn, guard.parent, guard, only=(1,), copy=True)

    def _region(self, region: Region) -> None:
        new_ops = []
        for op in region.ops:
            if op.name == "for":
                new_ops.extend(self._induction_pointers(op))
            for r in op.regions:
                self._region(r)
            repl = None
            if (op.name in ("load", "store") or self._dma_atomic(op)) and op.operands[0].type.is_block and \
                    1 <= len(op.operands[0].type.shape) <= 3:
                repl = self._rewrite(op)
            if repl is None:
                new_ops.append(op)
                continue
            for o in repl:
                o.parent = region
            new_ops.extend(repl)
        region.ops = new_ops

    def _dma_atomic(self, op: Op) -> bool:
        """An atomic add/max/min whose old values nobody reads, of a type the DMA accumulates: it is
        a store in an atomic mode (``atomic=`` on the transfer), structured like any store."""
        return op.name == "atomic_rmw" and op.attrs["op"] in ATOMIC_TRANSFER_KINDS and \
            id(op.results[0]) not in self.used and str(op.results[0].type.scalar) in ATOMIC_TRANSFER_TYPES

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
            elif const_of(step) is not None and isinstance(const_of(step), int):
                delta = None
            else:
                continue
            zero = Op("constant", [], [T.i64], {"value": 0}, loc=op.loc)
            pre.append(zero)
            d_arg = Value(T.i64, f"{arg.name or 'p'}_off")
            body.add_arg(d_arg)
            res = Value(T.i64, None, op, len(op.results))
            op.results.append(res)
            op.operands.append(zero.result)
            yb = Builder(term)
            if delta is None:
                nxt = yb.add(d_arg, const_of(step))
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
        if an.assumptions and op.name == "load":
            # `(c + arange) % m` offsets whose wrapped lanes no store reads (:mod:`lanes`): the tile
            # up to the wrap, padded past it -- where nothing wraps, the whole tile
            cut = self._analyzer(op, wrap_as_cut=True)
            res_cut = self._rewrite_fast(op, cut.b, cut)
            if res_cut is not None and cut.cut:
                an, res = cut, res_cut
        ops, val = res
        if an.assumptions:
            # guarded: `if assumptions { structured transfer } else { what a wrap-around needs }`
            ops, val = self._guarded(op, an, res, self._wrapped(op, val is not None))
        if val is not None:        # users of the loaded value now read the transfer's (or guard's)
            inside = {id(o) for top in ops for o in top.walk()}
            for o in self.fn.walk():
                if id(o) not in inside:
                    o.operands = [val if v is op.result else v for v in o.operands]
            self._untranspose(op, val)
        return ops

    def _wrapped(self, op: Op, has_value: bool):
        """(ops, value) for where the structured form's assumptions fail: ``(c + arange) % m``
        offsets that wrap around as an index vector, rows (columns) a run-time stride of either
        sign apart as ``arange * stride`` (a gather of rows or columns), else the original op."""
        data = self._analyzer(op, wrap_as_data=True)
        res = self._rewrite_fast(op, data.b, data)
        return res if res is not None and not data.assumptions else ([op], op.result if has_value else None)

    def _guarded(self, op: Op, an: "Analyzer", res, slow):
        """(ops, value): ``res`` -- the structured form ``an`` made, which needs its assumptions --
        under ``if assumptions``, ``slow`` otherwise; the scalar ops both need go before the ``if``."""
        ops, val = res
        slow, slow_val = slow
        b = an.b
        n_pure = len(b.ops)
        pure, fast = ops[:n_pure], ops[n_pure:]
        cond = an.assumptions[0]
        for c in an.assumptions[1:]:
            cond = b.op("and", [cond, c], T.i1)
        pure += b.ops[n_pure:]
        loc = op.loc
        results = [op.result.type] if val is not None else []
        view = None
        if val is not None and val.owner is fast[-1] and slow_val.owner is slow[-1] and \
                _is_transpose(fast[-1]) and _is_transpose(slow[-1]):
            # both transposed views of a tile: the branches yield the tiles, viewed after the guard
            view, val, slow_val = fast[-1], fast[-1].operands[0], slow[-1].operands[0]
            fast, slow = fast[:-1], slow[:-1]
            results = [val.type]
        guard = Op("if", [cond], results, loc=loc)
        self.guards.append(guard)
        guard.regions = [Region([], fast + [Op("yield", [val] if val is not None else [], [], loc=loc)]),
                         Region([], slow + [Op("yield", [slow_val] if val is not None else [], [], loc=loc)])]
        for r in guard.regions:
            r.parent = guard
            for o in r.ops:
                o.parent = r
        if view is None:
            return pure + [guard], guard.result if val is not None else None
        view.operands = [guard.result]
        view.parent = None
        return pure + [guard, view], view.result

    def _analyzer(self, op: Op, wrap_as_data: bool = False, wrap_as_cut: bool = False) -> "Analyzer":
        an = Analyzer(Builder(op), self.loops, wrap_as_data, wrap_as_cut)
        an.inductions = self.inductions
        an.fn = self.fn
        # a run-time stride of unknown sign: a gather (the other branch's form) instead of an assumption
        an.signed_as_index = wrap_as_data
        return an

    def _rewrite_fast(self, op: Op, b: "Builder", an: "Analyzer"):
        """(ops, the loaded value or None for a store) of the structured form, or None."""
        is_load = op.name == "load"
        ptr = op.operands[0]
        shape = ptr.type.shape
        mask = op.operands[1 if is_load else 2] if len(op.operands) > (1 if is_load else 2) else None
        try:
            base, off = an.pointer(ptr)
            bounds = an.mask(mask, shape) if mask is not None else [None] * len(shape)
        except NotAffine:
            return None
        if off.cut:         # lanes past where `% m` wraps (or `where` clamps): left out, if nothing reads them
            if off.data is not None or an.row_mask is not None or not is_load or \
                    not all(wrapped_lanes_unread(op, d, xm, self.users) for d, (_, xm) in off.cut.items()):
                return None
            for d, (bound, _) in off.cut.items():
                bounds[d] = bound if bounds[d] is None else an.b.binop("minimum", bounds[d], bound)
            an.cut = off.cut
        if any(isinstance(st, int) and st < 0 for st in off.strides):
            return None         # descending addresses: transfers move ascending segments only
        signed = []             # dimensions whose stride's sign is known at run time only
        for d, st in enumerate(off.strides):    # a stride computed at run time: >= 0, else a gather
            if isinstance(st, int) or not for_a_launch() or nonneg(st, self.loops, args=an._arg_nonneg):
                continue        # (IR text compiled for no launch -- `tritonpu opt` -- takes it as it is)
            scratch = Builder(op)       # (decided at compile time: these ops are not inserted)
            ge = scratch.cmp(st, 0, "ge")
            known = decide(self.fn, b.ops + scratch.ops, ge)
            if known is None and not an.signed_as_index:
                an.assumptions.append(b.cmp(st, 0, "ge"))
            elif known is not True:
                signed.append(d)
        if signed and (len(shape) != 2 or len(signed) != 1 or an.row_mask is not None or off.cut or
                       (off.coldata if signed[0] == 0 else off.rowdata) is not None):
            return None
        valids = [b.value(an.clamp(bd, n)) for bd, n in zip(bounds, shape)]
        if not (isinstance(off.c, int) and off.c == 0):
            base = b.op("addptr", [base, b.value(off.c)], base.type)
        if signed:
            # the guarded access's other branch (or a stride known negative): rows (columns) one
            # stride apart are rows picked by an index vector, ``arange * stride`` -- a gather, each
            # row (column) a run of ascending addresses -- not a pointer block moved element by element
            if signed[0] == 0:
                return self._rows(op, b, base, off, bounds, valids, is_load)
            return self._cols(op, b, base, off, bounds, valids, is_load)
        if an.row_mask is not None:
            # a mask of data per row: a gather (scatter) of rows applies it, the rows picked by data
            # or one stride apart
            if off.coldata is not None or not _is_one(off.strides[1]):
                return None
            return self._rows(op, b, base, off, bounds, valids, is_load, an.row_mask)
        if is_load and len(shape) == 2 and off.coldata is None and not _is_one(off.strides[1]) and \
                (off.rowdata is not None or _is_one(off.strides[0])) and self._dot_operand_only(op.result):
            return self._transposed(op, b, base, off, bounds, valids)
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
        store = Op("store_tile", [base] + strides + valids + [op.operands[1]], [], _atomic_attrs(op), loc=op.loc)
        return b.ops + [store], None

    @staticmethod
    def _fill(b: "Builder", other):
        """The uniform fill value of ``other`` as a scalar (its ops added to ``b``), else None."""
        fill = uniform_other(other) if other is not None else None
        if isinstance(fill, Op):
            b.ops.append(fill)
            return fill.result
        return fill

    @staticmethod
    def _index_vector(b: "Builder", data, n, stride):
        """A [n] vector of element offsets: ``data`` ([n, 1] or [1, n]; None: zeros) plus
        ``arange(n) * stride``."""
        ity = data.type.scalar if data is not None else \
            T.i64 if not isinstance(stride, int) and stride.type == T.i64 else T.i32
        vec = b.op("reshape", [data], T.block(ity, [n])) if data is not None else None
        if not (isinstance(stride, int) and stride == 0) or vec is None:
            ar = b.op("arange", [], T.block(T.i32, [n]), start=0, end=n)
            s = b.cast(stride, ity) if not isinstance(stride, int) else b.value(stride, ity)
            if ity != T.i32:
                ar = b.op("cast", [ar], T.block(ity, [n]))
            step = b.op("mul", [ar, b.op("splat", [s], T.block(ity, [n]))], T.block(ity, [n]))
            vec = step if vec is None else b.op("add", [vec, step], T.block(ity, [n]))
        return vec

    @staticmethod
    def _lane_mask(b: "Builder", n, valid):
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

    def _dot_operand_only(self, v) -> bool:
        """Every use of ``v`` is as an operand of a ``tl.dot``, directly or through ``tl.trans``."""
        uses = self.users.get(id(v), [])
        return bool(uses) and all(
            (u.name == "dot" and all(x is not v for x in u.operands[2:]))
            or (u.name == "permute" and self._dot_operand_only(u.result)) for u in uses)

    def _transposed(self, op, b, base, off, bounds, valids):
        """A dot operand whose rows are not contiguous in GM (column-major, ``x @ W.T`` with ``W``
        row-major, or rows picked by wrapped offsets with strided columns): its transpose is
        loaded, whose rows are contiguous -- a ``load_tile``, or a ``gather_cols`` of the picked
        rows -- and viewed transposed (``permute``), so it goes straight to L1 and the cube's
        operand move transposes it on the way to L0."""
        R, C = op.result.type.shape
        ty = T.block(op.result.type.scalar, [C, R])
        if off.rowdata is not None:
            rows = self._index_vector(b, off.rowdata, R, off.strides[0])
            extra = self._masked_fill(op, b, [self._lane_mask(b, R, valids[0])] if bounds[0] is not None else [], R)
            if extra is None:
                return None
            tile = Op("gather_cols", [base, rows, b.value(off.strides[1]), valids[1]] + extra, [ty], loc=op.loc)
        else:
            other = op.operands[2] if len(op.operands) > 2 else None
            fill = self._fill(b, other)
            if other is not None and fill is None:
                return None
            tile = Op("load_tile", [base, b.value(off.strides[1]), b.value(1), valids[1], valids[0]] +
                      ([fill] if fill is not None else []), [ty], loc=op.loc)
        view = Op("permute", [tile.result], [op.result.type], {"order": [1, 0]}, loc=op.loc)
        return b.ops + [tile, view], view.result

    def _untranspose(self, op, val) -> None:
        """A ``tl.trans`` of a load made a transposed view (``val``): its users read the tile as
        loaded."""
        if val is None or val.owner is None or not _is_transpose(val.owner):
            return
        for u in self.users.get(id(op.result), []):
            if _is_transpose(u) and u.operands[0] is val:
                _replace(u.result, val.owner.operands[0], self.fn)

    def _rows(self, op, b, base, off, bounds, valids, is_load, row_mask=None):
        """Rows picked by an index vector (data, plus ``arange * stride``; the stride alone when
        the rows are one stride apart), each contiguous: ``gather_rows`` / ``scatter_rows``, masked
        per row by the rows' bound and ``row_mask`` ([R, 1] data)."""
        if not (isinstance(off.strides[1], int) and off.strides[1] == 1):
            return None
        R = op.operands[0].type.shape[0]
        rows = self._index_vector(b, off.rowdata, R, off.strides[0])
        extra = [self._lane_mask(b, R, valids[0])] if bounds[0] is not None else []
        if row_mask is not None:
            per_row = b.op("reshape", [row_mask], T.block(T.i1, [R]))
            extra = [b.op("and", [extra[0], per_row], per_row.type) if extra else per_row]
        if is_load:
            extra = self._masked_fill(op, b, extra, R)
            if extra is None:
                return None
            g = Op("gather_rows", [base, rows, valids[1]] + extra, [op.result.type], loc=op.loc)
            return b.ops + [g], g.result
        s = Op("scatter_rows", [base, rows, valids[1], op.operands[1]] + extra, [], _atomic_attrs(op), loc=op.loc)
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


# What the DMA accumulates into GM (Ascend A2's SetAtomicAdd/Max/Min modes and their types).
ATOMIC_TRANSFER_KINDS = ("add", "max", "min")
ATOMIC_TRANSFER_TYPES = ("i8", "i16", "f16", "bf16", "i32", "f32")


def _is_transpose(op: Op) -> bool:
    return op.name == "permute" and list(op.attrs["order"]) == [1, 0]


def _is_one(s) -> bool:
    return isinstance(s, int) and s == 1


def _atomic_attrs(op: Op) -> dict:
    return {"atomic": op.attrs["op"]} if op.name == "atomic_rmw" else {}


def _replace(old, new, fn: Function) -> None:
    """Replace every use of ``old`` by ``new``."""
    for o in fn.walk():
        o.operands = [new if v is old else v for v in o.operands]
