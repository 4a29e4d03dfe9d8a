"""Vector-unit families: whole-tile numpy operations on 2-D views of UB.

Every operand is a ``rows x cols`` view with its own row and column strides (elements), so a
row stride of 0 broadcasts one row and a column stride of 0 a per-row scalar; nothing past
``rows``/``cols`` is touched.  f16/bf16 operations compute in f32 and round once into the
destination; integer operations wrap; integer division and remainder follow C (truncation;
x/0 = 0, x%0 = 0); comparisons write u8 0/1 masks.  Costs come from the table's cost rule.
"""
from __future__ import annotations

import math

import numpy as np

from tritonpu.dtypes import float_to_int, fma, maxnum, minnum, quiet_nans

from . import cycles
from .ops_scalar import np_scalar
from .registry import family
from .state import V, getter, npdt, opt_getter, vec_operand

F32 = np.dtype(np.float32)
I32 = np.dtype(np.int32)
U8 = np.dtype(np.uint8)
_HALF = {np.dtype(np.float16), npdt("bf16")}


def cdt(dt):
    """The dtype an operation on ``dt`` computes in."""
    return F32 if dt in _HALF else dt


def _c_div(a, b):
    if a.dtype.kind == "u":
        return np.floor_divide(a, b)
    q = np.floor_divide(a, b)                  # x // 0 = 0 in numpy
    r = np.subtract(a, np.multiply(q, b))
    fix = (r != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0)) & (np.asarray(b) != 0)   # x / 0 = 0
    return q + fix.astype(q.dtype)


def _binary(op, is_float):
    """f(a, b) -> result array in the compute dtype."""
    if is_float:
        return {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                "max": maxnum, "min": minnum, "rem": np.fmod, "pow": np.power,
                "floordiv": lambda a, b: np.floor(np.divide(a, b)),
                "rsub": lambda a, s: np.subtract(s, a), "rdiv": lambda a, s: np.divide(s, a)}[op]
    return {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": _c_div,
            "floordiv": _c_div, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
            "or": np.bitwise_or, "xor": np.bitwise_xor, "shl": np.left_shift,
            "shr": np.right_shift, "rem": np.fmod,
            "rsub": lambda a, s: np.subtract(s, a), "rdiv": lambda a, s: _c_div(np.asarray(s, a.dtype), a)}[op]


_BINOPS = ["add", "sub", "mul", "div", "max", "min", "and", "or", "xor", "shl", "shr", "rem",
           "floordiv", "pow"]


def _common(st, inst):
    R = st.R
    rows_g, _ = opt_getter(inst, "rows", R, 1)
    return R, rows_g, st.tick, st.m


def _store(vd, res):
    if res is not vd:
        vd[...] = res


@family("vbinary", _BINOPS)
def _vbinary(st, inst, prog):
    R, rows_g, tick, m = _common(st, inst)
    dt = npdt(inst.types[0])
    c = cdt(dt)
    half = c is not dt
    f = _binary(inst.spec.op, dt.kind == "f" or half)
    ufunc = isinstance(f, np.ufunc) and not half
    dst = vec_operand(st, inst, inst.args[0], dt, V, True)
    ga = vec_operand(st, inst, inst.args[1], dt, V, False)
    gb = vec_operand(st, inst, inst.args[2], dt, V, False)
    cols_g = getter(inst.args[3], R)
    cost, eb = cycles.COSTS[inst.spec.cost], dt.itemsize

    def run():
        rows, cols = rows_g(), cols_g()
        vd, va, vb = dst(rows, cols), ga(rows, cols), gb(rows, cols)
        if rows > 0 and cols > 0:
            if ufunc:
                f(va, vb, out=vd)
            elif half:
                vd[...] = f(va.astype(F32), vb.astype(F32))
            else:
                vd[...] = f(va, vb)
        tick(V, cost(m, eb, rows, cols), inst)
    return run


def _operand_scalar(v, dt, c):
    """The scalar operand of a ``.T`` vector op: a value of T (a literal 0.1 of an f16 op is the
    f16 nearest 0.1), then widened to the type the op computes in."""
    s = np_scalar(v, dt)
    return s if c is dt else c.type(s)


