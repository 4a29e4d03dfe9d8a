"""IR types: scalars, pointers and block tensors.

Text forms (the printer and the parser use exactly these):

* scalar   ``f32``, ``i32``, ``i1`` ... (names from :mod:`tritonpu.dtypes`)
* pointer  ``ptr<f32>``
* block    ``tensor<64x128xf32>``, ``tensor<64xptr<f16>>``

Types are immutable and interned by value, so ``==`` and hashing are structural.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tritonpu import dtypes


class Type:
    """Base of all IR types."""

    @property
    def is_block(self) -> bool:
        return False

    @property
    def is_ptr(self) -> bool:
        return False

    @property
    def scalar(self) -> "Type":
        """The element type of a block, or the type itself for scalars and pointers."""
        return self

    @property
    def shape(self) -> tuple[int, ...]:
        return ()

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class ScalarType(Type):
    kind: dtypes.ScalarKind

    def __str__(self) -> str:
        return self.kind.name

    @property
    def is_float(self) -> bool:
        return self.kind.is_float

    @property
    def is_int(self) -> bool:
        return self.kind.is_int

    @property
    def is_bool(self) -> bool:
        return self.kind.is_bool

    @property
    def is_signed(self) -> bool:
        return self.kind.is_signed

    @property
    def bits(self) -> int:
        return self.kind.bits

    @property
    def np(self):
        return self.kind.np


@dataclass(frozen=True)
class PointerType(Type):
    pointee: ScalarType

    def __str__(self) -> str:
        return f"ptr<{self.pointee}>"

    @property
    def is_ptr(self) -> bool:
        return True

    # Pointers behave like 64-bit integers in address arithmetic.
    is_float = False
    is_int = False
    is_bool = False
    bits = 64


@dataclass(frozen=True)
class BlockType(Type):
    elem: Type                   # ScalarType or PointerType
    dims: tuple[int, ...]

    def __str__(self) -> str:
        return "tensor<" + "".join(f"{d}x" for d in self.dims) + f"{self.elem}>"

    @property
    def is_block(self) -> bool:
        return True

    @property
    def is_ptr(self) -> bool:
        return self.elem.is_ptr

    @property
    def scalar(self) -> Type:
        return self.elem

    @property
    def shape(self) -> tuple[int, ...]:
        return self.dims


_SCALARS = {name: ScalarType(kind) for name, kind in dtypes.SCALARS.items()}


def scalar(name: str) -> ScalarType:
    """Scalar type by IR name (``f32``) or Triton name (``fp32``)."""
    return _SCALARS[dtypes.scalar(name).name]


def ptr(pointee: ScalarType | str) -> PointerType:
    if isinstance(pointee, str):
        pointee = scalar(pointee)
    return PointerType(pointee)


def block(elem: Type, shape) -> Type:
    """A block type; a block of rank 0 is the element type itself."""
    shape = tuple(int(d) for d in shape)
    if not shape:
        return elem
    return BlockType(elem.scalar, shape)


def with_elem(ty: Type, elem: Type) -> Type:
    """``ty`` with its element type replaced (keeps the shape)."""
    return block(elem, ty.shape)


i1, i32, i64, f32 = scalar("i1"), scalar("i32"), scalar("i64"), scalar("f32")

_TENSOR_RE = re.compile(r"^tensor<((?:\d+x)+)(.+)>$")


def parse_type(text: str) -> Type:
    """Inverse of ``str(type)``; raises ValueError on malformed text."""
    text = text.strip()
    m = _TENSOR_RE.match(text)
    if m:
        dims = tuple(int(d) for d in m.group(1).split("x") if d)
        return BlockType(parse_type(m.group(2)), dims)
    if text.startswith("ptr<") and text.endswith(">"):
        inner = parse_type(text[4:-1])
        if not isinstance(inner, ScalarType):
            raise ValueError(f"pointer to non-scalar type in {text!r}")
        return PointerType(inner)
    if text in _SCALARS:
        return _SCALARS[text]
    raise ValueError(f"unknown type {text!r}")
