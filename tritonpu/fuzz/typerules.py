"""Triton's typing rules as the kernel generator needs them, and the typed expression node.

Types are short names (``"fp32"``, ``"int8"``, ``"bool"``, ...).  ``comp_type`` is Triton's
binary-op result type (scalars adopt the block's type unless they are of a higher kind; ``/`` gives
a float; ``//`` and ``%`` refuse mixed signedness).  Shapes are ``"S"`` (scalar), ``"F"`` (the full
block), and in 2-D kernels ``"R"`` (a ``[BM]`` row vector) and ``"C"`` (a ``[BN]`` column vector),
which broadcast into ``"F"`` with ``[:, None]`` / ``[None, :]``.
"""
from __future__ import annotations


FLOATS = ("fp32", "fp16")
INTS = ("int32", "int8", "uint8", "int16")
TLNAME = {"fp32": "tl.float32", "fp16": "tl.float16", "int32": "tl.int32", "int8": "tl.int8",
          "uint8": "tl.uint8", "int16": "tl.int16", "bool": "tl.int1", "uint32": "tl.uint32"}
NPNAME = {"fp32": "np.float32", "fp16": "np.float16", "int32": "np.int32", "int8": "np.int8",
          "uint8": "np.uint8", "int16": "np.int16"}
BITS = {"fp32": 32, "fp16": 16, "int32": 32, "int8": 8, "uint8": 8, "int16": 16, "bool": 1, "uint32": 32}


def is_float(d): return d in FLOATS
def is_int(d): return d in INTS or d == "uint32"
def is_uns(d): return d in ("uint8", "uint32")


def kind_rank(d):
    return 0 if d == "bool" else (2 if is_float(d) else 1)


def int_promote(a, b):
    ua, ub = is_uns(a), is_uns(b)
    if ua == ub:
        return a if BITS[a] > BITS[b] else b
    if ua:
        return a if BITS[a] >= BITS[b] else b
    return b if BITS[b] >= BITS[a] else a


def comp_type(a, asc, b, bsc, divmod_=False):
    if asc != bsc:
        s, t = (a, b) if asc else (b, a)
        if kind_rank(s) <= kind_rank(t):
            if divmod_ and t == "fp16":
                return "fp32"
            return t
    if "fp32" in (a, b):
        return "fp32"
    if "fp16" in (a, b):
        return "fp32" if divmod_ else "fp16"
    if a == "bool" and b == "bool":
        return "bool"
    if a == "bool":
        return b
    if b == "bool":
        return a
    if divmod_ and is_uns(a) != is_uns(b):
        return None
    return int_promote(a, b)


class E:
    """A generated expression: its code, type, shape, whether it is approximate (0 exact, 1 an
    fp32 tolerance, 2 an fp16 one), whether it is a Python literal (and its value)."""
    __slots__ = ("code", "dt", "shape", "approx", "lit", "val")

    def __init__(self, code, dt, shape, approx=0, lit=False, val=None):
        approx = int(approx)
        if approx and dt == "fp16":
            approx = 2
        if not is_float(dt):
            approx = 0
        self.code, self.dt, self.shape, self.approx, self.lit, self.val = code, dt, shape, approx, lit, val


def bshape(a, b):
    # shapes: 'S' scalar, 'F' full block, 'R' row vector (2-D: [BM]), 'C' col vector ([BN])
    if a == "S":
        return b
    if b == "S":
        return a
    assert a == b, (a, b)
    return a


