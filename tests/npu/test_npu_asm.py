"""Assembler: syntax, directives, table-driven checks, errors with position, canonical printer."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.isa import EXAMPLES_DIR, INSTRUCTIONS, TYPESETS
from tritonpu.npu import AsmError, assemble

_OTHER = {"S": "V", "V": "MTE3"}


def sample_line(name, ins):
    """A valid line for every instruction of the table, with every option."""
    types = []
    for t in ins.types:
        s = TYPESETS[t.rstrip("?")]
        types.append("f32" if "f32" in s else s[0])
    if ins.impl == "mmad":
        types = ["f32", "f16"]
    if ins.impl in ("vbinary", "vscalar") and ins.types == ("I",):
        types = ["i32"]
    ops = []
    for oname, kind in ins.operands:
        k = kind.rstrip("?")
        if k == "rd":
            ops.append("s1")
        elif k == "val":
            ops.append("s2+4")
        elif k == "label":
            ops.append("L")
        elif k == "pipe":
            ops.append("S" if oname == "src" else "V")
        elif k == "pipe|all":
            ops.append("all")
        elif k in ("event", "axis"):
            ops.append("1")
        elif k == "str":
            ops.append("msg")
        else:
            space = k.split(":")[0].split("|")[0]
            ops.append("x[s3+64]" if space == "gm" else f"{space}[buf+512]")
    for oname, kind, _ in ins.options:
        v = {"atomic": "add", "idx": "i32", "transpose": "1", "axis": "1", "mask": "ub[1024]",
             "pad": "-inf", "rank": "2", "last": "0"}.get(oname, "s4")
        ops.append(f"{oname}={v}")
    return ".".join([name] + types) + (" " + ", ".join(ops) if ops else "")


def test_every_instruction_assembles_and_round_trips():
    lines = [".kernel all", ".param x gm f32", ".param n i32", ".buffer buf ub 1024 4096",
             '.string msg "x: "', "L:"]
    for name, ins in INSTRUCTIONS.items():
        if name == "endfor":
            continue
        lines.append("    " + sample_line(name, ins))
        if name == "for":
            lines.append("    endfor")
    prog = assemble("\n".join(lines) + "\n")
    assert {i.spec.name for i in prog.code} == set(INSTRUCTIONS)
    text = prog.text()
    again = assemble(text)
    assert again.text() == text
    assert [i.text() for i in again.code] == [i.text() for i in prog.code]


@pytest.mark.parametrize("path", sorted(EXAMPLES_DIR.glob("*.s")), ids=lambda p: p.name)
def test_examples_round_trip(path):
    text = assemble(path.read_text()).text()
    assert assemble(text).text() == text


def test_syntax_comments_labels_directives_loc():
    prog = assemble("""; a comment
# another
.kernel k   // trailing
.param x gm f32
.param n i32 init=5
.buffer t ub 0x100 256
.reg i s7
.grid 2 3
start: mov i, n
loop:
    add i, i, -1
    vadd.f32 ub[t+32], ub[t], ub[t, 0, 1], i, rows=2 loc("my.py":10:4)
    br.gt i, 0, loop
