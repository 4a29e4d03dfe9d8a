"""Scalar-unit emission: ops on values that live in scalar registers.

Registers hold 64-bit integers or float64; an integer operation on a narrower type wraps its
result to the IR type itself (``add.i32``), after a float one a ``cvt.T`` rounds it, so scalar
code computes exactly what the reference evaluator computes.  Operations the scalar unit has no instruction for (``sin``, ``erf``, float
``rem``...) run on the vector unit as one-element tiles and are read back with ``sld``.
"""
from __future__ import annotations

import math

import numpy as np

from tritonpu.codegen.asmlist import Access, If, Instr
from tritonpu.codegen.values import Imm, Reg, Tile, asm_type

_INT_BIN = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "rem": "rem", "and": "and", "or": "or",
            "xor": "xor", "shl": "shl", "shr": "shr", "maximum": "max", "minimum": "min"}
_FLOAT_BIN = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv", "maximum": "fmax", "minimum": "fmin"}
_FLOAT_UN = {"neg": "fneg", "abs": "fabs", "sqrt": "fsqrt", "exp": "fexp", "log": "flog", "floor": "ffloor",
             "ceil": "fceil"}
# integer ops that take the type to wrap their result to (``add.i32``)
_TYPED_INT = frozenset(_INT_BIN.values())
# ops that need no wrap afterwards: results always fit the type
_NO_WRAP = {"div", "rem", "and", "or", "xor", "shr", "maximum", "minimum"}


def _wraps(ty) -> bool:
    s = ty.scalar
    return not (str(s) in ("i64", "f64") or s.is_bool)


