"""A kernel reads the variables of the functions it is defined in (its closure) before its module's
globals, as Triton's ``get_capture_scope`` does: kernels made by a factory see the factory's values
and @jit helpers — a global of the same name used to win, silently."""
import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl

SCALE = tl.constexpr(1.0)


@tritonpu.jit
def act(x):
    return x * 2.0


def make_kernel():
    SCALE = tl.constexpr(10.0)

    @tritonpu.jit
    def act(x):
        return x * 3.0

    @tritonpu.jit
    def kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, act(tl.load(x_ptr + offs)) * SCALE)
    return kernel


def add_const(c):
    @tritonpu.jit
    def kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs) + c)
    return kernel


@pytest.mark.parametrize("backend", ["ref", "npu", "cpu"])
def test_a_factory_kernel_reads_its_closure_before_globals(backend):
    y = np.zeros(4, np.float32)
    make_kernel()[(1,)](np.ones(4, np.float32), y, BLOCK=4, backend=backend)
    assert y.tolist() == [30.0] * 4                    # the closure's act and SCALE (globals: 2.0)


@pytest.mark.parametrize("backend", ["ref", "npu", "cpu"])
def test_kernels_of_one_source_with_different_closures_compile_apart(backend):
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    add_const(5)[(1,)](x, y, BLOCK=4, backend=backend)
    assert y.tolist() == [6.0] * 4
    add_const(7)[(1,)](x, y, BLOCK=4, backend=backend)      # same source: the cache key has c
    assert y.tolist() == [8.0] * 4
