"""Triton's standard-library helpers written in the language itself: ``tl.swizzle2d``,
``tl.xor_sum``.
(Imported on first use, like ``random.py``: ``@jit`` needs the runtime.)"""
import tritonpu.language as tl
from tritonpu.runtime.jit import jit


@jit
def swizzle2d(i, j, size_i, size_j, size_g):
    """Where element (i, j) of a row-major size_i x size_j grid goes when each band of ``size_g``
    rows is read column-major (the last band may be shorter): returns (new_i, new_j). Matmul
    kernels use it to visit output tiles band by band, for L2 reuse."""
    linear = i * size_j + j
    band_size = size_g * size_j
    first_row = (linear // band_size) * size_g
    rows = tl.minimum(size_i - first_row, size_g)       # the last band may be shorter
    in_band = linear % band_size
    return first_row + in_band % rows, in_band // rows


@jit
def _xor(a, b):
    return a ^ b


@jit
def xor_sum(input, axis=None, keep_dims: tl.constexpr = False):
    """The xor of the elements along ``axis`` (all of them for None), integers only."""
    return tl.reduce(input, axis, _xor, keep_dims=keep_dims)
