"""Cube emission: ``tl.dot`` through L1, L0A/L0B, the cube and L0C.

Operands the memory analysis left in L1 (loaded by MTE2 straight from GM, see the cube homes in
:mod:`analysis`) go L1 -> L0A / L0B on MTE1, transposed on the way when the kernel wrote
``tl.trans``; operands computed on the vector side go UB -> L1 (MTE3) first.  A's rows are padded
to the cube's K0 (32 bytes of the input type), B's and C's to 16 elements.  ``mmad`` accumulates
in L0C in fp32 / int32: into the loop's accumulator in place when the dot's ``acc`` lives in L0C
(``init=0``; zeroed before the loop by a product over k = 0, drained once after it), else into a
scratch tile drained by FIX to UB, converting to the result type, with ``acc`` added on the vector
unit.  Blocks larger than L0A/L0B/L0C are a ``CompilationError`` naming the space and the bytes.
"""
from __future__ import annotations

from tritonpu.codegen.asmlist import Access
from tritonpu.codegen.values import Tile, asm_type

_K0_BYTES = 32


def _ceil_to(n: int, k: int) -> int:
    return (n + k - 1) // k * k


def _esize(t: str) -> int:
    return {"i8": 1, "f32": 4}.get(t, 2)


class CubeEmitter:
    def _l1_scratch(self, nbytes: int) -> int:
        at = _ceil_to(int(self.fn.attrs.get("l1_peak", 0)), 512) + getattr(self, "_l1_used", 0)
        self._l1_used = getattr(self, "_l1_used", 0) + _ceil_to(nbytes, 512)
        if at + nbytes > self.m.capacity["l1"]:
            self.fail(f"tl.dot operands need {at + nbytes} bytes of L1 but it holds {self.m.capacity['l1']}; "
                      "use smaller blocks")
        return at

    def _stage(self, v, tin: str, role: str):
        """(l1 address, rows and bytes per row as stored, transposed?) for a dot operand."""
        h = self.val(v)
        if isinstance(h, Tile) and h.space == "l1":
            if h.is_dense():
                return h.addr, h.shape[0], h.shape[1], False
            # a transposed view of a dense L1 tile: stored (cols x rows)
            return h.addr, h.shape[1], h.shape[0], True
        t = self.dense(self.as_tile(v))
        if t.dtype != tin:
            self.fail(f"dot operands must have one element type, got {t.dtype} and {tin}")
        nbytes = t.numel * t.esize
        at = self._l1_scratch(nbytes)
        self.emit(f"mov.ub.l1 l1[{at}], ub[{t.addr}], 1, {nbytes}, 0, 0", "MTE3",
                  [self.acc(t)], [Access("l1", at, at + nbytes)])
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
        kp, np_ = _ceil_to(K, _K0_BYTES // es), _ceil_to(N, 16)
        need = {"l0a": M * kp * es, "l0b": kp * np_ * es, "l0c": M * np_ * 4}
        for space, nbytes in need.items():
            cap = self.m.capacity[space]
            if nbytes > cap:
                self.fail(f"tl.dot of {M}x{K} by {K}x{N} {tin} needs {nbytes} bytes of {space.upper()} but it "
                          f"holds {cap}; use smaller blocks")
        a_at, a_rows, a_cols, a_t = self._stage(a_v, tin, "A")
        b_at, b_rows, b_cols, b_t = self._stage(b_v, tin, "B")
        for name, at, rows, cols, tr, stride, space in (("a", a_at, a_rows, a_cols, a_t, kp, "l0a"),
                                                         ("b", b_at, b_rows, b_cols, b_t, np_, "l0b")):
            src = Access("l1", at, at + rows * cols * es)
            extra = f", transpose=1" if tr else ""
            suffix = f".{tin}" if tr else ""
            self.emit(f"mov.l1.{space}{suffix} {space}[0], l1[{at}], {rows}, {cols * es}, {cols * es}, "
                      f"{stride * es}{extra}", "MTE1", [src], [Access(space, 0, need[space])])
        acc_h = self.val(acc_v) if acc_v is not None else None
        if isinstance(acc_h, Tile) and acc_h.space == "l0c":
            c = self.out_tile(op.result)            # the same L0C tile: accumulate in place
            self._mmad(c, tacc, tin, M, K, N, np_, init=0)
            return
        c_at = _ceil_to(int(self.fn.attrs.get("l0c_peak", 0)), 64)
        if c_at + need["l0c"] > self.m.capacity["l0c"]:
            self.fail(f"tl.dot needs {c_at + need['l0c']} bytes of L0C but it holds {self.m.capacity['l0c']}")
        c = Tile.dense(c_at, tacc, (M, N), 4, "l0c")
        self._mmad(c, tacc, tin, M, K, N, np_, init=1)
        dst = self.out_tile(op.result)
        tout = dst.dtype
        prod = dst if (acc_v is None or tout == tacc) else Tile.dense(self.scratch(M * N * 4), tacc, (M, N), 4)
        self.drain_l0c(c, prod)
        if acc_v is None:
            return
        acc = self.as_tile(acc_v)
        if prod is dst:
            self.vec(f"vadd.{tout}", dst, [dst, acc])
            return
        wide = Tile.dense(self.scratch(M * N * 4), tacc, (M, N), 4)
        self.vec(f"vcast.{tacc}.{acc.dtype}", wide, [acc])
        self.vec(f"vadd.{tacc}", prod, [prod, wide])
        self.vec(f"vcast.{tout}.{tacc}", dst, [prod])

    def _mmad(self, c: Tile, tacc, tin, M, K, N, np_, init: int) -> None:
        es = _esize(tin)
        kp = _ceil_to(K, _K0_BYTES // es)
        cacc = Access("l0c", c.addr, c.addr + M * np_ * 4)
        reads = [Access("l0a", 0, M * kp * es), Access("l0b", 0, kp * np_ * es)] if K else []
        if not init:
            reads.append(cacc)
        self.emit(f"mmad.{tacc}.{tin} l0c[{c.addr}], l0a[0], l0b[0], {M}, {K}, {N}, init={init}", "M",
                  reads, [cacc])

    def zero_l0c(self, c: Tile, dot) -> None:
        """Zero an L0C accumulator: an initialising product over k = 0."""
        M, N = c.shape
        self._mmad(c, c.dtype, asm_type(dot.operands[0].type), M, 0, N, _ceil_to(N, 16), init=1)

    def drain_l0c(self, c: Tile, dst: Tile) -> None:
        """FIX: L0C (rows padded to 16) -> a dense UB tile, converting to dst's type."""
        M, N = c.shape
        np_ = _ceil_to(N, 16)
        self.emit(f"mov.l0c.ub.{dst.dtype}.{c.dtype} ub[{dst.addr}], l0c[{c.addr}], {M}, {N * 4}, {np_ * 4}, "
                  f"{N * dst.esize}", "FIX", [Access("l0c", c.addr, c.addr + M * np_ * 4)], [self.acc(dst)])
