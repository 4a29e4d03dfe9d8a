"""The virtual NPU's two engines: the translating engine (default) against the reference one.

The whole suite runs with either (``TRITONPU_NPU_ENGINE=interpret|translate``) and, as the
differential test, with ``TRITONPU_NPU_ENGINE=check`` (every launch on both, everything compared:
``npu/engines.py``). These tests pin what each part guarantees: the translation's text, the
check catching a wrong translation, identical errors and pause points, the choice of engine.
"""
from __future__ import annotations

import numpy as np
import pytest

from tritonpu.isa import machine
from tritonpu.npu import assemble, launch as L, translate
from tritonpu.npu.engines import EngineMismatch
from tritonpu.npu.errors import LaunchError, OutOfBoundsError
from tritonpu.npu.state import State

LOOP = """\
.param x gm i32
.param n i32
    mov s0, 0
    for s1, 0, n, 1
      add s0, s0, s1
      mul s2, s0, 3
      div s3, s2, -2
      cvt.i8 s4, s3
    endfor
    sst.i32 ub[0], s0
    sst.i32 ub[4], s3
    sst.i32 ub[8], s4
    set_flag S, MTE3, 0
    wait_flag S, MTE3, 0
    mov.ub.gm.i32 x[0], ub[0], 1, 12, 0, 0
"""


def _source(text, sanitize=False, trace=False):
    prog = assemble(text)
    st = State(prog, machine("ascend910b"), sanitize, trace)
    return translate.source(prog, st, L._gm_reads(prog))[0]


def test_scalar_instructions_are_written_out_and_others_call_their_closure():
    src = _source(LOOP)
    # add s0, s0, s1: the registers, int64 wrapping, no call; the loop's end in line
    assert "    x = a + b\n" in src and "R[0] = x if -9223372036854775808 <= x <= 9223372036854775807 else w64(x)" in src
    assert "R[3] = int_div(a, b)" in src                      # div: the reference's own function
    assert "R[4] = a if type(a) is int and -128 <= a <= 127 else to_type(a, dt" in src
    assert "end, step = loop1" in src                          # endfor: the cell its for fills
    assert "r = F[1]()" in src                                 # for: its closure (bound checks)
    # the transfer (ub -> gm, whole segments): written out, its closure only when the test fails
    assert ".add(da, da + seg)" in src and "dbuf[da:da + seg] = sbuf[sa:sa + seg]" in src
    assert "    F[12]()\n" in src and "r = F[12]()" not in src
    san = _source(LOOP, sanitize=True)      # with the sanitizer: its records made in line too
    assert "race.access(" in san and "GMR.access(st, " in san and "r = F[12]()" not in san
    assert "F[3]()" not in src and "F[4]()" not in src         # mul, div: written out
    # the scalar unit's clock is settled before code that reads it, not per instruction
    assert "RVC[" not in src and "TR.append" not in src
    assert "RVC[0][0] += 1" in san          # race.issue(S), in line
    assert "TR.append((st.core, 0, (ts + 3), 1, 5, st.gpid))" in _source(LOOP, trace=True)   # cvt: 3 after add


@pytest.mark.parametrize("sanitize", [False, True])
@pytest.mark.parametrize("trace", [False, True])
def test_both_engines_give_the_same_results_statistics_and_trace(sanitize, trace):
    prog = assemble(LOOP)
    out = {}
    for engine in ("interpret", "translate"):
        x = np.zeros(3, np.int32)
        st = L.launch(prog, {"x": x, "n": 1000}, sanitize=sanitize, trace=trace, engine=engine)
        out[engine] = (x.tolist(), st.cycles, st.pipe_busy, st.instr_count, st.stalls, st._trace)
    assert out["interpret"] == out["translate"]
    s0 = sum(range(1000))
    assert out["translate"][0][:2] == [s0, int(-(s0 * 3 / 2))]      # C division, toward zero


def test_the_check_catches_a_translation_that_computes_a_different_value(monkeypatch):
    from tritonpu.npu import translate_scalar
    prog = assemble(LOOP)
    L.launch(prog, {"x": np.zeros(3, np.int32), "n": 10}, engine="check")      # agrees

    def wrong(inst, E):             # mul computes a + b
        lines, branches = translate_scalar._sint(inst, E)
        return [ln.replace("a * b", "a + b") for ln in lines], branches
    monkeypatch.setitem(translate.TRANSLATORS, "sint", wrong)
    prog = assemble(LOOP)           # a fresh program: translations are kept per program
    with pytest.raises(EngineMismatch, match=r"the NPU engines disagree on argument 'x'"):
        L.launch(prog, {"x": np.zeros(3, np.int32), "n": 10}, engine="check")


def test_errors_name_the_same_instruction_core_and_program():
    text = ".param x gm i32\n    mov s1, 8\n    add s2, s1, s1\n    sld.i32 s3, ub[s2+300000]\n"
    msgs = []
    for engine in ("interpret", "translate"):
        with pytest.raises(OutOfBoundsError) as e:
            L.launch(assemble(text), {"x": np.zeros(1, np.int32)}, grid=(3,), engine=engine)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "at line 4" in msgs[1]


def test_an_endless_loop_stops_at_max_steps_on_both_engines():
    text = "top:\n    add s1, s1, 1\n    jmp top\n"
    msgs = []
    for engine in ("interpret", "translate"):
        with pytest.raises(LaunchError, match="program ran more than 1000 instructions") as e:
            L.launch(assemble(text), {}, max_steps=1000, engine=engine)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_a_relaunch_records_the_on_chip_high_water_marks_again():
    """Found by the differential check: a relaunch reusing the decoding skipped the operand checks
    that record how much of each on-chip memory the program used (the profile's UB figure)."""
    prog = assemble("    vadd.f32 ub[0], ub[512], ub[1024], 100, rows=3\n")
    highs = [L.launch(prog, {}, trace=True, engine="interpret")._records.high for _ in range(2)]
    assert highs == [{"ub": 2224}, {"ub": 2224}]


