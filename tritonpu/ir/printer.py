"""Print IR functions as text that :mod:`tritonpu.ir.parser` reads back to an equal function.

    #f0 = "/path/kernel.py"
    func @add_kernel(%x_ptr: ptr<f32>, %n: i32) {BLOCK = 1024} {
      %pid = program_id {axis = 0} : i32 loc(#f0:5:10)
      %0 = arange {end = 1024, start = 0} : tensor<1024xi32> loc(#f0:6:22)
      %r = for %lb, %ub, %step, %init : f32 {
      ^bb(%i: i32, %acc: f32):
        ...
        yield %acc_1 loc(#f0:9:8)
      } loc(#f0:8:4)
      return loc(#f0:10:4)
    }

Values print under their source name where the frontend recorded one (made unique with a
numeric suffix), else as ``%N``. Attributes print sorted by name; locations use the file aliases
declared before the function.
"""
from __future__ import annotations

import json
import math

from tritonpu.ir.core import Function, Op, Region, Value


def format_attr(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(format_attr(x) for x in v) + "]"
    raise TypeError(f"cannot print attribute value {v!r}")


class _Namer:
    def __init__(self):
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.counter = 0

    def define(self, v: Value) -> str:
        if v.name:
            base = v.name
            name, k = base, 0
            while name in self.used:
                k += 1
                name = f"{base}_{k}"
        else:
            while str(self.counter) in self.used:
                self.counter += 1
            name = str(self.counter)
            self.counter += 1
        self.used.add(name)
        self.names[id(v)] = name
        return "%" + name

    def ref(self, v: Value) -> str:
        try:
            return "%" + self.names[id(v)]
        except KeyError:
            return f"%<undefined {v.name or '?'}>"


class _Printer:
    def __init__(self):
        self.namer = _Namer()
        self.files: dict[str, str] = {}
        self.lines: list[str] = []

    def loc(self, op: Op) -> str:
        alias = self.files.setdefault(op.loc.file, f"#f{len(self.files)}")
        return f"loc({alias}:{op.loc.line}:{op.loc.col})"

    def region(self, region: Region, indent: str) -> None:
        if region.args:
            args = ", ".join(f"{self.namer.define(a)}: {a.type}" for a in region.args)
            self.lines.append(f"{indent[:-2]}^bb({args}):")
        for op in region.ops:
            self.op(op, indent)

    def op(self, op: Op, indent: str) -> None:
        operands = ", ".join(self.namer.ref(v) for v in op.operands)
        head = op.name + (" " + operands if operands else "")
        if op.attrs:
            head += " {" + ", ".join(f"{k} = {format_attr(op.attrs[k])}" for k in sorted(op.attrs)) + "}"
        results = ", ".join(self.namer.define(r) for r in op.results)
        prefix = f"{indent}{results} = " if results else indent
        tail = ""
        if op.results:
            tail = " : " + ", ".join(str(r.type) for r in op.results)
        tail += " " + self.loc(op)
        if not op.regions:
            self.lines.append(prefix + head + tail)
            return
        self.lines.append(prefix + head + " {")
        for i, region in enumerate(op.regions):
            if i:
                self.lines.append(indent + "} {")
            self.region(region, indent + "  ")
        self.lines.append(indent + "}" + tail)


def print_function(fn: Function) -> str:
    p = _Printer()
    args = ", ".join(f"{p.namer.define(a)}: {a.type}" for a in fn.args)
    header = f"func @{fn.name}({args})"
    if fn.attrs:
        header += " {" + ", ".join(f"{k} = {format_attr(fn.attrs[k])}" for k in sorted(fn.attrs)) + "}"
    p.lines.append(header + " {")
    p.region(fn.body, "  ")
    p.lines.append("}")
    aliases = [f"{alias} = {json.dumps(path)}" for path, alias in p.files.items()]
    return "\n".join(aliases + p.lines) + "\n"
