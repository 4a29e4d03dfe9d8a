"""Cube emission: ``tl.dot`` through L1, L0A/L0B, the cube and L0C.

A dot whose operands are UB tiles goes the way the hardware wants it: UB -> L1 (MTE3), L1 -> L0A
with A's rows padded to the cube's K0 (32 bytes of the input type) and L1 -> L0B with B's rows
padded to 16 (MTE1), ``mmad`` with ``init=1`` into L0C (fp32 / int32 accumulation), and FIX
L0C -> UB converting to the result type; an ``acc`` operand is added on the vector unit.  The
sync pass orders MTE3, MTE1, M, FIX and V.  Blocks larger than L0A/L0B/L0C are a
``CompilationError`` naming the space and the bytes needed.
"""
from __future__ import annotations

from tritonpu.codegen.asmlist import Access
from tritonpu.codegen.values import Tile, asm_type

_K0_BYTES = 32


def _ceil_to(n: int, k: int) -> int:
    return (n + k - 1) // k * k


class CubeEmitter:
    def kind_dot(self, op) -> None:
        a_v, b_v = op.operands[:2]
        acc_v = op.operands[2] if len(op.operands) > 2 else None
        M, K = a_v.type.shape
        N = b_v.type.shape[1]
        tin = asm_type(a_v.type)
        if asm_type(b_v.type) != tin:
            self.fail(f"dot operands must have one element type, got {a_v.type} and {b_v.type}")
        if tin not in ("f16", "bf16", "f32", "i8"):
            self.fail(f"the cube multiplies f16, bf16, f32 or i8, not {tin}")
        es = 1 if tin == "i8" else (4 if tin == "f32" else 2)
        tacc = "i32" if tin == "i8" else "f32"
        k0 = _K0_BYTES // es
        kp, np_ = _ceil_to(K, k0), _ceil_to(N, 16)
        need = {"l0a": M * kp * es, "l0b": kp * np_ * es, "l0c": M * np_ * 4,
                "l1": _ceil_to(M * K * es, 512) + K * N * es}
        for space, nbytes in need.items():
            cap = self.m.capacity[space]
            if nbytes > cap:
                self.fail(f"tl.dot of {M}x{K} by {K}x{N} {tin} needs {nbytes} bytes of {space.upper()} but it "
                          f"holds {cap}; use smaller blocks")
        a = self.dense(self.as_tile(a_v))
        b = self.dense(self.as_tile(b_v))
        l1_b = _ceil_to(M * K * es, 512)
        self.emit(f"mov.ub.l1 l1[0], ub[{a.addr}], 1, {M * K * es}, 0, 0", "MTE3",
                  [self.acc(a)], [Access("l1", 0, M * K * es)])
        self.emit(f"mov.ub.l1 l1[{l1_b}], ub[{b.addr}], 1, {K * N * es}, 0, 0", "MTE3",
                  [self.acc(b)], [Access("l1", l1_b, l1_b + K * N * es)])
        self.emit(f"mov.l1.l0a l0a[0], l1[0], {M}, {K * es}, {K * es}, {kp * es}", "MTE1",
                  [Access("l1", 0, M * K * es)], [Access("l0a", 0, need["l0a"])])
        self.emit(f"mov.l1.l0b l0b[0], l1[{l1_b}], {K}, {N * es}, {N * es}, {np_ * es}", "MTE1",
                  [Access("l1", l1_b, l1_b + K * N * es)], [Access("l0b", 0, need["l0b"])])
        self.emit(f"mmad.{tacc}.{tin} l0c[0], l0a[0], l0b[0], {M}, {K}, {N}, init=1", "M",
                  [Access("l0a", 0, need["l0a"]), Access("l0b", 0, need["l0b"])],
                  [Access("l0c", 0, need["l0c"])])
        dst = self.out_tile(op.result)
        tout = dst.dtype
        if acc_v is not None and tout != tacc:
            # add the accumulator in the accumulation type, then round once
            prod = Tile.dense(self.scratch(M * N * 4), tacc, (M, N), 4)
        else:
            prod = dst
        self.emit(f"mov.l0c.ub.{prod.dtype}.{tacc} ub[{prod.addr}], l0c[0], {M}, {N * 4}, {np_ * 4}, "
                  f"{N * prod.esize}", "FIX", [Access("l0c", 0, need["l0c"])], [self.acc(prod)])
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
