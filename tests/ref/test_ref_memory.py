"""The reference evaluator's memory: faults name the array the pointer came from."""
import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl


@tritonpu.jit
def _shifted_copy(a_ptr, b_ptr, shift):
    offs = tl.arange(0, 16) + shift
    tl.store(b_ptr + offs, tl.load(a_ptr + offs))


@pytest.mark.parametrize("shift, offset", [(-3, -3), (5, 16)])
def test_out_of_bounds_names_the_source_array_and_offset(shift, offset):
    a, b, c = (np.zeros(16, np.float32) for _ in range(3))
    with pytest.raises(tritonpu.ExecutionError) as e:
        _shifted_copy[(1,)](a, b, shift, backend="ref")
    msg = str(e.value)
    assert f"out-of-bounds access to `a_ptr` at element offset {offset}" in msg
    assert "tl.store(b_ptr + offs, tl.load(a_ptr + offs))" in msg
    assert not b.any()


def test_in_bounds_copy_is_exact():
    a = np.arange(16, dtype=np.float32)
    b = np.zeros(16, np.float32)
    _shifted_copy[(1,)](a, b, 0, backend="ref")
    np.testing.assert_array_equal(a, b)


@tritonpu.jit
def full_kernel(O, V: tl.constexpr, BLOCK: tl.constexpr, DT: tl.constexpr):
    tl.store(O + tl.arange(0, BLOCK), tl.full([BLOCK], V, DT))


@pytest.mark.parametrize("value,dt,np_dt,want", [(-1, tl.uint32, np.uint32, 4294967295), (255, tl.int8, np.int8, -1),
                                                 (3000000000, tl.int32, np.int32, -1294967296)])
def test_an_integer_constant_the_type_cannot_hold_wraps_on_every_backend(value, dt, np_dt, want):
    """The reference backend raised numpy's OverflowError (no kernel line); NPU and CPU wrap."""
    for backend in ("ref", "cpu", "npu"):
        o = np.zeros(8, np_dt)
        full_kernel[(1,)](o, V=value, BLOCK=8, DT=dt, backend=backend)
        np.testing.assert_array_equal(o, np.full(8, want, np_dt), err_msg=backend)
