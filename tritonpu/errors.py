"""User-facing errors.

``CompilationError`` points at the kernel's own source: file, line, column, the line itself and a
caret, then what is wrong. It is what every stage raises for a kernel it cannot handle.
"""
from __future__ import annotations

import linecache


def source_line(file: str, line: int) -> str:
    """The text of one line of a source file ('' when unavailable)."""
    if not file or line <= 0:
        return ""
    return linecache.getline(file, line).rstrip("\n")


def format_location(file: str | None, line: int | None, col: int | None, message: str, kind: str = "error") -> str:
    if not file or not line:
        return f"{kind}: {message}"
    text = source_line(file, line)
    out = f"{file}:{line}:{(col or 0) + 1}: {kind}: {message}"
    if text:
        out += f"\n    {text}\n    {' ' * (col or 0)}^"
    return out


class TritonpuError(Exception):
    """Base of tritonpu's user-facing errors."""


class CompilationError(TritonpuError):
    def __init__(self, message: str, file: str | None = None, line: int | None = None, col: int | None = None):
        self.message = message
        self.file, self.line, self.col = file, line, col
        super().__init__(format_location(file, line, col, message))

    @classmethod
    def at(cls, message: str, loc) -> "CompilationError":
        """The error at an IR source location (``loc`` may be None: no location)."""
        return cls(message, getattr(loc, "file", None), getattr(loc, "line", None), getattr(loc, "col", None))


class GlobalChangedError(CompilationError, RuntimeError):
    """A global a kernel read when it was compiled has changed since (Triton raises a RuntimeError
    too)."""


class LaunchError(TritonpuError):
    """A launch the runtime cannot perform: wrong arguments, grid, backend."""


class ExecutionError(TritonpuError):
    """A kernel went wrong while running: out-of-bounds access, failed device_assert, ..."""

    def __init__(self, message: str, file: str | None = None, line: int | None = None, col: int | None = None):
        self.message = message
        self.file, self.line, self.col = file, line, col
        super().__init__(format_location(file, line, col, message))
