"""Triton's typing rules, building IR ops.

Each function takes language tensors or Python numbers, applies Triton's implicit promotion
(``computation_type``), broadcasting and checks, and appends the resulting IR op to the builder
the frontend installed. User mistakes raise :class:`SemanticError`; the frontend turns them into
``CompilationError`` at the kernel's source line.
"""
from __future__ import annotations

import numbers

import numpy as np

from tritonpu.ir import types as T
from tritonpu.language import core as tl
from tritonpu.language.core import SemanticError, tensor
from tritonpu.language.scalars import is_typed, plain


def _builder():
    b = tl._state.builder
    if b is None:
        raise RuntimeError("no kernel is being built")
    return b


def _op(name, operands, ty: T.Type, **attrs) -> tensor:
    v = _builder().one(name, [x.handle for x in operands], ty, **attrs)
    return tensor(v, ty)


# --------------------------------------------------------------------------------------------
# constants and conversion
# --------------------------------------------------------------------------------------------
def python_scalar_dtype(x) -> tl.dtype:
    if is_typed(x):
        return x.dtype
    if isinstance(x, bool):
        return tl.int1
    if isinstance(x, numbers.Integral):
        x = int(x)
        if -2**31 <= x < 2**31:
            return tl.int32
        if 2**31 <= x < 2**32:
            return tl.uint32
        if -2**63 <= x < 2**63:
            return tl.int64
        if 2**63 <= x < 2**64:
            return tl.uint64
        raise SemanticError(f"integer constant {x} does not fit in 64 bits")
    if isinstance(x, numbers.Real):
        return tl.float32
    raise SemanticError(f"cannot convert {x!r} of type {type(x).__name__} to a tensor")


def scalar_constant(value, dt: tl.dtype) -> tensor:
    if dt.is_floating():
        value = float(value)
    elif dt.is_bool():
        value = bool(value)
    else:
        value = int(value)
    return _op("constant", [], dt.ir, value=value)


def known_int(x, _depth: int = 32):
    """The value of a scalar integer tensor the kernel computes from constants alone (no argument,
    no load, no loop variable), else None."""
    op = x.handle.owner if isinstance(x, tensor) else None
    if op is None or x.ty.is_block or not x.dtype.is_int() or _depth == 0:
        return None
    if op.name == "constant":
        v = op.attrs["value"]
        return v if isinstance(v, int) else None
    from tritonpu.ref.evaluator import EVAL
    if op.regions or op.opdef.effects or op.name not in EVAL or \
            not all(v.owner is not None and not v.type.is_block for v in op.operands):
        return None
    ins = [known_int(tensor(v, v.type), _depth - 1) for v in op.operands]
    if None in ins:
        return None
    ins = [np.asarray(i, dtype=v.type.scalar.np) for i, v in zip(ins, op.operands)]
    with np.errstate(all="ignore"):
        out = EVAL[op.name](op, *ins)
    return int(np.asarray(out).reshape(-1)[0])


def to_tensor(x) -> tensor:
    if is_typed(x):             # a number the kernel assigned: a scalar of its type
        return scalar_constant(x, x.dtype)
    x = tl._unwrap(x)
    if isinstance(x, tensor):
        return x
    if isinstance(x, (numbers.Number, bool)):
        return scalar_constant(x, python_scalar_dtype(x))
    raise SemanticError(f"expected a tensor or a number, got {x!r} of type {type(x).__name__}")


def _is_number(x) -> bool:
    """A Python number: weakly typed when it meets a tensor (a number assigned to a name in the
    kernel is not: it is a scalar tensor of its type, see ``scalars``)."""
    return isinstance(x, (numbers.Number, bool)) and not isinstance(x, tensor) and not is_typed(x)


def _int_range(dt: tl.dtype) -> tuple[int, int]:
    bits = dt.int_bitwidth
    if dt.is_bool():
        return 0, 1
    if dt.is_int_signed():
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


