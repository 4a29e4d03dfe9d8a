"""The reference evaluator: the dataflow IR executed with numpy, one program at a time.

This is the executable definition of the language's semantics and the oracle of the tests.
Every op of the op table has exactly one entry in ``EVAL``. Values are numpy arrays (blocks)
or 0-d arrays (scalars) of the IR type's dtype; pointers are int64 byte addresses into
:class:`Memory`. Integer arithmetic wraps; f16/bf16 math is computed in f32 and rounded once.
"""
from __future__ import annotations

import math

import numpy as np

from tritonpu.dtypes import bits_atomic, convert, fma, maxnum, minnum, quiet_nans
from tritonpu.errors import ExecutionError
from tritonpu.ir import Function, Op, Region
from tritonpu.ir import types as T
from tritonpu.ir.ops import slice_geometry
from tritonpu.ref.memory import Memory, MemoryFault

_erf = np.frompyfunc(math.erf, 1, 1)


def _npdt(ty: T.Type):
    s = ty.scalar
    return np.dtype(np.int64) if s.is_ptr else s.np


def _arr(x, ty: T.Type) -> np.ndarray:
    return np.asarray(x, dtype=_npdt(ty)).reshape(ty.shape)


def _low_float(ty: T.Type) -> bool:
    s = ty.scalar
    return not s.is_ptr and s.is_float and s.bits == 16


def _math(fn):
    def run(op, x):
        ty = op.results[0].type
        src = x.astype(np.float32) if _low_float(ty) else x
        return _arr(fn(src), ty)
    return run


def _c_div(a, b, ty):
    if ty.scalar.is_float:
        src_a, src_b = (a.astype(np.float32), b.astype(np.float32)) if _low_float(ty) else (a, b)
        return _arr(src_a / src_b, ty)
    if ty.scalar.is_bool:
        return _arr(a, ty)
    safe = np.where(b == 0, 1, b)
    q = np.floor_divide(a, safe)
    fix = (np.fmod(a, safe) != 0) & ((a < 0) != (safe < 0))
    return _arr(np.where(b == 0, 0, q + fix), ty)


def _c_rem(a, b, ty):
    if ty.scalar.is_float:
        src_a, src_b = (a.astype(np.float32), b.astype(np.float32)) if _low_float(ty) else (a, b)
        return _arr(np.fmod(src_a, src_b), ty)
    safe = np.where(b == 0, 1, b)
    return _arr(np.where(b == 0, 0, np.fmod(a, safe)), ty)


def _binary(fn_float, fn_int=None, fn_bool=None):
    fn_int = fn_int or fn_float

    def run(op, a, b):
        ty = op.results[0].type
        s = ty.scalar
        if s.is_float:
            if _low_float(ty):
                return _arr(fn_float(a.astype(np.float32), b.astype(np.float32)), ty)
            return _arr(fn_float(a, b), ty)
        if s.is_bool and fn_bool is not None:
            return _arr(fn_bool(a, b), ty)
        return _arr(fn_int(a, b), ty)
    return run


def _cast(op, x):
    ty = op.results[0].type
    return _arr(convert(x, op.operands[0].type.scalar.kind, ty.scalar.kind), ty)


def _bitcast(op, x):
    ty = op.results[0].type
    return np.ascontiguousarray(x).view(_npdt(ty)).reshape(ty.shape)


def _reduce(op, x):
    ty = op.results[0].type
    kind, axis = op.attrs["op"], op.attrs["axis"]
    src = x.astype(np.float32) if _low_float(op.operands[0].type) else x
    if kind == "sum":
        r = np.sum(src, axis=axis, dtype=src.dtype)
    elif kind == "max":
        r = np.fmax.reduce(quiet_nans(src), axis=axis) if src.dtype.kind == "f" else np.max(src, axis=axis)
    elif kind == "min":
        r = np.fmin.reduce(quiet_nans(src), axis=axis) if src.dtype.kind == "f" else np.min(src, axis=axis)
    elif kind == "argmax":
        r = np.argmax(src, axis=axis)
    else:
        r = np.argmin(src, axis=axis)
    return _arr(r, ty)


