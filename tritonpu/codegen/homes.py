"""What the NPU back end's analyses share: the homes a value can have, the groups of values that
share storage, and which ops may write their result over an operand."""
from __future__ import annotations

import contextvars
from dataclasses import dataclass, field

from tritonpu.ir import Op, Value
from tritonpu.ir.ops import TILE_LOADS

UB, REG, L1, L0C = "ub", "reg", "l1", "l0c"
NOWHERE = "none"        # a value nothing reads (an L0C accumulator's zeros)
ONCHIP = (UB, L1, L0C)
VIEW_OPS = frozenset(("expand_dims", "reshape", "broadcast", "permute", "bitcast", "slice"))
VECTOR_SCALAR_OPS = frozenset(("reduce",))
LOOPS = frozenset(("for", "while"))

# A product only scaled and added to a tile waits in L0C until the add (cube_homes.
# _scaled_then_added); a kernel whose L0C that leaves too small is compiled again without it.
SCALED_IN_L0C = contextvars.ContextVar("scaled_products_wait_in_l0c", default=True)
# How many accumulators one loop keeps in L0C (None: every one that qualifies, see cube_homes.
# _l0c_carries); a kernel whose loop accumulators and products do not fit L0C together is compiled
# again keeping one there -- the others accumulate in UB, each trip's product added on the vector unit.
L0C_ACCUMULATORS = contextvars.ContextVar("l0c_accumulators_per_loop", default=None)


def elem_bytes(ty) -> int:
    """Bytes per element on chip: pointers are 8-byte offsets, i1 masks one byte."""
    s = ty.scalar
    if s.is_ptr:
        return 8
    return max(1, s.bits // 8)


def tile_bytes(ty) -> int:
    return elem_bytes(ty) * (ty.numel if ty.is_block else 1)


PANEL_ALIGN = 512           # an L1 panel's slots start where L0 tiles may be cut from (any row)


def panel_slot_bytes(ty) -> int:
    """The bytes one slot of an L1 panel of ``ty`` tiles takes (see passes/panel_reuse.py)."""
    return (tile_bytes(ty) + PANEL_ALIGN - 1) // PANEL_ALIGN * PANEL_ALIGN


def panel_tile_of(v) -> Op | None:
    """The ``panel_tile`` op whose tile ``v`` is, as loaded or viewed transposed (a column-major
    dot operand), else None."""
    o = v.owner
    while o is not None and o.name == "permute":
        o = o.operands[0].owner
    return o if o is not None and o.name == "panel_tile" else None


@dataclass(eq=False)
class Group:
    """Values sharing one home, live over [start, end].  (Compared by identity: two groups are
    never the same storage because their fields agree.)"""
    values: list = field(default_factory=list)
    start: int = 1 << 60
    end: int = -1
    home: str = REG
    bytes: int = 0

    @property
    def first(self) -> Value:
        return self.values[0]


def if_result_of(dot: Op):
    """The result of the ``if`` whose then-branch yields ``dot``'s result (a loop's last trip)."""
    term = dot.parent.terminator
    return dot.parent.parent.results[term.operands.index(dot.result)]


def const_value(v):
    """The value of a constant (or splat of one), else None."""
    op = v.owner
    while op is not None and op.name == "splat":
        v = op.operands[0]
        op = v.owner
    return op.attrs["value"] if op is not None and op.name == "constant" else None


def l0c_bytes(ty) -> int:
    """L0C rows are padded to 16 elements of 4 bytes."""
    m, n = ty.shape
    return m * ((n + 15) // 16 * 16) * 4


REUSE_LOADED = "reuse_loaded_tiles"     # function attribute: see buffer_planning.plan


def loaded(v) -> bool:
    return v.owner is not None and v.owner.name in TILE_LOADS


def reshape_copies(op) -> bool:
    """A reshape of a view whose elements are not laid out densely in order — a permute, a
    broadcast, a slice narrower than its operand past the first dimension, or a view of one —
    cannot be another view of its operand's storage: it is a copy into a tile of its own (planned
    like any result)."""
    if op.name != "reshape":
        return False
    v = op.operands[0]
    while v.owner is not None and v.owner.name in ("expand_dims", "bitcast"):
        v = v.owner.operands[0]
    o = v.owner
    if o is None:
        return False
    if o.name == "permute":
        moved = [d for i, d in enumerate(o.attrs["order"]) if d != i]
        return any(o.operands[0].type.shape[d] > 1 for d in moved)
    if o.name == "slice":
        return o.operands[0].type.shape[1:] != o.result.type.shape[1:]
    return o.name == "broadcast" and o.operands[0].type.shape != o.result.type.shape


def in_place_ok(op) -> bool:
    """The op may write its result over an operand it reads last: one-instruction elementwise work,
    and a dot with an ``acc`` (FIX drains the product in chunks that are added to it row by row)."""
    if op.name == "dot":
        return len(op.operands) == 3 and str(op.operands[2].type.scalar) == str(op.result.type.scalar) \
            and str(op.result.type.scalar) in ("f32", "i32") and len(op.result.type.shape) == 2
    if op.opdef.kind not in ("elementwise", "compare", "select", "cast") or op.name == "fma":
        return False
    if len(op.result.type.shape) >= 3:
        # a rank-3 tile may take one instruction per leading index: an earlier slice's result
        # must not land on a later slice of an operand — only operands laid out exactly like the
        # result (same shape and element size, not a view) are safe to overwrite
        size = elem_bytes(op.result.type)
        return all(not o.type.is_block or (o.type.shape == op.result.type.shape and elem_bytes(o.type) == size
                                           and (o.owner is None or o.owner.name not in VIEW_OPS))
                   for o in op.operands)
    return True


