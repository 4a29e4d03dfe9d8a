"""Element rows: an element-by-element load or store whose addresses do not fit, done a few rows at a time.

An access the compiler cannot move as a tile (``tl.load(ptrs, mask)`` / ``tl.store(ptrs, x, mask)``
with addresses it cannot prove contiguous: the other branch of a guard that a block pointer's
offsets are in bounds, a gather, a scatter) holds a pointer per element in the Unified Buffer --
8 bytes each, 128 KiB for a 128x128 block, beside its offsets and mask -- so a matmul whose
operands or C block are moved that way did not fit.

Guarantees: when the function's blocks do not fit on chip (buffer planning's judgement), each
``load`` and ``store`` of a 2-D block of R > 1 rows whose pointer block takes more than B bytes
is done in chunks of T rows (T the largest power of two below R dividing it whose pointers take
at most B; B the largest of ``CHUNK_BYTES`` with which the function then fits, else the
smallest).  The ops of its region that compute its pointers, mask,
``other`` and stored value -- elementwise ops, compares, selects, casts, ``addptr``, splats,
broadcasts, ``expand_dims`` and constants whose result is a 2-D block of R rows -- and that
nothing but the access reads are cloned once per chunk on rows c .. c+T: a block of R rows
computed elsewhere is read through ``slice {offsets = [c, 0]}`` (a vector of R elements that
``expand_dims`` makes a column of, through ``slice {offsets = [c]}``), a block of one row and a
scalar as they are.  The chunks run in row order; a load's chunks are written into its result
with ``insert_slice {offsets = [c, 0]}``, starting from a block of zeros.  Every element is read
or written at the same address, under the same mask, with the same value or ``other`` as before
(results are unchanged).  An access whose operands are computed otherwise is left as it is, and
so is the function when it fits.
"""
from __future__ import annotations

from tritonpu.codegen.homes import elem_bytes
from tritonpu.ir import Function, Op
from tritonpu.ir import types as T
from tritonpu.passes.manager import Pass, register
from tritonpu.passes.rewrite import clone_op, copy_function, fits_on_chip, replace_all_uses, users_of

CHUNK_BYTES = (16 * 1024, 8 * 1024, 4 * 1024, 2 * 1024)    # the pointers of one chunk at most, tried in order
_KINDS = {"elementwise", "compare", "select", "splat", "broadcast", "constant", "cast"}
_NAMES = {"addptr", "expand_dims"}


def _rows_op(o: Op, m: int) -> bool:
    """An op cloned per chunk: one result, a 2-D block of ``m`` rows, computed row by row (or a
    view of all the rows of a block: each chunk reads its rows of that block)."""
    if len(o.results) != 1 or o.regions or o.opdef.effects or \
            not (o.opdef.kind in _KINDS or o.name in _NAMES or _all_rows(o)):
        return False
    ty = o.result.type
    return ty.is_block and len(ty.shape) == 2 and ty.shape[0] == m


def _all_rows(o: Op) -> bool:
    return o.name == "slice" and not any(o.attrs.get("offsets") or ()) and not o.attrs.get("steps") and \
        o.result.type.shape == o.operands[0].type.shape


def _chunked_ops(access: Op, users: dict):
    """The ops of the access's region cloned per chunk (in region order), or None when an operand
    on the way is neither one of them, a block of R or one rows, a column's vector nor a scalar."""
    m = access.operands[0].type.shape[0]
    region = access.parent.ops
    mine: set = set()
    todo = [v for v in access.operands]
    while todo:
        v = todo.pop()
        o = v.owner
        if o is None or o.parent is not access.parent or id(o) in mine or not _rows_op(o, m):
            continue
        if any(u is not access and id(u) not in mine for u, _ in users.get(id(v), [])):
            continue            # read elsewhere too: sliced, not moved (checked again below)
        mine.add(id(o))
        todo.extend(o.operands)
    ops = [o for o in region if id(o) in mine]
    # every use of a chunked value is a chunked op or the access; every other operand is sliceable
    for o in ops:
        if any(u is not access and id(u) not in mine for u, _ in users.get(id(o.result), [])):
            return None
        for v in o.operands:
            if v.owner is not None and id(v.owner) in mine:
                continue
            if not _sliceable(v, o, m):
                return None
    for v in access.operands:
        if not (v.owner is not None and id(v.owner) in mine) and not _sliceable(v, access, m):
            return None
    return ops