def _scan(op, x):
    ty = op.results[0].type
    axis = op.attrs["axis"]
    src = x.astype(np.float32) if _low_float(ty) else x
    f = {"sum": np.cumsum, "prod": np.cumprod}[op.attrs["op"]]
    if op.attrs.get("reverse"):
        return _arr(np.flip(f(np.flip(src, axis), axis=axis, dtype=src.dtype), axis), ty)
    return _arr(f(src, axis=axis, dtype=src.dtype), ty)


def _dot(op, a, b, acc=None):
    ty = op.results[0].type
    if ty.scalar.is_int:
        r = a.astype(np.int64) @ b.astype(np.int64)
        if acc is not None:
            r = r + acc
        return _arr(r.astype(np.int64).astype(np.int32), ty)
    r = a.astype(np.float64) @ b.astype(np.float64)
    if acc is not None:
        r = r + acc.astype(np.float64)
    return _arr(r, ty)


EVAL = {
    "add": _binary(np.add, np.add, np.logical_xor),
    "sub": _binary(np.subtract, np.subtract, np.logical_xor),
    "mul": _binary(np.multiply, np.multiply, np.logical_and),
    "div": lambda op, a, b: _c_div(a, b, op.results[0].type),
    "rem": lambda op, a, b: _c_rem(a, b, op.results[0].type),
    "and": _binary(None, np.bitwise_and),
    "or": _binary(None, np.bitwise_or),
    "xor": _binary(None, np.bitwise_xor),
    "shl": _binary(None, np.left_shift),
    "shr": _binary(None, np.right_shift),
    "maximum": _binary(maxnum, np.maximum),
    "pow": _binary(np.power),
    "minimum": _binary(minnum, np.minimum),
    "neg": _math(np.negative),
    "not": lambda op, x: _arr(np.logical_not(x) if x.dtype == np.bool_ else np.invert(x), op.results[0].type),
    "abs": _math(np.abs),
    "exp": _math(np.exp),
    "exp2": _math(np.exp2),
    "log": _math(np.log),
    "log2": _math(np.log2),
    "sqrt": _math(np.sqrt),
    "rsqrt": _math(lambda x: 1 / np.sqrt(x)),
    "sin": _math(np.sin),
    "cos": _math(np.cos),
    "floor": _math(np.floor),
    "ceil": _math(np.ceil),
    "erf": _math(lambda x: np.asarray(_erf(x)).astype(np.asarray(x).dtype)),
    "tanh": _math(np.tanh),
    "asin": _math(np.arcsin),
    "acos": _math(np.arccos),
    "atan": _math(np.arctan),
    "tan": _math(np.tan),
    "sinh": _math(np.sinh),
    "cosh": _math(np.cosh),
    "log1p": _math(np.log1p),
    "expm1": _math(np.expm1),
    "log10": _math(np.log10),
    "rint": _math(np.rint),
    "fma": lambda op, a, b, c: _arr(fma(a, b, c, _npdt(op.results[0].type)), op.results[0].type),
    "cmp": lambda op, a, b: _arr(_CMP[op.attrs["pred"]](a, b), op.results[0].type),
    "select": lambda op, c, a, b: _arr(np.where(c, a, b), op.results[0].type),
    "cast": _cast,
    "bitcast": _bitcast,
    "addptr": lambda op, p, off: _arr(p + off.astype(np.int64) * op.results[0].type.scalar.pointee.kind.bytes,
                                      op.results[0].type),
    "splat": lambda op, x: np.full(op.results[0].type.shape, x, _npdt(op.results[0].type)),
    "broadcast": lambda op, x: np.broadcast_to(x, op.results[0].type.shape),
    "expand_dims": lambda op, x: np.expand_dims(x, op.attrs["axis"]),
    "reshape": lambda op, x: np.reshape(x, op.results[0].type.shape),
    "permute": lambda op, x: np.transpose(x, op.attrs["order"]),
    "slice": lambda op, x: x[tuple(slice(o, o + (n - 1) * s + 1, s)
                                   for o, s, n in zip(*slice_geometry(op), op.results[0].type.shape))],
    "insert_slice": lambda op, ful, part: _insert_slice(op, ful, part),
    "arange": lambda op: np.arange(op.attrs["start"], op.attrs["end"], dtype=np.int32),
    "constant": lambda op: np.full(op.results[0].type.shape, _wrapped(op.attrs["value"], _npdt(op.results[0].type)),
                                   _npdt(op.results[0].type)),
    "reduce": _reduce,
    "scan": _scan,
    "dot": _dot,
}