# --------------------------------------------------------------------------------------------
# casts and broadcasting
# --------------------------------------------------------------------------------------------
def cast(x, dst, bitcast: bool = False, fp_downcast_rounding=None, overflow_mode=None) -> tensor:
    x = to_tensor(x)
    dst = tl._unwrap(dst)
    rounding = tl._unwrap(fp_downcast_rounding)
    overflow = tl._unwrap(overflow_mode)
    if overflow not in (None, "trunc", "saturate"):
        raise SemanticError(f"overflow_mode={overflow!r}: triton-ascend's modes are 'trunc' (the default: an "
                            "integer result wraps around) and 'saturate' (it is clamped to the target's range)")
    if rounding not in (None, "rtne"):
        raise SemanticError(f"fp_downcast_rounding={rounding!r} is not supported by tritonpu yet: float "
                            "downcasts round to nearest even ('rtne')")
    if not isinstance(dst, tl.dtype):
        raise SemanticError(f"cast target must be a dtype such as tl.float32, got {dst!r}")
    dst = dst.scalar
    src = x.dtype
    if src == dst:
        return x
    ty = T.with_elem(x.ty, dst.ir)
    if bitcast:
        if src.primitive_bitwidth != dst.primitive_bitwidth:
            raise SemanticError(f"cannot bitcast {src} to {dst}: sizes differ "
                                f"({src.primitive_bitwidth} vs {dst.primitive_bitwidth} bits)")
        return _op("bitcast", [x], ty)
    if src.is_ptr() or dst.is_ptr():
        if src.is_ptr() and dst.is_ptr():
            return _op("bitcast", [x], ty)
        raise SemanticError(f"cannot cast {src!r} to {dst!r}: casts between pointers and numbers are not "
                            "supported (the virtual NPU's GM holds only the launch's arrays: pass each array as "
                            "an argument, or one array and element offsets into it)")
    if overflow == "saturate" and dst.is_int() and not dst.is_bool():
        x = _saturate(x, src, dst)
        if x.dtype == dst:
            return x
    return _op("cast", [x], ty)


def _saturate(x: tensor, src: tl.dtype, dst: tl.dtype) -> tensor:
    """``x`` clamped to the integer type ``dst``'s range, in ``src`` (triton-ascend's
    ``overflow_mode="saturate"``; a NaN becomes 0, as the Ascend cast does in saturation mode)."""
    lo, hi = _int_range(dst)
    if src.is_floating():
        if src.primitive_bitwidth < 32:
            x, src = cast(x, tl.float32), tl.float32        # (exact; the bounds are fp32 values)
        # the bounds as values of src: the largest not above hi (2**31 - 1 is no fp32)
        f = np.float64 if src.is_fp64() else np.float32
        top = f(hi)
        while float(top) > hi:
            top = np.nextafter(top, f(0))
        nan = compare(x, x, "ne")
        x = minimum(maximum(x, scalar_constant(float(lo), src)), scalar_constant(float(top), src))
        return where(nan, scalar_constant(0.0, src), x)
    slo, shi = _int_range(src)
    if slo < lo:
        x = maximum(x, scalar_constant(lo, src))
    if shi > hi:
        x = minimum(x, scalar_constant(hi, src))
    return x


def broadcast_to_shape(x: tensor, shape) -> tensor:
    shape = [int(d) for d in shape]
    if x.shape == shape:
        return x
    if not x.ty.is_block:
        return _op("splat", [x], T.block(x.ty, shape))
    src = x.shape
    if len(src) != len(shape):
        raise SemanticError(f"cannot broadcast shape {src} to {shape}: ranks differ")
    for a, b in zip(src, shape):
        if a != b and a != 1:
            raise SemanticError(f"cannot broadcast shape {src} to {shape}")
    return _op("broadcast", [x], T.block(x.ty.scalar, shape))


def broadcast_pair(a: tensor, b: tensor) -> tuple[tensor, tensor]:
    sa, sb = a.shape, b.shape
    if sa == sb:
        return a, b
    if not a.ty.is_block:
        return broadcast_to_shape(a, sb), b
    if not b.ty.is_block:
        return a, broadcast_to_shape(b, sa)
    while len(sa) < len(sb):
        a = expand_dims(a, 0)
        sa = a.shape
    while len(sb) < len(sa):
        b = expand_dims(b, 0)
        sb = b.shape
    out = []
    for i, (x, y) in enumerate(zip(sa, sb)):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise SemanticError(f"incompatible shapes {sa} and {sb}: dimension {i} is {x} vs {y}")
    return broadcast_to_shape(a, out), broadcast_to_shape(b, out)


