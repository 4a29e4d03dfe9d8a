"""The assembled program: operands, instructions, directives, and the canonical printer.

Guarantees: ``Program.text()`` prints canonical assembly (directives, labels on their own lines,
instructions indented, numbers in decimal, comments dropped), and assembling that text gives a
program that prints the same text again.  ``Program.run`` launches it on the virtual NPU.
"""
from __future__ import annotations

from dataclasses import dataclass, field


def fmt_num(v) -> str:
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int):
        return str(v)
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return repr(float(v))


@dataclass
class Val:
    """A value operand: ``const + symval + R[reg]`` (``reg`` None: a static value)."""

    const: object = 0           # int or float
    reg: int | None = None      # register slot (0..63 registers, 64.. named scalar params)
    regname: str | None = None  # how the register was written (s3, an alias, a param name)
    syms: tuple = ()            # ((sign, buffer name), ...) as written
    symval: int = 0             # their resolved sum

    @property
    def static(self) -> bool:
        return self.reg is None

    def value(self):
        """The static value (only when ``static``)."""
        return self.const + self.symval if self.symval else self.const

    def __str__(self) -> str:
        parts = []
        for sign, name in self.syms:
            parts.append(("-" if sign < 0 else "+") + name)
        if self.reg is not None:
            parts.append("+" + self.regname)
        if self.const != 0 or not parts:
            c = fmt_num(self.const)
            parts.append(c if c.startswith("-") else "+" + c)
        s = "".join(parts)
        return s[1:] if s.startswith("+") else s


@dataclass
class Mem:
    """A memory operand: ``space[addr(, row_stride(, col_stride))]``; GM names its parameter."""

    space: str                  # ub l1 l0a l0b l0c gm
    addr: Val
    strides: tuple = ()         # Vals, in elements
    param: str | None = None    # GM parameter name

    def __str__(self) -> str:
        head = self.param if self.space == "gm" else self.space
        return f"{head}[" + ", ".join(str(x) for x in (self.addr,) + tuple(self.strides)) + "]"


@dataclass
class Inst:
    """One assembled instruction."""

    spec: object                # the isa Instruction row
    types: tuple                # element type names given as suffixes
    args: list                  # per operand of the row: Val | Mem | str (label, pipe) | None
    opts: dict                  # keyword options given: name -> Val | Mem | str
    line: int = 0
    col: int = 0
    loc: tuple | None = None    # ("file.py", line, col) of the kernel source
    index: int = 0              # position in Program.code
    target: int | None = None   # branch target / loop partner, a code index

    @property
    def mnemonic(self) -> str:
        return ".".join((self.spec.name,) + tuple(self.types))

    def text(self) -> str:
        ops = []
        for (name, kind), a in zip(self.spec.operands, self.args):
            if a is None:
                continue
            ops.append(str(a) if not isinstance(a, str) else a)
        for k, v in self.opts.items():
            ops.append(f"{k}={v}")
        s = self.mnemonic + (" " + ", ".join(ops) if ops else "")
        if self.loc is not None:
            s += f' loc("{self.loc[0]}":{self.loc[1]}:{self.loc[2]})'
        return s


@dataclass
class Param:
    name: str
    kind: str                   # "gm" or "scalar"
    dtype: str
    shape: tuple | None = None  # .gm only
    init: object = None         # .gm / scalar default: "zeros", "random", list, "file.npy", number
    seed: int = 0
    slot: int | None = None     # register slot of a scalar parameter
    declared_by: str = ".param"


@dataclass
class Buffer:
    name: str
    space: str
    addr: int
    size: int


@dataclass
class Program:
    """An assembled program. ``code`` is the instruction list; ``items`` keeps the text order."""

    name: str = "kernel"
    filename: str = "<asm>"
    params: list = field(default_factory=list)
    buffers: dict = field(default_factory=dict)
    aliases: dict = field(default_factory=dict)
    grid: tuple | None = None
    items: list = field(default_factory=list)     # ("dir", text) | ("label", name) | ("inst", Inst)
    code: list = field(default_factory=list)
    labels: dict = field(default_factory=dict)
    strings: dict = field(default_factory=dict)   # .string NAME -> text
    source: str = ""

    @property
    def nslots(self) -> int:
        return 64 + sum(1 for p in self.params if p.kind == "scalar")

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None

    def text(self) -> str:
        """Canonical assembly text."""
        out, depth = [], 0
        for kind, x in self.items:
            if kind == "dir":
                out.append(x)
            elif kind == "label":
                out.append(f"{x}:")
            else:
                if x.spec.name == "endfor":
                    depth = max(0, depth - 1)
                out.append("    " + "  " * depth + x.text())
                if x.spec.name == "for":
                    depth += 1
        return "\n".join(out) + "\n"

    def run(self, args: dict | None = None, grid=(1,), machine="ascend910b", sanitize: bool = True,
            trace: bool = False, cores: int | None = None, max_steps: int = 50_000_000):
        """Launch on the virtual NPU; GM arrays in ``args`` are written in place; returns Stats."""
        from .launch import launch
        return launch(self, args or {}, grid=grid, machine=machine, sanitize=sanitize,
                      trace=trace, cores=cores, max_steps=max_steps)
