"""Which lanes of a loaded block reach memory: the wrapped lanes of Triton's ``% M`` offsets.

Triton's matmul tutorial loads ``a_ptr + (pid_m * BM + arange(BM)) % M`` so that the last row of
programs reads no row past ``M``; the rows it reads instead (wrapped around to the matrix's first
rows) only make accumulator rows that the store leaves out with ``offs_cm < M``.  This module
proves that for a load: :func:`wrapped_lanes_unread` is True when every value computed from the
load carries lane ``i`` of dimension ``dim`` only to the same lane of the values it makes --
through elementwise work, a loop's carried values, ``tl.dot`` (the rows of ``a``, the columns of
``b``, an accumulator's lanes) and ``tl.trans`` -- and then only into stores whose masks have the
conjunct ``x < m`` along that dimension, ``x % m`` being the wrapped offsets: the same ``x`` and
``m`` the load saw, so a lane carried out of a loop or into its next trip needs ``x`` and ``m``
the same in every trip.  The load may then read lanes where ``x`` has wrapped around as anything
(memory analysis pads them), and the stored bytes are the same.  Anything else a lane may reach
-- a reduction, a reshape, a scalar, a branch condition, another kind of memory op -- gives False.
"""
from __future__ import annotations

from tritonpu.ir import Op
from tritonpu.ir.ops import BINARY, OPS, UNARY
from tritonpu.passes.affine import uniform_scalar

# lane-wise ops: result lane i is made from operand lanes i only (operands and result one shape)
_LANEWISE = frozenset(BINARY) | frozenset(UNARY) | {"fma", "cmp", "select", "cast", "bitcast"}
_MAX_DEPTH = 12


def wrapped_lanes_unread(load: Op, dim: int, xm: tuple, users: dict) -> bool:
    """Whether no stored byte depends on lane ``i`` along ``dim`` of ``load``'s result where the
    offsets ``x % m`` have wrapped (or ``where(x < m, x, 0)`` clamped), i.e. where ``x >= m``;
    ``xm``: (x, m).  ``users``: id(value) -> the ops that read it (the function as it was before
    memory analysis rewrote it)."""
    x, m = xm
    if x.type.is_block and len(x.type.shape) != 1 or uniform_scalar(m) is None:
        return False
    todo, seen = [(load.result, dim)], set()
    while todo:
        v, d = todo.pop()
        if (id(v), d) in seen:
            continue
        seen.add((id(v), d))
        for u in users.get(id(v), []):
            if u.name == "yield" and u.parent is not None and u.parent.parent is not None and \
                    u.parent.parent.name == "for" and _varies_in(u.parent.parent, (x, m)):
                return False    # carried to another trip, or out, of a loop whose trips see other x, m
            nxt = _through(u, v, d, x, m)
            if nxt is None:
                return False
            todo += nxt
    return True


def _varies_in(loop: Op, values) -> bool:
    """Whether any of ``values`` may differ between ``loop``'s trips: it depends on a value the
    loop carries (or a region inside it does) or on what an op in its body reads from memory or
    computes in regions -- pure ops on values from outside compute the same in every trip."""
    varying = set()
    for o in loop.walk():
        for r in o.regions:
            varying.update(id(a) for a in r.args)
        if o is not loop and (o.regions or OPS[o.name].effects):
            varying.update(id(r) for r in o.results)
    stack, seen = list(values), set()
    while stack:
        v = stack.pop()
        if id(v) in varying:
            return True
        if id(v) in seen or v.owner is None:
            continue
        seen.add(id(v))
        stack += v.owner.operands
    return False


