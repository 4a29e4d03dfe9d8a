"""Device-side printing and assertions: ``.string``, ``dbg.print``, ``dbg.prints``,
``dbg.assert``, ``dbg.asserts`` (what ``tl.device_print`` / ``tl.device_assert`` lower to)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tritonpu.npu import (AsmError, AssertError, MisalignedError, NpuError, OutOfBoundsError,
                          RaceError, assemble)

SYNC = "    set_flag V, S, 0\n    wait_flag V, S, 0\n"


def run(text, capsys, args=None, **kw):
    """Run ``text``; return the printed lines."""
    assemble(text).run(args or {}, **kw)
    return capsys.readouterr().out.splitlines()


def fmt(a):
    return str(np.asarray(a).tolist())


def load_ub(x, addr=0):
    """A program prefix that copies GM parameter ``x`` to ``ub[addr]`` and syncs MTE2 -> S."""
    from npu_helpers import tname
    return (f".param x gm {tname(x.dtype)}\n"
            f"    mov.gm.ub ub[{addr}], x[0], 1, {x.nbytes}, 0, 0\n"
            "    set_flag MTE2, S, 0\n    wait_flag MTE2, S, 0\n")


# ---- dbg.print ----------------------------------------------------------------------------------
def test_print_rank1_int_with_register_cols(capsys):
    text = '.string m "x: "\n    varange.i32 ub[0], 0, 8\n' + SYNC + \
        "    mov s3, 4\n    dbg.print.i32 m, ub[0], s3\n    dbg.print.i32 m, ub[0], 8\n"
    assert run(text, capsys) == ["pid (0, 0, 0) x: [0, 1, 2, 3]",
                                 "pid (0, 0, 0) x: [0, 1, 2, 3, 4, 5, 6, 7]"]


def test_print_rank2_and_rank0_floats(capsys):
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.5, -6.25]], np.float32)
    text = '.string m "t = "\n' + load_ub(x) + \
        "    mov s1, 2\n    mov s2, 3\n" \
        "    dbg.print.f32 m, ub[0], s2, rows=s1, rank=2\n" \
        "    dbg.print.f32 m, ub[20], 1, rank=0\n" \
        "    dbg.print.f32 m, ub[0], 3, rows=1, rank=2\n"
    assert run(text, capsys, dict(x=x)) == [
        "pid (0, 0, 0) t = [[1.0, 2.0, 3.0], [4.0, 5.5, -6.25]]",
        "pid (0, 0, 0) t = -6.25",
        "pid (0, 0, 0) t = [[1.0, 2.0, 3.0]]"]


@pytest.mark.parametrize("dt", ["f16", "bf16", "f64", "i8", "u16", "i64", "u64"])
def test_print_formats_as_numpy_tolist(capsys, dt):
    np_dt = {"bf16": np.dtype(ml_dtypes.bfloat16)}.get(dt) or np.dtype(
        {"f16": np.float16, "f64": np.float64, "i8": np.int8, "u16": np.uint16, "i64": np.int64,
         "u64": np.uint64}[dt])
    vals = [0.1, -2.5, 3.0, 1e4] if np_dt.kind in "fV" else [0, 1, 127, 255]
    x = np.array(vals).astype(np_dt) if np_dt.kind not in "i" else \
        np.array([0, -1, 127, -128]).astype(np_dt)
    if np_dt == np.uint64:
        x = np.array([0, 1, 2 ** 63, 2 ** 64 - 1], np.uint64)
    text = '.string m ""\n' + load_ub(x) + f"    dbg.print.{dt} m, ub[0], 4\n" \
        f"    dbg.print.{dt} m, ub[0], 2, rows=2, rank=2\n    dbg.print.{dt} m, ub[0], 4, rank=0\n"
    assert run(text, capsys, dict(x=x)) == [
        "pid (0, 0, 0) " + fmt(x), "pid (0, 0, 0) " + fmt(x.reshape(2, 2)),
        "pid (0, 0, 0) " + fmt(x[0])]


def test_print_f16_values_exactly(capsys):
    x = np.array([0.1, 1.5], np.float16)
    text = '.string m "h "\n' + load_ub(x) + "    dbg.print.f16 m, ub[0], 2\n"
    assert run(text, capsys, dict(x=x)) == ["pid (0, 0, 0) h [0.0999755859375, 1.5]"]


def test_print_i1_reads_bytes_as_bool(capsys):
    text = '.string m "mask "\n    vdup.u8 ub[0], 1, 4\n' + SYNC + \
        "    sst.u8 ub[1], 0\n    sst.u8 ub[32], 7\n" \
        "    dbg.print.i1 m, ub[0], 4\n    dbg.print.i1 m, ub[0], 2, rows=2, rank=2\n" \
        "    dbg.print.i1 m, ub[32], 1, rank=0\n    dbg.print.i1 m, ub[1], 1, rank=0\n"
    assert run(text, capsys) == ["pid (0, 0, 0) mask [True, False, True, True]",
                                 "pid (0, 0, 0) mask [[True, False], [True, True]]",
                                 "pid (0, 0, 0) mask True", "pid (0, 0, 0) mask False"]


def test_last_0_appends_values_separated_by_one_space(capsys):
    text = '.string a "a="\n.string b "ignored"\n    varange.i32 ub[0], 0, 3\n' + SYNC + \
        "    dbg.print.i32 a, ub[0], 3, last=0\n" \
        "    dbg.prints.i32 b, 7, last=0\n" \
        "    dbg.print.i32 b, ub[4], 1, rank=0, last=0\n" \
        "    dbg.prints.f32 b, 2.5\n" \
        "    dbg.prints.i32 b, 1\n"
    assert run(text, capsys) == ["pid (0, 0, 0) a=[0, 1, 2] 7 1 2.5", "pid (0, 0, 0) ignored1"]


def test_unfinished_line_is_printed_at_the_end_of_the_program(capsys):
    text = '.string a "a="\n    block_idx s1\n    dbg.prints.i32 a, s1, last=0\n'
    assert run(text, capsys, grid=(2,), cores=1) == ["pid (0, 0, 0) a=0", "pid (1, 0, 0) a=1"]


def test_pid_prefix_is_the_3d_program_id(capsys):
    text = '.string m "p"\n    block_idx s1\n    dbg.prints.i64 m, s1\n'
    lines = run(text, capsys, grid=(2, 3, 2), cores=5)
    assert sorted(lines) == sorted(f"pid ({x}, {y}, {z}) p{x + 2 * (y + 3 * z)}"
                                   for z in range(2) for y in range(3) for x in range(2))


# ---- dbg.prints ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dt, val, out", [
    ("i32", "3", "3"), ("i8", "300", "44"), ("u8", "-1", "255"), ("i32", "2.7", "2"),
    ("f32", "2.5", "2.5"), ("f32", "s2", "2.5"), ("f16", "0.1", "0.0999755859375"),
    ("bf16", "1.5", "1.5"), ("f64", "0.1", "0.1"), ("i1", "5", "True"), ("i1", "0", "False"),
    ("i64", "s1", "-4"), ("f32", "s1", "-4.0"), ("f32", "inf", "inf"), ("f32", "nan", "nan"),
    ("i32", "n", "9"),
])
def test_prints_converts_as_cvt(capsys, dt, val, out):
    text = f'.param n i32 init=9\n.string m "v="\n    mov s1, -4\n    mov s2, 2.5\n' \
        f"    dbg.prints.{dt} m, {val}\n"
    assert run(text, capsys) == [f"pid (0, 0, 0) v={out}"]


# ---- dbg.assert / dbg.asserts -------------------------------------------------------------------
def test_assert_passes_when_every_byte_is_nonzero(capsys):
    text = '.string m "ok"\n    vdup.u8 ub[0], 1, 8\n' + SYNC + \
        "    mov s1, 4\n    dbg.assert m, ub[0], s1, rows=2\n    dbg.asserts m, 5\n" \
        "    dbg.asserts m, -1\n    dbg.asserts m, 0.5\n    dbg.assert m, ub[0], 0\n"
    assert run(text, capsys) == []


def test_assert_fails_with_message_instruction_and_program():
    text = '.string m "x > 0"\n    vdup.u8 ub[0], 1, 8\n    block_idx s1\n' \
        "    cmp.eq s2, s1, 1\n    sel s2, s2, 0, 1\n" + SYNC + "    sst.u8 ub[6], s2\n" \
        "    dbg.assert m, ub[0], 4, rows=2\n"
    with pytest.raises(AssertError) as ei:
        assemble(text).run({}, grid=(3,), cores=2)
    e = ei.value
    assert isinstance(e, NpuError) and e.kind == "assertion"
    assert e.message == "device_assert failed: x > 0"
    assert e.inst.mnemonic == "dbg.assert" and e.line == 9
    assert e.program == 1 and e.core == 1
    s = str(e)
    assert s.startswith("assertion: device_assert failed: x > 0")
    assert "dbg.assert m, ub[0], 4, rows=2" in s and "program 1" in s


def test_assert_reports_only_zero_bytes_in_the_mask():
    # a zero byte past rows x cols does not fail; one inside does
    text = '.string m "bad"\n    vdup.u8 ub[0], 1, 6\n' + SYNC + "    dbg.assert m, ub[0], 3, rows=2\n"
    assemble(text).run({})
    text = '.string m "bad"\n    vdup.u8 ub[0], 1, 6\n' + SYNC + "    sst.u8 ub[5], 0\n" \
        "    dbg.assert m, ub[0], 3, rows=2\n"
    with pytest.raises(AssertError, match="device_assert failed: bad"):
        assemble(text).run({})


def test_asserts_scalar_fails_on_zero():
    text = '.string m "pid != 2"\n    block_idx s1\n    sub s2, s1, 2\n    dbg.asserts m, s2\n'
    with pytest.raises(AssertError) as ei:
        assemble(text).run({}, grid=(4,))
    e = ei.value
    assert e.message == "device_assert failed: pid != 2"
    assert e.inst.mnemonic == "dbg.asserts" and e.program == 2
    assert assemble(text).run({}, grid=(2,)).cycles > 0


def test_output_before_a_failed_assert_is_printed(capsys):
    text = '.string m "v="\n.string f "boom"\n    dbg.prints.i32 m, 1\n    dbg.asserts f, 0\n'
    with pytest.raises(AssertError):
        assemble(text).run({})
    assert capsys.readouterr().out == "pid (0, 0, 0) v=1\n"


# ---- sanitizer: bounds, alignment, races ---------------------------------------------------------
def test_ub_reads_are_checked():
    with pytest.raises(OutOfBoundsError):
        assemble('.string m ""\n    dbg.print.f32 m, ub[196600], 4\n').run({})
    with pytest.raises(OutOfBoundsError):
        assemble('.string m ""\n    dbg.assert m, ub[196600], 16, rows=2\n').run({})
    with pytest.raises(MisalignedError):
        assemble('.string m ""\n    dbg.print.f32 m, ub[2], 4\n').run({})
    with pytest.raises(MisalignedError):
        assemble('.string m ""\n    dbg.print.i16 m, ub[1], 1, rank=0\n').run({})


def test_ub_reads_race_with_unsynchronised_vector_writes(capsys):
    with pytest.raises(RaceError, match="read-after-write race on ub"):
        assemble('.string m ""\n    vdup.f32 ub[0], 1.0, 8\n    dbg.print.f32 m, ub[0], 8\n').run({})
    with pytest.raises(RaceError):
        assemble('.string m ""\n    vdup.u8 ub[0], 1, 8\n    dbg.assert m, ub[0], 8\n').run({})
    # disjoint bytes do not race
    assemble('.string m ""\n    vdup.f32 ub[0], 1.0, 8\n    dbg.print.f32 m, ub[64], 8\n').run({})
    capsys.readouterr()


# ---- assembler -----------------------------------------------------------------------------------
def test_string_directive_round_trips():
    text = '.kernel k\n.string a "x = "\n.string b "p: // ; # ok"\n' \
        "    dbg.print.f32 a, ub[0], s1, rows=s2, rank=2, last=0\n" \
        "    dbg.prints.i1 b, s3+1, last=1\n    dbg.assert a, ub[64], 4, rows=2\n" \
        "    dbg.asserts b, 0\n"
    prog = assemble(text)
    assert prog.strings == {"a": "x = ", "b": "p: // ; # ok"}
    assert prog.text() == text
    assert assemble(prog.text()).text() == text


def test_unknown_string_name_is_an_asm_error():
    with pytest.raises(AsmError) as ei:
        assemble('.string a "x"\n    dbg.prints.i32 nope, 1\n')
    e = ei.value
    assert "undefined string 'nope'" in e.message and (e.line, e.col) == (2, 20)


def test_duplicate_string_is_an_asm_error():
    with pytest.raises(AsmError) as ei:
        assemble('.string a "x"\n    nop\n.string a "y"\n')
    e = ei.value
    assert "string 'a' defined twice" in e.message and (e.line, e.col) == (3, 1)


@pytest.mark.parametrize("line, msg", [
    ('dbg.print.f32 a, ub[0], 4, rank=3', "rank= takes 0, 1 or 2"),
    ('dbg.print.f32 a, ub[0], 4, rank=s1', "rank= takes 0, 1 or 2"),
    ('dbg.prints.f32 a, 1, last=2', "last= takes 0 or 1"),
    ('dbg.print a, ub[0], 4', "takes 1 type suffix"),
    ('dbg.assert.u8 a, ub[0], 4', "takes no type suffix"),
    ('dbg.assert a, x[0], 4', "expected ub"),
    ('dbg.prints.f32 1, 2', "expected the name of a .string"),
    ('dbg.asserts a, 1, last=0', "has no option 'last'"),
])
def test_operand_errors(line, msg):
    with pytest.raises(AsmError, match=msg):
        assemble(f'.param x gm f32\n.string a "x"\n    {line}\n')


def test_string_directive_shape_errors():
    with pytest.raises(AsmError, match='.string NAME "text"'):
        assemble(".string a 5\n")
    with pytest.raises(AsmError, match="expected a string name"):
        assemble('.string "x"\n')


# ---- cost ----------------------------------------------------------------------------------------
def test_each_costs_one_cycle_on_the_scalar_unit(capsys):
    text = '.string m "c"\n    mov s1, 1\n    sst.u8 ub[64], s1\n' \
        "    dbg.print.f32 m, ub[0], 64, rows=4, rank=2\n    dbg.prints.f32 m, 1.0\n" \
        "    dbg.assert m, ub[64], 1\n    dbg.asserts m, 1\n"
    prog = assemble(text)
    st = prog.run({}, trace=True)
    ev = [(prog.code[i].spec.name, p, s, d) for (_, p, s, d, i, _) in st._trace]
    dbg = [e for e in ev if e[0].startswith("dbg.")]
    assert [e[0] for e in dbg] == ["dbg.print", "dbg.prints", "dbg.assert", "dbg.asserts"]
    assert all(p == 0 and d == 1 for (_, p, _, d) in dbg)
    assert [s for (_, _, s, _) in dbg] == [2, 3, 4, 5]
    assert st.cycles == 6 and st.pipe_busy["scalar"] == 6
    capsys.readouterr()
