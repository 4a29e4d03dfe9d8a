"""Epilogue rows: the elementwise work after a dot loop, done a few rows of the accumulator at a time.

A matmul's epilogue (``acc = leaky_relu(acc)``, ``acc + bias[None, :]``, ``acc.to(tl.float16)``,
then a store) runs on the vector unit, so the loop's accumulator is drained from L0C into the
Unified Buffer whole, and the epilogue's temporaries take as much again: a 128x256 fp32
accumulator alone is 128 KiB of the 192 KiB.  When the kernel does not fit UB that way, this pass
does the epilogue in chunks of T rows.

Guarantees: when the function's blocks do not fit on chip (buffer planning's judgement), take a
``for`` loop (or an ``if`` of its versions, see passes/unswitch.py), or a ``dot`` with no
accumulator or one of zeros (K in one block: ``acc = tl.dot(a, b)``), in the function's body or in
the body of a loop (a persistent kernel's loop over its tiles), with a 2-D f32 or i32 result R whose
every use is elementwise work in the same region (elementwise ops, compares, selects, casts,
splats, broadcasts of one row, constants) ending in ``store_tile``s of values with R's rows (any
strides: a column-major C is stored transposed a chunk at a time), every block value on the way
carrying R's rows, being one row, or uniform (a splat or constant: made again per chunk).  That
work is cloned once per chunk of T rows: each chunk reads ``slice R {offsets = [c, 0]}`` (rows
c .. c+T of R: FIX drains them from L0C), computes exactly what the epilogue computed on those
rows, and stores them with its pointer ``c`` rows further and its valid rows
``clamp(valid - c, 0, T)``.  Values of one row (``bias[None, :]``) are computed once.  Every
element is computed, converted and stored as before (results bitwise unchanged).

The chunks' ops carry ``rows_chunk`` (0, 1, ...): buffer planning keeps each chunk's drained rows
clear of the chunk before and its stored tiles clear of the chunk after, so FIX, the vector unit
and MTE3 work on three chunks at once.  T is the largest power of two dividing R's rows, at most
``max(rows / 8, min(16, rows / 2))``, for which two chunks fit at once (small chunks: the pipes start and finish
sooner -- 1024x1024x64 with a GELU epilogue at 128x256 takes 9695 cycles at 64 rows, 8797 at 16),
else the largest below R's rows for which one chunk at a time fits.  When none fits the function
is left as it is (buffer planning reports what does not fit).  "Fits" is buffer planning's
judgement, which leaves ``UB_HEADROOM`` free: after the emitter's temporaries overflowed UB beside
a plan that fit, the kernel is compiled again with that room kept.
"""
from __future__ import annotations

from tritonpu.codegen.homes import const_value
from tritonpu.ir import Function, Op
from tritonpu.ir import types as T
from tritonpu.passes.manager import Pass, register
from tritonpu.passes.rewrite import ELEMENTWISE_KINDS, clone_op, fits_on_chip, shift_rows, split_that_fits, users_of

_EPILOGUE_OPS = {"cast", "expand_dims"}
_UNIFORM = ("splat", "constant")        # block values the same in every row


def _epilogue(loop: Op, r, users):
    """(ops of the epilogue of ``r`` in body order, ids of the values carrying its rows, the
    stores) when it has the form the module docstring states, else None."""
    body = loop.parent.ops
    m = r.type.shape[0]
    rows, ops, stores = {id(r)}, [], []
    for o in body[body.index(loop) + 1:]:
        if not any(id(v) in rows for v in o.operands):
            continue
        if o.name == "store_tile":
            val = o.operands[-1]
            if id(val) not in rows or len(val.type.shape) != 2 or \
                    any(id(v) in rows for v in o.operands[:-1]):
                return None
            stores.append(o)
            ops.append(o)
            continue
        if not (o.opdef.kind in ELEMENTWISE_KINDS or o.name in _EPILOGUE_OPS) or o.regions or len(o.results) != 1:
            return None
        res = o.result
        if not res.type.is_block or len(res.type.shape) != 2 or res.type.shape[0] != m:
            return None
        if o.name == "broadcast" and o.operands[0].type.shape[0] != m:
            return None
        for v in o.operands:        # other blocks of R's rows: uniform (made again per chunk)
            if v.type.is_block and v.type.shape[0] == m and m != 1 and id(v) not in rows and \
                    (v.owner is None or v.owner.name not in _UNIFORM):
                return None
        rows.add(id(res))
        ops.append(o)
    if not stores:
        return None
    for o in ops:               # nothing but the epilogue reads what it computes on R's rows
        for res in o.results:
            if any(id(u) not in {id(x) for x in ops} for u, _ in users.get(id(res), [])):
                return None
    if any(u not in ops for u, _ in users.get(id(r), [])):
        return None
    return ops, rows, stores


