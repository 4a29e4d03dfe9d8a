"""The IR verifier: every op agrees with its row in the op table and its operands' types.

``verify(fn)`` raises :class:`VerifyError` naming the op, its source location and what is wrong.
It checks: known ops, operand/result/region counts, required attributes, SSA (each value defined
once, used only where its definition dominates), terminators, and the type rule of each op kind.
"""
from __future__ import annotations

from tritonpu.ir import types as T
from tritonpu.ir.core import Function, Op, Region, Value
from tritonpu.ir.ops import (ATOMIC_KINDS, CMP_PREDICATES, OPS, REDUCE_KINDS, SCAN_KINDS,
                             SCHEDULING_ATTRS, slice_geometry)


class VerifyError(Exception):
    pass


def _fail(op: Op, msg: str):
    raise VerifyError(f"{op.loc}: '{op.name}' {msg}")


# Attributes later passes may put on any op (buffer planning's on-chip addresses).
PLANNING_ATTRS = ("ub", "ub_out", "ub_carry", "l1", "l1_out", "l1_carry", "l1_stage", "l0c", "l0c_out", "l0c_carry")


def _broadcastable(shape, to) -> bool:
    return len(shape) <= len(to) and all(a in (1, b) for a, b in zip(reversed(shape), reversed(to)))


def _same_shape(op: Op, *vals: Value):
    shapes = {v.type.shape for v in vals}
    if len(shapes) > 1 and op.attrs.get("fused"):
        # after fusion, elementwise operands may be scalars or broadcast views of the result shape
        res = vals[-1].type.shape
        if all(_broadcastable(v.type.shape, res) for v in vals):
            return
    if len(shapes) > 1:
        _fail(op, "operands and result must have the same shape, got " + ", ".join(str(v.type) for v in vals))