# --------------------------------------------------------------------------------------------
# implicit promotion (Triton's computation_type_impl)
# --------------------------------------------------------------------------------------------
def integer_promote(a: tl.dtype, b: tl.dtype) -> tl.dtype:
    ua, ub = a.is_int_unsigned(), b.is_int_unsigned()
    if ua == ub:
        return a if a.int_bitwidth > b.int_bitwidth else b
    if ua:
        return a if a.int_bitwidth >= b.int_bitwidth else b
    return b if b.int_bitwidth >= a.int_bitwidth else a


def computation_type(a: tl.dtype, a_scalar: bool, b: tl.dtype, b_scalar: bool, div_or_mod: bool) -> tl.dtype:
    if a_scalar != b_scalar:
        sty, tty = (a, b) if a_scalar else (b, a)
        if sty.kind_rank() <= tty.kind_rank():
            if div_or_mod and tty in (tl.float16, tl.bfloat16):
                return tl.float32
            return tty
    if a.is_fp64() or b.is_fp64():
        return tl.float64
    if a.is_fp32() or b.is_fp32():
        return tl.float32
    if a.is_fp16() or b.is_fp16():
        return tl.float32 if div_or_mod else tl.float16
    if a.is_bf16() and b.is_bf16():
        return tl.float32 if div_or_mod else tl.bfloat16
    if a.is_bf16() or b.is_bf16():
        return tl.float32
    if not a.is_int() or not b.is_int():
        raise SemanticError(f"unexpected types {a} and {b}")
    if div_or_mod and a.is_int_unsigned() != b.is_int_unsigned() and not (a.is_bool() or b.is_bool()):
        raise SemanticError(f"cannot use /, // or % with {a} and {b} because they have different signedness; "
                            "cast them to the same signedness")
    return integer_promote(a, b)


def _check_ptr(a: tl.dtype, b: tl.dtype, allow_ptr: bool):
    if a.is_ptr():
        if not allow_ptr or (b.is_ptr() and a != b) or b.is_floating():
            raise SemanticError(f"invalid operands of type {a!r} and {b!r}")


def binary_operands(lhs, rhs, allow_lhs_ptr=False, allow_rhs_ptr=False, arithmetic=True, div_or_mod=False):
    lhs, rhs = (to_tensor(x) if is_typed(x) else tl._unwrap(x) for x in (lhs, rhs))  # assigned numbers: tensors
    ls, rs = _is_number(lhs), _is_number(rhs)
    lval, rval = lhs, rhs
    lt = python_scalar_dtype(lhs) if ls else to_tensor(lhs).dtype
    rt = python_scalar_dtype(rhs) if rs else to_tensor(rhs).dtype
    _check_ptr(lt, rt, allow_lhs_ptr)
    _check_ptr(rt, lt, allow_rhs_ptr)
    if not (arithmetic and not lt.is_ptr() and not rt.is_ptr()):
        lhs = scalar_constant(lval, lt) if ls else lhs
        rhs = scalar_constant(rval, rt) if rs else rhs
    else:
        ret = computation_type(lt, ls, rt, rs, div_or_mod)
        for is_num, val in ((ls, lval), (rs, rval)):
            if is_num and ret.is_int():
                lo, hi = _int_range(ret)
                if val < 0 and ret.is_int_unsigned() and not ret.is_bool():
                    raise SemanticError("cannot combine an unsigned tensor with a negative number; cast one of them")
                if not lo <= val <= hi and not ret.is_bool():
                    raise SemanticError(f"number {val} is out of range for {ret}")
        lhs = scalar_constant(lval, ret) if ls else cast(lhs, ret)
        rhs = scalar_constant(rval, ret) if rs else cast(rhs, ret)
    return broadcast_pair(lhs, rhs)


def _elementwise(name, a: tensor, b: tensor) -> tensor:
    return _op(name, [a, b], a.ty)


