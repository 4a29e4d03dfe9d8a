"""Memory emission: structured transfers, gathers, element-by-element fallbacks, atomics.

GM addresses are byte offsets into one parameter (``x[s3]``); every GM access is reported to
the sync pass as touching the whole parameter.  Tiles whose masks cut rows are pre-filled with
the ``other`` value on the vector unit before the transfer writes the valid part (the transfer's
``valid=``/``pad=`` fills the columns).
"""
from __future__ import annotations

from tritonpu.codegen.asmlist import PANEL_FENCE_EVENT, Access, Guarded, Instr, Loop, While, panel_access
from tritonpu.codegen.values import Imm, Tile, asm_type
from tritonpu.passes.memory_analysis import ATOMIC_TRANSFER_KINDS, ATOMIC_TRANSFER_TYPES

ZEROS = "__zeros"       # a GM parameter of zero bytes the launch provides (pad rows of L1 tiles)


def panel_operand(slot, addr: int) -> str:
    """``l1[...]`` at byte ``addr`` of the panel slot ``slot`` (a register or an immediate)."""
    return f"l1[{int(slot.value) + addr}]" if isinstance(slot, Imm) else f"l1[{slot}+{addr}]"


class MemoryEmitter:
    # ---- helpers -----------------------------------------------------------------------------------
    def mul_imm(self, a, k: int):
        """a * k as an operand (folded when a is an immediate)."""
        if isinstance(a, Imm):
            return Imm(int(a.value) * k)
        if k == 1:
            return a
        r = self.temp_reg()
        self.emit(f"mul {r}, {a}, {k}", "S")
        return r

    def pad_of(self, v, dtype: str):
        """The fill value of ``other`` as a scalar operand (0 when absent), or None if it is a tile."""
        if v is None:
            return Imm(0)
        h = self.val(v)
        if isinstance(h, Tile):
            if h.strides and any(h.strides):
                return None
            return self.scalar(v)
        return h

    @staticmethod
    def const(h, n) -> bool:
        return isinstance(h, Imm) and int(h.value) == n

    # ---- structured tiles --------------------------------------------------------------------------
    def slices(self, t: Tile, base, S, V, each, load: bool) -> None:
        """A rank-3 transfer as one rank-2 transfer per leading index i (straight-line code):
        ``each(sub_tile, gm_base_i, S[1:], [valid rows of slice i, V[2]])`` with slice i of the
        dense tile ``t`` at GM ``base + i * S[0]`` elements; slices past ``V[0]`` move no rows.
        Slices that do not start 32-byte aligned in ``t`` move through aligned scratch: one
        ``mov.ub.ub`` packs them into ``t`` after a load (unpacks them before a store)."""
        n, sub = t.shape[0], t.with_(shape=t.shape[1:], strides=t.strides[1:])
        step = t.strides[0] * t.esize
        align = self.m.align["ub"]
        home = t
        if step % align and n > 1:
            pitch = (step + align - 1) // align * align
            t = t.with_(addr=self.scratch(n * pitch), strides=(pitch // t.esize,) + t.strides[1:])
            if not load:
                self.emit(f"mov.ub.ub ub[{t.addr}], ub[{home.addr}], {n}, {step}, {step}, {pitch}", "V",
                          reads=[self.acc(home)], writes=[self.acc(t)])
            step = pitch
        all_live = self.const(V[0], n)
        # (one set of registers for every slice: a transfer reads them when the scalar unit issues it)
        g, live, rows = self.temp_reg(), self.temp_reg(), (V[1] if all_live else self.temp_reg())
        for i in range(n):
            if isinstance(S[0], Imm):
                self.emit(f"add {g}, {base}, {int(S[0].value) * i * t.esize}", "S")
            else:
                self.emit(f"mul {g}, {S[0]}, {i * t.esize}", "S")
                self.emit(f"add {g}, {g}, {base}", "S")
            if not all_live:
                self.emit(f"cmp.gt {live}, {V[0]}, {i}", "S")
                self.emit(f"sel {rows}, {live}, {V[1]}, 0", "S")
            mark = len(self.temp_regs)
            each(sub.with_(addr=t.addr + i * step), g, S[1:], [rows, V[2]])
            # the slice's own temporaries are free again: its transfer read them when it was issued
            # (64 leading rows ran out of the 64 registers)
            self.free_regs.extend(self.temp_regs[mark:])
            del self.temp_regs[mark:]
        if load and t is not home:
            self.emit(f"mov.ub.ub ub[{home.addr}], ub[{t.addr}], {n}, {home.strides[0] * t.esize}, {step}, "
                      f"{home.strides[0] * t.esize}", "V", reads=[self.acc(t)], writes=[self.acc(home)])

    def op_load_tile(self, op) -> None:
        ty = op.result.type
        r = len(ty.shape)
        ptr, strides, valids = op.operands[0], op.operands[1:1 + r], op.operands[1 + r:1 + 2 * r]
        other = op.operands[1 + 2 * r] if len(op.operands) > 1 + 2 * r else None
        param, base = self.param(ptr), self.scalar(ptr)
        dst = self.out_tile(op.result)
        pad = self.pad_of(other, dst.dtype)
        S = [self.scalar(v) for v in strides]
        V = [self.scalar(v) for v in valids]
        if r == 3:
            if not dst.is_dense():
                self.fail("internal: a rank-3 tile is loaded into a strided buffer")
            self.slices(dst, base, S, V, lambda t, g, s, v: self.load_2d(op, t, param, g, s, v, pad, dense=True),
                        load=True)
            return
        self.load_2d(op, dst, param, base, S, V, pad)

    def op_panel_fill(self, op) -> None:
        """On a miss, a tile into slot ``slot`` of the kernel's L1 panel (at L1 address 0, see
        buffer planning; passes/panel_reuse.py): Guarded code that is, to the sync pass, one MTE2
        instruction writing its trip's panel event (asmlist.panel_access), which the reads of its
        tile read -- the sync pass orders the two like a load and its reader.  The first trip's
        fill waits for MTE1 to finish the previous programs' reads (it reuses their slots) on an
        id of its own."""
        slot, miss = self.scalar(op.operands[0]), self.scalar(op.operands[1])
        ptr, s_row, rows_valid, cols_valid = op.operands[2], op.operands[3], op.operands[5], op.operands[6]
        other = op.operands[7] if len(op.operands) > 7 else None
        param, base = self.param(ptr), self.scalar(ptr)
        rows, cols = op.attrs["shape"]
        dtype = asm_type(ptr.type.scalar.pointee)
        es = self.esize_of(ptr.type.scalar.pointee)
        pad = self.pad_of(other, dtype)
        V = self.scalar(cols_valid)
        valid = "" if self.const(V, cols) else f", valid={self.mul_imm(V, es)}, pad={pad}"
        src_stride = self.mul_imm(self.scalar(s_row), es)
        self.panel_events.add(op.attrs["event"])
        loc, first = self.op.loc, PANEL_FENCE_EVENT
        fence = Guarded(f"br.ne {slot}, 0", "S", loc=loc, body=[
            Instr(f"set_flag MTE1, MTE2, {first}", "MTE1", loc=loc),
            Instr(f"wait_flag MTE1, MTE2, {first}", "MTE2", loc=loc)])
        body = [fence]
        R = self.scalar(rows_valid)
        if not self.const(R, rows):
            # rows past the valid ones: zeros from GM's zero row (the pass takes only a zero fill
            # and 32-byte rows here), on MTE2 before the fill's flag
            n, at = self.temp_reg(), self.temp_reg()
            self.zeros_bytes = max(getattr(self, "zeros_bytes", 0), cols * es)
            body += [Instr(f"sub {n}, {rows}, {R}", "S", loc=loc), Instr(f"mul {at}, {R}, {cols * es}", "S", loc=loc),
                     Instr(f"add {at}, {at}, {slot}", "S", loc=loc),
                     Instr(f"mov.gm.l1 l1[{at}+0], {ZEROS}[0], {n}, {cols * es}, 0, {cols * es}", "MTE2", loc=loc)]
        body.append(Instr(f"mov.gm.l1.{dtype} {panel_operand(slot, 0)}, {param}[{base}], {R}, {cols * es}, "
                          f"{src_stride}, {cols * es}{valid}", "MTE2", loc=loc))
        self.out.append(Guarded(f"br.eq {miss}, 0", "MTE2", writes=(panel_access(op.attrs["event"]),), loc=loc,
                                group=op.attrs.get("prefetch"), body=body))

    def op_panel_tile(self, op) -> None:
        self.out_tile(op.result)            # a view of the panel; its slot is added where it is read

    def load_2d(self, op, dst, param, base, S, V, pad, dense=False) -> None:
        """A rank-0..2 tile from GM ``param[base]`` (``dense``: into ``dst`` as laid out, never as a
        transposed view of it)."""
        es = dst.esize
        r = len(dst.shape)
        shape = dst.shape or (1,)
        if r == 0:
            S, V = [Imm(1)], [Imm(1)]
        if r <= 1:
            rows_valid, cols_valid, cols = Imm(1), V[0], shape[0]
            s_row, s_col = Imm(0), S[0]
        else:
            rows_valid, cols_valid, cols = V[0], V[1], shape[1]
            s_row, s_col = S[0], S[1]
        rows = shape[0] if r >= 2 else 1
        reads, writes = [Access.gm(param)], [self.acc(dst)]
        full_rows = self.const(rows_valid, rows)
        if dst.space == "l1":
            # a dot operand straight into L1; rows past the valid ones get `other` from a UB row
            if not full_rows:
                self.pad_rows_l1(dst, rows_valid, rows, cols, es, pad, writes)
            valid = "" if self.const(cols_valid, cols) else f", valid={self.mul_imm(cols_valid, es)}, pad={pad}"
            self.emit(f"mov.gm.l1.{dst.dtype} l1[{dst.addr}], {param}[{base}], {rows_valid}, {cols * es}, "
                      f"{self.mul_imm(s_row, es)}, {cols * es}{valid}", "MTE2", reads, writes)
            return
        # one column: its stride is never used -- rows of one element in one transfer (unless the
        # rows are contiguous and the tile may be viewed transposed: one segment, below)
        one_col = r == 2 and cols == 1 and (dense or not self.const(s_row, 1))
        if self.const(s_col, 1) or one_col:
            if not full_rows:
                self.vfill(dst, pad)
            valid = "" if self.const(cols_valid, cols) else f", valid={self.mul_imm(cols_valid, es)}, pad={pad}"
            self.emit(f"mov.gm.ub.{dst.dtype} ub[{dst.addr}], {param}[{base}], {rows_valid}, {cols * es}, "
                      f"{self.mul_imm(s_row, es)}, {cols * es}{valid}", "MTE2", reads, writes)
            return
        if r == 2 and self.const(s_row, 1) and not dense:
            # column-major in GM: load the transpose (one segment per column) and view it transposed
            if not self.const(cols_valid, cols):
                self.vfill(dst, pad)
            valid = "" if full_rows else f", valid={self.mul_imm(rows_valid, es)}, pad={pad}"
            self.emit(f"mov.gm.ub.{dst.dtype} ub[{dst.addr}], {param}[{base}], {cols_valid}, {rows * es}, "
                      f"{self.mul_imm(s_col, es)}, {rows * es}{valid}", "MTE2", reads, writes)
            self.define(op.result, dst.with_(strides=(1, rows)))
            return
        # any other strides: one element per segment, row by row
        self.vfill(dst, pad)
        src_stride = self.mul_imm(s_col, es)
        if r <= 1:
            self.emit(f"mov.gm.ub.{dst.dtype} ub[{dst.addr}], {param}[{base}], {cols_valid}, {es}, {src_stride}, "
                      f"{es}", "MTE2", reads, writes)
            return
        pitch = self.aligned_pitch(cols * es, rows)
        if pitch == cols * es:
            self.row_loop(rows_valid, lambda i, g, u: self.emit(
                f"mov.gm.ub.{dst.dtype} ub[{u}+{dst.addr}], {param}[{g}], {cols_valid}, {es}, {src_stride}, {es}",
                "MTE2", reads, writes), base, self.mul_imm(s_row, es), cols * es)
            return
        # rows that do not start 32-byte aligned in the tile: each row into an aligned row of scratch,
        # then one copy packs the valid part over the filled tile
        at = self.scratch(rows * pitch)
        rows_acc = [Access("ub", at, at + rows * pitch)]
        self.row_loop(rows_valid, lambda i, g, u: self.emit(
            f"mov.gm.ub.{dst.dtype} ub[{u}+{at}], {param}[{g}], {cols_valid}, {es}, {src_stride}, {es}",
            "MTE2", reads, rows_acc), base, self.mul_imm(s_row, es), pitch)
        self.emit(f"mov.ub.ub ub[{dst.addr}], ub[{at}], {rows_valid}, {self.mul_imm(cols_valid, es)}, {pitch}, "
                  f"{cols * es}", "V", rows_acc, writes)

    def aligned_pitch(self, row_bytes: int, rows: int) -> int:
        """The row pitch element-by-element transfers use: ``row_bytes`` when every row starts
        32-byte aligned (or there is one row), else rounded up to the alignment (through scratch)."""
        align = self.m.align["ub"]
        return row_bytes if rows <= 1 or row_bytes % align == 0 else (row_bytes + align - 1) // align * align

    def pad_rows_l1(self, dst, rows_valid, rows, cols, es, pad, writes) -> None:
        """Rows rows_valid..rows of an L1 tile get `pad` from a UB row (MTE3): straight-line code,
        moving no segment when every row is valid."""
        row_bytes = cols * es
        if isinstance(pad, Imm) and float(pad.value) == 0 and not row_bytes % self.m.align["l1"]:
            # zeros come from a GM zero row on MTE2 itself: in order with the load, no other pipe
            n, at = self.temp_reg(), self.temp_reg()
            self.emit(f"sub {n}, {rows}, {rows_valid}", "S")
            self.emit(f"mul {at}, {rows_valid}, {row_bytes}", "S")
            self.zeros_bytes = max(getattr(self, "zeros_bytes", 0), row_bytes)
            self.emit(f"mov.gm.l1 l1[{at}+{dst.addr}], {ZEROS}[0], {n}, {row_bytes}, 0, {row_bytes}", "MTE2",
                      [Access.gm(ZEROS)], writes)
            return
        row = self.const_row(dst.dtype, cols, es, pad)
        if row_bytes % self.m.align["l1"] or not isinstance(pad, Imm):
            partial = self.temp_reg()
            self.emit(f"cmp.lt {partial}, {rows_valid}, {rows}", "S")

            def fill():
                if not isinstance(pad, Imm):
                    self.vfill(row, pad)
                self.emit(f"mov.ub.l1 l1[{dst.addr}], ub[{row.addr}], {rows}, {row_bytes}, 0, {row_bytes}",
                          "MTE3", [self.acc(row)], writes)
            self.guarded(partial, fill)
            return
        n, at = self.temp_reg(), self.temp_reg()
        self.emit(f"sub {n}, {rows}, {rows_valid}", "S")
        self.emit(f"mul {at}, {rows_valid}, {row_bytes}", "S")
        self.emit(f"mov.ub.l1 l1[{at}+{dst.addr}], ub[{row.addr}], {n}, {row_bytes}, 0, {row_bytes}", "MTE3",
                  [self.acc(row)], writes)

    def const_row(self, dtype, cols, es, pad) -> Tile:
        """A UB row of `cols` elements equal to the immediate `pad`, filled once at the kernel's start
        (a register pad gets a fresh row, filled by the caller)."""
        if not isinstance(pad, Imm):
            return Tile.dense(self.scratch(cols * es), dtype, (cols,), es)
        rows = self.__dict__.setdefault("_const_rows", {})
        key = (dtype, cols, str(pad))
        if key not in rows:
            t = Tile.dense(self.reserve_ub(cols * es), dtype, (cols,), es)
            saved, self.out = self.out, []
            self.vfill(t, pad)
            self.prologue.extend(self.out)
            self.out = saved
            rows[key] = t
        return rows[key]

    def row_loop(self, nrows, body, gm_base, gm_row_bytes, ub_row_bytes) -> None:
        """for i in range(nrows): body(i, gm_address_reg, ub_offset_reg)."""
        i, g, u = self.temp_reg(), self.temp_reg(), self.temp_reg()
        head = Instr(f"for {i}, 0, {nrows}, 1", "S", loc=self.op.loc)

        def inner():
            self.emit(f"mul {g}, {i}, {gm_row_bytes}", "S")
            self.emit(f"add {g}, {g}, {gm_base}", "S")
            self.emit(f"mul {u}, {i}, {ub_row_bytes}", "S")
            body(i, g, u)
        self.out.append(Loop(head, self.nested(inner)))

    def op_store_tile(self, op) -> None:
        val_v = op.operands[-1]
        ty = val_v.type
        r = len(ty.shape)
        ptr, strides, valids = op.operands[0], op.operands[1:1 + r], op.operands[1 + r:1 + 2 * r]
        param, base = self.param(ptr), self.scalar(ptr)
        src = self.as_tile(val_v)
        S = [self.scalar(v) for v in strides] or [Imm(1)]
        V = [self.scalar(v) for v in valids] or [Imm(1)]
        mode = f", atomic={op.attrs['atomic']}" if op.attrs.get("atomic") else ""
        if src.space == "l0c":      # a cube accumulator: FIX converts and writes it to GM itself
            # (GM rows are strided in the stored type, which FIX converts to)
            self.store_l0c(src, asm_type(ty), param, base, V[0], V[1], self.mul_imm(S[0], self.esize_of(ty)), mode)
            return
        if r == 3:
            self.slices(self.dense(src), base, S, V, lambda t, g, s, v: self.store_2d(t, param, g, s, v, mode),
                        load=False)
            return
        self.store_2d(src, param, base, S, V, mode)

    def store_2d(self, src, param, base, S, V, mode="") -> None:
        """A rank-0..2 tile to GM ``param[base]`` (``mode``: ``, atomic=add`` and so on, or empty)."""
        r = len(src.shape)
        shape = src.shape or (1,)
        es = src.esize
        reads, writes = [self.acc(src)], [Access.gm(param)]
        if r <= 1:
            rows_valid, cols_valid, cols, rows, s_row, s_col = Imm(1), V[0], shape[0], 1, Imm(0), S[0]
        else:
            rows_valid, cols_valid, cols, rows, s_row, s_col = V[0], V[1], shape[1], shape[0], S[0], S[1]
        if self.const(s_col, 1):
            src = self.dense(src)
            reads = [self.acc(src)]
            self.emit(f"mov.ub.gm.{src.dtype} {param}[{base}], ub[{src.addr}], {rows_valid}, "
                      f"{self.mul_imm(cols_valid, es)}, {cols * es}, {self.mul_imm(s_row, es)}{mode}", "MTE3", reads,
                      writes)
            return
        if r == 2 and self.const(s_row, 1):
            # column-major in GM: store the transpose, one segment per column
            t = Tile.dense(self.scratch(src.numel * es), src.dtype, (cols, rows), es)
            self.copy_tile(t, src.with_(shape=(cols, rows), strides=(src.strides[1], src.strides[0])))
            self.emit(f"mov.ub.gm.{src.dtype} {param}[{base}], ub[{t.addr}], {cols_valid}, "
                      f"{self.mul_imm(rows_valid, es)}, {rows * es}, {self.mul_imm(s_col, es)}{mode}", "MTE3",
                      [self.acc(t)], writes)
            return
        src = self.dense(src)
        reads = [self.acc(src)]
        dst_stride = self.mul_imm(s_col, es)
        if r <= 1:
            self.emit(f"mov.ub.gm.{src.dtype} {param}[{base}], ub[{src.addr}], {cols_valid}, {es}, {es}, "
                      f"{dst_stride}{mode}", "MTE3", reads, writes)
            return
        pitch = self.aligned_pitch(cols * es, rows)
        at = src.addr
        if pitch != cols * es:
            # rows that do not start 32-byte aligned: packed into aligned rows of scratch first
            at = self.scratch(rows * pitch)
            packed = [Access("ub", at, at + rows * pitch)]
            self.emit(f"mov.ub.ub ub[{at}], ub[{src.addr}], {rows_valid}, {cols * es}, {cols * es}, {pitch}", "V",
                      reads, packed)
            reads = packed
        self.row_loop(rows_valid, lambda i, g, u: self.emit(
            f"mov.ub.gm.{src.dtype} {param}[{g}], ub[{u}+{at}], {cols_valid}, {es}, {es}, {dst_stride}{mode}",
            "MTE3", reads, writes), base, self.mul_imm(s_row, es), pitch)

    # ---- indexed rows --------------------------------------------------------------------------------
    def op_gather_rows(self, op) -> None:
        ptr, offs, valid = op.operands[:3]
        rows, cols = op.result.type.shape
        self._gather(op, offs, op.operands[3:], rows, cols, valid_bytes_of=valid)

    def op_gather_cols(self, op) -> None:
        """Columns picked by an index vector: one gather item per column, its valid rows as
        segments ``row stride`` apart (rows past them are ``other``)."""
        ptr, offs, stride, valid = op.operands[:4]
        rows, cols = op.result.type.shape
        self._gather(op, offs, op.operands[4:], rows, cols, rows_of=(self.scalar(stride), self.scalar(valid)))

    def _gather(self, op, offs, rest, rows, cols, valid_bytes_of=None, rows_of=None) -> None:
        """``gather.gm.{ub,l1}`` of rows (``valid_bytes_of``: the valid columns) or of columns
        (``rows_of``: (row stride, valid rows)); ``rest``: [mask[, other]]."""
        ptr = op.operands[0]
        mask = rest[0] if rest else None
        other = rest[1] if len(rest) > 1 else None
        param, base = self.param(ptr), self.scalar(ptr)
        dst = self.out_tile(op.result)
        es = dst.esize
        pad = self.pad_of(other, dst.dtype)
        if pad is None:
            self.fail("gather: `other` must be a scalar or a constant on the NPU")
        idx = self.dense(self.as_tile(offs))
        reads, writes = [Access.gm(param), self.acc(idx)], [self.acc(dst)]
        extra = f", idx={idx.dtype}"
        if mask is not None:
            m = self.dense(self.as_tile(mask))
            extra += f", mask=ub[{m.addr}]"
            reads.append(self.acc(m))
        padded = mask is not None
        if rows_of is None:             # rows: idx picks rows of `cols` elements
            V = self.scalar(valid_bytes_of)
            if not self.const(V, cols):
                extra += f", valid={self.mul_imm(V, es)}"      # columns past it get `pad`, by the transfer
                padded = True
            items, item_bytes, dst_stride = rows, cols * es, cols * es
        else:                           # columns: idx picks columns, each `valid rows` segments
            stride, V = rows_of
            if not self.const(V, rows):
                if dst.space == "l1":
                    self.pad_rows_l1(dst, V, rows, cols, es, pad, writes)
                else:
                    self.vfill(dst, pad)
            extra += f", nseg={V}, seg_stride={self.mul_imm(stride, es)}, dst_seg_stride={cols * es}"
            items, item_bytes, dst_stride = cols, es, es
        if padded:
            extra += f", pad={pad}"
        sp = dst.space
        self.emit(f"gather.gm.{sp}.{dst.dtype} {sp}[{dst.addr}], {param}[{base}], ub[{idx.addr}], {items}, "
                  f"{item_bytes}, {es}, {dst_stride}{extra}", "MTE2", reads, writes,
                  comment="" if rows_of is None else "columns picked by an index vector")

    def op_scatter_rows(self, op) -> None:
        ptr, offs, valid, value = op.operands[:4]
        mask = op.operands[4] if len(op.operands) > 4 else None
        param, base = self.param(ptr), self.scalar(ptr)
        src = self.dense(self.as_tile(value))
        rows, cols = value.type.shape
        idx = self.dense(self.as_tile(offs))
        reads = [self.acc(src), self.acc(idx)]
        extra = f", idx={idx.dtype}"
        if mask is not None:
            m = self.dense(self.as_tile(mask))
            extra += f", mask=ub[{m.addr}]"
            reads.append(self.acc(m))
        if op.attrs.get("atomic"):
            extra += f", atomic={op.attrs['atomic']}"
        self.emit(f"scatter.ub.gm.{src.dtype} {param}[{base}], ub[{src.addr}], ub[{idx.addr}], {rows}, "
                  f"{self.mul_imm(self.scalar(valid), src.esize)}, {src.esize}, {cols * src.esize}{extra}", "MTE3",
                  reads, [Access.gm(param)])

    # ---- generic loads and stores ------------------------------------------------------------------
    def _elementwise_args(self, ptr_v, mask_v):
        """(param, dense i64 byte-offset tile, dense u8 mask tile or None) for a pointer tile."""
        param = self.param(ptr_v)
        offs = self.dense(self.as_tile(ptr_v))
        m = self.dense(self.as_tile(mask_v)) if mask_v is not None else None
        return param, offs, m

    def op_load(self, op) -> None:
        ptr = op.operands[0]
        mask = op.operands[1] if len(op.operands) > 1 else None
        other = op.operands[2] if len(op.operands) > 2 else None
        ty = op.result.type
        if not ptr.type.is_block:
            return self._scalar_load(op, ptr, mask, other)
        dst = self.out_tile(op.result)
        pad = self.pad_of(other, dst.dtype)
        param, offs, m = self._elementwise_args(ptr, mask)
        n = dst.numel
        extra = ", idx=i64"
        reads = [Access.gm(param), self.acc(offs)]
        if m is not None:
            extra += f", mask=ub[{m.addr}]" + (f", pad={pad}" if pad is not None else ", pad=0")
            reads.append(self.acc(m))
        self.emit(f"gather.gm.ub.{dst.dtype} ub[{dst.addr}], {param}[0], ub[{offs.addr}], {n}, {dst.esize}, 1, "
                  f"{dst.esize}{extra}", "MTE2", reads, [self.acc(dst)],
                  comment="element-by-element: address or mask not in the structured form (see memory-analysis)")
        if m is not None and pad is None:
            self.vec(f"vsel.{dst.dtype}", dst, [m.with_(shape=dst.shape, strides=dst.strides), dst,
                                                self.as_tile(other)])
        self.notes.append(f"{op.loc}: load of {ty} moves one element per segment (gather)")

    def _scalar_load(self, op, ptr, mask, other) -> None:
        param, off = self.param(ptr), self.scalar(ptr)
        ty = op.result.type
        dst = self.out_reg(op.result)
        T = asm_type(ty)
        if mask is None:
            self.emit(f"sld.{T} {dst}, {param}[{off}]", "S", reads=[Access.gm(param)])
            return
        o = self.scalar(other) if other is not None else Imm(0)
        self.emit(f"mov {dst}, {o}", "S")
        self.guarded(self.scalar(mask), lambda: self.emit(f"sld.{T} {dst}, {param}[{off}]", "S",
                                                          reads=[Access.gm(param)]))

    def op_store(self, op) -> None:
        ptr, value = op.operands[:2]
        mask = op.operands[2] if len(op.operands) > 2 else None
        if not ptr.type.is_block:
            param, off = self.param(ptr), self.scalar(ptr)
            h = self.val(value)
            T = asm_type(value.type)

            def do():
                if isinstance(h, Tile):
                    self.emit(f"mov.ub.gm.{T} {param}[{off}], ub[{h.addr}], 1, {h.esize}, 0, 0", "MTE3",
                              [self.acc(h)], [Access.gm(param)])
                else:
                    self.emit(f"sst.{T} {param}[{off}], {h}", "S", writes=[Access.gm(param)])
            if mask is None:
                return do()
            return self.guarded(self.scalar(mask), do)
        src = self.dense(self.as_tile(value))
        param, offs, m = self._elementwise_args(ptr, mask)
        extra = ", idx=i64" + (f", mask=ub[{m.addr}]" if m is not None else "")
        reads = [self.acc(src), self.acc(offs)] + ([self.acc(m)] if m is not None else [])
        self.emit(f"scatter.ub.gm.{src.dtype} {param}[0], ub[{src.addr}], ub[{offs.addr}], {src.numel}, "
                  f"{src.esize}, 1, {src.esize}{extra}", "MTE3", reads, [Access.gm(param)],
                  comment="element-by-element: address or mask not in the structured form (see memory-analysis)")
        self.notes.append(f"{op.loc}: store of {value.type} moves one element per segment (scatter)")

    # ---- atomics -------------------------------------------------------------------------------------
    def op_atomic_rmw(self, op) -> None:
        kind = op.attrs["op"]
        if kind in ("and", "or", "xor"):
            return self._atomic(op, None, kind)
        self._atomic(op, lambda d, addr, vals: f"satomic.{kind}.{{T}} {d}, {addr}, {vals[0]}")

    def _cas_loop(self, kind, d, addr, val, T) -> None:
        """d = old; mem = old (kind) val, as a compare-and-swap retry loop on the scalar unit."""
        new, seen = self.temp_reg(), self.temp_reg()
        g = [Access.gm(addr.split("[")[0])]
        # the first read is atomic too (adding 0): the whole read-modify-write loop is an atomic access
        self.emit(f"satomic.add.{T} {d}, {addr}, 0", "S", g, g)
        before = [Instr(f"{kind} {new}, {d}, {val}", "S", loc=self.op.loc),
                  Instr(f"satomic.cas.{T} {seen}, {addr}, {d}, {new}", "S", g, g, loc=self.op.loc),
                  Instr(f"sub {new}, {seen}, {d}", "S", loc=self.op.loc)]
        after = [Instr(f"mov {d}, {seen}", "S", loc=self.op.loc)]
        self.out.append(While(before, [Instr(f"br.eq {new}, 0, {{target}}", "S", loc=self.op.loc)], after))

    def op_atomic_cas(self, op) -> None:
        self._atomic(op, lambda d, addr, vals: f"satomic.cas.{{T}} {d}, {addr}, {vals[0]}, {vals[1]}")

    def _atomic(self, op, fmt, cas_kind=None) -> None:
        if op.attrs.get("sem") not in ("relaxed", "acquire"):
            # release (Triton's default acq_rel): the kernel's earlier GM writes, still in flight on
            # MTE3/FIX, land before the atomic is seen (a lock released after the guarded store)
            self.emit("barrier all", "S", comment="release: earlier GM writes land before the atomic")
        ptr = op.operands[0]
        ty = op.result.type
        T = asm_type(ty)
        n_vals = 2 if op.name == "atomic_cas" else 1
        vals_v = op.operands[1:1 + n_vals]
        mask_v = op.operands[1 + n_vals] if len(op.operands) > 1 + n_vals else None
        param = self.param(ptr)
        if not ptr.type.is_block:
            off = self.scalar(ptr)
            vals = [self.scalar(v) for v in vals_v]
            d = self.out_reg(op.result)
            if cas_kind:
                self.guarded(self.scalar(mask_v) if mask_v is not None else Imm(1),
                             lambda: self._cas_loop(cas_kind, d, f"{param}[{off}]", vals[0], T))
                return
            self.guarded(self.scalar(mask_v) if mask_v is not None else Imm(1), lambda: self.emit(
                fmt(d, f"{param}[{off}]", vals).format(T=T), "S", [Access.gm(param)], [Access.gm(param)]))
            return
        if cas_kind is None and op.name == "atomic_rmw" and op.attrs["op"] in ATOMIC_TRANSFER_KINDS and \
                T in ATOMIC_TRANSFER_TYPES and not self.an.users.get(id(op.result)):
            # nobody reads the old values: one atomic segment per element (a scatter in atomic mode)
            src = self.dense(self.as_tile(vals_v[0]))
            if src.shape != tuple(ptr.type.shape):
                full = Tile.dense(self.scratch(ptr.type.numel * src.esize), src.dtype, tuple(ptr.type.shape), src.esize)
                self.copy_tile(full, src)
                src = full
            param, offs, m = self._elementwise_args(ptr, mask_v)
            extra = ", idx=i64" + (f", mask=ub[{m.addr}]" if m is not None else "") + f", atomic={op.attrs['op']}"
            reads = [self.acc(src), self.acc(offs)] + ([self.acc(m)] if m is not None else [])
            self.emit(f"scatter.ub.gm.{T} {param}[0], ub[{src.addr}], ub[{offs.addr}], {src.numel}, {src.esize}, 1, "
                      f"{src.esize}{extra}", "MTE3", reads, [Access.gm(param)],
                      comment="element-by-element atomic: address or mask not in the structured form")
            self.notes.append(f"{op.loc}: {op.name} of {ptr.type} moves one element per atomic segment")
            return
        # a tile of atomics: one scalar atomic per element, in element order
        dst = self.out_tile(op.result)
        offs = self.dense(self.as_tile(ptr))
        vals = [self.dense(self.as_tile(v)) if isinstance(self.val(v), Tile) else self.val(v) for v in vals_v]
        m = self.dense(self.as_tile(mask_v)) if mask_v is not None else None
        i, a, e = self.temp_reg(), self.temp_reg(), self.temp_reg()
        regs = [self.temp_reg() if isinstance(v, Tile) else v for v in vals]
        mreg = self.temp_reg() if m is not None else None
        d = self.temp_reg()
        head = Instr(f"for {i}, 0, {dst.numel}, 1", "S", loc=op.loc)
        es = dst.esize

        def body():
            self.emit(f"mul {e}, {i}, 8", "S")
            self.emit(f"sld.i64 {a}, ub[{e}+{offs.addr}]", "S", reads=[self.acc(offs)])
            self.emit(f"mul {e}, {i}, {es}", "S")
            for r, v in zip(regs, vals):
                if isinstance(v, Tile):
                    self.emit(f"sld.{T} {r}, ub[{e}+{v.addr}]", "S", reads=[self.acc(v)])

            def doit():
                if cas_kind:
                    self._cas_loop(cas_kind, d, f"{param}[{a}]", regs[0], T)
                else:
                    self.emit(fmt(d, f"{param}[{a}]", regs).format(T=T), "S", [Access.gm(param)],
                              [Access.gm(param)])
                self.emit(f"sst.{T} ub[{e}+{dst.addr}], {d}", "S", writes=[self.acc(dst)])
            if m is not None:
                self.emit(f"sld.u8 {mreg}, ub[{i}+{m.addr}]", "S", reads=[self.acc(m)])
                self.guarded(mreg, doit)
            else:
                doit()
        self.out.append(Loop(head, self.nested(body)))
        self.notes.append(f"{op.loc}: {op.name} on a tile runs one scalar atomic per element")

    # ---- debugging ops -------------------------------------------------------------------------------
    def string(self, text: str) -> str:
        """The name of a ``.string`` constant holding ``text`` (one per distinct text)."""
        table = self.__dict__.setdefault("_strings", {})
        clean = text.replace('"', "'").replace("\n", " ")
        if clean not in table:
            table[clean] = f"str{len(table)}"
        return table[clean]

    def _dbg_tile(self, v):
        """(dense UB tile, rank, rows, cols, type suffix) of a printed or asserted block value."""
        t = self.dense(self.as_tile(v))
        shape = t.shape
        if len(shape) > 2:
            self.fail("device_print/device_assert of a rank-3 block is not supported on the NPU; reshape it to 2D")
        rows, cols = (shape[0], shape[1]) if len(shape) == 2 else (1, shape[0] if shape else 1)
        ty = "i1" if v.type.scalar.is_bool else t.dtype
        return t, len(shape), rows, cols, ty

    def op_print(self, op) -> None:
        if not op.operands:
            self.fail("device_print without values is not supported on the NPU; print a value with it")
        name = self.string(op.attrs["prefix"])
        for i, v in enumerate(op.operands):
            if v.type.scalar.is_ptr:
                self.fail("device_print of a pointer is not supported on the NPU")
            last = int(i == len(op.operands) - 1)
            h = self.val(v)
            if isinstance(h, Tile):
                t, rank, rows, cols, ty = self._dbg_tile(v)
                self.emit(f"dbg.print.{ty} {name}, ub[{t.addr}], {cols}, rows={rows}, rank={rank}, last={last}", "S",
                          reads=[self.acc(t)])
            else:
                ty = "i1" if v.type.scalar.is_bool else asm_type(v.type)
                self.emit(f"dbg.prints.{ty} {name}, {h}, last={last}", "S")

    def op_assert(self, op) -> None:
        name = self.string(op.attrs["msg"])
        v = op.operands[0]
        h = self.val(v)
        if isinstance(h, Tile):
            t, rank, rows, cols, ty = self._dbg_tile(v)
            if t.esize != 1:
                self.fail("device_assert needs a boolean condition")
            self.emit(f"dbg.assert {name}, ub[{t.addr}], {cols}, rows={rows}", "S", reads=[self.acc(t)])
        else:
            self.emit(f"dbg.asserts {name}, {h}", "S")
