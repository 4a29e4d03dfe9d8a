"""Where Triton's float operations look at bits, not values (signed zeros and NaNs):

* ``tl.atomic_cas`` compares bits: -0.0 does not match 0.0, a NaN matches its own bits;
* ``tl.atomic_max`` / ``tl.atomic_min`` on fp32/fp64 work on the bits (signed integer max where
  the value's sign bit is clear, unsigned min where it is set; min the other way round), so +0
  is above -0 and a positive NaN above every number;
* ``tl.maximum`` / ``tl.minimum`` / ``tl.clamp`` with ``propagate_nan=tl.PropagateNan.ALL`` are
  ``llvm.maximum`` / ``minimum``: a NaN wins and -0.0 < +0.0.
Expected values are Triton's, written out; every backend must give them bit for bit.
"""
from __future__ import annotations

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl

BACKENDS = ["ref", "npu", "cpu"]
NAN = float("nan")


def bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b, a.dtype)
    return a.tobytes() == b.tobytes()


@tritonpu.jit
def minmax_kernel(p_ptr, q_ptr, v_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    v = tl.load(v_ptr + offs)
    tl.store(o_ptr + offs, tl.atomic_max(p_ptr + offs, v))
    tl.atomic_min(q_ptr + offs, v, mask=offs < N - 1)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_float_atomic_max_min_order_bits(backend, dt):
    mem = np.array([-0.0, 0.0, 1.0, NAN, 1.0, -2.0, 3.0, -1.0], dt)
    v = np.array([0.0, -0.0, NAN, 1.0, -NAN, -3.0, 2.0, 5.0], dt)
    p, q, old = mem.copy(), mem.copy(), np.zeros(8, dt)
    minmax_kernel[(1,)](p, q, v, old, N=8, backend=backend)
    assert bits_equal(p, [0.0, 0.0, NAN, NAN, 1.0, -2.0, 3.0, 5.0])
    assert bits_equal(q, [-0.0, -0.0, 1.0, 1.0, -NAN, -3.0, 2.0, -1.0])
    assert bits_equal(old, mem)


@tritonpu.jit
def cas_kernel(p_ptr, c_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(o_ptr + offs, tl.atomic_cas(p_ptr + offs, tl.load(c_ptr + offs), tl.full((N,), 5.0, tl.float32)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_atomic_cas_on_floats_compares_bits(backend):
    mem = np.array([0.0, -0.0, NAN, 1.0], np.float32)
    p, old = mem.copy(), np.zeros(4, np.float32)
    cas_kernel[(1,)](p, np.array([-0.0, 0.0, NAN, 1.0], np.float32), old, N=4, backend=backend)
    assert bits_equal(p, [0.0, -0.0, 5.0, 5.0])
    assert bits_equal(old, mem)


@tritonpu.jit
def propagate_kernel(x_ptr, y_ptr, mx_ptr, mn_ptr, cl_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(mx_ptr + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(mn_ptr + offs, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(cl_ptr + offs, tl.clamp(x, y, y + 1, propagate_nan=tl.PropagateNan.ALL))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_propagate_nan_all_orders_signed_zeros(backend, dt):
    x = np.array([-0.0, 0.0, 1.0, NAN, 2.0, -0.0], dt)
    y = np.array([0.0, -0.0, 1.0, 2.0, NAN, -0.0], dt)
    mx, mn, cl = (np.zeros(6, dt) for _ in range(3))
    propagate_kernel[(1,)](x, y, mx, mn, cl, N=6, backend=backend)
    assert bits_equal(mx, [0.0, 0.0, 1.0, NAN, NAN, -0.0])
    assert bits_equal(mn, [-0.0, -0.0, 1.0, NAN, NAN, -0.0])
    assert bits_equal(cl, [0.0, 0.0, 1.0, NAN, NAN, -0.0])


@tritonpu.jit
def tile_max_kernel(x_ptr, o_ptr, idx_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.atomic_max(o_ptr + tl.arange(0, N), x)                     # a tile: one atomic-mode transfer
    tl.atomic_min(o_ptr + N + tl.load(idx_ptr + tl.arange(0, N)), x)   # scattered, indices repeat


@pytest.mark.parametrize("backend", BACKENDS)
def test_tile_and_scattered_float_atomics_order_bits_and_stay_transfers(backend):
    x = np.array([[-0.0, 1.0, NAN, -2.0], [0.0, -NAN, 3.0, -0.0]], np.float32)
    o = np.full(8, -0.0, np.float32)
    o[4:] = 0.0
    h = tile_max_kernel[(2,)](x.reshape(-1), o, np.array([0, 0, 1, 1], np.int32), N=4, backend=backend)
    assert bits_equal(o[:4], [0.0, 1.0, NAN, -0.0])               # per position, over both programs
    # min into positions 4, 4, 5, 5: a negative NaN is below every number; 6 and 7 untouched
    assert bits_equal(o[4:], [-NAN, -2.0, 0.0, 0.0])
    if backend == "npu":                                            # (not 200-cycle scalar atomics)
        assert "atomic=max" in h.asm["isa"] and "satomic" not in h.asm["isa"]