# --------------------------------------------------------------------------------------------
# binary operators
# --------------------------------------------------------------------------------------------
def _addptr(p: tensor, off: tensor) -> tensor:
    if not off.dtype.is_int():
        raise SemanticError(f"pointer offsets must be integers, got {off.dtype}")
    if off.dtype.is_int_unsigned() and off.dtype.int_bitwidth < 64:
        off = cast(off, tl.int64)
    return _op("addptr", [p, off], p.ty)


def add(a, b) -> tensor:
    a, b = binary_operands(a, b, True, True)
    if a.dtype.is_ptr() and b.dtype.is_ptr():
        raise SemanticError("cannot add pointers together")
    if b.dtype.is_ptr():
        a, b = b, a
    if a.dtype.is_ptr():
        return _addptr(a, b)
    return _elementwise("add", a, b)


def sub(a, b) -> tensor:
    a, b = binary_operands(a, b, True, False)
    if a.dtype.is_ptr():
        return _addptr(a, minus(b))
    return _elementwise("sub", a, b)


def mul(a, b) -> tensor:
    a, b = binary_operands(a, b)
    return _elementwise("mul", a, b)


def truediv(a, b) -> tensor:
    a, b = binary_operands(a, b, div_or_mod=True)
    if a.dtype.is_int():
        a, b = cast(a, tl.float32), cast(b, tl.float32)
    return _elementwise("div", a, b)


def floordiv(a, b) -> tensor:
    a, b = binary_operands(a, b, div_or_mod=True)
    if not a.dtype.is_int():
        raise SemanticError(f"`//` needs integer operands, got {a.dtype}; use `/` for floating point")
    return _elementwise("div", a, b)


def mod(a, b) -> tensor:
    a, b = binary_operands(a, b, div_or_mod=True)
    return _elementwise("rem", a, b)


def _bitwise_operands(a, b):
    a, b = binary_operands(a, b)
    if not a.dtype.is_int() or not b.dtype.is_int():
        raise SemanticError(f"bitwise operators need integer operands, got {a.dtype} and {b.dtype}")
    return a, b


def and_(a, b):
    return _elementwise("and", *_bitwise_operands(a, b))


def or_(a, b):
    return _elementwise("or", *_bitwise_operands(a, b))


def xor_(a, b):
    return _elementwise("xor", *_bitwise_operands(a, b))


def shl(a, b):
    return _elementwise("shl", *_bitwise_operands(a, b))


def shr(a, b):
    """``a >> b``: arithmetic when ``a`` is signed, logical otherwise — decided by ``a``'s own type,
    as Triton does, even when promotion makes the result unsigned (``int8 >> uint8``)."""
    signed = to_tensor(a).dtype.is_int_signed()
    a, b = _bitwise_operands(a, b)
    if signed and a.dtype.is_int_unsigned():
        as_signed = {8: tl.int8, 16: tl.int16, 32: tl.int32, 64: tl.int64}[a.dtype.int_bitwidth]
        r = _elementwise("shr", cast(a, as_signed, bitcast=True), cast(b, as_signed, bitcast=True))
        return cast(r, a.dtype, bitcast=True)
    return _elementwise("shr", a, b)


def minimum(a, b, propagate_nan=False) -> tensor:
    a, b = binary_operands(a, b)
    return _minmax("minimum", a, b, propagate_nan)


def maximum(a, b, propagate_nan=False) -> tensor:
    a, b = binary_operands(a, b)
    return _minmax("maximum", a, b, propagate_nan)


def same_width_int(dt: tl.dtype) -> tl.dtype:
    """The signed integer type of a float type's width (to compare or combine its bits)."""
    return {16: tl.int16, 32: tl.int32, 64: tl.int64}[dt.primitive_bitwidth]


def _minmax(name, a, b, propagate_nan):
    r = _elementwise(name, a, b)
    if propagate_nan and a.dtype.is_floating():
        # Triton's PropagateNan.ALL is llvm.maximum / minimum: a NaN wins, and -0.0 < +0.0 — of two
        # equal numbers, max takes the AND of their bits (+0 from ±0), min the OR (-0)
        bits = same_width_int(a.dtype)
        ia, ib = cast(a, bits, bitcast=True), cast(b, bits, bitcast=True)
        zeros = cast(_elementwise("and" if name == "maximum" else "or", ia, ib), a.dtype, bitcast=True)
        r = where(compare(a, b, "eq"), zeros, r)
        r = where(compare(a, a, "ne"), a, where(compare(b, b, "ne"), b, r))
    return r


