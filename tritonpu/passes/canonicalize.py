"""Canonicalization: constant folding and algebraic identities.

Guarantees:
* an op without effects whose operands are all scalar constants is replaced by a constant of
  its result, computed by the reference evaluator (so folding can never disagree with the
  language's semantics);
* ``x + 0``, ``x - 0``, ``x * 1``, ``x / 1`` (on any type) and ``x`` ops that change nothing
  (``broadcast``/``reshape`` to the same type) are replaced by ``x``; integer ``x * 0`` is not
  touched (a block's shape must be preserved), floating-point identities that would change NaN
  or signed-zero results are not applied.
"""
from __future__ import annotations

import numpy as np

from tritonpu.ir import Function, Op, Region
from tritonpu.passes.cse import replace_uses
from tritonpu.passes.manager import Pass, register
from tritonpu.ref.evaluator import EVAL

_FOLDABLE_KINDS = ("elementwise", "compare", "select", "cast")


def _const_value(op: Op):
    if op.name == "constant" and not op.results[0].type.is_block:
        return op.attrs["value"]
    return None


def _python(value, ty):
    v = np.asarray(value).item()
    if ty.scalar.is_bool:
        return bool(v)
    if ty.scalar.is_float:
        return float(v)
    return int(v)


@register
class Canonicalize(Pass):
    name = "canonicalize"

    def run(self, fn: Function) -> None:
        consts: dict[int, object] = {}
        mapping: dict = {}
        self._region(fn.body, consts, mapping)
        replace_uses(fn, mapping)

    def _region(self, region: Region, consts: dict, mapping: dict) -> None:
        for op in region.ops:
            op.operands = [mapping.get(id(v), v) for v in op.operands]
            for r in op.regions:
                self._region(r, consts, mapping)
            c = _const_value(op)
            if c is not None:
                consts[id(op.results[0])] = c
                continue
            if op.opdef.effects or op.regions or len(op.results) != 1:
                continue
            res = op.results[0]
            if op.opdef.kind in _FOLDABLE_KINDS and not res.type.is_block and op.operands and \
                    all(id(v) in consts for v in op.operands):
                ins = [np.asarray(consts[id(v)], dtype=v.type.scalar.np) for v in op.operands]
                with np.errstate(all="ignore"):
                    value = EVAL[op.name](op, *ins)
                op.name, op.operands, op.attrs = "constant", [], {"value": _python(value, res.type)}
                consts[id(res)] = op.attrs["value"]
                continue
            same = self._identity(op, consts)
            if same is not None:
                mapping[id(res)] = same

    @staticmethod
    def _identity(op: Op, consts: dict):
        res = op.results[0]
        if op.name in ("broadcast", "reshape") and op.operands[0].type == res.type:
            return op.operands[0]
        if op.name in ("add", "sub", "mul", "div") and len(op.operands) == 2:
            a, b = op.operands
            if a.type != res.type:
                return None
            cb = consts.get(id(b))
            if op.name in ("add", "sub") and cb == 0 and not res.type.scalar.is_float:
                return a
            if op.name in ("mul", "div") and cb == 1 and not isinstance(cb, bool):
                return a
            if op.name == "add" and consts.get(id(a)) == 0 and not res.type.scalar.is_float and b.type == res.type:
                return b
            if op.name == "mul" and consts.get(id(a)) == 1 and b.type == res.type:
                return b
        return None