@family("vscalar", _BINOPS + ["rsub", "rdiv"])
def _vscalar(st, inst, prog):
    R, rows_g, tick, m = _common(st, inst)
    dt = npdt(inst.types[0])
    c = cdt(dt)
    f = _binary(inst.spec.op, dt.kind == "f" or c is not dt)
    dst = vec_operand(st, inst, inst.args[0], dt, V, True)
    ga = vec_operand(st, inst, inst.args[1], dt, V, False)
    sv = inst.args[2]
    if sv.static:
        s0 = _operand_scalar(sv.value(), dt, c)
        gs = lambda: s0  # noqa: E731
    else:
        g = getter(sv, R)
        gs = lambda: _operand_scalar(g(), dt, c)  # noqa: E731
    cols_g = getter(inst.args[3], R)
    cost, eb = cycles.COSTS[inst.spec.cost], dt.itemsize

    def run():
        rows, cols = rows_g(), cols_g()
        vd, va = dst(rows, cols), ga(rows, cols)
        if rows > 0 and cols > 0:
            vd[...] = f(va if c is dt else va.astype(c), gs())
        tick(V, cost(m, eb, rows, cols), inst)
    return run


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


_UNARY = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
    "rsqrt": lambda x: np.divide(x.dtype.type(1), np.sqrt(x)), "abs": np.abs, "neg": np.negative,
    "sin": np.sin, "cos": np.cos, "floor": np.floor, "ceil": np.ceil,
    "erf": lambda x: _erf(x).astype(x.dtype), "recip": lambda x: np.divide(x.dtype.type(1), x),
    "tanh": np.tanh, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "tan": np.tan,
    "sinh": np.sinh, "cosh": np.cosh, "log1p": np.log1p, "expm1": np.expm1, "log10": np.log10, "rint": np.rint,
    "sigmoid": lambda x: np.divide(x.dtype.type(1), x.dtype.type(1) + np.exp(-x)),
    "not": np.invert, "relu": lambda x: np.maximum(x, x.dtype.type(0)), "mov": lambda x: x,
}


@family("vunary", list(_UNARY))
def _vunary(st, inst, prog):
    R, rows_g, tick, m = _common(st, inst)
    dt = npdt(inst.types[0])
    c = cdt(dt)
    f = _UNARY[inst.spec.op]
    dst = vec_operand(st, inst, inst.args[0], dt, V, True)
    ga = vec_operand(st, inst, inst.args[1], dt, V, False)
    cols_g = getter(inst.args[2], R)
    cost, eb = cycles.COSTS[inst.spec.cost], dt.itemsize

    def run():
        rows, cols = rows_g(), cols_g()
        vd, va = dst(rows, cols), ga(rows, cols)
        if rows > 0 and cols > 0:
            vd[...] = f(va if c is dt else va.astype(c))
        tick(V, cost(m, eb, rows, cols), inst)
    return run


_CMPF = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
         "gt": np.greater, "ge": np.greater_equal}


@family("vcmp", list(_CMPF))
def _vcmp(st, inst, prog):
    R, rows_g, tick, m = _common(st, inst)
    dt = npdt(inst.types[0])
    c = cdt(dt)
    f = _CMPF[inst.spec.op]
    dst = vec_operand(st, inst, inst.args[0], U8, V, True)
    ga = vec_operand(st, inst, inst.args[1], dt, V, False)
    scalar = inst.spec.impl == "vcmp" and inst.spec.name.startswith("vcmps")
    if scalar:
        g = getter(inst.args[2], R)
        gb = lambda r, k: _operand_scalar(g(), dt, c)  # noqa: E731
    else:
        gb = vec_operand(st, inst, inst.args[2], dt, V, False)
    cols_g = getter(inst.args[3], R)
    cost, eb = cycles.COSTS[inst.spec.cost], dt.itemsize

    def run():
        rows, cols = rows_g(), cols_g()
        vd, va, vb = dst(rows, cols), ga(rows, cols), gb(rows, cols)
        if rows > 0 and cols > 0:
            if c is not dt:
                va = va.astype(c)
                if not scalar:
                    vb = vb.astype(c)
            f(va, vb, out=vd, casting="unsafe")
        tick(V, cost(m, eb, rows, cols), inst)
    return run


