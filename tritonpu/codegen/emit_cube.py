"""Cube emission: ``tl.dot`` through L1, L0A/L0B, the cube and L0C.

Operands the memory analysis left in L1 (loaded by MTE2 straight from GM, see the cube homes in
:mod:`analysis`) go L1 -> L0A / L0B on MTE1, transposed on the way when the kernel wrote
``tl.trans``; operands computed on the vector side go UB -> L1 (MTE3) first: as the dot runs, or
once where they are made when buffer planning gave them an L1 tile (``l1_stage``).  A's rows are padded
to the cube's K0 (32 bytes of the input type), B's and C's to 16 elements.  ``mmad`` accumulates
in L0C in fp32 / int32: into the loop's accumulator in place when the dot's ``acc`` lives in L0C
(``init=0``; zeroed before the loop by a product over k = 0, drained once after it); a dot
outside such a loop whose product stays in L0C (only stored, or read a few rows at a time: see
``cube_homes._plain_dot``) into its planned L0C tile; else into a scratch tile drained by FIX to
UB, converting to the result type, with ``acc`` added on the vector unit.  An ``acc`` of zeros made
in L0C is a product over k = 0 before the dot's.  Blocks larger than L0A/L0B/L0C are a
``CompilationError`` naming the space and the bytes.
"""
from __future__ import annotations

from tritonpu.codegen.asmlist import Access, panel_access
from tritonpu.codegen.homes import L0C, NOWHERE, const_value, panel_tile_of
from tritonpu.codegen.emit_memory import panel_operand
from tritonpu.codegen.values import Imm, Tile, asm_type

_K0_BYTES = 32
# L0A/L0B slots consecutive products take turns over, at most (two when their tiles fill half)
L0_SLOTS = 4
_DRAIN_BYTES = 4096        # UB per chunk of an accumulator FIX drains to be added on the vector unit


def _ceil_to(n: int, k: int) -> int:
    return (n + k - 1) // k * k


def _esize(t: str) -> int:
    return {"i8": 1, "f32": 4}.get(t, 2)


