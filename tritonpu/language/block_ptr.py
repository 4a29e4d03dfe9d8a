"""Block pointers: ``tl.make_block_ptr``, ``tl.advance`` and ``tl.load``/``tl.store`` through them.

A block pointer is a compile-time record of scalar tensors — the base pointer, the parent tensor's
shape and strides, the block's offsets — and the block's shape and dimension order.  Loads and
stores through it are ordinary pointer-block accesses: ``base + sum_d (offset_d + arange(B_d)) *
stride_d``, masked by ``0 <= index_d < shape_d`` on the dimensions in ``boundary_check``
(``padding_option`` "zero" or "nan" gives the fill; the default is zero), exactly Triton's meaning.
Loops carry a block pointer as its scalar parts (see ``leaves`` / ``from_leaves``).
"""
from __future__ import annotations

from dataclasses import dataclass

from tritonpu.language import core as tl
from tritonpu.language import semantic as S
from tritonpu.language.core import SemanticError, tensor


@dataclass
class block_ptr:
    base: tensor
    shape: list
    strides: list
    offsets: list
    block_shape: tuple
    order: tuple

    # loops carry block pointers as their scalar parts
    def leaves(self) -> list:
        return [self.base] + list(self.shape) + list(self.strides) + list(self.offsets)

    def from_leaves(self, leaves: list) -> "block_ptr":
        r = len(self.block_shape)
        return block_ptr(leaves[0], leaves[1:1 + r], leaves[1 + r:1 + 2 * r], leaves[1 + 2 * r:1 + 3 * r],
                         self.block_shape, self.order)

    @property
    def dtype(self):
        return self.base.dtype

    @tl.builtin
    def advance(self, offsets) -> "block_ptr":
        """``ptr.advance(offsets)``: Triton's member form of :func:`advance`."""
        return advance(self, offsets)


def _scalars(values, what, dt) -> list:
    out = []
    for v in values:
        t = S.to_tensor(tl._unwrap(v))
        if t.ty.is_block or not t.dtype.is_int():
            raise SemanticError(f"tl.make_block_ptr: {what} must be integer scalars, got {t.ty}")
        out.append(S.cast(t, dt))
    return out


def make_block_ptr(base, shape, strides, offsets, block_shape, order) -> block_ptr:
    base = S.to_tensor(tl._unwrap(base))
    if not base.dtype.is_ptr() or base.ty.is_block:
        raise SemanticError(f"tl.make_block_ptr: base must be a scalar pointer, got {base.ty}")
    block_shape = tuple(int(tl._unwrap(b)) for b in block_shape)
    r = len(block_shape)
    if not (len(shape) == len(strides) == len(offsets) == r):
        raise SemanticError(f"tl.make_block_ptr: shape, strides and offsets need {r} entries (one per block "
                            f"dimension), got {len(shape)}, {len(strides)}, {len(offsets)}")
    try:
        S.check_shape(block_shape)
    except SemanticError as e:
        raise SemanticError(f"tl.make_block_ptr: block {e}") from None
    order = tuple(int(tl._unwrap(o)) for o in order)
    return block_ptr(base, _scalars(shape, "shape", tl.int64), _scalars(strides, "strides", tl.int64),
                     _scalars(offsets, "offsets", tl.int32), block_shape, order)


def advance(ptr: block_ptr, offsets) -> block_ptr:
    if not isinstance(ptr, block_ptr):
        raise SemanticError("tl.advance needs a block pointer (from tl.make_block_ptr)")
    if len(offsets) != len(ptr.offsets):
        raise SemanticError(f"tl.advance: {len(ptr.offsets)} offsets expected, got {len(offsets)}")
    new = [S.cast(S.add(o, S.cast(S.to_tensor(tl._unwrap(d)), tl.int32)), tl.int32)
           for o, d in zip(ptr.offsets, _scalars(offsets, "offsets", tl.int32))]
    return block_ptr(ptr.base, ptr.shape, ptr.strides, new, ptr.block_shape, ptr.order)


def _index(ptr: block_ptr, d: int) -> tensor:
    """offset_d + arange(B_d), shaped to broadcast along dimension d."""
    r = len(ptr.block_shape)
    idx = S.add(S.arange(0, ptr.block_shape[d]), ptr.offsets[d])
    for axis in range(r):
        if axis < d:
            idx = S.expand_dims(idx, 0)
        elif axis > d:
            idx = S.expand_dims(idx, axis)
    return idx


def pointers_and_mask(ptr: block_ptr, boundary_check, what: str):
    """(block of pointers, mask or None) of the block ``ptr`` addresses."""
    r = len(ptr.block_shape)
    checks = tuple(int(tl._unwrap(c)) for c in (boundary_check or ()))
    for c in checks:
        if not 0 <= c < r:
            raise SemanticError(f"{what}: boundary_check dimension {c} out of range for a rank-{r} block")
    offs, mask = None, None
    for d in range(r):
        idx = _index(ptr, d)
        term = S.mul(S.cast(idx, tl.int64), ptr.strides[d])
        offs = term if offs is None else S.add(offs, term)
        if d in checks:
            ok = S.logical_and(S.compare(idx, 0, "ge"), S.compare(S.cast(idx, tl.int64), ptr.shape[d], "lt"))
            mask = ok if mask is None else S.logical_and(mask, ok)
    offs = S.broadcast_to_shape(offs, ptr.block_shape)
    if mask is not None:
        mask = S.broadcast_to_shape(mask, ptr.block_shape)
    return S.add(ptr.base, offs), mask


def fill_value(ptr: block_ptr, padding_option: str):
    if padding_option in ("", "zero", None):
        return 0
    if padding_option == "nan":
        if not ptr.dtype.element_ty.is_floating():
            raise SemanticError("tl.load: padding_option='nan' needs a floating-point block")
        return float("nan")
    raise SemanticError(f"tl.load: padding_option must be '', 'zero' or 'nan', got {padding_option!r}")
