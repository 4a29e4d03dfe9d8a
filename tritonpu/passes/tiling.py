"""Tiling: blocks that do not fit the Unified Buffer are split into tiles that do.

Guarantees: when the kernel's blocks, live together, need more UB than the machine has, and every
block op of the kernel body is elementwise work on tiles (``load_tile``/``store_tile``, elementwise
ops, compares, selects, casts, splats, broadcasts, expand_dims, constants, aranges) over one
leading dimension D0, the block ops are moved into a loop ``for t in range(0, D0, T)`` over tiles
of T rows (T the largest power of two dividing D0 whose tiles fit): each transfer starts ``t``
rows further and its valid extent along dimension 0 becomes ``clamp(valid - t, 0, T)``, each
``arange`` along dimension 0 is offset by ``t``.  Which values carry the rows is decided by how
they flow (``b[None, :]`` is one row of a column vector, ``a[:, None]`` keeps ``a``'s rows), not by
their sizes: column vectors stay whole in every tile, whatever their length.  Every element is
computed, read and written exactly as before.  Runtime sizes never change the code: ragged tails
are handled by the valid extents.  A block that cannot be tiled this way (reductions, scans, dots, control flow over
blocks) and does not fit is a ``CompilationError`` naming the value, its source line, the bytes
it needs and the space.
"""
from __future__ import annotations

from tritonpu.codegen.analysis import tile_bytes
from tritonpu.errors import CompilationError
from tritonpu.ir import Function, Op, Value
from tritonpu.ir import types as T
from tritonpu.isa.machines import machine as get_machine
from tritonpu.passes.manager import Pass, register
from tritonpu.passes.rewrite import ELEMENTWISE_KINDS, feeds_element_access, fits_on_chip, shift_rows, split_that_fits

_TILEABLE_OPS = {"load_tile", "store_tile", "expand_dims", "cast"}


def _too_big(fn, cap):
    from tritonpu.codegen.analysis import Analysis
    an = Analysis(fn)
    for op in fn.walk():
        for r in op.results:
            if r.type.is_block and tile_bytes(r.type) > cap and an.is_ub(r) and op.name not in (
                    "broadcast", "expand_dims", "reshape", "permute"):
                return op, r
    return None


def _fail(op, r, cap, why=""):
    name = f"`{r.name}`" if r.name else f"a value computed here ('{op.name}' in the IR)"
    raise CompilationError.at(
        f"{name} is a {r.type} block of {tile_bytes(r.type)} bytes, larger than the Unified Buffer ({cap} bytes)"
        f"{why}; use a smaller block size", op.loc)


def _why_not(bad, nested) -> str:
    if bad:                     # (the first op that is not elementwise)
        op = bad[0]
        if op.name in ("reduce", "scan"):
            what = "reduction" if op.name == "reduce" else "scan"
            return (f" (the {what} at line {op.loc.line} needs its whole block on chip: loop over the block in "
                    "smaller pieces and carry the partial results, as an online softmax does)")
        if op.name in ("for", "while", "if"):
            # (an `if` may be a version of a loop a pass made: the user wrote a loop or a branch there)
            what = "the loop" if op.name != "if" else "the loop or branch"
            return f" ({what} at line {op.loc.line} computes blocks: only element-by-element work is split)"
        if op.name == "dot":
            return f" (the tl.dot at line {op.loc.line} needs its whole result block at once)"
        return f" ('{op.name}' at line {op.loc.line} does not work element by element)"
    if nested:
        return " (blocks computed inside loops are not split)"
    return ""


def _block_ops(fn):
    return [op for op in fn.body.ops
            if any(v.type.is_block for v in list(op.results) + list(op.operands))]


@register
class Tiling(Pass):
    name = "tiling"

    def run(self, fn: Function) -> None:
        cap = get_machine("ascend910b").capacity["ub"]
        if fits_on_chip(fn):
            return
        ops = _block_ops(fn)
        nested = any(op.regions and any(v.type.is_block for o in op.walk() for v in list(o.results) + list(o.operands))
                     for op in fn.body.ops)
        bad = [op for op in ops if not (op.opdef.kind in ELEMENTWISE_KINDS or op.name in _TILEABLE_OPS)
               or (op.name == "cast" and op.name == "bitcast")]
        blocks = [v for op in ops for v in list(op.results) + list(op.operands) if v.type.is_block]
        d0s = {v.type.shape[0] for v in blocks if len(v.type.shape) > 1 and v.type.shape[0] != 1} or \
            {v.type.shape[0] for v in blocks if v.type.shape[0] != 1}
        d0 = d0s.pop() if len(d0s) == 1 else None
        rows = _row_values(ops, d0) if d0 is not None and not (nested or bad) else None
        big = _too_big(fn, cap)
        if big and feeds_element_access(fn, big[1]):
            big = None          # (element-rows does such an access a few rows at a time)
        if not rows:                # (no block carries the rows: nothing to split either)
            if fits_on_chip(fn, reuse=True):
                return
            if big:
                inner = [op for op in fn.walk() if op.name in ("reduce", "scan")]
                why = _why_not(bad or inner, nested) or " (its blocks do not share one leading dimension)"
                _fail(*big, cap, " and not splittable here" + why)
            return      # buffer planning reports what does not fit together
        if split_that_fits(fn, d0, lambda f, t: _strip_mine(f, d0, t)) is not None:
            return
        if fits_on_chip(fn, reuse=True):
            return
        if big:
            _fail(*big, cap, " even in tiles of one row")


