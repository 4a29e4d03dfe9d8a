"""Numbers a kernel assigns to names: Triton's scalar tensors, whose values are known.

Triton turns a Python number assigned in a kernel (``x = -7``, ``scale = 0.5``, ``n = BLOCK``;
not ``x: tl.constexpr = -7``) into a 0-d tensor of the number's default type — int32, uint32,
int64 or uint64 by value, fp32 for a float — so what the kernel then computes with it follows
tensor semantics: ``x // 2`` truncates (-3, where Python gives -4), ``x % 2`` takes the dividend's
sign, int32 arithmetic wraps, ``a = 1.0 + x`` rounds to fp32, an fp16 tensor times ``scale`` is
fp32 and an int8 tensor plus ``x`` is int32.

:class:`typed_int` and :class:`typed_float` are those scalars.  They stay Python ints and floats,
so they still work where a constexpr is needed (shapes, ``tl.arange`` bounds, ``range``, a
compile-time ``if``), a leniency upstream Triton does not have; their operators build the op with
the semantic layer in a scratch region and evaluate it with the reference evaluator's table, so a
result is the value (and type) the backends compute for the same op at run time — a comparison
gives an int1 scalar (0 or 1), which ``if`` takes and which has ``.to()`` too.  A tensor meets them
as a 0-d tensor of their type (``semantic.to_tensor``).  Booleans assigned stay Python bools.

Guarantee: for every operator Triton defines on scalar tensors, the value of ``a <op> b`` with
typed operands equals what the op computes on 0-d tensors of the same types.
"""
from __future__ import annotations

import numbers

import numpy as np

from tritonpu.ir import Region
from tritonpu.language import core as tl


class _typed:
    """What typed ints and floats share: their dtype and Triton's operators."""

    __slots__ = ()
    dtype: tl.dtype

    @property
    def type(self):
        return self.dtype

    def to(self, dtype, fp_downcast_rounding=None, bitcast=False, overflow_mode=None):
        from tritonpu.language import semantic as S
        return S.cast(self, dtype, bitcast=bitcast, fp_downcast_rounding=fp_downcast_rounding,
                      overflow_mode=overflow_mode)

    def __reduce__(self):
        return (typed, (self._base(self), self.dtype))

    __hash__ = None           # set per class below (the base type's hash: equal numbers, one key)


def _apply(fn, *operands):
    """``fn(*operands)`` (a semantic-layer function) evaluated now: the ops it builds go to a
    scratch region of the kernel's builder and are run by the reference evaluator; a number is
    returned as a typed scalar (a compare's result as a bool)."""
    from tritonpu.language.semantic import _builder
    from tritonpu.ref.evaluator import EVAL
    b = _builder()
    saved, scratch = b.region, Region()
    b.region = scratch
    try:
        out = fn(*operands)
    finally:
        b.region = saved
    values = {}
    for op in scratch.ops:
        values[id(op.results[0])] = EVAL[op.name](op, *(values[id(v)] for v in op.operands))
    v = np.asarray(values[id(out.handle)])[()]
    return typed(v.item(), out.dtype)


def _binary(name, reverse=False):
    def method(self, other):
        if not isinstance(other, numbers.Number) or not _building():
            return NotImplemented
        from tritonpu.language import semantic as S
        fn = getattr(S, name)
        return _apply(fn, other, self) if reverse else _apply(fn, self, other)
    return method


def _unary(name):
    def method(self):
        if not _building():
            return getattr(self._base, f"__{name}__")(self)
        from tritonpu.language import semantic as S
        return _apply({"neg": S.minus, "invert": S.invert, "abs": S.abs_}[name], self)
    return method


def _compare(pred):
    def method(self, other):
        if not isinstance(other, numbers.Number) or not _building():
            return getattr(self._base, f"__{pred}__")(self, other)
        from tritonpu.language import semantic as S
        return _apply(lambda a, b: S.compare(a, b, pred), self, other)
    return method


def _building() -> bool:
    return tl._state.builder is not None


_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "truediv", "floordiv": "floordiv",
           "mod": "mod", "and": "and_", "or": "or_", "xor": "xor_", "lshift": "shl", "rshift": "shr"}


def _operators(cls):
    for dunder, fn in _BINARY.items():
        setattr(cls, f"__{dunder}__", _binary(fn))
        setattr(cls, f"__r{dunder}__", _binary(fn, reverse=True))
    for name in ("neg", "invert", "abs"):
        setattr(cls, f"__{name}__", _unary(name))
    cls.__pos__ = lambda self: self
    for pred in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(cls, f"__{pred}__", _compare(pred))
    cls.__hash__ = cls._base.__hash__
    return cls


def _scalar_class(base, doc):
    """The typed scalar class over Python's ``base`` (int or float)."""
    def __new__(cls, value, dtype):
        self = base.__new__(cls, value)
        self.dtype = dtype
        return self
    return _operators(type(f"typed_{base.__name__}", (_typed, base),
                           {"__doc__": doc, "_base": base, "__new__": __new__, "__module__": __name__}))


typed_int = _scalar_class(int, "An integer scalar of an integer dtype (see the module docstring).")
typed_float = _scalar_class(float, "A floating-point scalar of fp32 or fp64 (see the module docstring).")


def typed(value, dtype=None):
    """``value`` as Triton's assignment makes it: an int or float (not a bool) becomes a typed
    scalar of ``dtype`` (default: the type Triton gives the number: ``semantic.python_scalar_dtype``,
    fp64 for a float fp32 cannot hold), a float rounded to it; tuples are typed element by element;
    anything else is returned as it is."""
    if isinstance(value, _typed) and dtype is None:
        return value
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(typed(v) for v in value)
    if not isinstance(value, (int, float, np.integer, np.floating, np.bool_)) or \
            (dtype is None and isinstance(value, (bool, np.bool_))):
        return value
    if dtype is None:
        from tritonpu.language.semantic import python_scalar_dtype
        dtype = python_scalar_dtype(value)
        if dtype.is_floating() and _needs_fp64(float(value)):
            dtype = tl.float64
    if dtype.is_floating():
        v = float(value)
        return typed_float(float(np.float32(v)) if dtype.is_fp32() else v, dtype)
    return typed_int(int(value), dtype)         # (an int1 compare result: 0 or 1)


def _needs_fp64(x: float) -> bool:
    """Triton's rule: a float is fp32 unless it is a nonzero finite number outside fp32's normal
    range (then fp64)."""
    a = abs(x)
    return not (a == 0.0 or a != a or a == float("inf") or 2.0 ** -126 <= a <= (2 - 2.0 ** -23) * 2.0 ** 127)


def is_typed(x) -> bool:
    return isinstance(x, _typed)


def plain(x):
    """A typed scalar as the Python number it holds (anything else unchanged)."""
    return x._base(x) if isinstance(x, _typed) else x