def test_the_engine_is_chosen_by_option_or_environment(monkeypatch):
    monkeypatch.setenv("TRITONPU_NPU_ENGINE", "interpret")
    assert L.engine_choice() == "interpret" and L.engine_choice("check") == "check"
    monkeypatch.delenv("TRITONPU_NPU_ENGINE")
    assert L.engine_choice() == "auto"
    monkeypatch.setenv("TRITONPU_NPU_ENGINE", "fast")
    with pytest.raises(LaunchError, match=r"unknown NPU engine 'fast'; choose one of auto, translate, interpret, check"):
        L.engine_choice()


def test_auto_translates_a_program_once_its_launches_made_it_hot():
    prog = assemble(LOOP)
    args = {"x": np.zeros(3, np.int32), "n": 100}
    per_launch = sum(L.launch(prog, args, engine="auto").instr_count.values())      # 607
    assert per_launch < L.TRANSLATE_AFTER * len(prog.code) and "_translated" not in prog.__dict__
    launches = 1
    while "_translated" not in prog.__dict__:
        L.launch(prog, args, engine="auto")
        launches += 1
    # translated at the first launch after the executed instructions reached the threshold
    assert launches == -(-L.TRANSLATE_AFTER * len(prog.code) // per_launch) + 1


def test_an_empty_program_translates():
    """(A kernel whose work is all dead code — a device_assert without debug mode — assembles to
    nothing; its translation was a syntax error.)"""
    st = L.launch(assemble(".param x gm f32\n"), {"x": np.zeros(4, np.float32)}, engine="check")
    assert st.cycles == 0


def test_the_check_runs_the_reference_on_copies_that_alias_as_the_arguments_do():
    text = """\
.param x gm f32
.param y gm f32
    set_flag MTE3, MTE2, 0
    wait_flag MTE3, MTE2, 0
    mov.gm.ub.f32 ub[0], x[0], 1, 64, 0, 0
    set_flag MTE2, V, 0
    wait_flag MTE2, V, 0
    vadd.f32 ub[64], ub[0], ub[0], 16
    set_flag V, MTE3, 0
    wait_flag V, MTE3, 0
    mov.ub.gm.f32 y[0], ub[64], 1, 64, 0, 0
"""
    x = np.arange(16, dtype=np.float32)
    L.launch(assemble(text), {"x": x, "y": x}, engine="check")          # y is x: in place
    np.testing.assert_array_equal(x, 2 * np.arange(16, dtype=np.float32))


# transfers: whole segments (written out) and what falls back to the closure -- a padded segment,
# a register that is not a whole number, strided GM segments both ways, on-chip copies, and an
# out-of-bounds read on the last program
XFER = """
.param x gm f32
.param y gm f32
.param n i32
    block_idx s0, 0
    mul s1, s0, 256
    mov.gm.ub.f32 ub[0], x[s1], 1, 256, 0, 0
    mov.gm.ub.f32 ub[256], x[s1], 4, 32, 64, 32
    sub s2, n, s1
    mov.gm.ub.f32 ub[512], x[s1], 1, 256, 0, 0, valid=s2, pad=-1.5
    mov s3, 1.5
    set_flag MTE2, V, 0
    wait_flag MTE2, V, 0
    vadd.f32 ub[1024], ub[0], ub[512], 64
    vadd.f32 ub[1280], ub[256], ub[256], 32
    set_flag V, MTE3, 0
    wait_flag V, MTE3, 0
    mov.ub.ub ub[2048], ub[1024], 2, 128, 128, 128
    set_flag V, MTE3, 1
    wait_flag V, MTE3, 1
    mov.ub.gm.f32 y[s1], ub[2048], 1, 256, 0, 0
    mov.ub.gm.f32 y[s1+4096], ub[1280], 2, 64, 64, 128
"""


@pytest.mark.parametrize("sanitize", [False, True])
@pytest.mark.parametrize("n", [4096, 1000])     # n: the bytes valid (1000: programs 1-3 pad)
def test_both_engines_agree_on_transfers_written_out_and_on_those_that_run_their_closure(n, sanitize):
    prog = assemble(XFER)
    out = {}
    for engine in ("interpret", "translate"):
        x = np.arange(2048, dtype=np.float32)
        y = np.zeros(2048 + 1024, np.float32)
        st = L.launch(prog, {"x": x, "y": y, "n": n}, grid=(4,), sanitize=sanitize, engine=engine)
        out[engine] = (y.tobytes(), st.cycles, st.core_cycles, st.pipe_busy, st.instr_count, st.bytes_by_path,
                       st.stalls, st.read_bytes, st.write_bytes)
    assert out["interpret"] == out["translate"]
    y = np.frombuffer(out["translate"][0], np.float32)
    np.testing.assert_array_equal(y[:64], 2 * np.arange(64))          # program 0: x + x (all valid)
    msgs = []
    bad = XFER.replace("mul s1, s0, 256", "mul s1, s0, 2700")         # program 3 reads past the end of x
    for engine in ("interpret", "translate"):
        with pytest.raises(OutOfBoundsError) as e:
            L.launch(assemble(bad), {"x": np.zeros(2048, np.float32), "y": np.zeros(4096, np.float32), "n": 8},
                     grid=(4,), sanitize=sanitize, engine=engine)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "outside GM parameter 'x'" in msgs[1]