def compare(a, b, pred: str) -> tensor:
    a, b = binary_operands(a, b, allow_lhs_ptr=True, allow_rhs_ptr=True)
    if a.dtype.is_ptr() != b.dtype.is_ptr():
        raise SemanticError(f"invalid operands of type {a.dtype!r} and {b.dtype!r}: a pointer compares only with "
                            "a pointer of its type (to compare positions, compare the offsets you added)")
    return _op("cmp", [a, b], T.with_elem(a.ty, T.i1), pred=pred)


def logical_and(a, b):
    return and_(_as_bool(a), _as_bool(b))


def logical_or(a, b):
    return or_(_as_bool(a), _as_bool(b))


def _as_bool(x) -> tensor:
    x = to_tensor(x)
    if x.dtype.is_ptr():       # Triton: ptr != 0; a kernel's pointers point into its arguments
        return broadcast_to_shape(scalar_constant(True, tl.int1), x.shape)
    return x if x.dtype.is_bool() else compare(x, 0, "ne")


def not_(x) -> tensor:
    return xor_(_as_bool(x), True)


def minus(x) -> tensor:
    x = to_tensor(x)
    if x.dtype.is_ptr():
        raise SemanticError("wrong type argument to unary minus (pointer)")
    if x.dtype.is_floating():
        return _op("neg", [x], x.ty)
    return sub(scalar_constant(0, x.dtype), x)


def invert(x) -> tensor:
    x = to_tensor(x)
    if x.dtype.is_ptr() or x.dtype.is_floating():
        raise SemanticError(f"wrong type argument to unary invert `~` ({x.dtype})")
    return _op("not", [x], x.ty)


# Rounding functions of an integer are the integer (exact, same type).
_INTEGER_IDENTITY = ("floor", "ceil", "trunc", "rint", "nearbyint", "round")


def unary_math(name: str, x, allowed=("fp32", "fp64")) -> tensor:
    """``name`` elementwise.  As triton-ascend accepts them (upstream Triton takes fp32/fp64 only):
    fp16 and bf16 inputs are computed in fp32 and rounded once to their own type; integer inputs
    are converted to fp32 (the result is fp32), except that rounding functions return them as
    they are."""
    x = to_tensor(x)
    if allowed == ("fp32", "fp64") and x.dtype.name in ("fp16", "bf16"):
        return cast(_op(name, [cast(x, tl.float32)], T.with_elem(x.ty, T.f32)), x.dtype)
    if allowed == ("fp32", "fp64") and x.dtype.is_int():
        if name in _INTEGER_IDENTITY:
            return x
        return _op(name, [cast(x, tl.float32)], T.with_elem(x.ty, T.f32))
    if allowed == ("fp32", "fp64") and x.dtype.name not in allowed:
        raise SemanticError(f"tl.{name} takes floating-point or integer values, got {x.dtype}")
    if allowed is not None and x.dtype.name not in allowed:
        raise SemanticError(f"tl.{name} expects dtype {list(allowed)} but got {x.dtype}; "
                            f"cast first, e.g. x.to(tl.float32)")
    return _op(name, [x], x.ty)


def pow_(x, y) -> tensor:
    """x ** y elementwise, fp32/fp64 (both operands promoted to one float type)."""
    x, y = binary_operands(x, y)
    if x.dtype.name not in ("fp32", "fp64"):
        raise SemanticError(f"pow expects dtype ['fp32', 'fp64'] but got {x.dtype}; cast first, e.g. "
                            "x.to(tl.float32)")
    return _op("pow", [x, y], x.ty)


def abs_(x) -> tensor:
    x = to_tensor(x)
    if x.dtype.is_int_unsigned():
        return x
    return _op("abs", [x], x.ty)


