"""A launch that needs more on-chip memory than the NPU has: the CompilationError names the block,
its bytes, and a block size that fits, found by compiling (tritonpu/runtime/fit_hint.py)."""
import re

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.runtime import fit_hint


@tritonpu.jit
def running_sum(x_ptr, y_ptr, N: tl.constexpr):
    c = tl.arange(0, N)
    tl.store(y_ptr + c, tl.cumsum(tl.load(x_ptr + c), 0))


def test_the_error_names_a_size_that_fits():
    x = np.arange(32768, dtype=np.int32)
    y = np.zeros_like(x)
    with pytest.raises(tritonpu.CompilationError) as e:
        running_sum[(1,)](x, y, N=32768, backend="npu")
    msg = str(e.value)
    assert "a tensor<32768xi32> value (tensor<32768xi32>) alone takes 131072 bytes; use smaller blocks — it fits " \
           "with N=16384 (checked by compiling; the rest of the launch as given; a kernel whose one block must " \
           "span its data, a whole row, then needs a loop over blocks)" in msg
    assert msg.startswith(__file__.replace(".pyc", ".py"))        # still the kernel's own line
    running_sum[(1,)](x, y, N=16384, backend="npu")                 # and it does
    np.testing.assert_array_equal(y[:16384], np.cumsum(x[:16384]))


@tritonpu.jit
def fixed_block(x_ptr, y_ptr, N: tl.constexpr):
    c = tl.arange(0, 32768)
    tl.store(y_ptr + c, tl.cumsum(tl.load(x_ptr + c), 0))
    tl.store(y_ptr + tl.arange(0, N), tl.zeros((N,), tl.int32))


def test_when_no_block_parameter_helps_it_says_so(monkeypatch):
    x = np.arange(32768, dtype=np.int32)
    with pytest.raises(tritonpu.CompilationError, match=r"use smaller blocks — halving N one at a time \(2 compiles\) "
                                                        r"did not make it fit"):
        fixed_block[(1,)](x, np.zeros_like(x), N=4, backend="npu")


def test_the_search_is_bounded(monkeypatch):
    monkeypatch.setattr(fit_hint, "MAX_COMPILES", 1)
    x = np.arange(32768, dtype=np.int32)
    with pytest.raises(tritonpu.CompilationError, match=r"halving N one at a time \(1 compile\) did not make it fit"):
        fixed_block[(1,)](x, np.zeros_like(x), N=8, backend="npu")


@tritonpu.jit
def tile_sums(x_ptr, y_ptr, SEQ: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(y_ptr + r, tl.cumsum(tl.load(x_ptr + r), 1))
    tl.store(y_ptr + tl.arange(0, SEQ), tl.load(x_ptr + tl.arange(0, SEQ)))


def test_block_sizes_are_halved_first_and_together():
    """Two block sizes that only fit halved together (256x256 int32 tiles, two of them), beside a
    larger extent that is the problem's (SEQ) -- halving SEQ first used up the search."""
    x = np.arange(256 * 256, dtype=np.int32)
    with pytest.raises(tritonpu.CompilationError) as e:
        tile_sums[(1,)](x, np.zeros_like(x), SEQ=512, BM=256, BN=256, backend="npu")
    msg = str(e.value)
    assert re.search(r"use a smaller block size — it fits with (BM=128, BN=128|BN=128, BM=128) \(checked by compiling",
                     msg), msg
