"""The dataflow IR's operations, defined once.

Every op the frontend may emit, every pass may rewrite and every executor (the reference
evaluator, the llvmlite backend, the NPU compiler) must implement is one row of ``OPS``.
The verifier checks ops against their row; tests check that each executor has an
implementation for every row.

Semantics in one line each (``doc``) are the language's: integers wrap, ``div``/``rem`` on
integers truncate toward zero as in C, ``rem`` on floats is C's ``fmod``, shifts by the width or
more are undefined, float -> int casts truncate toward zero.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpDef:
    name: str
    kind: str                       # verifier rule: see verifier.py
    operands: tuple[int, int | None]  # min, max (None = variadic)
    results: int | None             # None = variadic (control flow)
    attrs: tuple[str, ...] = ()     # required attributes
    optional_attrs: tuple[str, ...] = ()
    regions: int = 0
    effects: bool = False           # reads or writes memory / prints: never CSE'd or DCE'd
    terminator: bool = False
    doc: str = ""
    npu_only: bool = False          # made by an NPU pass; the frontend, ref and cpu never see it


BINARY = {
    "add": "a + b",
    "pow": "a ** b (floats only: C pow/powf)",
    "sub": "a - b",
    "mul": "a * b",
    "div": "a / b (integers: truncate toward zero)",
    "rem": "a % b with the sign of a (C remainder; fmod for floats)",
    "and": "bitwise and (logical for i1)",
    "or": "bitwise or (logical for i1)",
    "xor": "bitwise xor",
    "shl": "a << b",
    "shr": "a >> b (arithmetic for signed, logical for unsigned)",
    "maximum": "elementwise maximum; floats: the non-NaN operand if one is NaN (maxnum, Triton's default)",
    "minimum": "elementwise minimum; floats: the non-NaN operand if one is NaN (minnum, Triton's default)",
}

UNARY = {
    "neg": "-a",
    "not": "bitwise not (~a)",
    "abs": "|a|",
    "exp": "e**a",
    "exp2": "2**a",
    "log": "natural logarithm",
    "log2": "base-2 logarithm",
    "sqrt": "square root",
    "rsqrt": "1 / sqrt(a)",
    "sin": "sine",
    "cos": "cosine",
    "floor": "round toward -inf",
    "ceil": "round toward +inf",
    "erf": "error function",
    "tanh": "hyperbolic tangent",
    "asin": "arcsine",
    "acos": "arccosine",
    "atan": "arctangent",
    "tan": "tangent",
    "sinh": "hyperbolic sine",
    "cosh": "hyperbolic cosine",
    "log1p": "log(1 + a), accurate near 0",
    "expm1": "e**a - 1, accurate near 0",
    "log10": "base-10 logarithm",
    "rint": "round to the nearest integer, halves to even",
}

CMP_PREDICATES = ("lt", "le", "gt", "ge", "eq", "ne")
REDUCE_KINDS = ("sum", "max", "min", "argmax", "argmin")
SCAN_KINDS = ("sum", "prod")
ATOMIC_KINDS = ("add", "max", "min", "xchg", "and", "or", "xor")
# Attributes any op may carry that say how to schedule it, not what it computes (equal ops that
# differ in them are still equal): a prefetched load's trip group (passes/double_buffer.py), the
# chunk of rows of an epilogue an op computes (passes/epilogue_rows.py, planned clear of the last)
SCHEDULING_ATTRS = ("prefetch", "rows_chunk")


def _rows() -> list[OpDef]:
    rows = [
        OpDef("constant", "constant", (0, 0), 1, ("value",), doc="a scalar, or a block filled with one value"),
        OpDef("program_id", "index", (0, 0), 1, ("axis",), doc="this program's index along grid axis 0..2"),
        OpDef("num_programs", "index", (0, 0), 1, ("axis",), doc="the grid's size along axis 0..2"),
        OpDef("set_program", "set_program", (1, 1), 0, effects=True, npu_only=True,
              doc="set_program(pid): from here the core runs grid program pid of its persistent loop (the NPU "
                  "sanitizer's GM race check and error messages name it)"),
        OpDef("arange", "arange", (0, 0), 1, ("start", "end"), doc="the block [start, end) of i32"),
        OpDef("splat", "splat", (1, 1), 1, doc="a block with every element equal to the scalar operand"),
        OpDef("broadcast", "broadcast", (1, 1), 1, doc="expand dimensions of size 1 to the result shape"),
        OpDef("expand_dims", "shape", (1, 1), 1, ("axis",), doc="insert a dimension of size 1 at axis"),
        OpDef("reshape", "shape", (1, 1), 1, doc="same elements in row-major order, new shape"),
        OpDef("permute", "shape", (1, 1), 1, ("order",), doc="result dim i is operand dim order[i]"),
        OpDef("slice", "slice", (1, 1), 1, (), ("offsets", "steps"),
              doc="a sub-block of the operand, of the result's shape (same rank): element [i, j, ..] is the "
                  "operand's [o0 + i * s0, o1 + j * s1, ..] for {offsets = [o0, o1, ..], steps = [s0, s1, ..]} "
                  "(constants; offsets 0 and steps 1 when absent: the leading sub-block)"),
        OpDef("insert_slice", "insert_slice", (2, 2), 1, (), ("offsets", "steps"),
              doc="insert_slice(ful, part): ``ful`` with element [o0 + i * s0, o1 + j * s1, ..] replaced by "
                  "``part``'s [i, j, ..] (``slice``'s geometry, ``part`` of the sub-block's shape)"),
        OpDef("cmp", "compare", (2, 2), 1, ("pred",), doc="elementwise comparison -> i1; pred in " + "/".join(CMP_PREDICATES)),
        OpDef("select", "select", (3, 3), 1, doc="cond ? a : b elementwise"),
        OpDef("fma", "elementwise", (3, 3), 1, doc="a * b + c"),
        OpDef("cast", "cast", (1, 1), 1, doc="value conversion to the result element type (float->int truncates)"),
        OpDef("bitcast", "cast", (1, 1), 1, doc="reinterpret the bits as the result element type (same width)"),
        OpDef("addptr", "addptr", (2, 2), 1, doc="ptr + offset * sizeof(pointee)"),
        OpDef("load", "load", (1, 3), 1, optional_attrs=("cache", "evict", "volatile"), effects=True,
              doc="load(ptr[, mask[, other]]): masked-off lanes give other (undefined if absent)"),
        OpDef("store", "store", (2, 3), 0, optional_attrs=("cache", "evict"), effects=True,
              doc="store(ptr, value[, mask]): masked-off lanes are not written"),
        OpDef("atomic_rmw", "atomic", (2, 3), 1, ("op",), optional_attrs=("sem", "scope"), effects=True,
              doc="atomic read-modify-write(ptr, value[, mask]) -> old values; op in " + "/".join(ATOMIC_KINDS)),
        OpDef("atomic_cas", "atomic_cas", (3, 3), 1, optional_attrs=("sem", "scope"), effects=True,
              doc="atomic compare-and-swap(ptr, cmp, value) -> old values"),
        OpDef("reduce", "reduce", (1, 1), 1, ("op", "axis"),
              doc="reduce along axis (removed from the shape); op in " + "/".join(REDUCE_KINDS) + "; arg* give i32 first index"),
        OpDef("scan", "scan", (1, 1), 1, ("op", "axis"), optional_attrs=("reverse",),
              doc="inclusive scan along axis; op in " + "/".join(SCAN_KINDS)),
        OpDef("dot", "dot", (2, 3), 1, optional_attrs=("input_precision",),
              doc="matrix product a @ b (+ acc), accumulated in the result type"),
        OpDef("print", "print", (0, None), 0, ("prefix",), optional_attrs=("hex",), effects=True,
              doc="device_print: prints prefix and the operands, per program"),
        OpDef("assert", "assert", (1, 1), 0, ("msg",), effects=True, doc="device_assert: fails the launch where cond is false"),
        # Structured transfers, made from load/store by the memory-analysis pass (NPU path).
        OpDef("load_tile", "load_tile", (3, None), 1, effects=True, npu_only=True,
              doc="load_tile(ptr, strides.., valids..[, other]): element [i0, i1..] = ptr[sum(i_d * stride_d)] "
                  "where every i_d < valid_d, else other (0 if absent); strides and valids are scalars, one per dim"),
        OpDef("panel_fill", "panel_fill", (5, None), 0, ("slots", "event", "shape"), effects=True, npu_only=True,
              doc="panel_fill(slot, miss, ptr, strides.., valids..[, other]) {slots, event, shape}: on a miss, "
                  "a load_tile of `shape` into slot `slot` (bytes) of the kernel's L1 panel of `slots` tiles (`event`: its trip modulo the loop's buffers), "
                  "which outlives the program (passes/panel_reuse.py)"),
        OpDef("panel_tile", "panel_tile", (2, 2), 1, ("slots", "event"), effects=True, npu_only=True,
              doc="panel_tile(slot, miss) {slots, event}: the tile in slot `slot` of the L1 panel, filled by "
                  "this program's panel_fill of the same event on a miss, by an earlier program's otherwise"),
        OpDef("store_tile", "store_tile", (4, None), 0, optional_attrs=("atomic",), effects=True, npu_only=True,
              doc="store_tile(ptr, strides.., valids.., value): writes the elements with every i_d < valid_d "
                  "(atomic = add|max|min: combines them into memory instead)"),
        OpDef("gather_rows", "gather_rows", (3, 5), 1, effects=True, npu_only=True,
              doc="gather_rows(ptr, row_offsets, valid_cols[, row_mask[, other]]) -> RxC: row i is the C "
                  "elements at ptr + row_offsets[i]; columns >= valid_cols and masked-off rows are other (0)"),
        OpDef("gather_cols", "gather_cols", (4, 6), 1, effects=True, npu_only=True,
              doc="gather_cols(ptr, col_offsets, row_stride, valid_rows[, col_mask[, other]]) -> RxC: element "
                  "[i, j] is ptr[col_offsets[j] + i * row_stride]; rows >= valid_rows and masked-off columns "
                  "are other (0)"),
        OpDef("scatter_rows", "scatter_rows", (4, 5), 0, optional_attrs=("atomic",), effects=True, npu_only=True,
              doc="scatter_rows(ptr, row_offsets, valid_cols, value[, row_mask]): row i of value to "
                  "ptr + row_offsets[i], its first valid_cols elements, rows where row_mask (atomic = "
                  "add|max|min: combined into memory)"),
        OpDef("for", "for", (3, None), None, regions=1, optional_attrs=("double_buffer", "stagger", "panel", "one_trip"),
              doc="for iv in range(lb, ub, step) carrying iter values; region args (iv, iters...)"),
        OpDef("if", "if", (1, 1), None, regions=2, doc="if cond: then-region else else-region; both yield the results"),
        OpDef("while", "while", (0, None), None, regions=2,
              doc="before-region(args) ends in condition(c, vals); after-region(vals) yields the next args"),
        OpDef("yield", "yield", (0, None), 0, terminator=True, doc="ends a region, passing values to its parent op"),
        OpDef("condition", "condition", (1, None), 0, terminator=True, doc="ends a while's before-region: continue if cond"),
        OpDef("return", "return", (0, 0), 0, terminator=True, doc="ends the kernel"),
    ]
    rows += [OpDef(n, "elementwise", (2, 2), 1, doc=d) for n, d in BINARY.items()]
    rows += [OpDef(n, "elementwise", (1, 1), 1, doc=d) for n, d in UNARY.items()]
    return rows


OPS: dict[str, OpDef] = {row.name: row for row in _rows()}

FLOAT_ONLY_UNARY = frozenset(("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "floor", "ceil", "erf",
                              "tanh", "asin", "acos", "atan", "tan", "sinh", "cosh", "log1p", "expm1", "log10",
                              "rint"))
INT_ONLY_BINARY = frozenset(("and", "or", "xor", "shl", "shr"))
FLOAT_ONLY_BINARY = frozenset(("pow",))


# the structured transfers that read GM into a tile (made by memory analysis)
TILE_LOADS = ("load_tile", "gather_rows", "gather_cols")

FRONTEND_OPS = frozenset(n for n, d in OPS.items() if not d.npu_only)


def slice_geometry(op) -> tuple[list, list]:
    """A ``slice``'s or an ``insert_slice``'s (offsets, steps), one per dimension: 0 and 1 where
    the op gives none."""
    rank = len(op.results[0].type.shape)
    return list(op.attrs.get("offsets", [0] * rank)), list(op.attrs.get("steps", [1] * rank))


def opdef(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown IR op {name!r}") from None
