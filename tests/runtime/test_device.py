"""``tritonpu.runtime.driver`` (tritonpu/runtime/device.py): the device queries of Triton scripts,
answered with the preset machine — and the persistent grid they build from them fills its cores."""
import numpy as np
import pytest

import tritonpu as triton
import tritonpu.language as tl
from tritonpu.isa import machine
from tritonpu.runtime import driver


def test_device_properties_are_the_preset_machine():
    m = machine("ascend910b")
    props = driver.active.utils.get_device_properties(driver.active.get_current_device())
    assert props["multiprocessor_count"] == m.cores == 24
    assert props["max_shared_mem"] == m.capacity["ub"] == 192 * 1024
    assert props["warpSize"] == 1 and props["max_num_regs"] == 64
    target = triton.runtime.driver.active.get_current_target()
    assert (target.backend, target.arch, target.warp_size) == ("npu", "ascend910b", 1)


@triton.jit
def _rows_times_two(x_ptr, n_rows, N: tl.constexpr):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        offs = row * N + tl.arange(0, N)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)


def test_a_persistent_grid_of_num_sm_programs_uses_every_core():
    num_sm = driver.active.utils.get_device_properties(0)["multiprocessor_count"]
    x = np.arange(100 * 32, dtype=np.float32).reshape(100, 32)
    want = x * 2
    h = _rows_times_two[(min(num_sm, 100),)](x, 100, N=32)
    np.testing.assert_array_equal(x, want)
    assert h.stats.cores_used == 24 and len(h.stats.core_cycles) == 24


def test_the_tutorials_device_is_the_cpu_and_its_tensors_launch_in_place():
    """``DEVICE = triton.runtime.driver.active.get_active_torch_device()`` opens Triton's tutorials."""
    torch = __import__("pytest").importorskip("torch")
    device = triton.runtime.driver.active.get_active_torch_device()
    assert device == torch.device("cpu")
    x = torch.arange(2 * 32, dtype=torch.float32, device=device).reshape(2, 32)
    _rows_times_two[(2,)](x, 2, N=32)
    assert torch.equal(x, torch.arange(2 * 32, dtype=torch.float32).reshape(2, 32) * 2)


def test_next_power_of_2_is_tritons():
    assert [triton.next_power_of_2(n) for n in (-5, 0, 1, 2, 3, 5, 1024, 1025)] == [0, 0, 1, 2, 4, 8, 1024, 2048]


def test_the_driver_imports_as_a_module_and_answers_triton_ascends_keys():
    """`import triton.runtime.driver as driver` (a module in Triton) and the keys triton-ascend's host
    code reads for its grids (`num_aicore`, `num_vectorcore`) were missing."""
    import importlib
    mod = importlib.import_module("tritonpu.runtime.driver")
    props = mod.active.utils.get_device_properties(0)
    assert props["num_aicore"] == props["num_vectorcore"] == props["multiprocessor_count"] == 24
    assert mod.active.get_current_target().backend == "npu"


@triton.jit
def _constexpr_calls(x_ptr, o_ptr, BLOCK: tl.constexpr):
    NB: tl.constexpr = triton.cdiv(64, BLOCK)
    P2: tl.constexpr = triton.next_power_of_2(BLOCK + 1)
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    if x_ptr.dtype.element_ty == tl.float8e5:        # fp8 names exist to compare against
        x = x * 0
    tl.store(o_ptr + tl.arange(0, P2 // 2), x + NB)


@triton.constexpr_function
def _twice(n):
    return 2 * n


@triton.jit
def _user_constexpr_function(o_ptr, BLOCK: tl.constexpr):
    tl.store(o_ptr + tl.arange(0, _twice(BLOCK)), tl.full((_twice(BLOCK),), 7, tl.int32))


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_constexpr_functions_and_fp8_names_in_kernels(backend):
    """`triton.cdiv(M, BLOCK_M)` on constexprs inside a kernel was refused ('cannot call cdiv'), and
    comparing a dtype with tl.float8e5 failed (no such name)."""
    o = np.zeros(16, np.float32)
    _constexpr_calls[(1,)](np.ones(16, np.float32), o, BLOCK=16, backend=backend)
    np.testing.assert_array_equal(o, np.full(16, 1 + 4, np.float32))
    o2 = np.zeros(8, np.int32)
    _user_constexpr_function[(1,)](o2, BLOCK=4, backend=backend)
    assert (o2 == 7).all()
    assert tl.float8e5 != tl.float16 and tl.float8e5.is_fp8() and not tl.float16.is_fp8()