def _retype(ty, d0, t):
    if ty.is_block and ty.shape[0] == d0:
        return T.block(ty.scalar, (t,) + tuple(ty.shape[1:]))
    return ty


def _row_values(ops, d0: int) -> set | None:
    """ids of the block values whose dimension 0 is the rows being tiled (length ``d0``); None when
    that is not consistent.  Decided by how values flow, not by their sizes: ``b[None, :]`` is
    a row (shape[0] 1) made of a column vector, whatever its length; ``a[:, None]`` keeps ``a``'s
    dimension 0; elementwise ops and same-rank broadcasts share their operands' rows.  A rank-1
    block nothing ties either way carries the rows when its length is ``d0`` (a 1-D kernel)."""
    parent: dict = {}

    def find(v):
        k = id(v)
        parent.setdefault(k, k)
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def union(a, b):
        parent[find(a)] = find(b)

    values, forced = {}, []            # forced: (value, carries rows?)
    for op in ops:
        for v in list(op.operands) + list(op.results):
            if v.type.is_block:
                values[id(v)] = v
                if len(v.type.shape) > 1:
                    forced.append((v, v.type.shape[0] != 1))
        blocks = [v for v in op.operands if v.type.is_block]
        res = op.results[0] if op.results and op.results[0].type.is_block else None
        if op.name == "expand_dims":
            if op.attrs["axis"] == 0:
                forced.append((op.operands[0], False))     # its dimension 0 becomes the columns
            else:
                union(op.operands[0], res)
        elif op.name == "broadcast":
            if len(op.operands[0].type.shape) == len(res.type.shape) and \
                    op.operands[0].type.shape[0] == res.type.shape[0]:
                union(op.operands[0], res)
        elif res is not None:
            for v in blocks:        # (an operand of one row broadcasts against the result's rows)
                if len(v.type.shape) == len(res.type.shape) and v.type.shape[0] == res.type.shape[0]:
                    union(v, res)
    label: dict = {}
    for v, rows in forced:
        if rows and v.type.shape[0] != d0:
            return None
        if label.setdefault(find(v), rows) != rows:
            return None
    out = set()
    for k, v in values.items():
        carries = label.get(find(v), v.type.shape[0] == d0 and len(v.type.shape) == 1)
        if carries:
            if v.type.shape[0] != d0:
                return None
            out.add(k)
    return out


def _strip_mine(fn: Function, d0: int, t: int) -> None:
    body = fn.body
    moving = [op for op in _block_ops(fn)]
    rows = _row_values(moving, d0)
    moving_ids = {id(op) for op in moving}
    first = min(body.ops.index(op) for op in moving)
    loc = moving[0].loc
    # scalar ops between the block ops stay before the loop (they only read scalars)
    keep_before = [op for op in body.ops[first:] if id(op) not in moving_ids and op.name != "return"]
    rest = [op for op in body.ops[first:] if op.name == "return"]
    consts = [Op("constant", [], [T.i32], {"value": v}, loc=loc) for v in (0, d0, t)]
    iv = Value(T.i32, "tile")
    loop_body = []

    def new(name, operands, ty, **attrs):
        o = Op(name, operands, [ty], attrs, loc=loc)
        loop_body.append(o)
        return o.result

    for op in moving:
        tiled = [r for r in op.results if id(r) in rows]
        for r in tiled:
            r.type = _retype(r.type, d0, t)
        if op.name == "arange" and tiled:
            start = op.attrs["start"]
            op.attrs["end"] = start + t
            loop_body.append(op)
            shifted = new("add", [op.result, new("splat", [iv], op.result.type)], op.result.type)
            _replace_uses(fn, op.result, shifted, skip=shifted.owner)
            continue
        if op.name in ("load_tile", "store_tile") and (tiled or id(op.operands[-1]) in rows):
            shift_rows(op, iv, t, new)
        loop_body.append(op)
    loop_body.append(Op("yield", [], [], loc=loc))
    from tritonpu.ir import Region
    region = Region([iv], loop_body)
    for o in loop_body:
        o.parent = region
    loop = Op("for", [c.result for c in consts], [], regions=[region], loc=loc)
    for o in consts + [loop]:
        o.parent = body
    body.ops = body.ops[:first] + keep_before + consts + [loop] + rest


def _replace_uses(fn, old, new, skip) -> None:
    for o in fn.walk():
        if o is not skip:
            o.operands = [new if v is old else v for v in o.operands]
