"""Parse IR text (the printer's output, or hand-written) back into :class:`Function` objects.

The grammar is ``ir.lark`` (LALR); a lark Transformer builds the objects while parsing, in text
order, so every use is resolved against the values defined before it. Errors are
:class:`IRParseError` with line, column and the offending text.
"""
from __future__ import annotations

import json
from pathlib import Path

import lark

from tritonpu.ir.core import Function, Loc, Op, Region, Value
from tritonpu.ir.ops import OPS
from tritonpu.ir.types import parse_type


class IRParseError(Exception):
    def __init__(self, message: str, line: int = 0, col: int = 0, text: str = ""):
        where = f"line {line}, column {col}: " if line else ""
        super().__init__(f"{where}{message}" + (f"\n  {text}" if text else ""))
        self.line, self.col = line, col


class _Build(lark.Transformer):
    def __init__(self):
        super().__init__()
        self.files: dict[str, str] = {}
        self.scope: dict[str, Value] = {}

    # -- helpers ---------------------------------------------------------------------------
    def _define(self, token, v: Value) -> Value:
        name = str(token)[1:]
        if name in self.scope:
            raise IRParseError(f"value %{name} is defined twice", token.line, token.column)
        self.scope[name] = v
        if not name.isdigit():
            v.name = name
        return v

    def _use(self, token) -> Value:
        name = str(token)[1:]
        try:
            return self.scope[name]
        except KeyError:
            raise IRParseError(f"use of undefined value %{name}", token.line, token.column) from None

    # -- rules -----------------------------------------------------------------------------
    def alias(self, items):
        self.files[str(items[0])] = json.loads(items[1])

    def type(self, items):
        tok = items[0]
        try:
            return parse_type(str(tok))
        except ValueError as e:
            raise IRParseError(str(e), tok.line, tok.column) from None

    def arg(self, items):
        tok, ty = items
        return self._define(tok, Value(ty))

    def int(self, items):
        return int(items[0])

    def float(self, items):
        return float(items[0])

    def inf(self, _):
        return float("inf")

    def neginf(self, _):
        return float("-inf")

    def nan(self, _):
        return float("nan")

    def true(self, _):
        return True

    def false(self, _):
        return False

    def string(self, items):
        return json.loads(items[0])

    def list(self, items):
        return [x for x in items if x is not None]

    def attr(self, items):
        return (str(items[0]), items[1])

    def attrdict(self, items):
        return dict(items)

    def loc(self, items):
        alias, line, col = items
        if str(alias) not in self.files:
            raise IRParseError(f"unknown file alias {alias}", alias.line, alias.column)
        return Loc(self.files[str(alias)], int(line), int(col))

    def results(self, items):
        return list(items)

    def operands(self, items):
        return [self._use(t) for t in items]

    def types(self, items):
        return list(items)

    def block_args(self, items):
        return [a for a in items if a is not None]

    def region(self, items):
        args = items[0] if items and isinstance(items[0], list) else []
        ops = [x for x in items if isinstance(x, Op)]
        region = Region(args, ops)
        for op in ops:
            op.parent = region
        return region

    def regions(self, items):
        return list(items)

    def op(self, items):
        results, name, operands, *rest = items
        loc = rest[-1]
        types = rest[-2] or []
        attrs, regions = {}, []
        for x in rest[:-2]:
            if isinstance(x, dict):
                attrs = x
            elif isinstance(x, list):
                regions = x
        if str(name) not in OPS:
            raise IRParseError(f"unknown op {str(name)!r}", name.line, name.column)
        results = results or []
        if len(results) != len(types):
            raise IRParseError(f"{name}: {len(results)} results but {len(types)} result types", name.line, name.column)
        op = Op(str(name), operands or [], types, attrs, regions, loc)
        for tok, v in zip(results, op.results):
            self._define(tok, v)
        return op

    def func(self, items):
        name = str(items[0])
        rest = items[1:]
        args = [x for x in rest if isinstance(x, Value)]
        attrs = next((x for x in rest if isinstance(x, dict)), {})
        ops = [x for x in rest if isinstance(x, Op)]
        body = Region([], ops)
        for op in ops:
            op.parent = body
        fn = Function(name, args, body, attrs)
        self.scope = {}
        return fn

    def start(self, items):
        return [x for x in items if isinstance(x, Function)]


_GRAMMAR = (Path(__file__).with_name("ir.lark")).read_text()
_PARSER = lark.Lark(_GRAMMAR, parser="lalr", propagate_positions=False, maybe_placeholders=True)


def parse_module(text: str) -> list[Function]:
    """Parse IR text holding one or more functions."""
    try:
        tree = _PARSER.parse(text)
    except lark.UnexpectedInput as e:
        line_text = text.splitlines()[e.line - 1] if 0 < e.line <= len(text.splitlines()) else ""
        what = "unexpected text" if not isinstance(e, lark.UnexpectedToken) else f"unexpected {e.token!r}"
        raise IRParseError(what, e.line, e.column, line_text) from None
    try:
        return _Build().transform(tree)
    except lark.exceptions.VisitError as e:
        if isinstance(e.orig_exc, IRParseError):
            raise e.orig_exc from None
        raise IRParseError(f"{type(e.orig_exc).__name__}: {e.orig_exc}") from None


def parse_function(text: str) -> Function:
    fns = parse_module(text)
    if len(fns) != 1:
        raise IRParseError(f"expected one function, found {len(fns)}")
    return fns[0]
