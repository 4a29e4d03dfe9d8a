"""The assembler's fast path (tritonpu/npu/fastparse.py) builds lark's tree exactly, or steps aside.

Checked on the ISA examples, on the assembly of every kernel in kernels/ (all the stages the
compiler emits: versions, pipelined loops, cube code, gathers), and on hand-written lines covering
each rule of isa/asm.lark; text the fast path does not take (comments, odd tokens, syntax
errors) goes to lark, whose error messages are unchanged.
"""
import contextlib
import importlib.util
import io
from pathlib import Path

import pytest
from lark import Token, Tree

from tritonpu.npu import AsmError, assemble
from tritonpu.npu import fastparse
from tritonpu.npu.assembler import _parser

ROOT = Path(__file__).resolve().parents[2]


def _same(a, b, path="tree"):
    """Trees equal node by node, tokens by type, text, line and column."""
    if isinstance(a, Token) or isinstance(b, Token):
        assert isinstance(a, Token) and isinstance(b, Token), path
        assert (a.type, str(a), a.line, a.column) == (b.type, str(b), b.line, b.column), path
        return
    if a is None or b is None:
        assert a is b, path
        return
    assert isinstance(a, Tree) and isinstance(b, Tree), path
    assert str(a.data) == str(b.data), f"{path}: {a.data} != {b.data}"
    assert len(a.children) == len(b.children), f"{path} ({a.data}): {a.children} != {b.children}"
    for i, (x, y) in enumerate(zip(a.children, b.children)):
        _same(x, y, f"{path}/{a.data}[{i}]")


def check(text: str) -> None:
    fast = fastparse.parse(text)
    assert fast is not None, "the fast path should take this text"
    _same(fast, _parser().parse(text if text.endswith("\n") else text + "\n"))


LINES = """
.kernel k
.param x gm f32
.param n i32
.buffer tmp ub 4096 align=32
.list a [1, -2, s3, "q", [x, y]]
.empty []
top:
lab: vadd.f32 ub[0], ub[s3 + 4096 - 16, 1, 0], -1.5, valid=s4, pad=0.0 loc("k.py":12:5)
    set_flag MTE2, V, 7
endfor
mov.gm.ub.f32 ub[0], x[s6], 1, 4096, 0, 4096, valid=s4, pad=-inf loc("/a b/k.py":17:8)
vdups.f32 ub[64], 1e-05, 2.5e+3, 0x1F, 3., -(-1)
s3x s12, s3x, loc2
    br.eq s8, 0, endif2 loc("k.py":19:4)
"""


def test_fast_path_matches_lark_on_every_rule():
    check(LINES.replace("-(-1)", "--1"))


@pytest.mark.parametrize("path", sorted((ROOT / "isa" / "examples").glob("*.s")), ids=lambda p: p.name)
def test_fast_path_or_lark_on_examples(path):
    text = path.read_text()
    fast = fastparse.parse(text)
    if fast is not None:
        _same(fast, _parser().parse(text))
    else:      # the examples carry comments: lark parses them
        assert any(c in text for c in ("//", ";", "#"))
    assemble(text, path.name)


def _kernel_module(stem):
    spec = importlib.util.spec_from_file_location(f"fastparse_{stem}", ROOT / "kernels" / f"{stem}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("stem", ["vector_add", "softmax", "layernorm", "gather", "matmul", "flash_attention"])
def test_fast_path_matches_lark_on_compiled_kernels(stem):
    mod = _kernel_module(stem)
    texts = []
    from tritonpu.npu import assembler
    real = assembler.fastparse.parse

    def spy(text):
        texts.append(text)
        return real(text)
    assembler.fastparse.parse = spy
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            assert mod.main()
    finally:
        assembler.fastparse.parse = real
    assert texts
    for text in texts:
        check(text)


@pytest.mark.parametrize("text", [
    "vadd.f32 ub[0], ub[0], ub[0], 8 // comment, with a \"quote\" and ; # inside\n",
    "vadd.f32 ub[0], ub[0]; also a comment\n",
    "# a line that is all comment\n.kernel k ; after a directive\n",
    'mov.gm.ub.f32 ub[0], x[0], 1, 64, 0, 64 loc("a//b;c#d.py":3:4)  // the string keeps its slashes\n',
])
def test_fast_path_takes_comments_as_lark_ignores_them(text):
    check(text)                   # the compiler's own assembly has trailing comments


@pytest.mark.parametrize("text", ["mov s3.x, 1\n", "vadd.f32 ub[0], ub[0]\r\n", "vadd.f32 ub[0] / 2\n"])
def test_fast_path_leaves_odd_tokens_to_lark(text):
    assert fastparse.parse(text) is None


@pytest.mark.parametrize("text,message", [
    ("vadd.f32 ub[0], , 1\n", "unexpected ','"),
    ("vadd.f32 ub[0 1\n", "unexpected '1'"),
    ("loc(\"k.py\":1:1)\n", "unexpected"),
    ("vadd.f32 ub[0], @\n", "unexpected character '@'"),
])
def test_syntax_errors_still_come_from_the_grammar(text, message):
    assert fastparse.parse(text) is None
    with pytest.raises(AsmError) as e:
        assemble(text)
    assert message in str(e.value) and str(e.value).startswith("<asm>:1:")
