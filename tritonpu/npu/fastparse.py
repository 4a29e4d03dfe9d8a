"""A fast path for the assembler: the parse tree of ``isa/asm.lark`` built by hand for plain lines.

The compiler assembles every kernel it emits, and lark's LALR parser spent a third of a cold
compile on it.  :func:`parse` builds exactly the tree lark builds (same rule names, aliases, token
types, lines and columns) for text made of labels, directives, instructions and comments, in one
pass over each line; for anything else — a carriage return, an unexpected character, a line that
does not follow the grammar — it returns ``None`` and the assembler runs lark on the whole text, so
errors are still reported by the grammar.  A test checks both parsers give the same tree on the
assembly of every kernel the test suite compiles.
"""
from __future__ import annotations

import re

from lark import Token, Tree

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\f]+)
  | (?P<STRING>"[^"\n]*")
  | (?P<comment>(?://|;|\#)[^\n]*)
  | (?P<DIRECTIVE>\.[a-z_]+)
  | (?P<NUMBER>0x[0-9a-fA-F]+|[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+|[0-9]+)
  | (?P<NAME>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<punct>[,\[\]():=+\-])
""", re.VERBOSE)
_REG = re.compile(r"s[0-9]+")
_NAME_CHAR = re.compile(r"[A-Za-z0-9_.]")


class _Fail(Exception):
    pass


def _tokens(line: str, lineno: int) -> list:
    out, pos, n = [], 0, len(line)
    while pos < n:
        m = _TOKEN.match(line, pos)
        if m is None:
            raise _Fail
        kind, text = m.lastgroup, m.group()
        if kind not in ("ws", "comment"):
            if kind == "NAME" and _REG.fullmatch(text):
                kind = "REG"          # REG.2 wins over NAME: s<digits> with a word boundary after
            elif kind == "NAME" and _REG.match(text) and not _REG.fullmatch(text):
                r = _REG.match(text).group()
                if not _NAME_CHAR.match(text, len(r)) or text[len(r)] == ".":
                    raise _Fail       # s3.x: lark splits it at the boundary; leave it to lark
            out.append(Token(kind if kind != "punct" else text, text, pos, lineno, pos + 1))
        pos = m.end()
    return out


class _Line:
    def __init__(self, toks):
        self.toks, self.i = toks, 0

    def peek(self, k=0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def take(self, kind=None):
        t = self.peek()
        if t is None or (kind is not None and t.type != kind):
            raise _Fail
        self.i += 1
        return t

    def at(self, kind, k=0) -> bool:
        t = self.peek(k)
        return t is not None and t.type == kind

    # instr: NAME [arg ("," arg)*] [loc]
    def instr(self):
        name = self.take("NAME")
        args = []
        if self.peek() is not None and not self._at_loc():
            args.append(self.arg())
            while self.at(","):
                self.take(",")
                args.append(self.arg())
        loc = self.loc() if self._at_loc() else None
        if self.peek() is not None:
            raise _Fail
        return Tree("instr", [name] + (args if args else [None]) + [loc])

    def _at_loc(self) -> bool:
        t = self.peek()
        return t is not None and t.type == "NAME" and str(t) == "loc" and self.at("(", 1)

    def loc(self):
        self.take("NAME")
        self.take("(")
        f = self.take("STRING")
        self.take(":")
        line = self.take("NUMBER")
        self.take(":")
        col = self.take("NUMBER")
        self.take(")")
        return Tree("loc", [f, line, col])

    def arg(self):
        if self.at("NAME") and self.at("=", 1):
            k = self.take("NAME")
            self.take("=")
            return Tree("kwarg", [k, self.operand()])
        return self.operand()

    def operand(self):
        if self.at("NAME") and self.at("[", 1):
            base = self.take("NAME")
            self.take("[")
            items = [self.expr()]
            while self.at(","):
                self.take(",")
                items.append(self.expr())
            self.take("]")
            return Tree("memref", [base] + items)
        return self.expr()

    def expr(self):
        e = self.atom()
        while self.at("+") or self.at("-"):
            op = self.take()
            e = Tree("add" if op.type == "+" else "sub", [e, self.atom()])
        return e

    def atom(self):
        t = self.peek()
        if t is None:
            raise _Fail
        if t.type == "-":
            self.take()
            return Tree("neg", [self.atom()])
        kind = {"REG": "reg", "NUMBER": "num", "NAME": "name"}.get(t.type)
        if kind is None or (t.type == "NAME" and str(t) == "loc" and self.at("(", 1)):
            raise _Fail
        self.take()
        return Tree(kind, [t])

    # directive: DIRECTIVE ditem*
    def directive(self):
        d = self.take("DIRECTIVE")
        items = []
        while self.peek() is not None:
            if self.at("NAME") and self.at("=", 1):
                k = self.take("NAME")
                self.take("=")
                items.append(Tree("dkw", [k, self.dval()]))
            else:
                items.append(self.dval())
        return Tree("directive", [d] + items)

    def dval(self):
        t = self.take()
        if t.type == "NAME":
            return Tree("dname", [t])
        if t.type == "REG":
            return Tree("dreg", [t])
        if t.type == "NUMBER":
            return Tree("dnum", [t])
        if t.type == "STRING":
            return Tree("dstr", [t])
        if t.type == "-":
            return Tree("dneg", [self.take("NUMBER")])
        if t.type == "[":
            items = []
            if not self.at("]"):
                items.append(self.dval())
                while self.at(","):
                    self.take(",")
                    items.append(self.dval())
            self.take("]")
            return Tree("dlist", items if items else [None])
        raise _Fail


def parse(text: str):
    """lark's tree for ``text``, or None where the fast path does not apply."""
    if "\r" in text:
        return None                       # CRLF: lark handles it
    out = []
    try:
        for lineno, line in enumerate(text.split("\n"), 1):
            toks = _tokens(line, lineno)
            if not toks:
                continue
            p = _Line(toks)
            if p.at("NAME") and p.at(":", 1):
                out.append(Tree("label", [p.take("NAME")]))
                p.take(":")
                if p.peek() is None:
                    continue
            out.append(p.directive() if p.at("DIRECTIVE") else p.instr())
    except _Fail:
        return None
    return Tree("start", out)