""")
    assert prog.name == "k" and prog.grid == (2, 3) and prog.labels == {"start": 0, "loop": 1}
    v = prog.code[2]
    assert v.loc == ("my.py", 10, 4) and v.args[0].addr.value() == 0x120 and v.args[3].regname == "i"
    assert prog.code[0].args[1].regname == "n" and prog.code[0].args[1].reg >= 64
    assert prog.code[3].target == 1
    text = prog.text()
    assert 'vadd.f32 ub[t+32], ub[t], ub[t, 0, 1], i, rows=2 loc("my.py":10:4)' in text
    assert "start:\n    mov i, n" in text and ".buffer t ub 256 256" in text


def test_numbers_canonical():
    p = assemble("    mov s1, 0x10\n    mov s2, -1.5e3\n    mov s3, inf\n    mov s4, -inf\n    mov s5, nan\n")
    assert p.text() == "    mov s1, 16\n    mov s2, -1500.0\n    mov s3, inf\n    mov s4, -inf\n    mov s5, nan\n"


ERRORS = [
    ("    vadd.f32 ub[0], ub[0]\n", 1, 5, "takes 4 operands"),
    ("    nop\n    foo s1\n", 2, 5, "unknown instruction 'foo'"),
    ("    vand.f32 ub[0], ub[0], ub[0], 8\n", 1, 5, "element type 'f32' not allowed"),
    ("    vadd ub[0], ub[0], ub[0], 8\n", 1, 5, "takes 1 type suffix"),
    ("    add s1, s2, @\n", 1, 17, "unexpected character '@'"),
    ("    add s1, s2,\n", 1, 16, "unexpected end of line; expected one of '-', NAME, NUMBER, REG"),
    ("    set_flag MTE2, V, 8\n", 1, 23, "event must be an immediate 0..7"),
    ("    set_flag V, V, 0\n", 1, 5, "source and destination pipe are both V"),
    ("    wait_flag X, V, 0\n", 1, 15, "unknown pipe 'X'"),
    ("    jmp nowhere\n", 1, 9, "undefined label 'nowhere'"),
    ("a:\na:\n", 2, 1, "label 'a' defined twice"),
    ("    mov 3, s1\n", 1, 9, "expected a register"),
    ("    mov s64, 1\n", 1, 9, "no register s64"),
    ("    add s1, s2+s3, 1\n", 1, 16, "at most one register"),
    ("    add s1, 4-s3, 1\n", 1, 15, "a register may only be added"),
    ("    mov.gm.ub l1[0], l1[0], 1, 32, 0, 0\n", 1, 15, "expected ub, got l1"),
    ("    mov.gm.ub ub[0, 4], ub[0], 1, 32, 0, 0\n", 1, 15, "takes no strides"),
    ("    vadd.f32 ub[0], ub[0], ub[0], 8, lanes=2\n", 1, 38, "has no option 'lanes'"),
    ("    mov.ub.gm y[0], ub[0], 1, 32, 0, 0\n", 1, 15, "unknown memory space or GM parameter 'y'"),
    (".param x gm f32\n    mov.ub.gm x[0], ub[0], 1, 32, 0, 0, atomic=add\n", 2, 5, "atomic= needs an element type"),
    ("    mov.l1.l0b l0b[0], l1[0], 1, 32, 0, 0, transpose=1\n", 1, 5, "transpose=1 needs"),
    ("    mmad.f32.i8 l0c[0], l0a[0], l0b[0], 16, 16, 16\n", 1, 5, "i8 inputs accumulate in i32"),
    ("    for s1, 0, 4, 1\n", 1, 5, "for without endfor"),
    ("    endfor\n", 1, 5, "endfor without for"),
    (".gm x f32 init=zeros\n", 1, 1, "expected a shape"),
    (".param x gm f99\n", 1, 1, "unknown element type 'f99'"),
    (".frob 1\n", 1, 1, "unknown directive .frob"),
    ("    add s1, s2, undefined_name\n", 1, 17, "undefined name 'undefined_name'"),
]


@pytest.mark.parametrize("text,line,col,msg", ERRORS)
def test_errors_have_line_column_and_text(text, line, col, msg):
    with pytest.raises(AsmError) as e:
        assemble(text, filename="t.s")
    err = e.value
    assert msg in err.message, err.message
    assert (err.line, err.col) == (line, col), str(err)
    assert err.text == text.splitlines()[line - 1]
    assert str(err).startswith(f"t.s:{line}:{col}: error:") and "^" in str(err)


def test_a_kernel_may_be_named_like_a_register():
    # `.kernel s1` (a @jit function called s1) names the kernel; it is no register there
    prog = assemble(".kernel s1\n.param x gm f32\nmov s0, 1\n")
    assert prog.name == "s1"
    assert assemble(prog.text()).text() == prog.text()


@tritonpu.jit
def s1(x_ptr, y_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(y_ptr + o, tl.load(x_ptr + o) + 1.0)


def test_a_jit_kernel_named_like_a_register_runs_on_the_npu():
    x, y = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    h = s1[(1,)](x, y, BLOCK=16)
    np.testing.assert_array_equal(y, x + 1)
    assert h.asm["isa"].startswith(".kernel s1\n")


BAD_PROGRAMS = {
    "seed=inf": (".gm x f32 [4] init=random seed=inf\n    nop\n", "seed= takes a whole number from 0 to 2^63 - 1"),
    "seed=-1": (".gm x f32 [4] init=random seed=-1\n    nop\n", "seed= takes a whole number from 0 to 2^63 - 1"),
    "1e10 elements": (".gm x f32 [10000000000]\n    nop\n", "x would take 40000000000 bytes"),
    "2^63 elements": (".gm x f32 [9223372036854775808]\n    nop\n", "a buffer the assembler makes holds at most"),
    "init out of range": (".gm x u8 [2] init=[300, 1]\n    nop\n",
                          "init values of a u8 buffer must be whole numbers from 0 to 255"),
    "init beyond int64": (".gm x i64 [1] init=[99999999999999999999999]\n    nop\n", "init values of a i64 buffer"),
    "missing init file": ('.gm x f32 [4] init="no_such_file.npy"\n    nop\n', "cannot read its init file"),
    "a transfer of 64 TiB": (".gm x f32 [4]\n    mov.l1.l0a l0a[0], l1[0], 4294967296, 16384, 0, 0\n",
                             "the transfer moves 4294967296 segments of 16384 bytes"),
    "a gather of 2^40 bytes": (".gm x f32 [4]\n    gather.gm.ub ub[0], x[0], ub[64], 1073741824, 1024, 0, 0\n",
                               "the gather moves 1073741824 rows of 1024 bytes"),
}


@pytest.mark.parametrize("name", list(BAD_PROGRAMS))
def test_bad_directives_and_unbounded_transfers_are_tritonpu_errors(name):
    """Mutated programs end in an AsmError or a launch error naming the problem -- never a raw
    Python traceback, never unbounded time or memory."""
    from tritonpu.npu.errors import NpuError
    text, message = BAD_PROGRAMS[name]
    with pytest.raises((AsmError, NpuError), match=re.escape(message)):
        assemble(text).run({})


@tritonpu.jit
def _wrapping(x_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + n * 3       # i32 arithmetic on the scalar unit
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.int32) + i)


def test_int32_scalar_arithmetic_wraps_in_the_op_itself():
    """An i32 scalar op carries its wrap (``mul.i32``): no ``cvt.i32`` after it; the result wraps."""
    x = np.zeros(8, np.int32)
    h = _wrapping[(1,)](x, 2 ** 30, BLOCK=8)
    isa = h.asm["isa"]
    assert re.search(r"^\s*mul\.i32 s\d+, n, 3 ", isa, re.M), isa
    assert "cvt.i32" not in isa, isa
    assert (x == np.int32(np.int64(2 ** 30 * 3).astype(np.int32))).all()
