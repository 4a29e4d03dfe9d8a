"""The dataflow IR's objects: values, ops, regions, functions, and a builder.

The IR is SSA over typed values. Control flow is structured: ``for``, ``if`` and ``while`` ops own
single-block regions whose arguments are the loop variables and carried values, and whose last op
(``yield`` / ``condition``) passes values back. Every op carries a source location.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from tritonpu.ir.ops import opdef
from tritonpu.ir.types import Type


@dataclass(frozen=True)
class Loc:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


UNKNOWN_LOC = Loc("<unknown>", 0, 0)


class Value:
    """An SSA value: a function or region argument, or an op result."""

    __slots__ = ("type", "name", "owner", "index", "region")

    def __init__(self, type: Type, name: str | None = None, owner: "Op | None" = None, index: int = 0):
        self.type = type
        self.name = name          # a hint for the printer (the source variable), may repeat
        self.owner = owner        # defining op, or None for arguments
        self.index = index
        self.region = None        # the region whose argument it is (None: an op result or a kernel argument)

    def __repr__(self) -> str:
        return f"Value({self.name or '?'}: {self.type})"


class Region:
    """A single-block region: arguments and a list of ops ending in a terminator."""

    __slots__ = ("args", "ops", "parent")

    def __init__(self, args: list[Value] | None = None, ops: list["Op"] | None = None):
        self.args = list(args or [])
        for a in self.args:
            a.region = self
        self.ops = list(ops or [])
        self.parent: Op | None = None

    def add_arg(self, v: Value) -> Value:
        """Append a region argument."""
        self.args.append(v)
        v.region = self
        return v

    @property
    def terminator(self) -> "Op | None":
        return self.ops[-1] if self.ops and opdef(self.ops[-1].name).terminator else None


class Op:
    __slots__ = ("name", "operands", "results", "attrs", "regions", "loc", "parent")

    def __init__(self, name: str, operands, result_types, attrs=None, regions=None, loc: Loc = UNKNOWN_LOC):
        self.name = name
        self.operands: list[Value] = list(operands)
        self.results: list[Value] = [Value(t, None, self, i) for i, t in enumerate(result_types)]
        self.attrs: dict = dict(attrs or {})
        self.regions: list[Region] = list(regions or [])
        for r in self.regions:
            r.parent = self
        self.loc = loc
        self.parent: Region | None = None

    @property
    def result(self) -> Value:
        assert len(self.results) == 1, self.name
        return self.results[0]

    @property
    def opdef(self):
        return opdef(self.name)

    def walk(self) -> Iterator["Op"]:
        """This op and every op nested in its regions, in program order (pre-order).  (A stack,
        not nested generators: a deep walk cost one generator frame per level per op.  Each
        region's ops are taken when its op is visited.)"""
        stack = [self]
        while stack:
            op = stack.pop()
            yield op
            for region in reversed(op.regions):
                stack.extend(reversed(region.ops))

    def __repr__(self) -> str:
        return f"Op({self.name} @ {self.loc})"


class Function:
    """A kernel: named arguments and a body region ending in ``return``."""

    def __init__(self, name: str, args: list[Value], body: Region | None = None, attrs=None):
        self.name = name
        self.args = args
        self.body = body if body is not None else Region()
        self.attrs: dict = dict(attrs or {})

    def walk(self) -> Iterator[Op]:
        stack = list(reversed(self.body.ops))
        while stack:
            op = stack.pop()
            yield op
            for region in reversed(op.regions):
                stack.extend(reversed(region.ops))

    def __str__(self) -> str:
        from tritonpu.ir.printer import print_function
        return print_function(self)


class Builder:
    """Appends ops to a region; ``loc`` is stamped on every op it creates."""

    def __init__(self, region: Region, loc: Loc = UNKNOWN_LOC):
        self.region = region
        self.loc = loc

    def create(self, name: str, operands=(), result_types=(), attrs=None, regions=None, loc: Loc | None = None) -> Op:
        op = Op(name, operands, result_types, attrs, regions, loc or self.loc)
        op.parent = self.region
        self.region.ops.append(op)
        return op

    def one(self, name: str, operands, result_type: Type, **attrs) -> Value:
        """Create a single-result op and return its result."""
        return self.create(name, operands, [result_type], attrs).result