def _insert_slice(op, ful, part):
    out = np.array(ful, copy=True)
    out[tuple(slice(o, o + (n - 1) * s + 1, s) for o, s, n in zip(*slice_geometry(op), np.shape(part)))] = part
    return out


def _wrapped(value, dt):
    """An integer constant the type cannot hold (``tl.full([B], -1, tl.uint32)``) wraps modulo
    2**bits, as on the NPU and CPU backends."""
    dt = np.dtype(dt)
    if dt.kind in "iu" and isinstance(value, int) and not isinstance(value, bool):
        bits = 8 * dt.itemsize
        value %= 1 << bits
        if dt.kind == "i" and value >= 1 << (bits - 1):
            value -= 1 << bits
    return value


_CMP = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
        "ne": np.not_equal}
# Ops with effects or regions are handled by the Program class itself.
SPECIAL = ("program_id", "num_programs", "load", "store", "atomic_rmw", "atomic_cas", "print", "assert",
           "for", "if", "while", "yield", "condition", "return")


MAX_WHILE_TRIPS = 10_000_000     # trips of one while loop before a launch is stopped (never a hang)


def while_trips_message(trips: int, backend: str) -> str:
    return (f"the while loop ran {trips} trips (an endless loop? the {backend} backend runs a launch's "
            "programs one after another, so a program that waits for a flag or lock a later program sets "
            "waits forever; the npu backend runs them side by side)")