def _chunk(loop: Op, r, ops, rows, t: int) -> None:
    region = loop.parent
    body = region.ops
    m = r.type.shape[0]
    loc = ops[0].loc
    out = []

    def new(name, operands, ty, **attrs):
        o = Op(name, operands, [ty], {**attrs, "rows_chunk": c // t}, loc=loc)
        out.append(o)
        return o.result

    def rows_of(ty):
        return T.block(ty.scalar, (t,) + tuple(ty.shape[1:]))

    for c in range(0, m, t):
        mapping = {id(r): new("slice", [r], rows_of(r.type), offsets=[c] + [0] * (len(r.type.shape) - 1))}
        for o in ops:
            for v in o.operands:        # a uniform block of R's rows: the chunk's own, of T rows
                if v.type.is_block and v.type.shape[0] == m and id(v) not in rows and id(v) not in mapping:
                    u = v.owner
                    mapping[id(v)] = new(u.name, list(u.operands), rows_of(v.type), **u.attrs)
            n = clone_op(o, mapping)
            n.attrs["rows_chunk"] = c // t
            for res in n.results:
                if id(o.results[n.results.index(res)]) in rows:
                    res.type = T.block(res.type.scalar, (t,) + tuple(res.type.shape[1:]))
            if n.name == "store_tile":
                shift_rows(n, new("constant", [], T.i64, value=c), t, new)
            out.append(n)
    for o in out:
        o.parent = region
    # what the body computes between the epilogue's ops reads none of its values: it goes first
    last = max(body.index(o) for o in ops)
    before = [o for o in body[:last] if all(o is not x for x in ops)]
    after = [o for o in body[last + 1:]]
    region.ops = before + out + after


def _fresh_product(op) -> bool:
    """A ``dot`` with no accumulator or one of zeros: its product can stay in L0C."""
    return op.name == "dot" and (len(op.operands) == 2 or const_value(op.operands[2]) == 0)


def _in_body_or_loop(op: Op, fn: Function) -> bool:
    """``op`` is in the function's body or directly in a ``for`` loop's body (not in a branch)."""
    return op.parent is fn.body or (op.parent is not None and op.parent.parent is not None and
                                    op.parent.parent.name == "for")


@register
class EpilogueRows(Pass):
    name = "epilogue-rows"

    def run(self, fn: Function) -> None:
        if fits_on_chip(fn):
            return
        users = users_of(fn)
        ops = list(fn.walk())
        for loop in [o for o in ops if _in_body_or_loop(o, fn) and
                     (o.name in ("for", "if") or _fresh_product(o))]:
            for r in loop.results:
                if not (r.type.is_block and len(r.type.shape) == 2 and str(r.type.scalar) in ("f32", "i32")):
                    continue
                found = _epilogue(loop, r, users)
                if found is None:
                    continue
                k, j = ops.index(loop), list(loop.results).index(r)     # (the same in a copy of fn)

                def split(f, t, k=k, j=j):
                    lp = list(f.walk())[k]
                    got = _epilogue(lp, lp.results[j], users_of(f))
                    if got is None:
                        return False
                    _chunk(lp, lp.results[j], got[0], got[1], t)
                # two chunks at once when they fit, else one at a time (see the module docstring)
                m = r.type.shape[0]
                if split_that_fits(fn, m, split, apart=True, most=max(m // 8, min(16, m // 2))) is not None or \
                        split_that_fits(fn, m, split) is not None:
                    return