class CubeEmitter:
    def _l1_base(self) -> int:
        """Where L1 above the plan starts."""
        return _ceil_to(int(self.fn.attrs.get("l1_peak", 0)), 512)

    def _staged(self) -> dict:
        """id(value) -> (l1 address, rows, cols, dtype): dot operands copied into their planned L1
        tile once, where they are made (see stage_result)."""
        return self.__dict__.setdefault("_staged_l1", {})

    def _l1_scratch(self, nbytes: int) -> int:
        at = self._l1_base() + getattr(self, "_l1_used", 0)
        self._l1_used = getattr(self, "_l1_used", 0) + _ceil_to(nbytes, 512)
        if at + nbytes > self.m.capacity["l1"]:
            self.fail(f"tl.dot operands need {at + nbytes} bytes of L1 but it holds {self.m.capacity['l1']}; "
                      "use smaller blocks")
        return at

    def _to_l1(self, v, at=None):
        """Copy the UB value ``v`` (made dense) to L1 at ``at`` (L1 scratch if None): (the dense tile,
        its L1 address)."""
        t = self.dense(self.as_tile(v))
        nbytes = t.numel * t.esize
        if at is None:
            at = self._l1_scratch(nbytes)
        self.emit(f"mov.ub.l1 l1[{at}], ub[{t.addr}], 1, {nbytes}, 0, 0", "MTE3",
                  [self.acc(t)], [Access("l1", at, at + nbytes)])
        return t, at

    def stage_result(self, op) -> None:
        """Copy the result of ``op`` UB -> L1 into the tile buffer planning gave it there
        (``l1_stage``: a dot operand computed before the loop whose dots read it,
        ``cube_homes._staged_operands``)."""
        t, at = self._to_l1(op.result, op.attrs["l1_stage"])
        self._staged()[id(op.result)] = (at, t.shape[0], t.shape[1], t.dtype)

    def _stage(self, v, tin: str, role: str):
        """(l1 address, rows and bytes per row as stored, transposed?) for a dot operand."""
        h = self.val(v)
        if isinstance(h, Tile) and h.space == "l1":
            if h.is_dense():
                return h.addr, h.shape[0], h.shape[1], False
            # a transposed view of a dense L1 tile: stored (cols x rows)
            return h.addr, h.shape[1], h.shape[0], True
        if id(v) in self._staged():                         # copied once where it was made
            at, rows, cols, dtype = self._staged()[id(v)]
            if dtype != tin:
                self.fail(f"dot operands must have one element type, got {dtype} and {tin}")
            return at, rows, cols, False
        t, at = self._to_l1(v)
        if t.dtype != tin:
            self.fail(f"dot operands must have one element type, got {t.dtype} and {tin}")
        return at, t.shape[0], t.shape[1], False

    def kind_dot(self, op) -> None:
        self._l1_used = 0
        a_v, b_v = op.operands[:2]
        acc_v = op.operands[2] if len(op.operands) > 2 else None
        M, K = a_v.type.shape
        N = b_v.type.shape[1]
        tin = asm_type(a_v.type)
        if asm_type(b_v.type) != tin:
            self.fail(f"dot operands must have one element type, got {a_v.type} and {b_v.type}")
        if tin not in ("f16", "bf16", "f32", "i8"):
            self.fail(f"the cube multiplies f16, bf16, f32 or i8, not {tin}")
        es = _esize(tin)
        tacc = "i32" if tin == "i8" else "f32"
        k0 = _K0_BYTES // es
        np_ = _ceil_to(N, 16)
        if M * np_ * 4 > self.m.capacity["l0c"]:
            self.fail(f"tl.dot of {M}x{K} by {K}x{N} {tin} needs {M * np_ * 4} bytes of L0C for its result but it "
                      f"holds {self.m.capacity['l0c']}; use smaller blocks")
        # L0 tiles that fit half of L0A and of L0B: consecutive products (of one dot and the next)
        # take turns over as many equal slots of L0A and L0B as the tiles fit (two to L0_SLOTS),
        # so MTE1 fills the next ones while the cube reads one
        cap_a, cap_b = self.m.capacity["l0a"], self.m.capacity["l0b"]
        mt, nt, kt = self._l0_tiles(M, N, K, es, k0, cap_a // 2, cap_b // 2)
        kp = _ceil_to(kt, k0)
        n = max(2, min(L0_SLOTS, cap_a // (mt * kp * es), cap_b // (kp * _ceil_to(nt, 16) * es)))
        align = self.m.align["l0a"]
        self._l0_slots = (n, cap_a // n // align * align, cap_b // n // align * align)
        a_at, a_rows, a_cols, a_t = self._stage(a_v, tin, "A")
        b_at, b_rows, b_cols, b_t = self._stage(b_v, tin, "B")
        # an operand in an L1 panel: at its slot register; reading its trip's panel event, so the
        # sync pass orders the read after the fill (on a miss) like a load's -- not in the version
        # of a loop that only reads the panel (its miss flag is the constant false): an earlier
        # program filled those tiles and read each of them itself, after its fill had landed, so
        # MTE1 reads them again in order
        self._slots = {}
        for role, v in (("l0a", a_v), ("l0b", b_v)):
            if (tile := panel_tile_of(v)) is not None:
                reads = const_value(tile.operands[1]) in (None, True)
                self._slots[role] = (self.scalar(tile.operands[0]), tile.attrs["event"] if reads else None)
        self._operands = (a_at, a_rows, a_cols, a_t, b_at, b_rows, b_cols, b_t, mt, nt, kt, es, k0, tin)
        if acc_v is not None and self.an.home.get(id(acc_v)) == NOWHERE:
            acc_v, init = None, self._zeroed     # zeros made in L0C (cube_homes._zero_accumulator)
        else:
            init = self._initialised
        acc_h = self.val(acc_v) if acc_v is not None else None
        if isinstance(acc_h, Tile) and acc_h.space == "l0c":
            if self.an.home.get(id(op.result)) != L0C:    # the last of a chain of dots: drained
                self._products(acc_h, tacc, M, N, K, np_, init=0)
                self.drain_l0c(acc_h, self.out_tile(op.result))
                return
            c = self.out_tile(op.result)            # the same L0C tile: accumulate in place
            self._products(c, tacc, M, N, K, np_, init=0)
            return
        if self.an.home.get(id(op.result)) == L0C:  # only stored, or read a few rows at a time: FIX
            c = self.out_tile(op.result)
            init(c, op, tacc, M, N, K, np_)
            if (mul := self.an.l0c_scaled.get(id(op))) is not None:
                self.define(mul.result, c)          # FIX scales it at the add: see add_scaled_product
                self.done.add(id(mul))
            return
        c_at = _ceil_to(int(self.fn.attrs.get("l0c_peak", 0)), 64)
        if c_at + M * np_ * 4 > self.m.capacity["l0c"]:
            self.fail(f"tl.dot needs {c_at + M * np_ * 4} bytes of L0C but it holds {self.m.capacity['l0c']}"
                      + (f" (its {M}x{N} fp32 product takes {M * np_ * 4}, beside the {c_at} that the kernel's "
                         "other dot results hold there)" if c_at else ""))
        # consecutive dots drained by FIX use alternate halves of what L0C has left when two
        # products fit: the cube computes the next while FIX still drains this one
        half = (self.m.capacity["l0c"] - c_at) // 2 // 64 * 64
        if M * np_ * 4 <= half:
            self._l0c_parity = 1 - getattr(self, "_l0c_parity", 1)
            c_at += self._l0c_parity * half
        c = Tile.dense(c_at, tacc, (M, N), 4, "l0c")
        init(c, op, tacc, M, N, K, np_)
        dst = self.out_tile(op.result)
        tout = dst.dtype
        if acc_v is not None and tout == tacc and asm_type(acc_v.type) == tacc:
            return self._add_drained(c, dst, self.as_tile(acc_v), M, N, np_)
        if acc_v is None and (fused := self.scaled_by_fix(op)) is not None:
            mul, s = fused
            out = self.out_tile(mul.result)
            self.drain_l0c(c, out, scale=s)
            self.define(op.result, out)
            self.define(mul.result, out)
            self.done.add(id(mul))
            return
        prod = dst if (acc_v is None or tout == tacc) else Tile.dense(self.scratch(M * N * 4), tacc, (M, N), 4)
        self.drain_l0c(c, prod)
        if acc_v is None:
            return
        acc = self.as_tile(acc_v)
        wide = Tile.dense(self.scratch(M * N * 4), tacc, (M, N), 4)
        self.vec(f"vcast.{tacc}.{acc.dtype}", wide, [acc])
        self.vec(f"vadd.{tacc}", prod, [prod, wide])
        self.vec(f"vcast.{tout}.{tacc}", dst, [prod])

    def _initialised(self, c: Tile, op, tacc, M, N, K, np_) -> None:
        """C = A @ B."""
        self._products(c, tacc, M, N, K, np_, init=1)

    def _zeroed(self, c: Tile, op, tacc, M, N, K, np_) -> None:
        """C = 0 + A @ B: zeroed by a product over k = 0, then accumulated into, as a loop's L0C
        accumulator is (a sum that is -0.0 comes out +0.0, as ``acc + a @ b`` does)."""
        self.zero_l0c(c, op)
        self._products(c, tacc, M, N, K, np_, init=0)

    def add_scaled_product(self, op) -> None:
        """``T + s * (A @ B)`` (or ``T + A @ B``) for an add in ``an.l0c_added``: the product waited
        in L0C; FIX drains it (scaled by ``s``) a few rows at a time onto T (no M x N tile of the
        product in UB)."""
        dot, mul = self.an.l0c_added[id(op)]
        c = self.val(dot.result)
        made = dot.result if mul is None else mul.result        # (no mul: the product itself is added)
        t = op.operands[1] if op.operands[0] is made else op.operands[0]
        s = None if mul is None else mul.operands[1] if mul.operands[0] is dot.result else mul.operands[0]
        M, N = c.shape
        self._add_drained(c, self.out_tile(op.result), self.as_tile(t), M, N, _ceil_to(N, 16),
                          None if s is None else self.scalar(s))

    def _add_drained(self, c: Tile, dst: Tile, acc: Tile, M: int, N: int, np_: int, scale=None) -> None:
        """dst = acc + C (C scaled by ``scale`` on the way), FIX draining C a few rows at a time
        into two small UB buffers in turn (the vector unit adds chunk i while FIX drains chunk
        i+1); dst may be acc's own buffer (the dot's result in place over its accumulator: no
        second M x N tile in UB)."""
        rows = max(1, min(M, _DRAIN_BYTES // (N * 4)))
        bufs = [Tile.dense(self.scratch(rows * N * 4), c.dtype, (rows, N), 4) for _ in range(2 if rows < M else 1)]
        for k, r0 in enumerate(range(0, M, rows)):
            r = min(rows, M - r0)
            buf = bufs[k % len(bufs)].with_(shape=(r, N))
            self.drain_l0c(c.with_(addr=c.addr + r0 * np_ * 4, shape=(r, N)), buf, scale)
            self.vec(f"vadd.{dst.dtype}", self._rows(dst, r0, r), [self._rows(acc, r0, r), buf])

    @staticmethod
    def _rows(t: Tile, r0: int, r: int) -> Tile:
        """Rows r0 .. r0 + r of a 2-D tile (a view)."""
        return t.with_(addr=t.addr + r0 * t.strides[0] * t.esize, shape=(r,) + tuple(t.shape[1:]))

    def _l0_tiles(self, M, N, K, es, k0, cap_a, cap_b):
        """(mt, nt, kt): the largest L0 tiles (halving K first, then M / N) that fit ``cap_a`` bytes of
        L0A and ``cap_b`` of L0B."""
        mt, nt, kt = M, N, K
        while mt * _ceil_to(kt, k0) * es > cap_a or _ceil_to(kt, k0) * _ceil_to(nt, 16) * es > cap_b:
            if kt > k0:
                kt = max(k0, _ceil_to(kt // 2, k0))
            elif mt * _ceil_to(kt, k0) * es > cap_a and mt > 16:
                mt = max(16, _ceil_to(mt // 2, 16))
            elif nt > 16:
                nt = max(16, _ceil_to(nt // 2, 16))
            else:
                self.fail("tl.dot operands do not fit L0A/L0B even in 16-wide tiles")
        return mt, nt, kt

    def _products(self, c: Tile, tacc, M, N, K, np_, init: int) -> None:
        """C (+)= A @ B tile by tile: MTE1 brings each A and B chunk to L0A/L0B, the cube accumulates."""
        a_at, a_rows, a_cols, a_t, b_at, b_rows, b_cols, b_t, mt, nt, kt, es, k0, tin = self._operands
        align = self.m.align["l1"]
        for m0 in range(0, M, mt):
            mm = min(mt, M - m0)
            for n0 in range(0, N, nt):
                nn = min(nt, N - n0)
                for kk0 in range(0, max(K, 1), max(kt, 1)):
                    kk = min(kt, K - kk0)
                    kp, npp = _ceil_to(kk, k0), _ceil_to(nn, 16)
                    self._l0_turn = getattr(self, "_l0_turn", -1) + 1
                    n, slot_a, slot_b = self._l0_slots
                    k = self._l0_turn % n
                    self._l0_base = {"l0a": k * slot_a, "l0b": k * slot_b}
                    # A[m0:m0+mm, kk0:kk0+kk] -> L0A (rows kp apart)
                    if a_t:   # stored K x M
                        src, nseg, seg, stride = a_at + (kk0 * a_cols + m0) * es, kk, mm * es, a_cols * es
                    else:
                        src, nseg, seg, stride = a_at + (m0 * a_cols + kk0) * es, mm, kk * es, a_cols * es
                    self._to_l0("l0a", src, nseg, seg, stride, kp * es, a_t, tin, mm * kp * es, align)
                    if b_t:   # stored N x K
                        src, nseg, seg, stride = b_at + (n0 * b_cols + kk0) * es, nn, kk * es, b_cols * es
                    else:
                        src, nseg, seg, stride = b_at + (kk0 * b_cols + n0) * es, kk, nn * es, b_cols * es
                    self._to_l0("l0b", src, nseg, seg, stride, npp * es, b_t, tin, kp * npp * es, align)
                    sub = c.with_(addr=c.addr + (m0 * np_ + n0) * 4)
                    self._mmad(sub, tacc, tin, mm, kk, nn, np_, init if kk0 == 0 else 0, row_stride=np_)

    def _to_l0(self, space, src, nseg, seg, stride, dst_stride, transpose, tin, nbytes, align) -> None:
        if src % align:
            self.fail(f"tl.dot: an L0 tile of this operand starts at a misaligned L1 address; use block sizes "
                      f"whose rows are multiples of {align} bytes")
        extra, suffix = (", transpose=1", f".{tin}") if transpose else ("", "")
        base = getattr(self, "_l0_base", None) or {"l0a": 0, "l0b": 0}
        base = base[space]
        slot = getattr(self, "_slots", {}).get(space)
        if slot is not None:        # a panel's tile
            slot, event = slot
            self.emit(f"mov.l1.{space}{suffix} {space}[{base}], {panel_operand(slot, src)}, {nseg}, {seg}, {stride}, "
                      f"{dst_stride}{extra}", "MTE1", [] if event is None else [panel_access(event)],
                      [Access(space, base, base + nbytes)])
            return
        self.emit(f"mov.l1.{space}{suffix} {space}[{base}], l1[{src}], {nseg}, {seg}, {stride}, {dst_stride}{extra}",
                  "MTE1", [Access("l1", src, src + (nseg - 1) * stride + seg)], [Access(space, base, base + nbytes)])

    def _l0c_halves(self, M: int, row_bytes: int) -> list:
        """[(first row, rows)] of an L0C tile of ``M`` rows ``row_bytes`` apart: its two row halves
        when it takes more than half of L0C (no second accumulator fits beside it, so the next
        program's products wait for its drain: issued by halves, FIX drains one half while the
        cube still writes, or already rewrites, the other), else the whole tile."""
        if not self.l0c_halves or M * row_bytes <= self.m.capacity["l0c"] // 2 or M < 32:
            return [(0, M)]
        h = _ceil_to(M // 2, 16)
        return [(0, h), (h, M - h)]

    def _mmad(self, c: Tile, tacc, tin, M, K, N, np_, init: int, row_stride=None) -> None:
        es = _esize(tin)
        kp = _ceil_to(K, _K0_BYTES // es)
        rs = row_stride or _ceil_to(N, 16)
        base = getattr(self, "_l0_base", None) or {"l0a": 0, "l0b": 0}
        for r0, mm in self._l0c_halves(M, rs * 4):
            at = c.addr + r0 * rs * 4
            cacc = Access("l0c", at, at + mm * rs * 4)
            ba, bb = base["l0a"] + r0 * kp * es, base["l0b"]
            reads = [Access("l0a", ba, ba + mm * kp * es), Access("l0b", bb, bb + kp * _ceil_to(N, 16) * es)] \
                if K else []
            if not init:
                reads.append(cacc)
            cop = f"l0c[{at}, {rs}]" if rs != _ceil_to(N, 16) else f"l0c[{at}]"
            ins = self.emit(f"mmad.{tacc}.{tin} {cop}, l0a[{ba}], l0b[{bb}], {mm}, {K}, {N}, init={init}", "M",
                            reads, [cacc])
            if r0 and not K and init == 1:      # (the first half's zeroing waits for its drain only)
                self.half_zeros.append(ins)

    def zero_l0c(self, c: Tile, dot) -> None:
        """Zero an L0C accumulator: an initialising product over k = 0."""
        M, N = c.shape
        self._mmad(c, c.dtype, asm_type(dot.operands[0].type), M, 0, N, _ceil_to(N, 16), init=1)

    def store_l0c(self, c: Tile, out_dtype: str, param: str, base, rows, cols, row_bytes, mode="") -> None:
        """FIX: ``rows`` x ``cols`` of L0C (rows padded to 16) straight to GM at ``param[base]``,
        rows ``row_bytes`` apart, converting to ``out_dtype`` (``mode``: ``, atomic=add``: added into GM);
        by the row halves the products wrote (``_l0c_halves``)."""
        M, N = c.shape
        np_ = _ceil_to(N, 16)
        parts = self._l0c_halves(M, np_ * 4)
        for r0, mm in parts:
            at = c.addr + r0 * np_ * 4
            n = rows if len(parts) == 1 else self._rows_past(rows, r0, mm)
            gm = base if r0 == 0 else self._row_at(base, r0, row_bytes)
            ins = self.emit(f"mov.l0c.gm.{out_dtype}.{c.dtype} {param}[{gm}], l0c[{at}], {n}, "
                      f"{self.mul_imm(cols, 4)}, {np_ * 4}, {row_bytes}{mode}", "FIX",
                      [Access("l0c", at, at + mm * np_ * 4)], [Access.gm(param)])
            if len(parts) > 1:
                self.half_drains.append(ins)

    def _rows_past(self, rows, r0: int, most: int):
        """``min(max(rows - r0, 0), most)`` as an operand: how many of ``rows`` valid rows are rows
        ``r0 .. r0 + most`` of a tile."""
        if isinstance(rows, Imm):
            return Imm(min(max(int(rows.value) - r0, 0), most))
        r = self.temp_reg()
        if r0:
            self.emit(f"sub {r}, {rows}, {r0}", "S")
            self.emit(f"max {r}, {r}, 0", "S")
            rows = r
        self.emit(f"min {r}, {rows}, {most}", "S")
        return r

    def _row_at(self, base, r0: int, row_bytes):
        """``base + r0 * row_bytes`` as an operand (the byte offset of row ``r0``)."""
        off = self.mul_imm(row_bytes, r0)
        if isinstance(base, Imm) and isinstance(off, Imm):
            return Imm(int(base.value) + int(off.value))
        r = self.temp_reg()
        self.emit(f"add {r}, {base}, {off}", "S")
        return r

    def drain_l0c(self, c: Tile, dst: Tile, scale=None) -> None:
        """FIX: L0C (rows padded to 16) -> a dense UB tile, converting to dst's type (multiplying
        by the scalar ``scale`` first when given)."""
        M, N = c.shape
        np_ = _ceil_to(N, 16)
        extra = f", scale={scale}" if scale is not None else ""
        self.emit(f"mov.l0c.ub.{dst.dtype}.{c.dtype} ub[{dst.addr}], l0c[{c.addr}], {M}, {N * 4}, {np_ * 4}, "
                  f"{N * dst.esize}{extra}", "FIX", [Access("l0c", c.addr, c.addr + M * np_ * 4)], [self.acc(dst)])

    def scaled_by_fix(self, op):
        """(the mul, its scalar operand) when a dot's result is only multiplied by a scalar, by the
        very next op, in f32: FIX does that multiply on the way out (the vector unit does not)."""
        uses = self.an.users.get(id(op.result), [])
        if len(uses) != 1 or str(op.result.type.scalar) != "f32":
            return None
        mul, k = uses[0]
        region = op.parent
        if mul.name != "mul" or mul.parent is not region or str(mul.result.type) != str(op.result.type) or \
                region.ops.index(mul) != region.ops.index(op) + 1 or self.an.home.get(id(mul.result)) != "ub":
            return None
        other = mul.operands[1 - k]
        h = self.val(other)
        if isinstance(h, Tile):
            if h.strides and any(h.strides):
                return None
            h = self.scalar(other)
        return mul, h