def _check_types(op: Op) -> None:
    kind = op.opdef.kind
    res = op.results[0].type if op.results else None
    ins = op.operands
    if kind == "elementwise":
        _same_shape(op, *ins, op.results[0])
        elems = {v.type.scalar for v in ins} | {res.scalar}
        if len(elems) != 1:
            _fail(op, "operands and result must have one element type, got " + ", ".join(str(v.type) for v in ins))
    elif kind == "compare":
        _same_shape(op, *ins, op.results[0])
        if ins[0].type.scalar != ins[1].type.scalar or res.scalar != T.i1:
            _fail(op, f"compares two values of one element type into i1, got {ins[0].type}, {ins[1].type} -> {res}")
        if op.attrs["pred"] not in CMP_PREDICATES:
            _fail(op, f"unknown predicate {op.attrs['pred']!r}")
    elif kind == "select":
        _same_shape(op, *ins, op.results[0])
        if ins[0].type.scalar != T.i1 or ins[1].type.scalar != ins[2].type.scalar != res.scalar:
            _fail(op, "needs an i1 condition and two values of the result's element type")
    elif kind == "cast":
        _same_shape(op, ins[0], op.results[0])
    elif kind == "addptr":
        _same_shape(op, *ins, op.results[0])
        if not ins[0].type.is_ptr or not ins[1].type.scalar.is_int or ins[0].type.scalar != res.scalar:
            _fail(op, f"adds an integer offset to a pointer, got {ins[0].type}, {ins[1].type} -> {res}")
    elif kind == "load":
        if not ins[0].type.is_ptr or ins[0].type.scalar.pointee != res.scalar or ins[0].type.shape != res.shape:
            _fail(op, f"loads {res} through {ins[0].type}")
        if len(ins) > 1 and (ins[1].type.scalar != T.i1 or ins[1].type.shape != res.shape):
            _fail(op, f"mask must be i1 of the pointer's shape, got {ins[1].type}")
        if len(ins) > 2 and ins[2].type != res:
            _fail(op, f"other must have the result type {res}, got {ins[2].type}")
    elif kind == "store":
        if not ins[0].type.is_ptr or ins[0].type.scalar.pointee != ins[1].type.scalar or ins[0].type.shape != ins[1].type.shape:
            _fail(op, f"stores {ins[1].type} through {ins[0].type}")
        if len(ins) > 2 and (ins[2].type.scalar != T.i1 or ins[2].type.shape != ins[0].type.shape):
            _fail(op, f"mask must be i1 of the pointer's shape, got {ins[2].type}")
    elif kind in ("atomic", "atomic_cas"):
        if not ins[0].type.is_ptr or ins[0].type.shape != res.shape or ins[0].type.scalar.pointee != res.scalar:
            _fail(op, f"atomic on {ins[0].type} must return {ins[0].type.scalar} values of its shape")
        if kind == "atomic" and op.attrs["op"] not in ATOMIC_KINDS:
            _fail(op, f"unknown atomic op {op.attrs['op']!r}")
    elif kind == "splat":
        if ins[0].type.is_block or res.scalar != ins[0].type:
            _fail(op, f"splats a scalar into a block of its type, got {ins[0].type} -> {res}")
    elif kind == "broadcast":
        a, r = ins[0].type.shape, res.shape
        if len(a) != len(r) or any(x != y and x != 1 for x, y in zip(a, r)) or ins[0].type.scalar != res.scalar:
            _fail(op, f"cannot broadcast {ins[0].type} to {res}")
    elif kind == "shape":
        if ins[0].type.scalar != res.scalar or ins[0].type.numel != res.numel:
            _fail(op, f"changes the shape, not the elements: {ins[0].type} -> {res}")
        if op.name == "permute" and sorted(op.attrs["order"]) != list(range(len(res.shape))):
            _fail(op, f"order {op.attrs['order']} is not a permutation of the dimensions")
    elif kind in ("slice", "insert_slice"):
        whole, part = (ins[0].type, res) if kind == "slice" else (res, ins[1].type)
        a, r = whole.shape, part.shape
        offsets, steps = slice_geometry(op)
        if kind == "insert_slice" and ins[0].type != res:
            _fail(op, f"gives a block like the one it writes into, got {ins[0].type} -> {res}")
        if whole.scalar != part.scalar or whole.is_ptr or len(a) != len(r) or any(y > x or y < 1 for x, y in zip(a, r)):
            _fail(op, f"takes a sub-block of values of one rank and type, got {whole} -> {part}")
        if len(offsets) != len(r) or len(steps) != len(r) or \
                not all(isinstance(o, int) and isinstance(s, int) and o >= 0 and s >= 1 and o + (n - 1) * s < m
                        for o, s, n, m in zip(offsets, steps, r, a)):
            _fail(op, f"takes elements at offsets {offsets} with steps {steps}: they must be elements of its operand "
                      f"(one constant offset >= 0 and step >= 1 per dimension), got {whole} -> {part}")
    elif kind == "reduce":
        if op.attrs["op"] not in REDUCE_KINDS:
            _fail(op, f"unknown reduction {op.attrs['op']!r}")
        shape = list(ins[0].type.shape)
        axis = op.attrs["axis"]
        if not 0 <= axis < len(shape):
            _fail(op, f"axis {axis} out of range for {ins[0].type}")
        del shape[axis]
        if tuple(shape) != res.shape:
            _fail(op, f"reducing {ins[0].type} along {axis} gives shape {tuple(shape)}, not {res}")
    elif kind == "scan":
        if op.attrs["op"] not in SCAN_KINDS:
            _fail(op, f"unknown scan {op.attrs['op']!r}")
        if ins[0].type.shape != res.shape:
            _fail(op, "a scan keeps the shape")
    elif kind == "dot":
        a, b = ins[0].type.shape, ins[1].type.shape
        if len(a) != 2 or len(b) != 2 or a[1] != b[0] or res.shape != (a[0], b[1]):
            _fail(op, f"multiplies MxK by KxN into MxN, got {ins[0].type} x {ins[1].type} -> {res}")
        if len(ins) == 3 and ins[2].type != res:
            _fail(op, f"acc must have the result type {res}, got {ins[2].type}")
    elif kind in ("panel_fill", "panel_tile"):
        slot, miss = ins[:2]
        if slot.type.is_block or not slot.type.is_int or str(miss.type) != "i1":
            _fail(op, "takes an integer slot offset and an i1 miss flag first")
        if op.attrs["slots"] < 1 or not isinstance(op.attrs["event"], int) or op.attrs["event"] < 0:
            _fail(op, "needs a panel of at least one slot and an event >= 0")
        if kind == "panel_tile" and (len(res.shape) != 2 if res.is_block else True):
            _fail(op, "gives a 2-D tile")
        if kind == "panel_fill":
            shape = op.attrs["shape"]
            ptr = ins[2]
            if len(shape) != 2 or len(ins) not in (7, 8) or not ptr.type.is_ptr or ptr.type.is_block:
                _fail(op, "loads a 2-D tile: a scalar pointer, 2 strides and 2 valid extents (and other)")
            if any(v.type.is_block or not v.type.is_int for v in ins[3:7]):
                _fail(op, "strides and valid extents must be integer scalars")
            if len(ins) == 8 and ins[7].type.scalar != ptr.type.scalar.pointee:
                _fail(op, f"other must be a {ptr.type.scalar.pointee} value")
    elif kind in ("load_tile", "store_tile"):
        ptr = ins[0]
        value = res if kind == "load_tile" else ins[-1].type
        r = len(value.shape)
        extra = len(ins) - 1 - 2 * r - (kind == "store_tile")
        if not ptr.type.is_ptr or ptr.type.is_block or ptr.type.scalar.pointee != value.scalar:
            _fail(op, f"needs a scalar pointer to {value.scalar}, got {ptr.type}")
        if extra not in ((0, 1) if kind == "load_tile" else (0,)):
            _fail(op, f"takes a pointer, {r} strides and {r} valid extents for a rank-{r} tile")
        if any(v.type.is_block or not v.type.is_int for v in ins[1:1 + 2 * r]):
            _fail(op, "strides and valid extents must be integer scalars")
        if extra == 1 and ins[-1].type.scalar != value.scalar:
            _fail(op, f"other must be a {value.scalar} value")
    elif kind in ("gather_rows", "scatter_rows"):
        ptr, offs, valid = ins[:3]
        value = res if kind == "gather_rows" else ins[3].type
        if len(value.shape) != 2 or not offs.type.is_block or offs.type.shape != value.shape[:1]:
            _fail(op, f"moves R x C rows with R row offsets, got {offs.type} and {value}")
        if not ptr.type.is_ptr or ptr.type.is_block or ptr.type.scalar.pointee != value.scalar:
            _fail(op, f"needs a scalar pointer to {value.scalar}, got {ptr.type}")
        rest = ins[3:] if kind == "gather_rows" else ins[4:]
        if rest and (rest[0].type.scalar != T.i1 or rest[0].type.shape != offs.type.shape):
            _fail(op, f"row mask must be i1 of shape {offs.type.shape}")
    elif kind == "gather_cols":
        ptr, offs, stride, valid = ins[:4]
        if len(res.shape) != 2 or not offs.type.is_block or offs.type.shape != res.shape[1:]:
            _fail(op, f"moves R x C columns with C column offsets, got {offs.type} and {res}")
        if not ptr.type.is_ptr or ptr.type.is_block or ptr.type.scalar.pointee != res.scalar:
            _fail(op, f"needs a scalar pointer to {res.scalar}, got {ptr.type}")
        if any(v.type.is_block or not v.type.is_int for v in (stride, valid)):
            _fail(op, "the row stride and valid rows must be integer scalars")
        if len(ins) > 4 and (ins[4].type.scalar != T.i1 or ins[4].type.shape != offs.type.shape):
            _fail(op, f"column mask must be i1 of shape {offs.type.shape}")
    elif kind == "arange":
        if res != T.block(T.i32, [op.attrs["end"] - op.attrs["start"]]):
            _fail(op, f"arange({op.attrs['start']}, {op.attrs['end']}) must have type tensor<Nxi32>, got {res}")