@family("vsel", ["sel", "sels"])
def _vsel(st, inst, prog):
    R, rows_g, tick, m = _common(st, inst)
    dt = npdt(inst.types[0])
    dst = vec_operand(st, inst, inst.args[0], dt, V, True)
    gm = vec_operand(st, inst, inst.args[1], U8, V, False)
    ga = vec_operand(st, inst, inst.args[2], dt, V, False)
    if inst.spec.op == "sels":
        g = getter(inst.args[3], R)
        gb = lambda r, k: np_scalar(g(), dt)  # noqa: E731
    else:
        gb = vec_operand(st, inst, inst.args[3], dt, V, False)
    cols_g = getter(inst.args[4], R)
    cost, eb = cycles.COSTS[inst.spec.cost], dt.itemsize

    def run():
        rows, cols = rows_g(), cols_g()
        vd, vm, va, vb = dst(rows, cols), gm(rows, cols), ga(rows, cols), gb(rows, cols)
        if rows > 0 and cols > 0:
            vd[...] = np.where(vm != 0, va, vb)
        tick(V, cost(m, eb, rows, cols), inst)
    return run


@family("vfma", ["fma"])
def _vfma(st, inst, prog):
    R, rows_g, tick, m = _common(st, inst)
    dt = npdt(inst.types[0])
    dst = vec_operand(st, inst, inst.args[0], dt, V, True)
    ga, gb, gc = (vec_operand(st, inst, a, dt, V, False) for a in inst.args[1:4])
    cols_g = getter(inst.args[4], R)
    cost, eb = cycles.COSTS[inst.spec.cost], dt.itemsize

    def run():
        rows, cols = rows_g(), cols_g()
        vd = dst(rows, cols)
        if rows > 0 and cols > 0:
            vd[...] = fma(ga(rows, cols), gb(rows, cols), gc(rows, cols), dt)
        tick(V, cost(m, eb, rows, cols), inst)
    return run


@family("vcast", ["cast"])
def _vcast(st, inst, prog):
    R, rows_g, tick, m = _common(st, inst)
    du, dt = npdt(inst.types[0]), npdt(inst.types[1])
    dst = vec_operand(st, inst, inst.args[0], du, V, True)
    ga = vec_operand(st, inst, inst.args[1], dt, V, False)
    cols_g = getter(inst.args[2], R)
    cost, eb = cycles.COSTS[inst.spec.cost], max(du.itemsize, dt.itemsize)
    # (an integer goes to f16/bf16 directly: through f32 or f64 it would be rounded twice)
    via = F32 if (dt in _HALF and du.kind != "f") or (du in _HALF and dt.kind not in "fiu") else None
    if via is not None and (dt.itemsize == 8 or du.itemsize == 8):
        via = np.dtype(np.float64)
    to_bool = du.kind == "b"
    to_int = du.kind in "iu" and dt.kind not in "biu"      # from a float (bf16's kind is V)

    def run():
        rows, cols = rows_g(), cols_g()
        vd, va = dst(rows, cols), ga(rows, cols)
        if rows > 0 and cols > 0:
            if to_bool:
                vd[...] = va != 0
            elif to_int:
                vd[...] = float_to_int(va, du)
            elif via is not None:
                vd[...] = va.astype(via).astype(du) if du.kind in "iu" else va.astype(via)
            else:
                np.copyto(vd, va, casting="unsafe")
        tick(V, cost(m, eb, rows, cols), inst)
    return run


@family("vfill", ["dup", "arange"])
def _vfill(st, inst, prog):
    R, rows_g, tick, m = _common(st, inst)
    dt = npdt(inst.types[0])
    dst = vec_operand(st, inst, inst.args[0], dt, V, True)
    g = getter(inst.args[1], R)
    cols_g = getter(inst.args[2], R)
    cost, eb = cycles.COSTS[inst.spec.cost], dt.itemsize
    arange = inst.spec.op == "arange"
    wide = np.dtype(np.float64) if dt.kind == "f" or dt in _HALF else np.dtype(np.int64)

    def run():
        rows, cols = rows_g(), cols_g()
        vd = dst(rows, cols)
        if rows > 0 and cols > 0:
            if arange:
                vals = np.arange(cols, dtype=wide) + np_scalar(g(), wide)
                vd[...] = vals.astype(dt)
            else:
                vd[...] = np_scalar(g(), dt)
        tick(V, cost(m, eb, rows, cols), inst)
    return run


