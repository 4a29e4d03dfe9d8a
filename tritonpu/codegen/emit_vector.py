"""Vector-unit emission: ops on tiles in the Unified Buffer.

One instruction covers a whole tile: ``rows x cols`` with per-operand row and column strides, so
broadcast operands (stride 0), transposed views and per-row scalars (``x - rowmax[:, None]``) are
read in place.  Operands that are all dense are flattened to one row whatever their rank.
Scalars in registers use the ``v*s`` forms (``vadds``, ``vrsubs``...); booleans are u8 masks.
"""
from __future__ import annotations

import math

from tritonpu.codegen.asmlist import Instr, Loop
from tritonpu.codegen.analysis import elem_bytes
from tritonpu.codegen.homes import reshape_copies
from tritonpu.codegen.values import Imm, Tile, asm_type
from tritonpu.ir.ops import slice_geometry

_BIN = {"add": "vadd", "sub": "vsub", "mul": "vmul", "div": "vdiv", "rem": "vrem", "and": "vand", "or": "vor",
        "xor": "vxor", "shl": "vshl", "shr": "vshr", "maximum": "vmax", "minimum": "vmin", "pow": "vpow"}
_COMMUTES = {"add", "mul", "and", "or", "xor", "maximum", "minimum"}
_REVERSED = {"sub": "vrsubs", "div": "vrdivs"}
_UN = {"neg": "vneg", "not": "vnot", "abs": "vabs", "exp": "vexp", "exp2": "vexp2", "log": "vlog",
       "log2": "vlog2", "sqrt": "vsqrt", "rsqrt": "vrsqrt", "sin": "vsin", "cos": "vcos", "floor": "vfloor",
       "ceil": "vceil", "erf": "verf", "tanh": "vtanh",
       **{n: "v" + n for n in ("asin", "acos", "atan", "tan", "sinh", "cosh", "log1p", "expm1", "log10", "rint")}}
_SWAP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
_BY_COLUMN = ("varange",)      # instructions whose element [r, c] depends on c: never read transposed


def _align_to(t: Tile, shape: tuple) -> Tile:
    """View t (numpy-broadcastable to shape) with shape's rank and 0 strides on broadcast dims."""
    k = len(shape) - len(t.shape)
    tshape = (1,) * k + tuple(t.shape)
    tstr = (0,) * k + tuple(t.strides)
    strides = tuple(0 if (n == 1 and m != 1) else s for n, m, s in zip(tshape, shape, tstr))
    return t.with_(shape=tuple(shape), strides=strides)


def _collapse(shape: tuple, tiles: list):
    """Merge adjacent dimensions every tile walks as one (stride[d-1] == stride[d] * shape[d])."""
    dims = [[n, [t.strides[d] for t in tiles]] for d, n in enumerate(shape)]
    out = [dims[-1]]
    for n, strides in reversed(dims[:-1]):
        m, inner = out[0]
        if all(s == i * m for s, i in zip(strides, inner)):
            out[0] = [n * m, inner]
        else:
            out.insert(0, [n, strides])
    new_shape = tuple(n for n, _ in out)
    return new_shape, [t.with_(shape=new_shape, strides=tuple(st[k] for _, st in out))
                       for k, t in enumerate(tiles)]