def fma(a, b, c) -> tensor:
    a, b = binary_operands(a, b)
    c, a = binary_operands(c, a)
    c, b = binary_operands(c, b)
    return _op("fma", [a, b, c], a.ty)


def where(cond, x, y) -> tensor:
    cond = to_tensor(cond)
    if not cond.dtype.is_bool():
        cond = _as_bool(cond)
    x, y = binary_operands(x, y, allow_lhs_ptr=True, allow_rhs_ptr=True)
    if x.dtype.is_ptr() != y.dtype.is_ptr():
        raise SemanticError(f"tl.where cannot choose between {x.dtype!r} and {y.dtype!r}")
    # broadcast all three to one shape
    cond, x = broadcast_pair(cond, x)
    cond, y = broadcast_pair(cond, y)
    x, y = broadcast_pair(x, y)
    cond, x = broadcast_pair(cond, x)
    return _op("select", [cond, x, y], x.ty)


# --------------------------------------------------------------------------------------------
# shapes
# --------------------------------------------------------------------------------------------
def _canon_axis(axis: int, rank: int, what="axis") -> int:
    axis = plain(axis)          # (an axis a kernel assigned: Python's % below, not the scalar's)
    if not -rank <= axis < rank:
        raise SemanticError(f"{what} {axis} is out of range for a tensor of rank {rank}")
    return axis % rank


def expand_dims(x, axis: int) -> tensor:
    x = to_tensor(x)
    shape = x.shape
    axis = _canon_axis(axis, len(shape) + 1)
    shape.insert(axis, 1)
    if not x.ty.is_block:
        return _op("splat", [x], T.block(x.ty, shape))
    return _op("expand_dims", [x], T.block(x.ty.scalar, shape), axis=axis)


def reshape(x, shape) -> tensor:
    x = to_tensor(x)
    shape = [int(tl._unwrap(d)) for d in shape]
    n = 1
    for d in shape:
        n *= d
    if n != x.numel:
        raise SemanticError(f"reshape cannot change the number of elements: {x.shape} -> {shape}")
    if not x.ty.is_block:
        return _op("splat", [x], T.block(x.ty, shape))
    if shape == x.shape:
        return x
    return _op("reshape", [x], T.block(x.ty.scalar, shape))


def permute(x, order) -> tensor:
    x = to_tensor(x)
    order = [int(tl._unwrap(d)) for d in order]
    if sorted(order) != list(range(len(x.shape))):
        raise SemanticError(f"permute order {order} is not a permutation of the {len(x.shape)} dimensions")
    if order == sorted(order):
        return x
    shape = [x.shape[i] for i in order]
    return _op("permute", [x], T.block(x.ty.scalar, shape), order=order)


def leading(x, shape) -> tensor:
    """The leading sub-block of ``x`` of ``shape`` (same rank, no extent larger): element
    ``[i, j, ..]`` is ``x[i, j, ..]`` (the IR's ``slice``)."""
    x = to_tensor(x)
    shape = [int(n) for n in shape]
    if len(shape) != len(x.shape) or any(not 1 <= n <= m for n, m in zip(shape, x.shape)):
        raise SemanticError(f"a leading sub-block of {x.shape} needs one extent from 1 to each of them, got {shape}")
    if shape == list(x.shape):
        return x
    return _op("slice", [x], T.block(x.ty.scalar, shape))


def sub_block(x, offsets, shape, steps) -> tensor:
    """``out[i, j, ..] = x[o0 + i * s0, o1 + j * s1, ..]`` of ``shape`` (constant offsets and steps,
    every position inside ``x``): the IR's ``slice``, a view."""
    x = to_tensor(x)
    offsets, shape, steps = [int(o) for o in offsets], [int(n) for n in shape], [int(s) for s in steps]
    _sub_block_inside(x, offsets, shape, steps)
    if not any(offsets) and all(s == 1 for s in steps):
        return leading(x, shape)
    return _op("slice", [x], T.block(x.ty.scalar, shape), offsets=offsets, steps=steps)