def _sliceable(v, user: Op, m: int) -> bool:
    ty = v.type
    if not ty.is_block:
        return True
    if ty.scalar.is_ptr and ty.shape[0] == m:
        return False            # (pointers are not sliced: a block of them is computed per chunk or not split)
    if len(ty.shape) == 2:
        return ty.shape[0] in (1, m)
    return len(ty.shape) == 1 and ty.shape[0] == m and user.name == "expand_dims" and user.attrs["axis"] == 1


def _chunk_type(ty, t: int):
    """``ty`` with ``t`` rows."""
    return T.block(ty.scalar, (t,) + tuple(ty.shape[1:]))


def _split(fn: Function, access: Op, ops: list, t: int) -> None:
    region = access.parent
    ty = access.operands[0].type
    m = ty.shape[0]
    loc = access.loc
    out: list = []
    chunked = {id(o) for o in ops}
    result = None
    if access.name == "load":               # the chunks are written into a block of zeros
        rt = access.result.type
        zero = Op("constant", [], [rt.scalar], {"value": 0.0 if rt.scalar.is_float else 0}, loc=loc)
        result = Op("splat", [zero.result], [rt], loc=loc)
        out += [zero, result]
    for c in range(0, m, t):
        mapping: dict = {}

        def rows(v):
            if id(v) in mapping:
                return mapping[id(v)]
            vt = v.type
            if not vt.is_block or vt.shape[0] != m or m == 1:
                return v
            s = Op("slice", [v], [_chunk_type(vt, t)],
                   {"offsets": [c] + [0] * (len(vt.shape) - 1)}, loc=loc)
            out.append(s)
            mapping[id(v)] = s.result
            return s.result
        for o in ops:
            for v in o.operands:
                if v.owner is None or id(v.owner) not in chunked:
                    rows(v)
            if _all_rows(o):                # the chunk's rows of the block it views
                mapping[id(o.result)] = mapping.get(id(o.operands[0]), o.operands[0])
                continue
            n = clone_op(o, mapping)
            n.result.type = _chunk_type(o.result.type, t)
            out.append(n)
        for v in access.operands:
            rows(v)
        n = clone_op(access, mapping)
        out.append(n)
        if result is not None:
            n.result.type = _chunk_type(n.result.type, t)
            result = Op("insert_slice", [result.result, n.result], [access.result.type], {"offsets": [c, 0]},
                        loc=loc)
            out.append(result)
    for o in out:
        o.parent = region
    at = region.ops.index(access)
    gone = {id(o) for o in ops} | {id(access)}
    region.ops = [o for o in region.ops[:at] if id(o) not in gone] + out + region.ops[at + 1:]
    if result is not None:
        result.result.name = access.result.name
        replace_all_uses(fn, [access.result], [result.result])


@register
class ElementRows(Pass):
    name = "element-rows"

    def run(self, fn: Function) -> None:
        if fits_on_chip(fn):
            return
        # the largest chunks with which the function fits (else the smallest: a later plan --
        # loaded tiles reused in place, passes left out -- may make room for them)
        for budget in CHUNK_BYTES:
            trial = copy_function(fn)
            if _chunk_accesses(trial, budget) and (fits_on_chip(trial) or budget == CHUNK_BYTES[-1]):
                _chunk_accesses(fn, budget)
                return


def _chunk_accesses(fn: Function, budget: int) -> bool:
    """Split every access whose pointers take more than ``budget`` into chunks whose pointers take
    at most that; whether any was split."""
    users = users_of(fn)
    done = False
    for access in [o for o in fn.walk() if o.name in ("load", "store")]:
        ty = access.operands[0].type
        if not ty.is_block or len(ty.shape) != 2 or ty.shape[0] < 2 or ty.numel * elem_bytes(ty) <= budget:
            continue
        m, row = ty.shape[0], ty.shape[1] * elem_bytes(ty)
        t = m // 2
        while t > 1 and (m % t or t * row > budget):
            t //= 2
        ops = _chunked_ops(access, users)
        if ops is None or m % t:
            continue
        _split(fn, access, ops, t)
        users = users_of(fn)
        done = True
    return done
