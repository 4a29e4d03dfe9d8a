"""The virtual NPU as data: instruction table, machine presets, assembly grammar, reference.

Importable as ``tritonpu.isa`` (setuptools maps it from the top-level ``isa/`` folder).
Everything else — the assembler, the interpreter's dispatch, the cycle model and the generated
``REFERENCE.md`` — derives from the objects here:

``INSTRUCTIONS``  mnemonic -> :class:`Instruction` (operands, pipe, cost rule, semantics)
``COST_RULES``    cost-rule key -> the rule in words
``MACHINES``      preset name -> :class:`Machine` (``MACHINES["ascend910b"]``: DESIGN.md §5)
``GRAMMAR_PATH``  the lark grammar of the assembly text
``reference_markdown()`` the text of ``REFERENCE.md``
"""
from __future__ import annotations

from pathlib import Path

from .instructions import COST_RULES, INSTRUCTIONS, TYPESETS, Instruction
from .machines import MACHINES, PIPE_DOC, PIPE_STAT_NAMES, PIPES, SPACES, Machine, Path as XferPath, machine

HERE = Path(__file__).resolve().parent
GRAMMAR_PATH = HERE / "asm.lark"
REFERENCE_PATH = HERE / "REFERENCE.md"
EXAMPLES_DIR = HERE / "examples"


def grammar_text() -> str:
    return GRAMMAR_PATH.read_text()


def reference_markdown() -> str:
    from .reference import reference_markdown as _ref
    return _ref()


__all__ = ["INSTRUCTIONS", "COST_RULES", "TYPESETS", "Instruction", "MACHINES", "Machine",
           "XferPath", "PIPES", "PIPE_STAT_NAMES", "PIPE_DOC", "SPACES", "machine",
           "GRAMMAR_PATH", "REFERENCE_PATH", "EXAMPLES_DIR", "grammar_text", "reference_markdown"]
