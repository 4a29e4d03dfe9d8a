"""``tritonpu.runtime.driver`` (tritonpu/runtime/device.py): the device queries of Triton scripts,
answered with the preset machine — and the persistent grid they build from them fills its cores."""
import numpy as np

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
