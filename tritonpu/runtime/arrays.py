"""What a pointer argument binds to: a numpy array over the caller's memory, never a copy.

Guarantees:

* numpy arrays, torch tensors (CPU, any dtype tritonpu has — bfloat16 included — with or without
  ``requires_grad``) and objects with the DLPack or buffer protocol become a numpy array over the
  same memory; the kernel's stores write through to the caller's object;
* a non-contiguous view — a slice, a step, a transpose, ``as_strided``, a broadcast — binds the
  contiguous span of memory from its first element to its last, as a GPU sees it: the pointer is
  the view's first element and the kernel's own strides address the rest.  An access outside
  that span is an out-of-bounds error (stricter than the whole allocation, never looser);
* what cannot be bound that way is refused with a :class:`LaunchError` that says what would work
  (negative strides, strides that are not a multiple of the element size, tensors on other
  devices, dtypes tritonpu lacks).
"""
from __future__ import annotations

import sys

import numpy as np

from tritonpu.errors import LaunchError


def as_array(value, name: str = "argument") -> np.ndarray | None:
    """numpy array over ``value``'s memory (None when ``value`` is not an array at all); a subclass
    of ndarray (np.memmap) as a plain ndarray over the same memory; a masked array is refused."""
    if isinstance(value, np.ndarray):
        if type(value) is np.ndarray:
            return value
        if isinstance(value, np.ma.MaskedArray):
            raise LaunchError(f"{name} is a numpy masked array: a kernel reads and writes every element "
                              "whatever its mask says; pass its .data (or .filled(value))")
        return value.view(np.ndarray)
    if _is_torch_tensor(value):
        return _from_torch(value, name)
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except (TypeError, RuntimeError, BufferError):
            pass
    if not isinstance(value, (bytes, str, int, float, bool)):
        try:
            mv = memoryview(value)
        except TypeError:
            return None
        return np.asarray(mv)
    return None


def gm_span(arr: np.ndarray, name: str) -> np.ndarray:
    """The contiguous 1-D span of memory ``arr`` covers, starting at its first element (``arr``
    itself when it is C-contiguous)."""
    if arr.flags.c_contiguous:
        return arr
    item = arr.dtype.itemsize
    dims = [(n, s) for n, s in zip(arr.shape, arr.strides) if n > 1]
    if any(s < 0 for _, s in dims):
        raise LaunchError(f"argument `{name}` is a view with negative strides {arr.strides}: its first element "
                          "is not its lowest address; pass a copy (np.ascontiguousarray, .contiguous())")
    if any(s % item for _, s in dims):
        raise LaunchError(f"argument `{name}` has strides {arr.strides} that are not multiples of its "
                          f"{item}-byte elements; pass a copy (np.ascontiguousarray)")
    if arr.size == 0:
        return arr.reshape(-1)
    extent = sum((n - 1) * s for n, s in dims) // item + 1
    return np.lib.stride_tricks.as_strided(arr, shape=(extent,), strides=(item,))


def _is_torch_tensor(value) -> bool:
    torch = sys.modules.get("torch")          # never imported here: a tensor implies torch is loaded
    return torch is not None and isinstance(value, torch.Tensor)


def _from_torch(t, name: str) -> np.ndarray:
    import torch
    if t.device.type != "cpu":
        raise LaunchError(f"argument `{name}` is a tensor on {t.device}; the virtual NPU reads host memory: "
                          "pass tensor.cpu()")
    t = t.detach()                            # same memory; DLPack refuses tensors that need grad
    if t.dtype == torch.bfloat16:             # DLPack's numpy side has no bfloat16: view the bits
        import ml_dtypes
        return np.from_dlpack(t.view(torch.int16)).view(ml_dtypes.bfloat16)
    try:
        return np.from_dlpack(t)
    except (TypeError, RuntimeError, BufferError) as e:
        raise LaunchError(f"argument `{name}` has dtype {t.dtype}, which tritonpu does not support ({e})") from None
