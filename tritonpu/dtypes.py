"""The scalar element types, defined once.

Every stage names element types the same way: the IR text (``f32``), the NPU assembly
(``vadd.f32``), the language (``tl.float32``, printed ``fp32`` as in Triton) and numpy
(``np.float32``; bfloat16 comes from ml_dtypes).
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class ScalarKind:
    """One row of the element-type table."""

    name: str        # short name used in IR and assembly text: f32, i32, u8, i1 ...
    triton: str      # Triton's name: fp32, int32, uint8, int1 ...
    np: object       # numpy dtype
    bits: int
    kind: str        # "bool" | "uint" | "int" | "float"  (Triton's promotion order)

    @property
    def bytes(self) -> int:
        return max(1, self.bits // 8)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:           # bool counts as an integer, as in Triton
        return self.kind in ("int", "uint", "bool")

    @property
    def is_signed(self) -> bool:
        return self.kind == "int"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"


_ROWS = [
    # name   triton     numpy                  bits kind
    ("i1",   "int1",    np.dtype(np.bool_),    1,  "bool"),
    ("i8",   "int8",    np.dtype(np.int8),     8,  "int"),
    ("i16",  "int16",   np.dtype(np.int16),    16, "int"),
    ("i32",  "int32",   np.dtype(np.int32),    32, "int"),
    ("i64",  "int64",   np.dtype(np.int64),    64, "int"),
    ("u8",   "uint8",   np.dtype(np.uint8),    8,  "uint"),
    ("u16",  "uint16",  np.dtype(np.uint16),   16, "uint"),
    ("u32",  "uint32",  np.dtype(np.uint32),   32, "uint"),
    ("u64",  "uint64",  np.dtype(np.uint64),   64, "uint"),
    ("f16",  "fp16",    np.dtype(np.float16),  16, "float"),
    ("bf16", "bf16",    np.dtype(ml_dtypes.bfloat16), 16, "float"),
    ("f32",  "fp32",    np.dtype(np.float32),  32, "float"),
    ("f64",  "fp64",    np.dtype(np.float64),  64, "float"),
]

SCALARS: dict[str, ScalarKind] = {r[0]: ScalarKind(*r) for r in _ROWS}
BY_TRITON: dict[str, ScalarKind] = {k.triton: k for k in SCALARS.values()}
_BY_NUMPY: dict[object, ScalarKind] = {k.np: k for k in SCALARS.values()}


def scalar(name: str) -> ScalarKind:
    """Look up an element type by IR name (``f32``) or Triton name (``fp32``)."""
    if name in SCALARS:
        return SCALARS[name]
    if name in BY_TRITON:
        return BY_TRITON[name]
    raise KeyError(f"unknown element type {name!r}")


def from_numpy(dt) -> ScalarKind:
    """The element type of a numpy dtype; KeyError when tritonpu has none for it."""
    dt = np.dtype(dt)
    if dt in _BY_NUMPY:
        return _BY_NUMPY[dt]
    raise KeyError(f"numpy dtype {dt} has no tritonpu element type")


def float_to_int(x, dt) -> np.ndarray:
    """Floats converted to integer dtype ``dt`` as every backend converts them: truncated toward
    zero and saturated to ``dt``'s range, NaN giving 0 (what CUDA's cvt.rzi.sat and LLVM's
    fptosi.sat do; Triton leaves out-of-range conversions undefined)."""
    dt = np.dtype(dt)
    info = np.iinfo(dt)
    x = np.trunc(np.asarray(x).astype(np.float64))        # f64 holds every f16/bf16/f32 value
    hi, lo, nan = x >= float(info.max), x <= float(info.min), np.isnan(x)
    inside = np.where(hi | lo | nan, 0, x).astype(dt)
    return np.where(hi, dt.type(info.max), np.where(lo, dt.type(info.min), inside))


def convert(x, src: ScalarKind, dst: ScalarKind) -> np.ndarray:
    """Values of type ``src`` converted to ``dst`` as every backend's ``cast`` converts them: to
    bool by ``!= 0``; floats to integers by :func:`float_to_int`; integers to narrower integers
    wrapping; otherwise rounded to nearest even."""
    if dst.is_bool:
        return np.asarray(np.asarray(x) != 0)
    if dst.is_int and src.is_float:
        return float_to_int(x, dst.np)
    with np.errstate(over="ignore"):
        return np.asarray(x).astype(src.np).astype(dst.np)


def fma(a, b, c, dt) -> np.ndarray:
    """``a * b + c`` in element type ``dt`` as every backend computes ``tl.fma``: for f16, bf16 and
    f32 rounded once, as a fused multiply-add does.  The product of two such values is exact in
    f64; the f64 sum is taken with round-to-odd (the nearest sum, moved one ulp toward the exact
    one when it is inexact and even), which f64's 53 bits make round correctly to any type of at
    most 25 bits.  f64 computes ``a * b`` and ``+ c`` in f64 (two roundings); integers wrap."""
    dt = np.dtype(dt)
    if dt.kind != "f" and dt != SCALARS["bf16"].np:
        with np.errstate(over="ignore"):
            return (np.asarray(a, dt) * np.asarray(b, dt) + np.asarray(c, dt)).astype(dt)
    with np.errstate(all="ignore"):
        p = np.asarray(a).astype(np.float64) * np.asarray(b).astype(np.float64)
        c64 = np.asarray(c).astype(np.float64)
        s = p + c64
        if dt == np.float64:
            return s
        bb = s - p                                   # TwoSum: the exact error of s = p + c64
        err = (p - (s - bb)) + (c64 - bb)
        bits = np.atleast_1d(s).view(np.int64).copy()
        fix = np.atleast_1d((err != 0) & np.isfinite(err) & np.isfinite(s)) & ((bits & 1) == 0)
        toward = np.atleast_1d((err > 0) == (s > 0))     # away from zero when the error adds magnitude
        bits[fix] += np.where(toward[fix], 1, -1)
        return bits.view(np.float64).reshape(np.shape(s)).astype(dt)


def quiet_nans(a) -> np.ndarray:
    """``a`` with signalling NaNs made quiet (x * 1 keeps every other value, -0.0 included), so that
    numpy's fmax/fmin treat them as LLVM's maxnum/minnum (and Triton) do: the other operand wins.
    (numpy returns NaN for a signalling one.)"""
    a = np.asarray(a)
    return a * a.dtype.type(1) if a.dtype.kind == "f" and np.isnan(a).any() else a


def maxnum(a, b):
    return np.fmax(quiet_nans(a), quiet_nans(b))


def minnum(a, b):
    return np.fmin(quiet_nans(a), quiet_nans(b))


# ---- Triton's float atomic max/min: on the bits --------------------------------------------------
_BIT_VIEWS = {4: (np.int32, np.uint32), 8: (np.int64, np.uint64)}
BITS_ORDERED = (np.dtype(np.float32), np.dtype(np.float64))     # the floats bits_atomic takes


def bits_atomic(kind: str, cur, v):
    """``tl.atomic_max`` / ``atomic_min`` of fp32 / fp64 as Triton lowers them (elementwise, arrays or
    numpy scalars): where ``v``'s sign bit is clear, a signed integer max (min) of the bits; where
    it is set, an unsigned min (max).  Both are the extremum in one total order of the bit patterns
    (+0 above -0, a NaN placed by its sign and payload), so lanes may be applied in any order."""
    cur, v = np.asarray(cur), np.asarray(v)
    si, ui = _BIT_VIEWS[cur.dtype.itemsize]
    signed = (np.maximum if kind == "max" else np.minimum)(cur.view(si), v.view(si))
    unsigned = (np.minimum if kind == "max" else np.maximum)(cur.view(ui), v.view(ui))
    return np.where(v.view(si) >= 0, signed.view(cur.dtype), unsigned.view(cur.dtype))


def bits_atomic_at(kind: str, flat: np.ndarray, idx, src) -> None:
    """``bits_atomic`` applied in place at ``flat[idx]`` (indices may repeat), as ``ufunc.at``."""
    si, ui = _BIT_VIEWS[flat.dtype.itemsize]
    src = np.asarray(src, flat.dtype)
    pos = src.view(si) >= 0
    (np.maximum if kind == "max" else np.minimum).at(flat.view(si), idx[pos], src.view(si)[pos])
    (np.minimum if kind == "max" else np.maximum).at(flat.view(ui), idx[~pos], src.view(ui)[~pos])
