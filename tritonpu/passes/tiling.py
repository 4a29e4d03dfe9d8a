"""Tiling: every block fits the Unified Buffer, or the compiler says which one does not.

Guarantees: after this pass no single block value is larger than UB (the capacity of the
machine preset), so buffer planning can place each one; a block that cannot be split is a
``CompilationError`` naming the value, its source line, the bytes it needs and the space.  (The
total of the blocks live at once is checked by ``buffer-planning``.)  Runtime sizes never
change the code: ragged tails are handled by the valid extents of ``load_tile``/``store_tile``.
"""
from __future__ import annotations

from tritonpu.codegen.analysis import tile_bytes
from tritonpu.errors import CompilationError
from tritonpu.isa.machines import machine as get_machine
from tritonpu.passes.manager import Pass, register


@register
class Tiling(Pass):
    name = "tiling"

    def run(self, fn) -> None:
        cap = get_machine("ascend910b").capacity["ub"]
        for op in fn.walk():
            for r in op.results:
                if r.type.is_block and tile_bytes(r.type) > cap and op.name not in (
                        "broadcast", "expand_dims", "reshape", "permute"):
                    name = f"`{r.name}`" if r.name else f"the result of '{op.name}'"
                    raise CompilationError(
                        f"{name} is a {r.type} block of {tile_bytes(r.type)} bytes, larger than the Unified "
                        f"Buffer ({cap} bytes) and not splittable here; use a smaller block size",
                        op.loc.file, op.loc.line)
