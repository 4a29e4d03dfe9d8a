"""Fused straight runs (tritonpu/npu/fuse.py): same registers, same clocks, same errors.

A straight run of instructions decodes into one closure at its first pc (register-only scalar
instructions inlined); results, cycles, per-pipe busy time and instruction counts are those of the
instructions run one by one (a traced launch does not inline); loops that jump into the middle
of a run cut it; an error inside a run names the instruction that raised it.
"""
from pathlib import Path

import numpy as np
import pytest

from tritonpu.npu import LaunchError, assemble
from tritonpu.npu.errors import OutOfBoundsError
from tritonpu.npu import ops_scalar
from tritonpu.npu.registry import decode
from tritonpu.npu.state import State
from tritonpu.isa import machine

# s1 = sum over i < 10 of (3*i + 7) % 5, then more arithmetic and scalar stores; the loop's body
# is one run, the code before and after are runs of their own (the loop's first and after-last
# pcs are entries)
SRC = """\
.kernel k
.param out gm i32
mov s1, 0
mov s2, 7
add s3, s2, 1
for s4, 0, 10, 1
    mul s5, s4, 3
    add s5, s5, s2
    rem s5, s5, 5
    add s1, s1, s5
endfor
mul s6, s1, s3
sub s6, s6, 2
cvt.i8 s7, s6
sst.i32 out[0], s1
sst.i32 out[4], s6
sst.i32 out[8], s7
"""


def _expected():
    s1 = sum((3 * i + 7) % 5 for i in range(10))
    s6 = s1 * 8 - 2
    return [s1, s6, int(np.int8(np.int64(s6).astype(np.int8)))]


def test_runs_fuse_at_their_first_pc_and_loops_cut_them():
    prog = assemble(SRC)
    fns = decode(State(prog, machine("ascend910b"), False, False), prog)
    spans = sorted(f.fused for f in fns if hasattr(f, "fused"))
    names = [i.spec.name for i in prog.code]
    assert names[0:3] == ["mov", "mov", "add"] and names[3] == "for"
    assert spans == [(0, 3), (4, 8), (9, 15)], (spans, names)


@pytest.mark.parametrize("sanitize", [False, True])
def test_fused_launch_matches_instruction_by_instruction(sanitize):
    fused_out, plain_out = np.zeros(3, np.int32), np.zeros(3, np.int32)
    fused = assemble(SRC).run({"out": fused_out}, sanitize=sanitize)
    plain = assemble(SRC).run({"out": plain_out}, sanitize=sanitize, trace=True)   # nothing inlined
    assert list(fused_out) == list(plain_out) == _expected()
    assert fused.cycles == plain.cycles
    assert fused.pipe_busy == plain.pipe_busy
    assert fused.instr_count == plain.instr_count
    assert fused.instr_count["scalar"] == 3 + 1 + 10 * 5 + 3 + 3   # (endfor runs per trip)


@pytest.mark.parametrize("trace", [False, True])        # rem inlined / rem's closure called
def test_an_error_inside_a_run_names_the_instruction(monkeypatch, trace):
    def broken(a, b):
        raise ZeroDivisionError("boom")
    monkeypatch.setitem(ops_scalar._INT, "rem", broken)     # decoders look the table up
    prog = assemble(SRC)
    with pytest.raises(LaunchError) as e:
        prog.run({"out": np.zeros(3, np.int32)}, sanitize=False, trace=trace)
    assert e.value.inst.spec.name == "rem" and e.value.line == 9, str(e.value)
    assert "ZeroDivisionError: boom" in str(e.value)


def test_an_error_of_a_called_instruction_inside_a_run_names_it():
    src = SRC.replace("sst.i32 out[8], s7", "sst.i32 out[12], s7")     # one element past the end
    with pytest.raises(OutOfBoundsError) as e:
        assemble(src).run({"out": np.zeros(3, np.int32)}, sanitize=False)
    assert e.value.inst.spec.name == "sst" and e.value.line == 17, str(e.value)
    assert "outside GM parameter 'out'" in str(e.value)


@pytest.mark.parametrize("sanitize", [False, True])
@pytest.mark.parametrize("name", sorted(p.name for p in (Path(__file__).resolve().parents[2]
                                                         / "isa" / "examples").glob("*.s")))
def test_isa_examples_time_the_same_fused_and_one_by_one(name, sanitize):
    path = Path(__file__).resolve().parents[2] / "isa" / "examples" / name
    text = path.read_text()
    fused = assemble(text).run({}, sanitize=sanitize)
    plain = assemble(text).run({}, sanitize=sanitize, trace=True)
    assert fused.cycles == plain.cycles and fused.core_cycles == plain.core_cycles
    assert fused.pipe_busy == plain.pipe_busy and fused.instr_count == plain.instr_count
    assert fused.stalls == plain.stalls
    for k in fused.gm:
        np.testing.assert_array_equal(fused.gm[k], plain.gm[k])