def _reduce_fn(op, dt):
    c = cdt(dt)
    if op == "sum":
        acc = c if dt.kind == "f" or c is not dt else dt
        # summed as a row-major copy: numpy's order of additions follows the operand's layout (it
        # sums along the axis whose elements are adjacent pairwise), and a sum is a function of the
        # values alone (a transposed view sums as its dense copy does; rows apart are no concern)
        def total(a, ax):
            a = a if c is dt else a.astype(c)
            if not a.flags.c_contiguous and not (a.strides[1] == a.itemsize and a.strides[0] >= a.nbytes // len(a)):
                a = np.ascontiguousarray(a)
            return np.sum(a, axis=ax, dtype=acc, keepdims=True)
        return total
    if op in ("max", "min"):
        if dt.kind == "f" or c is not dt:       # floats: maxnum / minnum (NaN only if all are NaN)
            f = np.fmax.reduce if op == "max" else np.fmin.reduce
            return lambda a, ax: f(quiet_nans(a), axis=ax, keepdims=True)
        f = np.max if op == "max" else np.min
        return lambda a, ax: f(a, axis=ax, keepdims=True)
    f = np.argmax if op == "argmax" else np.argmin
    return lambda a, ax: f(a if c is dt else a.astype(c), axis=ax, keepdims=True).astype(I32)


@family("vreduce", ["sum", "max", "min", "argmax", "argmin"])
def _vreduce(st, inst, prog):
    R, rows_g, tick, m = _common(st, inst)
    dt = npdt(inst.types[0])
    op = inst.spec.op
    odt = I32 if op.startswith("arg") else dt
    axis = inst.opts["axis"].value() if "axis" in inst.opts else 1
    dst = vec_operand(st, inst, inst.args[0], odt, V, True, default_rs=lambda r, c: 1)
    ga = vec_operand(st, inst, inst.args[1], dt, V, False)
    cols_g = getter(inst.args[2], R)
    f = _reduce_fn(op, dt)
    cost, eb = cycles.COSTS[inst.spec.cost], dt.itemsize

    def run():
        rows, cols = rows_g(), cols_g()
        va = ga(rows, cols)
        vd = dst(rows, 1) if axis == 1 else dst(1, cols)
        if rows > 0 and cols > 0:
            vd[...] = f(va, axis)
        tick(V, cost(m, eb, rows, cols, cols if axis == 1 else rows), inst)
    return run


@family("vscan", ["cumsum", "cumprod"])
def _vscan(st, inst, prog):
    R, rows_g, tick, m = _common(st, inst)
    dt = npdt(inst.types[0])
    c = cdt(dt)
    f = np.cumsum if inst.spec.op == "cumsum" else np.cumprod
    axis = inst.opts["axis"].value() if "axis" in inst.opts else 1
    rev = bool(inst.opts["reverse"].value()) if "reverse" in inst.opts else False
    dst = vec_operand(st, inst, inst.args[0], dt, V, True)
    ga = vec_operand(st, inst, inst.args[1], dt, V, False)
    cols_g = getter(inst.args[2], R)
    cost, eb = cycles.COSTS[inst.spec.cost], dt.itemsize
    order = (slice(None), slice(None, None, -1)) if axis == 1 else (slice(None, None, -1), slice(None))

    def run():
        rows, cols = rows_g(), cols_g()
        vd, va = dst(rows, cols), ga(rows, cols)
        if rows > 0 and cols > 0:
            if rev:     # a scan from the last element: the same order of operations, mirrored
                vd[order] = f((va if c is dt else va.astype(c))[order], axis=axis, dtype=c)
            else:
                vd[...] = f(va if c is dt else va.astype(c), axis=axis, dtype=c)
        tick(V, cost(m, eb, rows, cols, cols if axis == 1 else rows), inst)
    return run


@family("vtranspose", ["transpose"])
def _vtranspose(st, inst, prog):
    R, rows_g, tick, m = _common(st, inst)
    dt = npdt(inst.types[0])
    dst = vec_operand(st, inst, inst.args[0], dt, V, True, default_rs=lambda r, c: c)
    ga = vec_operand(st, inst, inst.args[1], dt, V, False)
    cols_g = getter(inst.args[2], R)
    cost, eb = cycles.COSTS[inst.spec.cost], dt.itemsize

    def run():
        rows, cols = rows_g(), cols_g()
        va, vd = ga(rows, cols), dst(cols, rows)
        if rows > 0 and cols > 0:
            vd[...] = va.T
        tick(V, cost(m, eb, rows, cols), inst)
    return run
