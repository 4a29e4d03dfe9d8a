"""The pass manager: passes registered by name, pipelines, verification and dumps.

A pass is a class with a ``name``, a docstring saying what it guarantees, and ``run(fn)`` that
rewrites an IR function in place. ``PassManager`` runs a pipeline, verifies the IR after every
pass, and records the IR text after each pass the caller asked to see.
"""
from __future__ import annotations

from tritonpu.ir import Function, print_function, verify
from tritonpu.ir.verifier import VerifyError

PASSES: dict[str, type] = {}

# The default pipeline on the dataflow IR, in order. Later stages (memory analysis, tiling,
# fusion, buffer planning, sync) append to it as they land.
DEFAULT_PIPELINE = ["canonicalize", "cse", "dce"]


class Pass:
    name = ""

    def run(self, fn: Function) -> None:
        raise NotImplementedError


def register(cls):
    """Class decorator adding a pass to the registry under ``cls.name``."""
    if not cls.name or cls.name in PASSES:
        raise ValueError(f"bad or duplicate pass name {cls.name!r}")
    PASSES[cls.name] = cls
    return cls


class PassError(Exception):
    pass


def parse_pipeline(text: str | None) -> list[str]:
    if text is None or text == "default":
        return list(DEFAULT_PIPELINE)
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in PASSES:
            raise PassError(f"unknown pass {n!r}; known passes: {', '.join(sorted(PASSES))}")
    return names


class PassManager:
    def __init__(self, pipeline: list[str] | None = None, print_after: str | set | None = None,
                 verify_each: bool = True):
        self.pipeline = list(DEFAULT_PIPELINE if pipeline is None else pipeline)
        for n in self.pipeline:
            if n not in PASSES:
                raise PassError(f"unknown pass {n!r}; known passes: {', '.join(sorted(PASSES))}")
        if print_after == "all":
            print_after = set(self.pipeline)
        elif isinstance(print_after, str):
            print_after = {p.strip() for p in print_after.split(",") if p.strip()}
        self.print_after = set(print_after or ())
        unknown = self.print_after - set(PASSES)
        if unknown:
            raise PassError(f"--print-ir-after names unknown passes: {', '.join(sorted(unknown))}")
        self.verify_each = verify_each
        self.dumps: list[tuple[str, str]] = []   # (pass name, IR text after it)

    def run(self, fn: Function) -> Function:
        for name in self.pipeline:
            PASSES[name]().run(fn)
            if self.verify_each:
                try:
                    verify(fn)
                except VerifyError as e:
                    raise PassError(f"IR invalid after pass '{name}': {e}") from None
            if name in self.print_after:
                self.dumps.append((name, print_function(fn)))
        return fn