class ScalarEmitter:
    # ---- helpers -----------------------------------------------------------------------------------
    def wrap(self, r: Reg, ty) -> None:
        """Round/wrap register r to the IR type (no-op for 64-bit types).  An integer wrap right
        after the untyped integer op that wrote r is folded into it: ``add.i32 r, a, b`` (one
        instruction where ``add`` + ``cvt.i32`` were two)."""
        s = ty.scalar
        if s.is_bool:
            self.emit(f"cmp.ne {r}, {r}, 0", "S")
        elif _wraps(ty):
            last = self.out[-1] if self.out else None
            mn, _, rest = last.text.partition(" ") if type(last) is Instr else ("", "", "")
            if s.is_int and mn in _TYPED_INT and rest.startswith(f"{r},"):
                last.text = f"{mn}.{asm_type(ty)} {rest}"
                return
            self.emit(f"cvt.{asm_type(ty)} {r}, {r}", "S")

    def s_operands(self, op):
        return [self.scalar(v) for v in op.operands]

    # ---- leaves ---------------------------------------------------------------------------------------
    def kind_constant(self, op) -> None:
        v = op.attrs["value"]
        ty = op.result.type
        if ty.is_block:
            if self.an.home.get(id(op.result)) == "none":      # made elsewhere (zeros of an L0C accumulator)
                return self.define(op.result, Imm(v))
            t = self.out_tile(op.result)
            self.vfill(t, Imm(v))
            return
        if ty.is_float:     # the literal as its type holds it (0.3 as an f32 is not the f64 0.3)
            v = float(ty.scalar.np.type(v))
        elif ty.is_bool:
            v = 1 if v else 0
        else:
            v = int(v)
        self.define(op.result, Imm(v))

    def op_set_program(self, op) -> None:
        """The grid program a persistent loop's trip runs, for the sanitizer and error messages."""
        self.emit(f"set_program {self.scalar(op.operands[0])}", "S")

    def kind_index(self, op) -> None:
        r = self.out_reg(op.result)
        mn = "block_idx" if op.name == "program_id" else "block_num"
        self.emit(f"{mn} {r}, {op.attrs['axis']}", "S")

    # ---- dispatch between the scalar unit and the vector unit -----------------------------------------
    def kind_elementwise(self, op) -> None:
        if id(op) in self.an.l0c_added:
            return self.add_scaled_product(op)
        if self.is_ub(op.result):
            return self.v_elementwise(op)
        return self.s_elementwise(op)

    def kind_compare(self, op) -> None:
        if self.is_ub(op.result):
            return self.v_compare(op)
        a, b = self.s_operands(op)
        r = self.out_reg(op.result)
        f = "f" if op.operands[0].type.scalar.is_float else ""
        self.emit(f"{f}cmp.{op.attrs['pred']} {r}, {a}, {b}", "S")

    def kind_select(self, op) -> None:
        if self.is_ub(op.result):
            return self.v_select(op)
        c, a, b = self.s_operands(op)
        r = self.out_reg(op.result)
        self.emit(f"sel {r}, {c}, {a}, {b}", "S")

    def kind_cast(self, op) -> None:
        if self.is_ub(op.result) or op.result.type.is_block:
            return self.v_cast(op)
        src_t, dst_t = op.operands[0].type, op.result.type
        if op.name == "bitcast":
            if str(src_t) == str(dst_t):
                return self.define(op.result, self.val(op.operands[0]))
            return self.s_bitcast(op)
        a = self.scalar(op.operands[0])
        r = self.out_reg(op.result)
        s, d = src_t.scalar, dst_t.scalar
        if d.is_bool:
            self.emit(f"{'f' if s.is_float else ''}cmp.ne {r}, {a}, 0", "S")
        elif d.is_float and not s.is_float:
            if s.bits == 64 and d.bits < 64:
                # itof rounds to float64 and cvt rounds again: a 64-bit integer would be rounded
                # twice; the vector unit's vcast rounds it once
                return self.s_cast_via_vector(op, a, r)
            self.emit(f"itof {r}, {a}", "S")
            self.wrap(r, dst_t)
        elif d.is_int and s.is_float:
            # truncated toward zero, saturated to the type (NaN -> 0), as the vector unit's vcast
            info = np.iinfo(d.np)
            self.emit(f"ftoi {r}, {a}", "S")
            self.emit(f"max {r}, {r}, {int(info.min)}", "S")
            self.emit(f"min {r}, {r}, {int(info.max)}", "S")
        else:
            self.emit(f"cvt.{asm_type(dst_t)} {r}, {a}", "S")

    # ---- scalar arithmetic -------------------------------------------------------------------------
    def s_elementwise(self, op) -> None:
        name, ty = op.name, op.result.type
        fl = ty.scalar.is_float
        if name == "fma":
            a, b, c = self.s_operands(op)
            r = self.out_reg(op.result)
            if fl:
                self.emit(f"ffma.{asm_type(ty)} {r}, {a}, {b}, {c}", "S")
            else:
                self.emit(f"mul {r}, {a}, {b}", "S")
                self.emit(f"add {r}, {r}, {c}", "S")
            self.wrap(r, ty)
            return
        if len(op.operands) == 2:
            table = _FLOAT_BIN if fl else _INT_BIN
            mn = table.get(name)
            if ty.scalar.is_bool and name in ("add", "sub"):
                mn = "xor"
            elif ty.scalar.is_bool and name == "mul":
                mn = "and"
            if mn is None or (name in ("shr", "div", "rem") and not ty.scalar.is_signed and str(ty) == "u64"):
                return self.via_vector(op)
            a, b = self.s_operands(op)
            r = self.out_reg(op.result)
            self.emit(f"{mn} {r}, {a}, {b}", "S")
            if fl or name not in _NO_WRAP:
                self.wrap(r, ty)
            return
        a, = self.s_operands(op)
        if fl:
            mn = _FLOAT_UN.get(name)
            if name == "rsqrt":
                r = self.out_reg(op.result)
                self.emit(f"fsqrt {r}, {a}", "S")
                self.emit(f"fdiv {r}, 1.0, {r}", "S")
                self.wrap(r, ty)
                return
            if mn is None:
                return self.via_vector(op)
            r = self.out_reg(op.result)
            self.emit(f"{mn} {r}, {a}", "S")
            self.wrap(r, ty)
            return
        r = self.out_reg(op.result)
        if name == "neg":
            self.emit(f"sub {r}, 0, {a}", "S")
        elif name == "not":
            self.emit(f"xor {r}, {a}, {1 if ty.scalar.is_bool else -1}", "S")
        elif name == "abs":
            t = self.temp_reg()
            self.emit(f"sub {t}, 0, {a}", "S")
            self.emit(f"max {r}, {a}, {t}", "S")
        else:
            self.fail(f"'{name}' on {ty} is not supported on the NPU backend")
        self.wrap(r, ty)

    def s_cast_via_vector(self, op, a, r) -> None:
        """A scalar cast done by vcast over one-element UB tiles, read back with sld."""
        from tritonpu.codegen.analysis import elem_bytes
        src_t, dst_t = op.operands[0].type, op.result.type
        t = self.temp_tile(asm_type(src_t), (), elem_bytes(src_t))
        self.vfill(t, a)
        d = self.temp_tile(asm_type(dst_t), (), elem_bytes(dst_t))
        self.vec(f"vcast.{d.dtype}.{t.dtype}", d, [t])
        self.emit(f"sld.{d.dtype} {r}, ub[{d.addr}]", "S", reads=[self.acc(d)])

    def s_bitcast(self, op) -> None:
        """Reinterpret a scalar's bits: write it as the source type to a one-element UB tile and
        read that element back as the destination type."""
        from tritonpu.codegen.analysis import elem_bytes
        src_t, dst_t = op.operands[0].type, op.result.type
        if elem_bytes(src_t) != elem_bytes(dst_t):
            self.fail("bitcast between element types of different widths is not supported on the NPU")
        t = self.temp_tile(asm_type(src_t), (), elem_bytes(src_t))
        self.vfill(t, self.val(op.operands[0]))
        r = self.out_reg(op.result)
        self.emit(f"sld.{asm_type(dst_t)} {r}, ub[{t.addr}]", "S", reads=[self.acc(t)])

    def via_vector(self, op) -> None:
        """A scalar op the scalar unit cannot do: run it on V over one-element tiles, read it back."""
        tiles = []
        for v in op.operands:
            h = self.val(v)
            if isinstance(h, Tile):
                tiles.append(h)
            else:
                t = self.temp_tile(asm_type(v.type), (), max(1, v.type.scalar.bits // 8) if not v.type.is_ptr else 8)
                self.vfill(t, h)
                tiles.append(t)
        from tritonpu.codegen.analysis import elem_bytes
        dst = self.temp_tile(asm_type(op.result.type), (), elem_bytes(op.result.type))
        self.v_apply(op, dst, tiles)
        r = self.out_reg(op.result)
        self.emit(f"sld.{dst.dtype} {r}, ub[{dst.addr}]", "S", reads=[self.acc(dst)])

    # ---- pointers ----------------------------------------------------------------------------------
    def kind_addptr(self, op) -> None:
        p, off = op.operands
        if op.result.type.is_block:
            return self.v_addptr(op)
        self.param_of[id(op.result)] = self.param(p)
        esize = op.result.type.scalar.pointee.bits // 8 if not op.result.type.scalar.pointee.is_bool else 1
        base, o = self.scalar(p), self.scalar(off)
        if isinstance(base, Imm) and isinstance(o, Imm):
            return self.define(op.result, Imm(int(base.value) + int(o.value) * esize))
        r = self.out_reg(op.result)
        if isinstance(o, Imm):
            self.emit(f"add {r}, {base}, {int(o.value) * esize}", "S")
            return
        self.emit(f"mul {r}, {o}, {esize}", "S")
        if not (isinstance(base, Imm) and int(base.value) == 0):
            self.emit(f"add {r}, {r}, {base}", "S")

    def gm_operand(self, param: str, off) -> str:
        return f"{param}[{off}]"

    def guarded(self, cond, body_fn) -> None:
        """Run body_fn's emission only where the scalar ``cond`` (Imm/Reg) is non-zero."""
        if isinstance(cond, Imm):
            if cond.value:
                body_fn()
            return
        then = self.nested(body_fn)
        self.out.append(If([Instr(f"br.eq {cond}, 0, {{target}}", "S", loc=self.op.loc)], then, []))

    def esize_of(self, ty) -> int:
        s = ty.scalar
        return 1 if s.is_bool else max(1, s.bits // 8)

    @staticmethod
    def isfinite_imm(v) -> bool:
        return isinstance(v, Imm) and isinstance(v.value, float) and math.isfinite(v.value)

    def s_access(self, param):
        return Access.gm(param)
