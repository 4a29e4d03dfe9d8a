"""Assembler: text -> :class:`Program`, with the lark grammar ``isa/asm.lark`` (LALR).

Every check is driven by the instruction table (``tritonpu.isa.INSTRUCTIONS``): the mnemonic,
the type suffixes, each operand's kind and each keyword option.  Errors raise
:class:`AsmError` with the line, column and the offending source line.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from tritonpu.dtypes import SCALARS
from tritonpu.isa import GRAMMAR_PATH, INSTRUCTIONS, MACHINES, PIPES, SPACES

from . import fastparse
from .errors import AsmError
from .program import Buffer, Inst, Mem, Param, Program, Val, fmt_num

MAX_GM_BYTES = 1 << 30          # a `.gm` buffer the assembler creates for a standalone run

EVENT_IDS = MACHINES["ascend910b"].event_ids
_FLOAT_NAMES = {"inf": math.inf, "nan": math.nan}
_ATOMICS = ("add", "max", "min")
_TOKEN_NAMES = {"MINUS": "'-'", "PLUS": "'+'", "COMMA": "','", "LSQB": "'['", "RSQB": "']'",
                "LPAR": "'('", "RPAR": "')'", "COLON": "':'", "EQUAL": "'='", "_NL": "end of line",
                "LOC": "loc(...)"}
# value operands and options that are sizes, counts or strides: whole numbers only
_WHOLE_OPERANDS = {"cols", "nrows", "nseg", "row_bytes", "row_stride", "seg_bytes", "src_stride", "dst_stride",
                   "m", "k", "n", "rows", "valid", "seg_stride", "dst_seg_stride", "reverse", "last", "rank",
                   "transpose"}
_STRIDED_IMPLS = {"vbinary", "vfma", "vscalar", "vunary", "vcmp", "vsel", "vcast", "vfill", "vreduce",
                  "vscan", "vtranspose", "mmad"}


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(GRAMMAR_PATH.read_text(), parser="lalr", propagate_positions=False,   # positions: _pos()
                maybe_placeholders=True)


def assemble(text: str, filename: str = "<asm>") -> Program:
    """Assemble ``text``; raises :class:`AsmError` (line, col, text) on any error."""
    return _Assembler(text, filename).run()


class _Assembler:
    def __init__(self, text: str, filename: str):
        self.src = text
        self.lines = text.splitlines()
        self.filename = filename
        self.prog = Program(filename=filename, source=text)

    # ---- errors -----------------------------------------------------------------------------
    def err(self, msg, node=None, line=None, col=None):
        if node is not None:
            line, col = _pos(node)
        line = line or 0
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        raise AsmError(msg, line, col or 0, text, self.filename)

    # ---- driver -------------------------------------------------------------------------------
    def run(self) -> Program:
        src = self.src if self.src.endswith("\n") else self.src + "\n"
        tree = fastparse.parse(src)
        if tree is None:
            try:
                tree = _parser().parse(src)
            except UnexpectedInput as e:
                self._syntax_error(e)
        pending = []
        for node in tree.children:
            if node.data == "label":
                name = str(node.children[0])
                if name in self.prog.labels:
                    self.err(f"label {name!r} defined twice", node)
                self.prog.labels[name] = len(pending)
                self.prog.items.append(("label", name))
            elif node.data == "directive":
                self.prog.items.append(("dir", self._directive(node)))
            else:
                pending.append(node)
                self.prog.items.append(("inst", node))
        # second pass: instructions (all names are known now)
        code = []
        for node in pending:
            inst = self._instr(node)
            inst.index = len(code)
            code.append(inst)
        self.prog.code = code
        it = iter(code)
        self.prog.items = [(k, next(it) if k == "inst" else x) for k, x in self.prog.items]
        self._link()
        return self.prog

    def _syntax_error(self, e):
        line, col = getattr(e, "line", 0), getattr(e, "column", 0)
        if isinstance(e, UnexpectedToken):
            tok = e.token
            what = "end of line" if tok.type == "_NL" else f"{str(tok)!r}"
            if tok.type == "$END":
                what = "end of input"
            exp = sorted(_TOKEN_NAMES.get(x, x) for x in e.expected if not x.startswith("__"))[:8]
            msg = f"unexpected {what}; expected one of {', '.join(exp)}"
        elif isinstance(e, UnexpectedCharacters):
            msg = f"unexpected character {self.lines[line - 1][col - 1]!r}" if line else str(e)
        elif isinstance(e, UnexpectedEOF):
            msg = "unexpected end of input"
        else:
            msg = str(e)
        self.err(msg, line=line, col=col)

    # ---- directives ---------------------------------------------------------------------------
    def _dval(self, n):
        if isinstance(n, Token):
            return str(n)
        d = n.data
        if d == "dname":
            return ("name", str(n.children[0]))
        if d == "dreg":
            return ("reg", str(n.children[0]))
        if d == "dnum":
            return _num(n.children[0])
        if d == "dneg":
            return -_num(n.children[0])
        if d == "dstr":
            return ("str", str(n.children[0])[1:-1])
        if d == "dlist":
            return [self._dval(c) for c in n.children if c is not None]
        self.err(f"unexpected {d}", n)

    def _directive(self, node) -> str:
        kind = str(node.children[0])
        pos, kw = [], {}
        for c in node.children[1:]:
            if isinstance(c, Tree) and c.data == "dkw":
                kw[str(c.children[0])] = self._dval(c.children[1])
            else:
                pos.append(self._dval(c))
        names = [p[1] if isinstance(p, tuple) and p[0] == "name" else None for p in pos]
        prog = self.prog

        def need(i, what):
            if len(pos) <= i or names[i] is None:
                self.err(f"{kind}: expected {what}", node)
            return names[i]

        def dtype(name):
            if name not in SCALARS:
                self.err(f"unknown element type {name!r}", node)
            return name

        def check_name(name):
            if name in prog.buffers or prog.param(name) or name in prog.aliases or name in SPACES:
                self.err(f"name {name!r} already used", node)

        if kind == ".kernel":
            if pos and isinstance(pos[0], tuple) and pos[0][0] == "reg":
                names[0] = pos[0][1]        # a kernel may be called s1: its name is only a name here
            prog.name = need(0, "a kernel name")
            return f".kernel {prog.name}"
        if kind == ".param":
            name = need(0, "a parameter name")
            check_name(name)
            if len(pos) >= 3 and names[1] == "gm":
                prog.params.append(Param(name, "gm", dtype(need(2, "an element type"))))
                return f".param {name} gm {names[2]}"
            dt = dtype(need(1, "'gm' or an element type"))
            slot = 64 + sum(1 for p in prog.params if p.kind == "scalar")
            init = kw.get("init")
            if init is not None and not isinstance(init, (int, float)):
                self.err(".param: init= takes a number", node)
            prog.params.append(Param(name, "scalar", dt, init=init, slot=slot))
            return f".param {name} {dt}" + (f" init={fmt_num(init)}" if init is not None else "")
        if kind == ".gm":
            name = need(0, "a buffer name")
            check_name(name)
            dt = dtype(need(1, "an element type"))
            shape = pos[2] if len(pos) > 2 else None
            if isinstance(shape, int):
                shape = [shape]
            if not isinstance(shape, list) or not shape or not all(isinstance(x, int) and x > 0 for x in shape):
                self.err(".gm: expected a shape like [64, 64]", node)
            init = kw.get("init", ("name", "zeros"))
            if isinstance(init, tuple):
                if init[0] == "name" and init[1] in ("zeros", "ones", "arange", "random"):
                    init = init[1]
                elif init[0] == "str":
                    init = ("file", init[1])
                else:
                    self.err(".gm: init= takes zeros, ones, arange, random, a list or \"file.npy\"", node)
            elif isinstance(init, list):
                if not all(isinstance(x, (int, float)) for x in init):
                    self.err(".gm: init list must hold numbers", node)
                kind_ = SCALARS[dt].np
                if kind_.kind in "iub":
                    info = np.iinfo(kind_) if kind_.kind != "b" else None
                    lo, hi = (0, 1) if info is None else (int(info.min), int(info.max))
                    if not all(isinstance(x, int) and lo <= x <= hi for x in init):
                        self.err(f".gm: init values of a {dt} buffer must be whole numbers from {lo} to {hi}", node)
            else:
                self.err(".gm: init= takes zeros, ones, arange, random, a list or \"file.npy\"", node)
            nbytes = int(np.prod(shape, dtype=object)) * SCALARS[dt].np.itemsize
            if nbytes > MAX_GM_BYTES:
                self.err(f".gm: {name} would take {nbytes} bytes; a buffer the assembler makes holds at most "
                         f"{MAX_GM_BYTES} (pass a larger array from Python instead)", node)
            seed = kw.get("seed", 0)
            if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 63:
                self.err(".gm: seed= takes a whole number from 0 to 2^63 - 1", node)
            prog.params.append(Param(name, "gm", dt, tuple(shape), init, int(seed), declared_by=".gm"))
            s = f".gm {name} {dt} [{', '.join(map(str, shape))}]"
            if isinstance(init, list):
                s += " init=[" + ", ".join(fmt_num(x) for x in init) + "]"
            elif isinstance(init, tuple):
                s += f' init="{init[1]}"'
            else:
                s += f" init={init}"
            if "seed" in kw:
                s += f" seed={seed}"
            return s
        if kind == ".buffer":
            name = need(0, "a buffer name")
            check_name(name)
            space = need(1, "a memory space (ub, l1, l0a, l0b, l0c)")
            if space not in SPACES:
                self.err(f".buffer: unknown space {space!r}", node)
            if len(pos) != 4 or not all(isinstance(x, int) for x in pos[2:]):
                self.err(".buffer NAME SPACE ADDR SIZE", node)
            prog.buffers[name] = Buffer(name, space, pos[2], pos[3])
            return f".buffer {name} {space} {pos[2]} {pos[3]}"
        if kind == ".reg":
            name = need(0, "an alias name")
            check_name(name)
            if len(pos) != 2 or not (isinstance(pos[1], tuple) and pos[1][0] == "reg"):
                self.err(".reg NAME sN", node)
            r = _regno(pos[1][1])
            if r is None:
                self.err("registers are s0..s63", node)
            prog.aliases[name] = r
            return f".reg {name} s{r}"
        if kind == ".string":
            name = need(0, "a string name")
            if name in prog.strings:
                self.err(f"string {name!r} defined twice", node)
            if len(pos) != 2 or not (isinstance(pos[1], tuple) and pos[1][0] == "str") or kw:
                self.err('.string NAME "text"', node)
            prog.strings[name] = pos[1][1]
            return f'.string {name} "{pos[1][1]}"'
        if kind == ".grid":
            if not 1 <= len(pos) <= 3 or not all(isinstance(x, int) and x > 0 for x in pos):
                self.err(".grid X [Y [Z]]", node)
            prog.grid = tuple(pos)
            return ".grid " + " ".join(map(str, pos))
        self.err(f"unknown directive {kind}", node)

    # ---- instructions -------------------------------------------------------------------------
    def _instr(self, node) -> Inst:
        mtok = node.children[0]
        parts = str(mtok).split(".")
        spec = None
        for i in range(len(parts), 0, -1):
            spec = INSTRUCTIONS.get(".".join(parts[:i]))
            if spec is not None:
                types = tuple(parts[i:])
                break
        if spec is None:
            self.err(f"unknown instruction {str(mtok)!r}", mtok)
        slots = spec.type_sets()
        nreq = sum(1 for _, opt in slots if not opt)
        if not nreq <= len(types) <= len(slots):
            want = "no type suffix" if not slots else f"{nreq}..{len(slots)} type suffix(es)" \
                if nreq != len(slots) else f"{nreq} type suffix(es)"
            self.err(f"{spec.name} takes {want}, got {len(types)}", mtok)
        for t, (allowed, _) in zip(types, slots):
            if t not in allowed:
                self.err(f"{spec.name}: element type {t!r} not allowed (one of {', '.join(allowed)})", mtok)
        if spec.impl == "vbinary" or spec.impl == "vscalar":
            pass
        args_nodes = [c for c in node.children[1:-1] if c is not None]
        loc_node = node.children[-1]
        pos = [a for a in args_nodes if not (isinstance(a, Tree) and a.data == "kwarg")]
        kws = [a for a in args_nodes if isinstance(a, Tree) and a.data == "kwarg"]
        ops = spec.operands
        nmin = sum(1 for _, k in ops if not k.endswith("?"))
        if not nmin <= len(pos) <= len(ops):
            self.err(f"{spec.name} takes {nmin if nmin == len(ops) else f'{nmin}..{len(ops)}'} "
                     f"operands ({', '.join(n for n, _ in ops)}), got {len(pos)}", mtok)
        inst = Inst(spec, types, [], {}, line=mtok.line, col=mtok.column)
        for (name, kind), a in zip(ops, pos + [None] * (len(ops) - len(pos))):
            inst.args.append(None if a is None else self._operand(a, kind.rstrip("?"), spec, name))
        allowed = {n: k for n, k, _ in spec.options}
        for kw in kws:
            k = str(kw.children[0])
            if k not in allowed:
                self.err(f"{spec.name} has no option {k!r}"
                         + (f" (options: {', '.join(allowed)})" if allowed else ""), kw.children[0])
            if k in inst.opts:
                self.err(f"option {k!r} given twice", kw.children[0])
            inst.opts[k] = self._option(kw.children[1], k, allowed[k], spec)
        if loc_node is not None:
            f, ln, col = loc_node.children
            inst.loc = (str(f)[1:-1], _num(ln), _num(col))
        self._check(inst, node)
        return inst

    def _check(self, inst, node):
        spec, types, o = inst.spec, inst.types, inst.opts
        if spec.impl == "sync":
            if spec.op in ("set", "wait"):
                if inst.args[0] == inst.args[1]:
                    self.err(f"{spec.name}: source and destination pipe are both {inst.args[0]}", node)
        if spec.impl in ("xfer", "gather"):
            if "transpose" in o and not (o["transpose"].static and o["transpose"].value() in (0, 1)):
                self.err("transpose= takes 0 or 1", node)
            if "transpose" in o and o["transpose"].value() and not types:
                self.err(f"{spec.name}: transpose=1 needs an element type suffix", node)
            if "atomic" in o and not types:
                self.err(f"{spec.name}: atomic= needs an element type suffix", node)
            if "pad" in o and not types:
                self.err(f"{spec.name}: pad= needs an element type suffix", node)
            if "valid" in o and "pad" not in o:
                self.err(f"{spec.name}: valid= needs pad=", node)
        if spec.impl == "mmad" and (types[0] == "i32") != (types[1] == "i8"):
            self.err("mmad: i8 inputs accumulate in i32, float inputs in f32", node)
        if spec.impl in ("vreduce", "vscan") and "axis" in o:
            if not (o["axis"].static and o["axis"].value() in (0, 1)):
                self.err("axis= takes 0 or 1", node)
        if spec.impl == "dbg":
            if "rank" in o and not (o["rank"].static and o["rank"].value() in (0, 1, 2)):
                self.err("rank= takes 0, 1 or 2", node)
            if "last" in o and not (o["last"].static and o["last"].value() in (0, 1)):
                self.err("last= takes 0 or 1", node)
        if spec.impl == "vreduce" and spec.op in ("argmax", "argmin") and "axis" in o and o["axis"].value() == 0:
            self.err("argmax/argmin reduce along rows only (axis=1)", node)

    def _option(self, a, name, kind, spec):
        if kind == "none":
            word = _bare_name(a)
            if name == "atomic" and word in _ATOMICS:
                return word
            if name == "idx" and word in ("i32", "i64"):
                return word
            self.err(f"option {name}= takes " + ("add, max or min" if name == "atomic" else "i32 or i64"), a)
        return self._operand(a, kind, spec, name)

    def _operand(self, a, kind, spec, name):
        if kind in ("label", "pipe", "pipe|all"):
            word = _bare_name(a)
            if word is None:
                self.err(f"operand {name} of {spec.name}: expected a {kind.split('|')[0]} name", a)
            if kind == "label":
                if word not in self.prog.labels:
                    self.err(f"undefined label {word!r}", a)
                return word
            up = word.upper()
            if kind == "pipe|all" and up == "ALL":
                return "all"
            if up not in PIPES:
                self.err(f"unknown pipe {word!r} (pipes: {', '.join(PIPES)})", a)
            return up
        if kind == "str":
            word = _bare_name(a)
            if word is None:
                self.err(f"operand {name} of {spec.name}: expected the name of a .string", a)
            if word not in self.prog.strings:
                self.err(f"undefined string {word!r} (declare it with .string {word} \"text\")", a)
            return word
        is_mem = isinstance(a, Tree) and a.data == "memref"
        if ":" in kind:                                   # memory operand
            spaces = kind.split(":")[0].split("|")
            if not is_mem:
                self.err(f"operand {name} of {spec.name}: expected a memory reference "
                         f"({' or '.join(s if s != 'gm' else 'PARAM' for s in spaces)}[addr])", a)
            head = str(a.children[0])
            if head in SPACES:
                space, param = head, None
            else:
                p = self.prog.param(head)
                if p is None or p.kind != "gm":
                    self.err(f"unknown memory space or GM parameter {head!r}", a.children[0])
                space, param = "gm", head
            if space not in spaces:
                self.err(f"operand {name} of {spec.name}: expected "
                         f"{' or '.join(s if s != 'gm' else 'a GM parameter' for s in spaces)}, got {head}",
                         a.children[0])
            exprs = [c for c in a.children[1:] if c is not None]
            if len(exprs) > 1 and spec.impl not in _STRIDED_IMPLS:
                self.err(f"{spec.name}: operand {name} takes no strides", a)
            if len(exprs) > 3:
                self.err("a memory operand takes at most a row and a column stride", a)
            addr = self._whole(self._val(exprs[0], "address"), "an address", exprs[0])
            strides = tuple(self._whole(self._val(e, "stride"), "a stride", e) for e in exprs[1:])
            return Mem(space, addr, strides, param)
        if is_mem:
            self.err(f"operand {name} of {spec.name}: expected a value, got a memory reference", a)
        if kind == "rd":
            v = self._val(a, "register")
            if v.reg is None or v.const != 0 or v.syms or v.reg >= 64:
                self.err(f"operand {name} of {spec.name}: expected a register s0..s63", a)
            return v
        v = self._val(a, "value")
        if name in _WHOLE_OPERANDS:
            self._whole(v, f"operand {name} of {spec.name}", a)
        if kind in ("event", "axis"):
            hi = EVENT_IDS if kind == "event" else 3
            if not v.static or not isinstance(v.value(), int) or not 0 <= v.value() < hi:
                self.err(f"{kind} must be an immediate 0..{hi - 1}", a)
        return v

    def _whole(self, v, what, node) -> Val:
        """``v`` unless its constant part is a float: addresses, strides, sizes and counts are
        whole numbers (a float there would only fail inside the simulator)."""
        if isinstance(v.const, float):
            self.err(f"{what} must be a whole number, got {fmt_num(v.const)}", node)
        return v

    def _val(self, e, what) -> Val:
        terms = []
        _flatten(e, 1, terms)
        v = Val()
        first = [True]

        def add_const(x):
            # the first constant term is taken as it is: 0 + -0.0 would lose the sign of a -0.0
            v.const = x if first[0] else v.const + x
            first[0] = False

        for sign, t in terms:
            if t.type == "REG":
                r = _regno(str(t))
                if r is None:
                    self.err(f"no register {t} (s0..s63)", t)
                self._addreg(v, sign, r, str(t), t)
            elif t.type == "NUMBER":
                add_const(sign * _num(t))
            else:
                n = str(t)
                if n in self.prog.aliases:
                    self._addreg(v, sign, self.prog.aliases[n], n, t)
                elif n in self.prog.buffers:
                    v.syms += ((sign, n),)
                    v.symval += sign * self.prog.buffers[n].addr
                elif self.prog.param(n) is not None and self.prog.param(n).kind == "scalar":
                    self._addreg(v, sign, self.prog.param(n).slot, n, t)
                elif n in _FLOAT_NAMES:
                    add_const(sign * _FLOAT_NAMES[n])
                elif n in self.prog.labels:
                    self.err(f"label {n!r} used as a {what}", t)
                elif self.prog.param(n) is not None:
                    self.err(f"GM parameter {n!r} used as a {what}; write {n}[offset]", t)
                else:
                    self.err(f"undefined name {n!r}", t)
        if isinstance(v.const, float) and v.reg is not None:
            pass
        return v

    def _addreg(self, v, sign, r, name, tok):
        if v.reg is not None:
            self.err("at most one register in a value", tok)
        if sign < 0:
            self.err("a register may only be added", tok)
        v.reg, v.regname = r, name

    def _link(self):
        stack = []
        for inst in self.prog.code:
            if inst.spec.impl != "ctrl":
                continue
            op = inst.spec.op
            if op == "for":
                stack.append(inst)
            elif op == "endfor":
                if not stack:
                    self.err("endfor without for", line=inst.line, col=inst.col)
                f = stack.pop()
                f.target, inst.target = inst.index, f.index
            elif inst.spec.operands and inst.spec.operands[-1][1] == "label":
                inst.target = self.prog.labels[inst.args[-1]]
        if stack:
            f = stack[-1]
            self.err("for without endfor", line=f.line, col=f.col)


def _pos(node):
    if isinstance(node, Token):
        return node.line, node.column
    meta = getattr(node, "meta", None)
    if meta is not None and not getattr(meta, "empty", True):
        return meta.line, meta.column
    for c in getattr(node, "children", []):
        if c is not None:
            return _pos(c)
    return 0, 0


def _bare_name(a):
    if isinstance(a, Tree) and a.data == "name":
        return str(a.children[0])
    return None


def _flatten(e, sign, out):
    if isinstance(e, Token):
        out.append((sign, e))
        return
    d = e.data
    if d in ("reg", "num", "name"):
        out.append((sign, e.children[0]))
    elif d == "neg":
        _flatten(e.children[0], -sign, out)
    elif d == "add":
        _flatten(e.children[0], sign, out)
        _flatten(e.children[1], sign, out)
    elif d == "sub":
        _flatten(e.children[0], sign, out)
        _flatten(e.children[1], -sign, out)
    else:
        raise AsmError(f"unexpected {d}")


def _num(tok):
    s = str(tok)
    if s.startswith("0x"):
        return int(s, 16)
    if any(c in s for c in ".eE"):
        return float(s)
    return int(s)


def _regno(s):
    n = int(s[1:])
    return n if 0 <= n < 64 else None