class VectorEmitter:
    # ---- geometry -----------------------------------------------------------------------------------
    def geometry(self, shape, tiles):
        """[(rows, cols, [per-tile (addr, row_stride, col_stride)])] covering ``shape``."""
        tiles = [_align_to(t, shape) for t in tiles]
        n = 1
        for d in shape:
            n *= d
        if len(shape) <= 1 or all(t.is_dense() or not any(t.strides) for t in tiles):
            ops = []
            for t in tiles:
                if not any(t.strides):
                    ops.append((t.addr, 0, 0 if n > 1 else 1))
                elif len(shape) == 1:
                    ops.append((t.addr, 0, t.strides[0]))
                else:
                    ops.append((t.addr, 0, 1))
            return [(1, max(n, 1), ops)]
        if len(shape) > 2:
            shape, tiles = _collapse(tuple(shape), tiles)
        if len(shape) == 1:         # every tile walks all dimensions as one, a stride apart
            return [(1, shape[0], [(t.addr, 0, t.strides[0]) for t in tiles])]
        if len(shape) == 2:
            return [(shape[0], shape[1], [(t.addr, t.strides[0], t.strides[1]) for t in tiles])]
        # rank > 2: one instruction per index of the leading dimensions
        import itertools
        out = []
        for idx in itertools.product(*(range(d) for d in shape[:-2])):
            ops = []
            for t in tiles:
                off = sum(i * s for i, s in zip(idx, t.strides[:-2])) * t.esize
                if off % self.m.align["ub"]:
                    self.fail(f"a rank-{len(shape)} tile whose slices are not 32-byte aligned; reshape to 2D")
                ops.append((t.addr + off, t.strides[-2], t.strides[-1]))
            out.append((shape[-2], shape[-1], ops))
        return out

    @staticmethod
    def opnd(addr, rs, cs, rows, cols) -> str:
        if rows == 1:
            return f"ub[{addr}]" if cs == 1 else f"ub[{addr}, 0, {cs}]"
        if cs == 1 and rs == cols:
            return f"ub[{addr}]"
        if cs == 1:
            return f"ub[{addr}, {rs}]"
        return f"ub[{addr}, {rs}, {cs}]"

    def _slices_misaligned(self, shape, tiles) -> bool:
        """Whether ``geometry`` would need a vector instruction to start at an address that is not
        32-byte aligned (a rank-3+ tile's 2-D slices, after merging what merges)."""
        tiles = [_align_to(t, shape) for t in tiles]
        if len(shape) <= 2 or all(t.is_dense() or not any(t.strides) for t in tiles):
            return False
        shape, tiles = _collapse(tuple(shape), tiles)
        align = self.m.align["ub"]
        return len(shape) >= 3 and any(s * t.esize % align for t in tiles
                                       for n, s in zip(shape[:-2], t.strides[:-2]) if n > 1)

    @staticmethod
    def _leading_stride(shape, t: Tile):
        """The one stride that walks ``t``'s leading dimensions (all but the last two) as one, or None."""
        lead, st = shape[:-2], t.strides[:-2]
        for d in range(len(lead) - 1):
            if lead[d + 1] > 1 and lead[d] > 1 and st[d] != st[d + 1] * lead[d + 1]:
                return None
        steps = [s for n, s in zip(lead, st) if n > 1]
        return steps[-1] if steps else 0

    def _level_bytes(self, shape, t: Tile, level: int):
        """(bytes a block of ``t``'s dimensions after ``level`` spans, that rounded up to UB alignment)."""
        span = (sum((n - 1) * s for n, s in zip(shape[level + 1:], t.strides[level + 1:])) + 1) * t.esize
        align = self.m.align["ub"]
        return span, (span + align - 1) // align * align

    def _move_blocks(self, dst: int, src: int, n: int, span: int, src_stride: int, dst_stride: int) -> None:
        """``n`` blocks of ``span`` bytes, UB to UB on the vector pipe (both addresses aligned)."""
        def extent(addr, stride):
            return self.acc(Tile(addr, "u8", ((n - 1) * stride + span,), (1,), 1))
        self.emit(f"mov.ub.ub ub[{dst}], ub[{src}], {n}, {span}, {src_stride}, {dst_stride}", "V",
                  reads=[extent(src, src_stride)], writes=[extent(dst, dst_stride)])

    def _padded(self, shape, tile: Tile, copy_in: bool) -> Tile:
        """``tile`` (collapsed to rank 3 or more) moved to scratch with each 2-D slice starting 32-byte
        aligned, in the same inner layout, viewed as rank 3 (its leading dimensions as one). With
        ``copy_in``, one ``mov.ub.ub`` per block of each leading dimension in turn: every move
        starts at an aligned address (the tile's, then a padded block's)."""
        bases = [tile.addr]
        pitch = 0
        for level, n in enumerate(shape[:-2]):
            span, pitch = self._level_bytes(shape, tile, level)
            addr = self.scratch(len(bases) * n * pitch)
            if copy_in:
                for j, b in enumerate(bases):
                    self._move_blocks(addr + j * n * pitch, b, n, span, tile.strides[level] * tile.esize, pitch)
            bases = [addr + q * pitch for q in range(len(bases) * n)]
        return tile.with_(addr=bases[0], shape=(len(bases),) + tuple(shape[-2:]),
                          strides=(pitch // tile.esize,) + tuple(tile.strides[-2:]))

    def _unpadded(self, shape, out: Tile, d: Tile) -> None:
        """The inverse of :meth:`_padded`: ``out``'s slices moved back into ``d``'s layout (whose
        dimensions after the first are dense), the last leading dimension first."""
        lead = shape[:-2]
        levels = [d.addr]          # each level's buffer: d itself, then scratch blocks of d's layout
        for level in range(1, len(lead)):
            levels.append(self.scratch(math.prod(lead[:level]) * self._level_bytes(shape, d, level - 1)[1]))
        src = out.addr
        for level in reversed(range(len(lead))):
            n = lead[level]
            span, pitch = self._level_bytes(shape, d, level)
            up = self._level_bytes(shape, d, level - 1)[1] if level else 0
            for j in range(math.prod(lead[:level])):
                self._move_blocks(levels[level] + j * up, src + j * n * pitch, n, span, pitch,
                                  d.strides[level] * d.esize)
            src = levels[level]

    def _vec_padded(self, mnemonic, dst: Tile, srcs: list, scalars, extra) -> None:
        """``vec`` on rank-3+ tiles whose slices are not 32-byte aligned: the misaligned operands are
        copied slice by slice into aligned scratch (the result back out of it), the operation runs
        there on rank-3 views (issue 15: pad slices on chip)."""
        shape, tiles = _collapse(tuple(dst.shape), [_align_to(t, dst.shape) for t in [dst] + list(srcs)])
        align = self.m.align["ub"]
        count = math.prod(shape[:-2])
        moved = []
        for t in tiles:
            lead = self._leading_stride(shape, t)
            if lead is not None and (any(s < 0 for s in t.strides) or lead == 0 or lead * t.esize % align == 0):
                moved.append(t.with_(shape=(count,) + tuple(shape[-2:]), strides=(lead,) + tuple(t.strides[-2:])))
            else:
                moved.append(self._padded(shape, t, copy_in=t is not tiles[0]))
        out, d = moved[0], tiles[0]
        if out.addr != d.addr and not d.with_(shape=shape[1:], strides=d.strides[1:]).is_dense():
            self.fail(f"a rank-{len(dst.shape)} result whose slices are neither 32-byte aligned nor contiguous; "
                      "reshape to 2D")
        self.vec(mnemonic, out, moved[1:], scalars, extra)
        if out.addr != d.addr:
            self._unpadded(shape, out, d)

    def _repeats(self, rows: int, cols: int, esize: int) -> int:
        """Vector repeats of a rows x cols instruction (the cost model's unit: 256 B of a row each)."""
        return rows * -(-(cols * esize) // self.m.vector_repeat_bytes)

    def vec(self, mnemonic: str, dst: Tile, srcs: list, scalars=(), extra="") -> None:
        """Emit ``mnemonic dst, srcs..., scalars..., cols[, rows=]`` over dst's shape. An element-by-
        element instruction over many short rows reads its operands transposed when that takes
        fewer repeats (a (2048, 2) select: 64 repeats instead of 2048)."""
        if self._slices_misaligned(dst.shape, [dst] + list(srcs)):
            return self._vec_padded(mnemonic, dst, srcs, scalars, extra)
        esize = max(t.esize for t in [dst] + list(srcs) if isinstance(t, Tile))
        for rows, cols, ops in self.geometry(dst.shape, [dst] + list(srcs)):
            if rows > 1 and not mnemonic.startswith(_BY_COLUMN) and \
                    self._repeats(cols, rows, esize) < self._repeats(rows, cols, esize):
                rows, cols, ops = cols, rows, [(a, cs, rs) for a, rs, cs in ops]
            args = [self.opnd(a, rs, cs, rows, cols) for a, rs, cs in ops]
            args += [str(s) for s in scalars]
            args.append(str(cols))
            if rows != 1:
                args.append(f"rows={rows}")
            if extra:
                args.append(extra)
            self.emit(f"{mnemonic} " + ", ".join(args), "V",
                      reads=[self.acc(t) for t in srcs], writes=[self.acc(dst)])

    def vfill(self, dst: Tile, value) -> None:
        self.vec(f"vdup.{dst.dtype}", dst, [], scalars=[value])

    def copy_tile(self, dst: Tile, src) -> None:
        if isinstance(src, Tile):
            if src.dtype != dst.dtype:
                src = src.with_(dtype=dst.dtype)
            self.vec(f"vmov.{dst.dtype}", dst, [src])
        else:
            self.vfill(dst, src)

    def as_tile(self, v) -> Tile:
        """v as a UB tile (a register or immediate is broadcast into a one-element temporary)."""
        h = self.val(v)
        if isinstance(h, Tile):
            return h
        t = self.temp_tile(asm_type(v.type), (), elem_bytes(v.type))
        self.vfill(t, h)
        return t

    def dense(self, t: Tile, persistent=False) -> Tile:
        """t itself when dense, else a dense copy."""
        if t.is_dense():
            return t
        d = Tile.dense(self.scratch(t.numel * t.esize, persistent), t.dtype, t.shape, t.esize)
        self.copy_tile(d, t)
        return d

    # ---- elementwise ---------------------------------------------------------------------------------
    def v_elementwise(self, op) -> None:
        dst = self.out_tile(op.result)
        self.v_apply(op, dst, [self.val(v) for v in op.operands])

    def v_apply(self, op, dst: Tile, ins: list) -> None:
        name, ty = op.name, op.result.type
        T = dst.dtype
        if name == "fma":
            a, b, c = [self.as_tile_h(h, v) for h, v in zip(ins, op.operands)]
            if ty.scalar.is_float:      # fused: rounded once
                self.vec(f"vfma.{T}", dst, [a, b, c])
            else:
                self.vec(f"vmul.{T}", dst, [a, b])
                self.vec(f"vadd.{T}", dst, [dst, c])
            return
        if len(ins) == 1:
            a = self.as_tile_h(ins[0], op.operands[0])
            if name == "not" and ty.scalar.is_bool:
                self.vec(f"vxors.{T}", dst, [a], scalars=[1])
                return
            mn = _UN.get(name)
            if mn is None:
                self.fail(f"'{name}' is not supported on the vector unit")
            self.vec(f"{mn}.{T}", dst, [a])
            return
        a, b = ins
        mn = _BIN[name]
        if ty.scalar.is_bool:
            mn = {"add": "vxor", "sub": "vxor", "mul": "vand", "maximum": "vor", "minimum": "vand"}.get(name, mn)
        if not isinstance(b, Tile):
            self.vec(f"{mn}s.{T}", dst, [self.as_tile_h(a, op.operands[0])], scalars=[b])
        elif not isinstance(a, Tile) and (name in _COMMUTES or name in _REVERSED) and not ty.scalar.is_bool:
            m2 = f"{mn}s" if name in _COMMUTES else _REVERSED[name]
            self.vec(f"{m2}.{T}", dst, [b], scalars=[a])
        else:
            self.vec(f"{mn}.{T}", dst, [self.as_tile_h(a, op.operands[0]), b])

    def as_tile_h(self, h, v) -> Tile:
        if isinstance(h, Tile):
            return h
        t = self.temp_tile(asm_type(v.type), (), elem_bytes(v.type))
        self.vfill(t, h)
        return t

    def v_compare(self, op) -> None:
        dst = self.out_tile(op.result)
        a, b = (self.val(v) for v in op.operands)
        T = asm_type(op.operands[0].type)
        pred = op.attrs["pred"]
        if not isinstance(b, Tile):
            self.vec(f"vcmps.{pred}.{T}", dst, [self.as_tile_h(a, op.operands[0])], scalars=[b])
        elif not isinstance(a, Tile):
            self.vec(f"vcmps.{_SWAP[pred]}.{T}", dst, [b], scalars=[a])
        else:
            self.vec(f"vcmp.{pred}.{T}", dst, [a, b])

    def v_select(self, op) -> None:
        dst = self.out_tile(op.result)
        c, a, b = (self.val(v) for v in op.operands)
        c = self.as_tile_h(c, op.operands[0])
        T = dst.dtype
        if not isinstance(b, Tile):
            self.vec(f"vsels.{T}", dst, [c, self.as_tile_h(a, op.operands[1])], scalars=[b])
        else:
            self.vec(f"vsel.{T}", dst, [c, self.as_tile_h(a, op.operands[1]), b])

    def v_cast(self, op) -> None:
        if self.an.home.get(id(op.result)) == "l0c":     # converted by FIX when it is stored
            return self.define(op.result, self.val(op.operands[0]))
        src = self.as_tile(op.operands[0])
        s_t, d_t = op.operands[0].type, op.result.type
        if op.name == "bitcast":
            if elem_bytes(s_t) != elem_bytes(d_t):
                self.fail("bitcast between element types of different widths is not supported on the NPU")
            return self.define(op.result, src.with_(dtype=asm_type(d_t)))
        dst = self.out_tile(op.result)
        if d_t.scalar.is_bool:
            self.vec(f"vcmps.ne.{src.dtype}", dst, [src], scalars=[0])
        else:
            self.vec(f"vcast.{dst.dtype}.{src.dtype}", dst, [src])

    # ---- blocks from scalars --------------------------------------------------------------------------
    def kind_splat(self, op) -> None:
        if self.an.home.get(id(op.result)) == "none":     # made elsewhere (zeros of an L0C accumulator)
            return self.define(op.result, self.val(op.operands[0]))
        dst = self.out_tile(op.result)
        h = self.val(op.operands[0])
        if isinstance(h, Tile):
            self.vec(f"vmov.{dst.dtype}", dst, [h.with_(shape=(), strides=())])
        else:
            self.vfill(dst, h)

    def kind_arange(self, op) -> None:
        dst = self.out_tile(op.result)
        self.vec(f"varange.{dst.dtype}", dst, [], scalars=[op.attrs["start"]])

    # ---- views ---------------------------------------------------------------------------------------
    def kind_broadcast(self, op) -> None:
        t = self.val(op.operands[0])
        self.define(op.result, _align_to(t, op.result.type.shape))

    def kind_shape(self, op) -> None:
        t = self.as_tile(op.operands[0])
        shape = op.result.type.shape
        if op.name == "expand_dims":
            ax = op.attrs["axis"]
            self.define(op.result, t.with_(shape=shape, strides=t.strides[:ax] + (0,) + t.strides[ax:]))
        elif op.name == "permute":
            order = op.attrs["order"]
            self.define(op.result, t.with_(shape=shape, strides=tuple(t.strides[i] for i in order)))
        elif reshape_copies(op) and self.an.home.get(id(op.result)) == "ub":
            # its own planned tile (homes.reshape_copies): the operand's elements in order, then viewed
            d = Tile.dense(self.planned(op.result), t.dtype, t.shape, t.esize)
            self.copy_tile(d, t)
            self.define(op.result, Tile.dense(d.addr, d.dtype, shape, d.esize))
        else:   # reshape
            d = self.dense(t, persistent=True)
            self.define(op.result, Tile.dense(d.addr, d.dtype, shape, d.esize))

    def kind_slice(self, op) -> None:
        """A sub-block: a view of the operand's tile, from its first element and with its strides
        times the steps.  Rows of an accumulator in L0C (a row offset, every column) are drained
        into the slice's own UB tile by FIX."""
        t = self.as_tile(op.operands[0])
        offsets, steps = slice_geometry(op)
        shape = tuple(op.result.type.shape)
        if t.space == "l0c":
            if any(offsets[1:]) or steps != [1] * len(steps) or shape[1:] != t.shape[1:]:
                self.fail("internal: a slice of an L0C accumulator takes whole rows")
            row = -(-t.shape[1] // 16) * 16 * 4            # L0C rows are padded to 16 elements
            self.drain_l0c(t.with_(addr=t.addr + offsets[0] * row, shape=shape), self.out_tile(op.result))
            return
        first = sum(o * st for o, st in zip(offsets, t.strides))
        view = t.with_(addr=t.addr + first * t.esize, shape=shape,
                       strides=tuple(st * s for st, s in zip(t.strides, steps)))
        if view.addr % self.m.align["ub"] == 0 or view.numel == 0:
            self.define(op.result, view)
            return
        # vector instructions and copies start at 32-byte aligned addresses: a view that does not
        # is copied out element by element on the scalar unit (sld / sst)
        d = Tile.dense(self.scratch(view.numel * view.esize, persistent=True), view.dtype, shape, view.esize)
        self.copy_view(d, view, op)
        self.define(op.result, d)

    def kind_insert_slice(self, op) -> None:
        """A copy of ``ful`` with ``part`` copied over the sub-block's view of it."""
        ful, part = (self.as_tile(v) for v in op.operands)
        dst = self.out_tile(op.result)
        if (dst.addr, dst.strides) != (ful.addr, ful.strides):
            self.copy_tile(dst, ful)
        offsets, steps = slice_geometry(op)
        view = dst.with_(addr=dst.addr + sum(o * st for o, st in zip(offsets, dst.strides)) * dst.esize,
                         shape=tuple(op.operands[1].type.shape),
                         strides=tuple(st * s for st, s in zip(dst.strides, steps)))
        self.copy_view(view, part, op)

    def copy_view(self, dst: Tile, src: Tile, op) -> None:
        """``dst`` = ``src`` (views of one shape): by the vector unit when both start 32-byte
        aligned, else one scalar ``sld`` / ``sst`` per element (a note says so)."""
        align = self.m.align["ub"]
        if dst.addr % align == 0 and src.addr % align == 0:
            self.copy_tile(dst, src)
            return
        self.notes.append(f"{op.loc}: a sub-block not starting 32-byte aligned in UB is copied one element at a "
                          "time on the scalar unit")
        es, T = src.esize, src.dtype
        shape = src.shape or (1,)
        value, s_off, d_off = self.temp_reg(), self.temp_reg(), self.temp_reg()
        self.emit(f"mov {s_off}, 0", "S")
        self.emit(f"mov {d_off}, 0", "S")

        def level(d):
            if d == len(shape):
                self.emit(f"sld.{T} {value}, ub[{s_off}+{src.addr}]", "S", reads=[self.acc(src)])
                self.emit(f"sst.{T} ub[{d_off}+{dst.addr}], {value}", "S", writes=[self.acc(dst)])
                return
            i = self.temp_reg()
            ss, ds = (t.strides[d] * es if t.strides else 0 for t in (src, dst))

            def body():
                level(d + 1)
                self.emit(f"add {s_off}, {s_off}, {ss}", "S")
                self.emit(f"add {d_off}, {d_off}, {ds}", "S")
            self.out.append(Loop(Instr(f"for {i}, 0, {shape[d]}, 1", "S", loc=self.op.loc), self.nested(body)))
            self.emit(f"sub {s_off}, {s_off}, {shape[d] * ss}", "S")
            self.emit(f"sub {d_off}, {d_off}, {shape[d] * ds}", "S")
        level(0)

    # ---- reductions and scans ---------------------------------------------------------------------
    def _reduce_geometry(self, t: Tile, axis: int):
        shape = t.shape
        if len(shape) == 1:
            return 1, shape[0], 1, (t.addr, 0, t.strides[0])
        if len(shape) == 2:
            return shape[0], shape[1], axis if axis == 0 else 1, (t.addr, t.strides[0], t.strides[1])
        g = _rank3_geometry(t, axis)
        if g is not None:
            return g
        self.fail("reductions and scans of rank > 3 blocks are not supported on the NPU yet; reshape to 2D")

    def _rank3_rows(self, t: Tile, axis: int):
        """A rank-3 tile laid out so that ``_reduce_geometry`` takes it, and the axis to reduce there:
        a dense copy when its layout does not merge, with the middle axis moved last (B, K, M)."""
        if len(t.shape) != 3:
            return t, axis
        if axis == 1:
            b, m, k = t.shape
            t = t.with_(shape=(b, k, m), strides=(t.strides[0], t.strides[2], t.strides[1]))
            axis = 2
        return (t if _rank3_geometry(t, axis) is not None else self.dense(t)), axis

    def _merged(self, t: Tile, axis: int, dst: Tile):
        """A rank > 3 reduction or scan -- or a rank-3 one with a size-1 dimension, whose strides
        may not merge -- as one of rank <= 3: ``t`` dense, viewed as (dims before ``axis``,
        ``axis``, dims after) and reduced along 1; ``dst`` (dense) viewed to match."""
        if len(t.shape) < 3 or (len(t.shape) == 3 and 1 not in t.shape):
            return t, axis, dst
        if not dst.is_dense():
            self.fail("internal: a rank > 3 reduction into a strided buffer")
        t = self.dense(t)
        before, after = math.prod(t.shape[:axis]), math.prod(t.shape[axis + 1:])
        # (size-1 dimensions dropped: their strides would not merge)
        dims, axis = ([before] if before > 1 else []) + [t.shape[axis]] + ([after] if after > 1 else []), \
            int(before > 1)
        merged = Tile.dense(t.addr, t.dtype, tuple(dims), t.esize)
        if len(dst.shape) == len(t.shape) - 1:
            shape = tuple(d for k, d in enumerate(dims) if k != axis) or (1,)
        else:
            shape = merged.shape
        return merged, axis, Tile.dense(dst.addr, dst.dtype, shape, dst.esize)

    def kind_reduce(self, op) -> None:
        src, axis, dst = self._merged(self.as_tile(op.operands[0]), op.attrs["axis"], self.out_tile(op.result))
        src, axis = self._rank3_rows(src, axis)
        red_axis = axis
        rows, cols, axis, (a, rs, cs) = self._reduce_geometry(src, red_axis)
        T = src.dtype
        if op.operands[0].type.scalar.is_bool:
            self.fail("reductions of i1 blocks are not supported on the NPU; cast to an integer type first")
        acc_t = T
        kind = op.attrs["op"]
        if T in ("f16", "bf16") and kind == "sum":
            # the language sums low-precision floats in fp32
            wide = self.temp_tile("f32", src.shape, 4)
            self.vec(f"vcast.f32.{T}", wide, [src])
            src, acc_t = wide, "f32"
            rows, cols, axis, (a, rs, cs) = self._reduce_geometry(src, red_axis)
        if kind.startswith("arg") and axis == 0:
            # the vector unit finds first extrema along rows: read the block transposed
            rows, cols, axis, rs, cs = cols, rows, 1, cs, rs
        elif axis == 1 and rows > 1 and not kind.startswith("arg") and \
                (not acc_t.startswith(("f", "bf")) or cols <= 2) and \
                self._repeats(cols, rows, src.esize) < self._repeats(rows, cols, src.esize):
            # many short rows: reduce the transposed block along its columns (fewer repeats; the
            # same result: integers exactly, floats when each row is one operation)
            rows, cols, axis, rs, cs = cols, rows, 0, cs, rs
        extra = f"axis={axis}" if axis != 1 else ""
        args = [self.opnd(dst.addr, 0, 1, 1, 2), self.opnd(a, rs, cs, rows, cols), str(cols)]
        if rows != 1:
            args.append(f"rows={rows}")
        if extra:
            args.append(extra)
        target = dst
        if acc_t != dst.dtype and not kind.startswith("arg"):
            target = self.temp_tile(acc_t, dst.shape, 4)
            args[0] = f"ub[{target.addr}]"
        self.emit(f"vreduce.{kind}.{acc_t} " + ", ".join(args), "V", reads=[self.acc(src)],
                  writes=[self.acc(target)])
        if target is not dst:
            self.vec(f"vcast.{dst.dtype}.{acc_t}", dst, [target])

    def kind_scan(self, op) -> None:
        src, axis, out = self._merged(self.dense(self.as_tile(op.operands[0])), op.attrs["axis"],
                                      self.out_tile(op.result))
        dst = out
        if len(src.shape) == 3 and axis == 1:
            # along the middle axis: scan a (B, K, M) copy along its last axis, copy the result back
            src, axis = self._rank3_rows(src, axis)
            src = self.dense(src)
            dst = Tile.dense(self.scratch(src.numel * out.esize), out.dtype, src.shape, out.esize)
        moved = dst
        rows, cols, axis, (a, rs, cs) = self._reduce_geometry(src, axis)
        if len(src.shape) == 3:     # both dense: from here on, their (rows, cols) views
            src = Tile.dense(src.addr, src.dtype, (rows, cols), src.esize)
            dst = Tile.dense(dst.addr, dst.dtype, (rows, cols), dst.esize)
        mn = {"sum": "vcumsum", "prod": "vcumprod"}[op.attrs["op"]]
        args = [f"ub[{dst.addr}]", f"ub[{a}]", str(cols)]
        if rows != 1:
            args.append(f"rows={rows}")
        if axis != 1:
            args.append(f"axis={axis}")
        if op.attrs.get("reverse"):
            args.append("reverse=1")
        self.emit(f"{mn}.{dst.dtype} " + ", ".join(args), "V", reads=[self.acc(src)], writes=[self.acc(dst)])
        if moved is not out:
            self.copy_tile(out, moved.with_(shape=out.shape,
                                            strides=(moved.strides[0], moved.strides[2], moved.strides[1])))

    # ---- pointer tiles (byte offsets into one parameter, i64) -----------------------------------------
    def v_addptr(self, op) -> None:
        p, off = op.operands
        self.param_of[id(op.result)] = self.param(p)
        pt = self.val(p)
        esize = self.esize_of(op.result.type.scalar.pointee)
        dst = self.out_tile(op.result)
        o = self.val(off)
        if isinstance(o, Tile):
            if o.dtype != "i64":
                wide = self.temp_tile("i64", op.result.type.shape, 8)
                self.vec(f"vcast.i64.{o.dtype}", wide, [o])
                o = wide
            self.vec("vmuls.i64", dst, [o], scalars=[esize])
            if isinstance(pt, Tile):
                self.vec("vadd.i64", dst, [dst, pt])
            else:
                self.vec("vadds.i64", dst, [dst], scalars=[pt])
        else:
            if isinstance(o, Imm):
                scaled = Imm(int(o.value) * esize)
            else:
                scaled = self.temp_reg()
                self.emit(f"mul {scaled}, {o}, {esize}", "S")
            self.vec("vadds.i64", dst, [self.as_tile(p)], scalars=[scaled])


def _rank3_geometry(t: Tile, axis: int):
    """A rank-3 tile as rows for the vector unit — (B*M, K) along the last axis, (B, M*K) along the
    first — when its layout merges the other two axes; else None."""
    if len(t.shape) != 3:
        return None
    (b, m, k), (s0, s1, s2) = t.shape, t.strides
    if axis == 2 and s0 == m * s1:
        return b * m, k, 1, (t.addr, s1, s2)
    if axis == 0 and s1 == k * s2:
        return b, m * k, 0, (t.addr, s0, s2)
    return None
