"""Fusion: elementwise ops read splats and broadcasts in place.

Guarantees: every operand of an elementwise, ``cmp`` or ``select`` op that is a ``splat`` of a
scalar is replaced by the scalar, and every operand that is a ``broadcast`` by the broadcast's
source; the op is marked ``{fused = true}`` and then accepts operands of any shape numpy-
broadcastable to its result (the verifier's rule for fused ops).  The value computed is the same
element for element.  On the NPU this means no tile is materialised for a broadcast: a scalar
becomes the ``v*s`` form of the instruction, a row or column vector a stride-0 operand, and the
splat/broadcast ops left without uses are removed by ``dce``.  (Every chain of elementwise ops and
reductions already runs on UB-resident tiles, so the GM bytes moved are those of the kernel's own
loads and stores.)
"""
from __future__ import annotations

from tritonpu.ir import Function
from tritonpu.passes.manager import Pass, register

_KINDS = ("elementwise", "compare", "select")


@register
class Fusion(Pass):
    name = "fusion"

    def run(self, fn: Function) -> None:
        for op in fn.walk():
            if op.opdef.kind not in _KINDS or not op.results or not op.result.type.is_block:
                continue
            new = []
            for v in op.operands:
                src = v.owner
                while src is not None and src.name in ("splat", "broadcast") and v.type.is_block:
                    v = src.operands[0]
                    src = v.owner
                new.append(v)
            if any(a is not b for a, b in zip(new, op.operands)):
                op.operands = new
                op.attrs["fused"] = True