def _check_control(op: Op) -> None:
    kind = op.opdef.kind
    res_types = [r.type for r in op.results]
    if kind == "for":
        lb, ub, step, *inits = op.operands
        body = op.regions[0]
        if {lb.type, ub.type, step.type} - {T.i32, T.i64}:
            _fail(op, "bounds and step must be i32 or i64 scalars")
        if [a.type for a in body.args] != [lb.type] + [v.type for v in inits]:
            _fail(op, "region arguments must be the induction variable and the carried values")
        if [v.type for v in inits] != res_types:
            _fail(op, "results must have the carried values' types")
        _expect_terminator(op, body, "yield", res_types)
    elif kind == "if":
        if op.operands[0].type != T.i1:
            _fail(op, "condition must be an i1 scalar")
        for r in op.regions:
            _expect_terminator(op, r, "yield", res_types)
    elif kind == "while":
        before, after = op.regions
        inits = [v.type for v in op.operands]
        if [a.type for a in before.args] != inits:
            _fail(op, "before-region arguments must match the initial values")
        term = before.terminator
        if term is None or term.name != "condition":
            _fail(op, "before-region must end in 'condition'")
        passed = [v.type for v in term.operands[1:]]
        if term.operands[0].type != T.i1 or passed != res_types or [a.type for a in after.args] != passed:
            _fail(op, "condition must pass i1 and values of the result types to the after-region")
        _expect_terminator(op, after, "yield", inits)