class Program:
    """Runs a function's body for one program id."""

    def __init__(self, fn: Function, memory: Memory, pid: tuple[int, int, int], grid: tuple[int, int, int]):
        self.memory = memory
        self.pid = pid
        self.grid = grid

    def fail(self, op: Op, message: str):
        raise ExecutionError(f"{message} (in '{op.name}', program {self.pid})", op.loc.file, op.loc.line, op.loc.col)

    def run_region(self, region: Region, env: dict, args: list) -> list:
        for a, v in zip(region.args, args):
            env[id(a)] = v
        for op in region.ops:
            name = op.name
            ins = [env[id(v)] for v in op.operands]
            fn = EVAL.get(name)
            if fn is not None:
                env[id(op.results[0])] = fn(op, *ins)
                continue
            if name in ("yield", "condition"):
                return ins
            if name == "return":
                return []
            if name == "for":
                self._for(op, env, ins)
            elif name == "if":
                out = self.run_region(op.regions[0] if bool(ins[0]) else op.regions[1], env, [])
                for r, v in zip(op.results, out):
                    env[id(r)] = v
            elif name == "while":
                self._while(op, env, ins)
            else:
                self._effect(op, env, ins)
        return []

    def _for(self, op, env, ins):
        lb, ub, step, *vals = ins
        body = op.regions[0]
        iv_dt = _npdt(op.operands[0].type)
        lb, ub, step = int(lb), int(ub), int(step)
        if step == 0:                       # as the NPU stops it: never an endless loop
            self.fail(op, "for loop with step 0")
        for i in range(lb, ub, step) if step else ():
            vals = self.run_region(body, env, [np.asarray(i, iv_dt)] + vals)
        for r, v in zip(op.results, vals):
            env[id(r)] = v

    def _while(self, op, env, vals):
        before, after = op.regions
        trips = 0
        while True:
            cond, *passed = self.run_region(before, env, vals)
            if not bool(cond):
                break
            vals = self.run_region(after, env, passed)
            trips += 1
            if trips == MAX_WHILE_TRIPS:
                self.fail(op, while_trips_message(trips, "ref"))
        for r, v in zip(op.results, passed):
            env[id(r)] = v

    def _effect(self, op: Op, env: dict, ins: list):
        name = op.name
        try:
            if name == "program_id":
                env[id(op.results[0])] = np.asarray(self.pid[op.attrs["axis"]], np.int32)
            elif name == "num_programs":
                env[id(op.results[0])] = np.asarray(self.grid[op.attrs["axis"]], np.int32)
            elif name == "load":
                ptr = ins[0]
                mask = ins[1] if len(ins) > 1 else None
                ty = op.results[0].type
                val = self.memory.load(np.asarray(ptr), None if mask is None else np.asarray(mask), _npdt(ty), "load")
                if len(ins) > 2:
                    val = np.where(mask, val, ins[2])
                env[id(op.results[0])] = _arr(val, ty)
            elif name == "store":
                mask = ins[2] if len(ins) > 2 else None
                self.memory.store(np.asarray(ins[0]), np.asarray(ins[1]), None if mask is None else np.asarray(mask),
                                  "store")
            elif name in ("atomic_rmw", "atomic_cas"):
                env[id(op.results[0])] = self._atomic(op, ins)
            elif name == "print":
                vals = " ".join(str(np.asarray(v).tolist()) for v in ins)
                print(f"pid ({self.pid[0]}, {self.pid[1]}, {self.pid[2]}) {op.attrs['prefix']}{vals}")
            elif name == "assert":
                if not np.all(ins[0]):
                    self.fail(op, f"device_assert failed: {op.attrs['msg']}")
            else:
                self.fail(op, f"the reference evaluator has no rule for '{name}'")
        except MemoryFault as e:
            self.fail(op, str(e))

    def _atomic(self, op: Op, ins):
        ty = op.results[0].type
        dt = _npdt(ty)
        ptr = np.asarray(ins[0])
        if op.name == "atomic_cas":
            cmp, val = np.broadcast_to(ins[1], ptr.shape).reshape(-1), np.broadcast_to(ins[2], ptr.shape).reshape(-1)
            mask = None
        else:
            val = np.broadcast_to(ins[1], ptr.shape).reshape(-1)
            mask = np.asarray(ins[2]) if len(ins) > 2 else None
        refs = self.memory.element_refs(ptr, mask, dt, op.name)
        old = np.zeros(len(refs), dt)
        kind = op.attrs.get("op", "cas")
        for lane, ref in enumerate(refs):
            if ref is None:
                continue
            view, idx = ref
            cur = view[idx]
            old[lane] = cur
            v = val[lane]
            if kind == "add":
                new = (cur.astype(np.float32) + v.astype(np.float32)) if _low_float(ty) else cur + v
            elif kind in ("max", "min") and cur.dtype in (np.float32, np.float64):
                new = bits_atomic(kind, cur, v)[()]        # Triton's rule: on the bits
            elif kind == "max":
                new = max(cur, v)
            elif kind == "min":
                new = min(cur, v)
            elif kind == "xchg":
                new = v
            elif kind == "and":
                new = cur & v
            elif kind == "or":
                new = cur | v
            elif kind == "xor":
                new = cur ^ v
            else:  # cas
                new = v if cur == cmp[lane] else cur
            view[idx] = new
        return old.reshape(ty.shape)


def run(fn: Function, args: list, grid: tuple[int, int, int]) -> None:
    """Run every program of ``grid`` on ``args`` (numpy arrays for pointer arguments, numbers for
    scalars, in the order of ``fn.args``)."""
    arrays, names, values = [], [], []
    for a, v in zip(fn.args, args):
        if a.type.is_ptr:
            values.append(np.asarray(Memory.base(len(arrays)), np.int64))
            arrays.append(v)
            names.append(a.name or f"arg{len(names)}")
        else:
            values.append(np.asarray(v, _npdt(a.type)))
    memory = Memory(arrays, names)
    with np.errstate(all="ignore"):
        for z in range(grid[2]):
            for y in range(grid[1]):
                for x in range(grid[0]):
                    env = {id(a): v for a, v in zip(fn.args, values)}
                    Program(fn, memory, (x, y, z), grid).run_region(fn.body, env, [])
