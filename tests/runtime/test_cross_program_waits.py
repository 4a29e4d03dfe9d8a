"""A program that waits for another one (a flag it sets): the NPU runs the programs side by side and
the wait ends; the ref and cpu backends run programs one after another, so the wait is stopped with
an error at the loop's line instead of hanging."""
import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.cpu import control
from tritonpu.ref import evaluator


@tritonpu.jit
def _flag_wait(data_ptr, flag_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if pid == 1:                                   # the producer runs after the consumer's program
        tl.store(data_ptr + offs, offs.to(tl.float32) * 2)
        tl.atomic_xchg(flag_ptr, 1)
    else:
        while tl.atomic_cas(flag_ptr, 1, 1) == 0:
            pass
        tl.store(out_ptr + offs, tl.load(data_ptr + offs) + 1)


@pytest.mark.parametrize("sanitize", [True, False])
def test_the_npu_runs_a_waiting_program_and_the_one_it_waits_for_side_by_side(sanitize):
    d, f, o = np.zeros(16, np.float32), np.zeros(1, np.int32), np.zeros(16, np.float32)
    _flag_wait[(2,)](d, f, o, BLOCK=16, sanitize=sanitize)    # sanitizer: the flag orders data
    np.testing.assert_array_equal(o, np.arange(16, dtype=np.float32) * 2 + 1)


@pytest.mark.parametrize("backend", ["ref", "cpu"])
def test_ref_and_cpu_stop_a_wait_for_a_later_program_at_its_line(backend, monkeypatch):
    monkeypatch.setattr(evaluator, "MAX_WHILE_TRIPS", 500)
    monkeypatch.setattr(control, "MAX_WHILE_TRIPS", 500)

    @tritonpu.jit
    def wait_here(data_ptr, flag_ptr, out_ptr, BLOCK: tl.constexpr):    # a kernel of its own: compiled
        pid = tl.program_id(0)                                          # with the low limit
        if pid == 1:
            tl.atomic_xchg(flag_ptr, 1)
        else:
            while tl.atomic_cas(flag_ptr, 1, 1) == 0:
                pass

    with pytest.raises(tritonpu.ExecutionError) as e:
        wait_here[(2,)](np.zeros(16, np.float32), np.zeros(1, np.int32), np.zeros(16, np.float32), BLOCK=16,
                        backend=backend)
    msg = str(e.value)
    assert f"the while loop ran 500 trips (an endless loop? the {backend} backend runs a launch's programs one " \
           "after another, so a program that waits for a flag or lock a later program sets waits forever; the " \
           "npu backend runs them side by side) (in 'while', program (0, 0, 0))" in msg
    assert "while tl.atomic_cas(flag_ptr, 1, 1) == 0:" in msg
