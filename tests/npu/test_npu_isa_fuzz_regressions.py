"""Mutated programs the ISA fuzzer (``tritonpu.fuzz.isa``) found ending in a Python exception
wrapped in a launch error, or running for minutes; each must now end in a tritonpu error that
names the problem."""
from __future__ import annotations

import re
import time

import numpy as np
import pytest

from tritonpu.npu import AsmError, NpuError, assemble

ASM_ERRORS = {
    # `vmul.u64 ub[-0.0], ...`: a float address reached np.ndarray(offset=...) in the simulator
    "float address": (".gm x f32 [64]\n    vadd.f32 ub[0.5], ub[0], ub[256], 64\n", "an address must be a whole number"),
    "float stride": (".gm x f32 [64]\n    vadd.f32 ub[0, 2.5], ub[0], ub[256], 64\n", "a stride must be a whole number"),
    "float count": (".gm x f32 [64]\n    vcumsum.f32 ub[0], ub[256], 1e-45\n",
                    "operand cols of vcumsum must be a whole number"),
    "float segments": (".gm x f32 [64]\n    mov.gm.ub ub[0], x[0], 1.0, 256, 0, 0\n",
                       "operand nseg of mov.gm.ub must be a whole number"),
}


@pytest.mark.parametrize("name", list(ASM_ERRORS))
def test_float_addresses_sizes_and_strides_are_assembly_errors(name):
    text, message = ASM_ERRORS[name]
    with pytest.raises(AsmError, match=re.escape(message)):
        assemble(text)


RUN_ERRORS = {
    # `mul s33, s3, 0.5` then s33 as an address: a TypeError inside the simulator
    "float register as a vector address": (
        ".gm x f32 [64]\n    mov s1, 0.5\n    vadd.f32 ub[s1], ub[0], ub[256], 64\n",
        "address is 0.5"),
    "float register as a transfer offset": (
        ".gm x f32 [64]\n    mov s1, 4.0\n    mov.gm.ub ub[0], x[s1], 1, 64, 0, 0\n",
        "source_address is 4.0"),
    "float register as valid=": (
        ".gm x f32 [64]\n    mov s1, 3.5\n    mov.gm.ub.f32 ub[0], x[0], 1, 64, 0, 64, valid=s1, pad=0\n",
        "valid is 3.5"),
    "float register as a row count": (
        ".gm x f32 [64]\n    mov s1, 2.0\n    vadd.f32 ub[0], ub[0], ub[256], s1\n",
        "cols is 2.0"),
}


@pytest.mark.parametrize("name", list(RUN_ERRORS))
def test_float_registers_used_as_addresses_are_npu_errors(name):
    text, message = RUN_ERRORS[name]
    with pytest.raises(NpuError, match=re.escape(message)) as e:
        assemble(text).run({})
    assert "whole numbers" in str(e.value)


def test_a_transfer_repeating_itself_is_refused_before_it_runs():
    """vadd_double.s with its segment count replaced by a buffer's address (49152 segments of
    16 KiB, both strides 0: 805 MB through 16 KiB) ran for minutes; a transfer may move at most
    what its source and destination memories hold together."""
    text = (".gm x f32 [32768] init=random seed=1\n.buffer x1 ub 49152 16384\n"
            "    mov.gm.ub ub[0], x[0], x1, 16384, 0, 0\n")
    t0 = time.perf_counter()
    with pytest.raises(NpuError, match=r"the transfer moves 49152 segments of 16384 bytes \(805306368 bytes\), "
                                       r"more than its source and destination memories hold together"):
        assemble(text).run({})
    assert time.perf_counter() - t0 < 5


def test_transfers_within_their_memories_still_run():
    """A row broadcast (source stride 0) and a gather of repeated rows stay legal."""
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64 * 8, np.float32)
    text = (".param x gm f32\n.param y gm f32\n"
            "    mov.gm.ub ub[0], x[0], 8, 256, 0, 256\n"
            "    set_flag MTE2, MTE3, 0\n    wait_flag MTE2, MTE3, 0\n"
            "    mov.ub.gm y[0], ub[0], 1, 2048, 0, 0\n")
    assemble(text).run({"x": x, "y": y})
    np.testing.assert_array_equal(y, np.tile(x, 8))


def test_a_float_register_as_a_scalar_atomic_address_is_an_npu_error():
    """`satomic.add` at a GM offset held in a float register: a TypeError slicing GM before."""
    text = ".gm x i32 [16]\n    mov s1, 4.0\n    satomic.add.i32 s2, x[s1], 1\n"
    with pytest.raises(NpuError, match=re.escape("address is 4.0")):
        assemble(text).run({})


def test_a_vector_operand_larger_than_its_memory_is_refused():
    """A zero column stride let a 2^40-element operand pass the bounds check (it spans one
    element), then numpy refused the view ("Maximum allowed dimension exceeded")."""
    text = ".gm x f32 [16]\n    vadd.f32 ub[0, 0, 0], ub[0, 0, 0], ub[0, 0, 0], 1099511627776, rows=1099511627776\n"
    with pytest.raises(NpuError, match="more than UB holds"):
        assemble(text).run({})


def test_the_stride_of_a_single_row_is_ignored():
    """A row stride of 2^63 - 1 on a one-row operand made numpy refuse the view (a ValueError);
    the stride of a dimension of one element is never used."""
    text = (".gm y f32 [32]\n    vdup.f32 ub[0], 2.0, 32\n"
            "    vadd.f32 ub[256], ub[0, 9223372036854775807, 1], ub[0], 32\n"
            "    set_flag V, MTE3, 0\n    wait_flag V, MTE3, 0\n    mov.ub.gm y[0], ub[256], 1, 128, 0, 0\n")
    stats = assemble(text).run({})
    np.testing.assert_array_equal(stats.gm["y"], np.full(32, 4.0, np.float32))


def test_a_float_loop_bound_is_an_npu_error():
    """`for` with a float step: a TypeError at `endfor` (the 64-bit wrap of a float)."""
    text = ".gm x f32 [16]\n    mov s1, 1.5\n    for s0, 0, 4, s1\n    nop\n    endfor\n"
    with pytest.raises(NpuError, match=re.escape("step is 1.5")):
        assemble(text).run({})