def insert_sub_block(x, part, offsets, steps) -> tensor:
    """``x`` with ``x[o0 + i * s0, o1 + j * s1, ..] = part[i, j, ..]`` (constant offsets and steps,
    every position inside ``x``, ``part`` of ``x``'s dtype): the IR's ``insert_slice``."""
    x, part = to_tensor(x), to_tensor(part)
    offsets, steps = [int(o) for o in offsets], [int(s) for s in steps]
    _sub_block_inside(x, offsets, part.shape, steps)
    return _op("insert_slice", [x, part], x.ty, offsets=offsets, steps=steps)


def sub_block_inside(offsets, shape, steps, whole) -> bool:
    """Constant offsets and steps >= 1 whose every position of a ``shape`` sub-block is inside
    ``whole`` (one per dimension)."""
    return len(shape) == len(whole) == len(offsets) == len(steps) and \
        all(isinstance(o, int) and isinstance(s, int) and o >= 0 and s >= 1 and n >= 1 and o + (n - 1) * s < m
            for o, s, n, m in zip(offsets, steps, shape, whole))


def _sub_block_inside(x, offsets, shape, steps) -> None:
    if not sub_block_inside(offsets, shape, steps, x.shape):
        raise SemanticError(f"a sub-block of {x.shape} at offsets {offsets} with steps {steps} and shape {shape} "
                            "reaches outside it")


def subscript(x: tensor, slices) -> tensor:
    if not isinstance(slices, tuple):
        slices = (slices,)
    out = x
    k = 0
    for s in slices:
        s = tl._unwrap(s)
        if s is None:
            out = expand_dims(out, k)
            k += 1
        elif isinstance(s, slice) and s.start is None and s.stop is None and s.step is None:
            k += 1
        else:
            raise SemanticError(f"unsupported tensor index {s!r}: only `None` and `:` are allowed")
    return out


# --------------------------------------------------------------------------------------------
# creation
# --------------------------------------------------------------------------------------------
def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def strict_triton() -> bool:
    """Whether block extents must be powers of two, as upstream Triton requires
    (``TRITONPU_STRICT_TRITON=1``); by default any positive extent is accepted, as triton-ascend does."""
    import os
    return os.environ.get("TRITONPU_STRICT_TRITON", "0") not in ("0", "", "false", "no")


def arange(start, end) -> tensor:
    start, end = plain(tl._unwrap(start)), plain(tl._unwrap(end))
    if not isinstance(start, int) or not isinstance(end, int) or isinstance(start, bool):
        raise SemanticError("tl.arange needs constexpr integer bounds; got "
                            f"{type(start).__name__} and {type(end).__name__}")
    if end <= start:
        raise SemanticError(f"tl.arange's end must be greater than its start; got ({start}, {end})")
    if strict_triton() and not _power_of_two(end - start):
        raise SemanticError(f"tl.arange needs constexpr bounds whose range is a power of 2; got {end - start} "
                            "(TRITONPU_STRICT_TRITON is set)")
    if start < -2**31 or end > 2**31:
        raise SemanticError("tl.arange bounds must fit in int32")
    return _op("arange", [], T.block(T.i32, [end - start]), start=start, end=end)


def check_shape(shape) -> list[int]:
    shape = tl._unwrap(shape)
    if isinstance(shape, int):
        shape = [shape]
    out = []
    for d in shape:
        d = plain(tl._unwrap(d))
        if not isinstance(d, int):
            raise SemanticError(f"shape dimensions must be constexpr ints, got {d!r}")
        if d < 1 or strict_triton() and not _power_of_two(d):
            raise SemanticError(f"shape dimensions must be {'powers of 2' if strict_triton() else 'positive'}, "
                                f"got {list(shape)}")
        out.append(d)
    return out


def full(shape, value, dt) -> tensor:
    shape = check_shape(shape)
    dt = tl._unwrap(dt)
    if not isinstance(dt, tl.dtype):
        raise SemanticError(f"dtype must be a tl dtype, got {dt!r}")
    value = tl._unwrap(value)
    if isinstance(value, tensor):
        if value.ty.is_block:
            raise SemanticError("tl.full needs a scalar value")
        scalar = cast(value, dt)
    else:
        scalar = scalar_constant(value, dt)
    if not shape:
        return scalar
    return _op("splat", [scalar], T.block(dt.ir, shape))