def _through(u: Op, v, d: int, x, m):
    """The (value, dim) pairs lane ``d`` of ``v`` reaches through its user ``u``, or None when it
    may reach something else than those lanes and the guarded stores."""
    name = u.name
    shape = v.type.shape
    if name in _LANEWISE:
        if name in ("div", "rem") and u.result.type.scalar.is_int:
            return None         # (a padded lane may divide by zero)
        if any(o.type.is_block and o.type.shape != shape for o in u.operands) or u.result.type.shape != shape:
            return None
        return [(u.result, d)]
    if name == "permute" and list(u.attrs["order"]) == [1, 0]:
        return [(u.result, 1 - d)]
    if name == "dot":
        out = []
        for i, o in enumerate(u.operands):
            if o is not v:
                continue
            if i == 0 and d == 0:          # a's rows are the product's rows
                out.append((u.result, 0))
            elif i == 1 and d == 1:        # b's columns are its columns
                out.append((u.result, 1))
            elif i == 2:                   # the accumulator's lanes are the product's
                out.append((u.result, d))
            else:
                return None
        return out
    if name == "for":
        out = []
        body = u.regions[0]
        for i, o in enumerate(u.operands):
            if o is v:
                if i < 3:
                    return None
                out += [(u.results[i - 3], d), (body.args[i - 2], d)]
        return out
    if name == "yield":
        owner = u.parent.parent if u.parent is not None else None
        if owner is None or owner.name not in ("for", "if"):
            return None
        out = []
        for i, o in enumerate(u.operands):
            if o is v:
                out.append((owner.results[i], d))
                if owner.name == "for":
                    out.append((owner.regions[0].args[i + 1], d))
        return out
    if name == "store":
        if any(o is v for o in u.operands[:1] + u.operands[2:]) or len(u.operands) < 3:
            return None
        return [] if _bounds(u.operands[2], d, x, m) else None
    return None


def _bounds(mask, d: int, x, m) -> bool:
    """Whether ``mask`` (a block of i1) is false wherever lane ``d``'s ``x >= m``: it is a
    conjunction with ``x < m`` along dimension ``d`` (expanded and broadcast)."""
    o = mask.owner
    if o is None:
        return False
    if o.name == "and":
        return any(_bounds(a, d, x, m) for a in o.operands)
    if o.name in ("broadcast", "expand_dims"):
        inner = _inner(mask, d)
        return inner is not None and _bounds(inner[0], inner[1], x, m)
    if o.name == "cmp" and o.attrs["pred"] in ("lt", "gt"):
        lhs, rhs = o.operands if o.attrs["pred"] == "lt" else o.operands[::-1]
        lane, bound = _along(lhs, d), uniform_scalar(rhs)
        return lane is not None and bound is not None and _same(lane, x) and _same(bound, uniform_scalar(m))
    return False


def _inner(v, d: int):
    """(operand, its dim) when ``v`` is a broadcast or expand_dims that keeps lane ``d`` of its
    operand as its own lane ``d``, else None."""
    o = v.owner
    if o.name == "broadcast":
        src = o.operands[0]
        return (src, d) if src.type.shape[d] == v.type.shape[d] else None
    ax = o.attrs["axis"]
    return (o.operands[0], d - (d > ax)) if d != ax else None


def _along(v, d: int):
    """The rank-1 value ``v`` is expanded and broadcast from along dimension ``d``, else None."""
    while v.type.is_block and len(v.type.shape) > 1:
        if v.owner is None or v.owner.name not in ("broadcast", "expand_dims"):
            return None
        inner = _inner(v, d)
        if inner is None:
            return None
        v, d = inner
    return v if v.type.is_block and d == 0 else None


def _same(a, b, depth: int = 0) -> bool:
    """Whether two values are computed alike: the same value, equal constants, or ops of one kind,
    attributes and type on operands computed alike (no memory ops)."""
    if a is b:
        return True
    oa, ob = a.owner, b.owner
    if oa is None or ob is None or depth > _MAX_DEPTH or a.type != b.type or a.index != b.index:
        return False
    if oa.name != ob.name or _key(oa.attrs) != _key(ob.attrs) or OPS[oa.name].effects or oa.regions or \
            len(oa.operands) != len(ob.operands):
        return False
    return all(_same(p, q, depth + 1) for p, q in zip(oa.operands, ob.operands))


def _key(attrs: dict) -> tuple:
    """Attributes compared by their text: a constant 0.0 is not -0.0 (``==`` says it is)."""
    return tuple(sorted((k, repr(v)) for k, v in attrs.items()))
