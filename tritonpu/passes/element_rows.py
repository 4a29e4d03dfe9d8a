"""Element rows: an element-by-element store whose addresses do not fit, done a few rows at a time.

A store the compiler cannot move as a tile (``tl.store(ptrs, x, mask)`` with addresses it cannot
prove contiguous: the other branch of a guard that a block pointer's offsets are in bounds, a
scatter) holds a pointer per element in the Unified Buffer -- 8 bytes each, 128 KiB for a 128x128
block, beside its offsets and mask -- so a matmul whose C block is stored that way did not fit.

Guarantees: when the function's blocks do not fit on chip (buffer planning's judgement), each
``store`` of a 2-D block of R > 1 rows whose pointer block takes more than ``CHUNK_BYTES`` is done
in chunks of T rows (T the largest power of two below R dividing it whose pointers take at most
``CHUNK_BYTES``).  The ops of its region that compute its pointers, value and mask -- elementwise
ops, compares, selects, casts, ``addptr``, splats, broadcasts, ``expand_dims`` and constants whose
result is a 2-D block of R rows -- and that nothing but the store reads are cloned once per chunk
on rows c .. c+T: a block of R rows computed elsewhere is read through ``slice {offsets = [c, 0]}``
(a vector of R elements that ``expand_dims`` makes a column of, through ``slice {offsets = [c]}``),
a block of one row and a scalar as they are.  The chunks store in row order.  Every element is
stored at the same address, under the same mask, with the same value as before (results are
unchanged).  A store whose operands are computed otherwise is left as it is, and so is the
function when it fits.
"""
from __future__ import annotations

from tritonpu.codegen.homes import elem_bytes
from tritonpu.ir import Function, Op
from tritonpu.ir import types as T
from tritonpu.passes.manager import Pass, register
from tritonpu.passes.rewrite import clone_op, fits_on_chip

CHUNK_BYTES = 16 * 1024         # the pointers of one chunk at most
_KINDS = {"elementwise", "compare", "select", "splat", "broadcast", "constant", "cast"}
_NAMES = {"addptr", "expand_dims"}


def _rows_op(o: Op, m: int) -> bool:
    """An op cloned per chunk: one result, a 2-D block of ``m`` rows, computed row by row."""
    if len(o.results) != 1 or o.regions or o.opdef.effects or \
            not (o.opdef.kind in _KINDS or o.name in _NAMES):
        return False
    ty = o.result.type
    return ty.is_block and len(ty.shape) == 2 and ty.shape[0] == m


def _chunked_ops(store: Op, users: dict):
    """The ops of the store's region cloned per chunk (in region order), or None when an operand
    on the way is neither one of them, a block of R or one rows, a column's vector nor a scalar."""
    m = store.operands[0].type.shape[0]
    region = store.parent.ops
    mine: set = set()
    todo = [v for v in store.operands]
    while todo:
        v = todo.pop()
        o = v.owner
        if o is None or o.parent is not store.parent or id(o) in mine or not _rows_op(o, m):
            continue
        if any(u is not store and id(u) not in mine for u, _ in users.get(id(v), [])):
            continue            # read elsewhere too: sliced, not moved (checked again below)
        mine.add(id(o))
        todo.extend(o.operands)
    ops = [o for o in region if id(o) in mine]
    # every use of a chunked value is a chunked op or the store; every other operand is sliceable
    for o in ops:
        if any(u is not store and id(u) not in mine for u, _ in users.get(id(o.result), [])):
            return None
        for v in o.operands:
            if v.owner is not None and id(v.owner) in mine:
                continue
            if not _sliceable(v, o, m):
                return None
    for v in store.operands:
        if not (v.owner is not None and id(v.owner) in mine) and not _sliceable(v, store, m):
            return None
    return ops


def _sliceable(v, user: Op, m: int) -> bool:
    ty = v.type
    if not ty.is_block:
        return True
    if len(ty.shape) == 2:
        return ty.shape[0] in (1, m)
    return len(ty.shape) == 1 and ty.shape[0] == m and user.name == "expand_dims" and user.attrs["axis"] == 1


def _split(store: Op, ops: list, t: int) -> None:
    region = store.parent
    m = store.operands[0].type.shape[0]
    loc = store.loc
    out: list = []
    chunked = {id(o) for o in ops}
    for c in range(0, m, t):
        mapping: dict = {}

        def rows(v):
            if id(v) in mapping:
                return mapping[id(v)]
            ty = v.type
            if not ty.is_block or ty.shape[0] != m or m == 1:
                return v
            s = Op("slice", [v], [T.block(ty.scalar, (t,) + tuple(ty.shape[1:]))],
                   {"offsets": [c] + [0] * (len(ty.shape) - 1)}, loc=loc)
            out.append(s)
            mapping[id(v)] = s.result
            return s.result
        for o in ops:
            for v in o.operands:
                if v.owner is None or id(v.owner) not in chunked:
                    rows(v)
            n = clone_op(o, mapping)
            n.result.type = T.block(o.result.type.scalar, (t,) + tuple(o.result.type.shape[1:]))
            out.append(n)
        for v in store.operands:
            rows(v)
        out.append(clone_op(store, mapping))
    for o in out:
        o.parent = region
    at = region.ops.index(store)
    gone = {id(o) for o in ops} | {id(store)}
    region.ops = [o for o in region.ops[:at] if id(o) not in gone] + out + region.ops[at + 1:]


def _users(fn) -> dict:
    out: dict = {}
    for o in fn.walk():
        for i, v in enumerate(o.operands):
            out.setdefault(id(v), []).append((o, i))
    return out


@register
class ElementRows(Pass):
    name = "element-rows"

    def run(self, fn: Function) -> None:
        if fits_on_chip(fn):
            return
        users = _users(fn)
        for store in [o for o in fn.walk() if o.name == "store"]:
            ty = store.operands[0].type
            if not ty.is_block or len(ty.shape) != 2 or ty.shape[0] < 2 or ty.numel * elem_bytes(ty) <= CHUNK_BYTES:
                continue
            m, row = ty.shape[0], ty.shape[1] * elem_bytes(ty)
            t = m // 2
            while t > 1 and (m % t or t * row > CHUNK_BYTES):
                t //= 2
            ops = _chunked_ops(store, users)
            if ops is None or m % t:
                continue
            _split(store, ops, t)
            users = _users(fn)
