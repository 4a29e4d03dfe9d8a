"""Kernels the profile tests launch (deterministic cycles), kept in a file of their own so that the
source lines the tests name do not move when the tests change."""
import numpy as np

import tritonpu
import tritonpu.language as tl


@tritonpu.jit
def twice_plus_one(x):
    return x * 2.0 + 1.0


@tritonpu.jit
def scale_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = twice_plus_one(x)
    tl.store(o_ptr + offs, y, mask=m)


LOAD_LINE, CALL_LINE, STORE_LINE, HELPER_LINE = 19, 20, 21, 11


def launch(programs=25, block=1024, **kw):
    x = np.arange(programs * block, dtype=np.float32)
    o = np.empty_like(x)
    h = scale_kernel[(programs,)](x, o, x.size, BLOCK=block, trace=True, **kw)
    np.testing.assert_array_equal(o, x * 2 + 1)
    return h
