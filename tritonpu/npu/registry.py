"""The interpreter's dispatch table: semantic family (the table's ``impl``) -> decoder.

A decoder ``make(st, inst, prog) -> closure`` runs once per instruction per launch; the closure
executes the instruction (functional result + timing) and returns the next pc, or None for pc+1.
``IMPLS[family].ops`` lists the ``op`` values the family implements; a test checks that every
row of the instruction table is covered.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Family:
    make: object
    ops: frozenset


IMPLS: dict[str, Family] = {}


def family(name, ops):
    def deco(fn):
        IMPLS[name] = Family(fn, frozenset(ops))
        return fn
    return deco


def decode(st, prog):
    """Decode every instruction of ``prog`` into closures bound to ``st``."""
    from . import ops_scalar, ops_transfer, ops_vector  # noqa: F401  (register the families)
    out = []
    for inst in prog.code:
        fam = IMPLS[inst.spec.impl]
        out.append(fam.make(st, inst, prog))
    return out
