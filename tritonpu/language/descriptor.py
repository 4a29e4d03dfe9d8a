"""Tensor descriptors: ``tl.make_tensor_descriptor`` and ``desc.load`` / ``desc.store`` /
``desc.atomic_*``, with Triton's meaning.

A descriptor is a block pointer without an offset of its own: ``desc.load([i, j])`` reads the
``block_shape`` block whose corner is at ``(i, j)`` of the described tensor, elements outside
``shape`` read as zero (``padding_option="nan"``: NaN); ``desc.store`` writes only the elements
inside ``shape``.  So they are exactly the block pointer accesses of :mod:`.block_ptr` with every
dimension boundary-checked — the same IR, the same tile transfers on the NPU.  A descriptor passed
from the host (:class:`tritonpu.tools.tensor_descriptor.TensorDescriptor`) arrives as its base
pointer, shape and strides (runtime scalars) and its block shape (a compile-time constant).
Loops carry descriptors as their scalar parts, like block pointers.
"""
from __future__ import annotations

from tritonpu.language import block_ptr as BP
from tritonpu.language import core as tl
from tritonpu.language import memory as M
from tritonpu.language import semantic as S
from tritonpu.language.core import SemanticError


class tensor_descriptor(BP.block_ptr):
    """``base``/``shape``/``strides`` as scalars; ``block_shape`` constant; offsets unused (zero)."""

    padding = "zero"

    def from_leaves(self, leaves):
        d = super().from_leaves(leaves)
        return _descriptor(d.base, d.shape, d.strides, d.offsets, d.block_shape, self.padding)

    @property
    def dtype(self):                      # Triton: the element type (a block pointer's is the pointer type)
        return self.base.dtype.element_ty

    @property
    def block_type(self):
        return tl.block_type(self.dtype, list(self.block_shape))

    def _at(self, offsets, what):
        r = len(self.block_shape)
        offsets = list(tl._unwrap(offsets)) if isinstance(tl._unwrap(offsets), (list, tuple)) else [offsets]
        if len(offsets) != r:
            raise SemanticError(f"{what}: a rank-{r} descriptor takes {r} offsets, got {len(offsets)}")
        ptr = BP.block_ptr(self.base, self.shape, self.strides, BP._scalars(offsets, "offsets", tl.int32),
                           self.block_shape, self.order)
        return BP.pointers_and_mask(ptr, tuple(range(r)), what)

    @tl.builtin
    def load(self, offsets):
        ptrs, mask = self._at(offsets, "desc.load")
        fill = float("nan") if self.padding == "nan" else 0
        return M.load(ptrs, mask, fill, "", "", False)

    @tl.builtin
    def store(self, offsets, value):
        ptrs, mask = self._at(offsets, "desc.store")
        value = S.to_tensor(tl._unwrap(value))
        if value.ty.is_block and value.shape != list(self.block_shape):
            raise SemanticError(f"desc.store: the value's shape {value.shape} is not the descriptor's block shape "
                                f"{list(self.block_shape)}")
        return M.store(ptrs, value, mask, "", "")

    def _atomic(self, kind, offsets, value):
        ptrs, mask = self._at(offsets, f"desc.atomic_{kind}")
        return M.atomic_rmw(kind, ptrs, value, mask, None, None)

    @tl.builtin
    def atomic_add(self, offsets, value):
        return self._atomic("add", offsets, value)

    @tl.builtin
    def atomic_min(self, offsets, value):
        return self._atomic("min", offsets, value)

    @tl.builtin
    def atomic_max(self, offsets, value):
        return self._atomic("max", offsets, value)

    @tl.builtin
    def atomic_and(self, offsets, value):
        return self._atomic("and", offsets, value)

    @tl.builtin
    def atomic_or(self, offsets, value):
        return self._atomic("or", offsets, value)

    @tl.builtin
    def atomic_xor(self, offsets, value):
        return self._atomic("xor", offsets, value)