def _expect_terminator(op: Op, region: Region, name: str, types: list) -> None:
    term = region.terminator
    if term is None or term.name != name:
        _fail(op, f"region must end in '{name}'")
    if [v.type for v in term.operands] != types:
        _fail(op, f"'{name}' passes ({', '.join(str(v.type) for v in term.operands)}), "
                  f"expected ({', '.join(str(t) for t in types)})")


def verify(fn: Function) -> None:
    defined: set[int] = set()

    def region(r: Region, scope: set[int]) -> None:
        scope = set(scope)
        for a in r.args:
            _define(a, scope)
        for i, op in enumerate(r.ops):
            if op.name not in OPS:
                raise VerifyError(f"{op.loc}: unknown op '{op.name}'")
            d = op.opdef
            lo, hi = d.operands
            if len(op.operands) < lo or (hi is not None and len(op.operands) > hi):
                _fail(op, f"takes {lo}..{hi if hi is not None else 'any'} operands, got {len(op.operands)}")
            if d.results is not None and len(op.results) != d.results:
                _fail(op, f"has {d.results} results, got {len(op.results)}")
            if len(op.regions) != d.regions:
                _fail(op, f"has {d.regions} regions, got {len(op.regions)}")
            for a in d.attrs:
                if a not in op.attrs:
                    _fail(op, f"needs attribute '{a}'")
            unknown = (set(op.attrs) - set(d.attrs) - set(d.optional_attrs) - set(PLANNING_ATTRS)
                       - set(SCHEDULING_ATTRS) - {"fused"})
            if unknown:
                _fail(op, f"has unknown attributes {sorted(unknown)}")
            for v in op.operands:
                if id(v) not in scope:
                    _fail(op, f"uses {v!r} where its definition does not dominate")
            if d.terminator and i != len(r.ops) - 1:
                _fail(op, "must be the last op of its region")
            for sub in op.regions:
                region(sub, scope)
            if d.kind not in ("for", "if", "while"):
                _check_types(op)
            _check_control(op)
            for res in op.results:
                _define(res, scope)
        if not r.ops or not r.ops[-1].opdef.terminator:
            where = r.ops[-1].loc if r.ops else "<empty region>"
            raise VerifyError(f"{where}: region does not end in a terminator")

    def _define(v: Value, scope: set[int]) -> None:
        if id(v) in defined:
            raise VerifyError(f"{v!r} defined twice")
        defined.add(id(v))
        scope.add(id(v))

    top: set[int] = set()
    for a in fn.args:
        _define(a, top)
    region(fn.body, top)
    if fn.body.ops[-1].name != "return":
        raise VerifyError(f"{fn.body.ops[-1].loc}: the kernel body must end in 'return'")
    for op in fn.walk():
        if op.name == "return" and op.parent is not fn.body:
            _fail(op, "may only end the kernel body")
