"""Errors of the virtual NPU: assembly errors and runtime (sanitizer) errors.

Every :class:`NpuError` names the instruction, its assembly line, the core and program, the
addresses involved, and the kernel source location when the instruction carries ``loc(...)``.
"""
from __future__ import annotations


class AsmError(Exception):
    """An assembly error at ``filename:line:col``; ``text`` is the offending source line."""

    def __init__(self, message: str, line: int = 0, col: int = 0, text: str = "",
                 filename: str = "<asm>"):
        self.message, self.line, self.col, self.text, self.filename = message, line, col, text, filename
        super().__init__(self._format())

    def _format(self) -> str:
        s = f"{self.filename}:{self.line}:{self.col}: error: {self.message}"
        if self.text:
            s += f"\n    {self.text}\n    {' ' * max(0, self.col - 1)}^"
        return s


class NpuError(Exception):
    """A runtime error of the virtual NPU (the sanitizer's findings and launch errors)."""

    kind = "error"

    def __init__(self, message: str, inst=None, core: int | None = None,
                 program: int | None = None, addrs: dict | None = None):
        self.message = message
        self.inst = inst
        self.core = core
        self.program = program
        self.addrs = dict(addrs or {})
        self.line = getattr(inst, "line", None)
        self.loc = getattr(inst, "loc", None)
        super().__init__(message)

    def __str__(self) -> str:
        return self._format()

    def attach(self, inst=None, core=None, program=None):
        """Fill in where the error happened (the interpreter does this on the way out)."""
        if self.inst is None and inst is not None:
            self.inst, self.line, self.loc = inst, inst.line, inst.loc
        if self.core is None:
            self.core = core
        if self.program is None:
            self.program = program
        return self

    def _format(self) -> str:
        parts = [f"{self.kind}: {self.message}"]
        if self.inst is not None:
            parts.append(f"  at line {self.inst.line}: {self.inst.text()}")
        if self.loc is not None:
            f, ln, col = self.loc
            parts.append(f"  kernel source: {f}:{ln}:{col}")
        where = []
        if self.core is not None:
            where.append(f"core {self.core}")
        if self.program is not None:
            where.append(f"program {self.program}")
        if where:
            parts.append("  on " + ", ".join(where))
        if self.addrs:
            parts.append("  addresses: " + ", ".join(f"{k}={_fmt(v)}" for k, v in self.addrs.items()))
        return "\n".join(parts)


def _fmt(v):
    if isinstance(v, tuple) and len(v) == 2 and all(isinstance(x, int) for x in v):
        return f"[{v[0]:#x}, {v[1]:#x})"
    if isinstance(v, int):
        return f"{v:#x}"
    return str(v)


class OutOfBoundsError(NpuError):
    kind = "out-of-bounds"


class MisalignedError(NpuError):
    kind = "misaligned"


class DeadlockError(NpuError):
    kind = "deadlock"


class FlagError(NpuError):
    """An event id set twice without a wait in between (or otherwise misused)."""
    kind = "flag"


class RaceError(NpuError):
    kind = "race"


class AssertError(NpuError):
    """A failed device assertion (``dbg.assert`` / ``dbg.asserts``)."""
    kind = "assertion"


class LaunchError(NpuError):
    """Bad arguments, grid or bindings, or a program that does not terminate."""
    kind = "launch"