def _descriptor(base, shape, strides, offsets, block_shape, padding):
    d = tensor_descriptor(base, list(shape), list(strides), list(offsets), tuple(block_shape),
                          tuple(reversed(range(len(block_shape)))))
    d.padding = padding
    return d


def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero") -> tensor_descriptor:
    """Triton's ``tl.make_tensor_descriptor``: the last stride must be 1 (as for a TMA descriptor)."""
    base = S.to_tensor(tl._unwrap(base))
    if not base.dtype.is_ptr() or base.ty.is_block:
        raise SemanticError(f"tl.make_tensor_descriptor: base must be a scalar pointer, got {base.ty}")
    shape, strides = list(tl._unwrap(shape)), list(tl._unwrap(strides))
    block_shape = [int(tl._unwrap(b)) for b in tl._unwrap(block_shape)]
    r = len(block_shape)
    if not 1 <= r <= 5 or len(shape) != r or len(strides) != r:
        raise SemanticError(f"tl.make_tensor_descriptor: shape, strides and block_shape need one entry per dimension "
                            f"(1 to 5), got {len(shape)}, {len(strides)}, {r}")
    if not (isinstance(tl._unwrap(strides[-1]), int) and tl._unwrap(strides[-1]) == 1):
        raise SemanticError("tl.make_tensor_descriptor: the last stride must be the constant 1 (the block's rows are "
                            "contiguous)")
    padding_option = tl._unwrap(padding_option)
    if padding_option not in ("zero", "nan"):
        raise SemanticError(f"tl.make_tensor_descriptor: padding_option must be 'zero' or 'nan', got {padding_option!r}")
    if padding_option == "nan" and not base.dtype.element_ty.is_floating():
        raise SemanticError("tl.make_tensor_descriptor: padding_option='nan' needs a floating-point tensor")
    try:
        S.check_shape(block_shape)
    except SemanticError as e:
        raise SemanticError(f"tl.make_tensor_descriptor: block {e}") from None
    zeros = [S.to_tensor(0)] * r
    return _descriptor(base, BP._scalars(shape, "shape", tl.int64), BP._scalars(strides, "strides", tl.int64),
                       BP._scalars(zeros, "offsets", tl.int32), block_shape, padding_option)


class host_descriptor_param:
    """How a host ``TensorDescriptor`` argument specializes a kernel: its element and index types
    and its block shape are compiled in; its base pointer, shape and strides (but the last, which
    is 1) arrive as runtime arguments ``{name}_base``, ``{name}_shape{d}``, ``{name}_stride{d}``."""

    def __init__(self, base_type, shape_types, stride_types, block_shape, padding):
        self.base_type, self.shape_types, self.stride_types = base_type, list(shape_types), list(stride_types)
        self.block_shape, self.padding = tuple(block_shape), padding

    def __str__(self):
        return (f"tensordesc<{self.base_type}, {list(self.block_shape)}, {self.padding}, "
                f"{[str(t) for t in self.shape_types]}, {[str(t) for t in self.stride_types]}>")

    def arg_names(self, name: str) -> list[str]:
        r = len(self.block_shape)
        return [f"{name}_base"] + [f"{name}_shape{d}" for d in range(r)] + [f"{name}_stride{d}" for d in range(r - 1)]

    def arg_types(self) -> list:
        return [self.base_type] + self.shape_types + self.stride_types

    def build(self, args: list) -> tensor_descriptor:
        """The descriptor over the kernel's runtime arguments ``args`` (tensors, in ``arg_names`` order)."""
        r = len(self.block_shape)
        base, shape, strides = args[0], args[1:1 + r], args[1 + r:] + [S.to_tensor(1)]
        return _descriptor(base, BP._scalars(shape, "shape", tl.int64), BP._scalars(strides, "strides", tl.int64),
                           BP._scalars([S.to_tensor(0)] * r, "offsets", tl.int32), self.block_shape, self.padding)
