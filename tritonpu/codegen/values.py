"""How the ISA emitter names a value: an immediate, a scalar register, or a UB tile view."""
from __future__ import annotations

import math
from dataclasses import dataclass

from tritonpu.npu.program import fmt_num


def asm_type(ty) -> str:
    """The ISA type suffix of an IR element type: masks are u8, pointers are i64 byte offsets."""
    s = ty.scalar
    if s.is_ptr:
        return "i64"
    name = str(s)
    return "u8" if name == "i1" else name


@dataclass(frozen=True)
class Imm:
    value: object

    def __str__(self) -> str:
        v = self.value
        if isinstance(v, bool):
            return "1" if v else "0"
        if isinstance(v, float):
            if math.isnan(v):
                return "nan"
            if math.isinf(v):
                return "inf" if v > 0 else "-inf"
        return fmt_num(v)


@dataclass(frozen=True)
class Reg:
    name: str            # "s5", or a scalar parameter's name

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Tile:
    """A view of UB: element (i0, i1, ..) is at ``addr + sum(i_d * strides[d]) * esize``."""
    addr: int
    dtype: str           # ISA type suffix
    shape: tuple
    strides: tuple
    esize: int
    space: str = "ub"    # ub, or l1 / l0c for cube operands and accumulators

    @staticmethod
    def dense(addr, dtype, shape, esize, space="ub") -> "Tile":
        strides, acc = [], 1
        for n in reversed(shape):
            strides.append(acc)
            acc *= n
        return Tile(addr, dtype, tuple(shape), tuple(reversed(strides)), esize, space)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes the view spans (for hazard ranges)."""
        if not self.shape:
            return self.esize
        last = sum((n - 1) * s for n, s in zip(self.shape, self.strides) if n > 0)
        return (last + 1) * self.esize

    def is_dense(self) -> bool:
        return self.strides == Tile.dense(0, "", self.shape, 1).strides or self.numel <= 1 or \
            all(s == d for n, s, d in zip(self.shape, self.strides, Tile.dense(0, "", self.shape, 1).strides) if n > 1)

    def with_(self, **kw) -> "Tile":
        d = dict(addr=self.addr, dtype=self.dtype, shape=self.shape, strides=self.strides, esize=self.esize,
                 space=self.space)
        d.update(kw)
        return Tile(**d)
