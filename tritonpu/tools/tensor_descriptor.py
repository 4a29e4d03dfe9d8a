"""``TensorDescriptor``: a tensor described on the host — base, shape, strides and the block shape a
kernel reads and writes it in — passed to a kernel as one argument, as Triton's
``triton.tools.tensor_descriptor.TensorDescriptor``.  Inside the kernel it is a
``tl.tensor_descriptor``: ``desc.load([i, j])``, ``desc.store([i, j], block)``."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TensorDescriptor:
    base: object                      # a numpy array, a torch tensor, ... (any array argument)
    shape: list
    strides: list                     # in elements; the last must be 1
    block_shape: list
    padding: str = field(default="zero")

    def __post_init__(self):
        self.shape, self.strides, self.block_shape = list(self.shape), list(self.strides), list(self.block_shape)
        r = len(self.block_shape)
        if not 1 <= r <= 5 or len(self.shape) != r or len(self.strides) != r:
            raise ValueError(f"TensorDescriptor: shape, strides and block_shape need one entry per dimension (1 to 5), "
                             f"got {len(self.shape)}, {len(self.strides)}, {r}")
        if self.strides[-1] != 1:
            raise ValueError(f"TensorDescriptor: the last stride must be 1, got {self.strides}")
        if self.padding not in ("zero", "nan"):
            raise ValueError(f"TensorDescriptor: padding must be 'zero' or 'nan', got {self.padding!r}")

    @staticmethod
    def from_tensor(tensor, block_shape, padding="zero") -> "TensorDescriptor":
        """A descriptor of the whole of ``tensor`` (numpy array or torch tensor)."""
        if hasattr(tensor, "stride") and callable(tensor.stride):
            strides = list(tensor.stride())
        else:
            strides = [s // tensor.itemsize for s in tensor.strides]
        return TensorDescriptor(tensor, list(tensor.shape), strides, list(block_shape), padding)
