"""Bool memory, as Triton reads it: a bool is loaded as int8 and compared with 0, so a byte other
than 0 or 1 (a numpy bool array made by ``.view(np.bool_)`` of uint8 data) is true, and what a
kernel computes or stores from it is 0 or 1 (``semantic.load``)."""
from __future__ import annotations

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl


@tritonpu.jit
def bool_kernel(b_ptr, o_ptr, s_ptr, c_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    b = tl.load(b_ptr + offs)
    tl.store(o_ptr + offs, b.to(tl.int32))
    tl.store(s_ptr + tl.arange(0, 1), tl.reshape(tl.sum(b.to(tl.int32), axis=0, keep_dims=True), (1,)))
    tl.store(c_ptr + offs, b)                           # copied: 0 or 1
    m = tl.load(b_ptr + offs, mask=offs < 6, other=True)
    tl.store(o_ptr + N + offs, (m * 3).to(tl.int32))
    bp = tl.make_block_ptr(b_ptr, (N,), (1,), (0,), (N,), (0,))
    tl.store(o_ptr + 2 * N + offs, tl.load(bp).to(tl.int32))


@pytest.mark.parametrize("backend", ["ref", "npu", "cpu"])
def test_bool_bytes_other_than_0_and_1_load_as_true(backend):
    raw = np.array([0, 1, 2, 255, 128, 0, 3, 1], np.uint8)
    o = np.zeros(24, np.int32)
    s = np.zeros(1, np.int32)
    c = np.zeros(8, np.bool_)
    bool_kernel[(1,)](raw.view(np.bool_), o, s, c, N=8, backend=backend)
    truth = (raw != 0).astype(np.int32)
    assert o[:8].tolist() == truth.tolist()
    assert o[8:16].tolist() == (3 * np.where(np.arange(8) < 6, truth, 1)).tolist()
    assert o[16:].tolist() == truth.tolist()
    assert s[0] == 6
    assert c.view(np.uint8).tolist() == truth.tolist()


@tritonpu.jit
def bool_reduce_kernel(x_ptr, o_ptr, N: tl.constexpr):
    m = tl.load(x_ptr + tl.arange(0, N)) > 0
    tl.store(o_ptr, tl.sum(m, axis=0))                    # Triton: uint32, a count
    tl.store(o_ptr + 1, tl.max(m, axis=0).to(tl.int32))
    tl.store(o_ptr + 2, tl.min(m, axis=0).to(tl.int32))
    tl.store(o_ptr + 3, tl.argmax(m, axis=0))             # the first true
    tl.store(o_ptr + 4, tl.argmin(m, axis=0))             # the first false
    v, i = tl.max(m, axis=0, return_indices=True)
    tl.store(o_ptr + 5, v.to(tl.int32) * 10 + i)


@pytest.mark.parametrize("backend", ["ref", "npu", "cpu"])
def test_reductions_of_bool_blocks(backend):
    x = np.array([-1, -1, 2, 3, -4, 5, 6, 7], np.float32)
    out = np.zeros(6, np.int64)
    bool_reduce_kernel[(1,)](x, out, N=8, backend=backend)
    assert out.tolist() == [5, 1, 0, 2, 0, 12]
