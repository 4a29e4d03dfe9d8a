"""``tl.flip`` and ``tl.sort``: made of the exact reordering ops of :mod:`.memory` (``split``,
``join``, ``cat``, ``interleave``) and 2-D transposes, so they run on every backend (blocks of rank
<= 3 throughout). Both work on the rows of a (B, n) view of the block with ``dim`` last.

``flip`` reverses along ``dim`` (the last dimension for None) exactly: the odd elements reversed
interleaved with the even ones reversed, both halves reversed together as the rows of one block,
log2(n) levels. ``sort`` returns the block sorted along ``dim`` (the last dimension for None; its
size a power of two), ascending or ``descending``, by a bitonic network whose compare-exchanges
swap a pair when it is out of order by ``>`` (NaNs compare false, so where they end up is
unspecified, as in Triton). Equal elements are indistinguishable in the result (values only).
"""
from __future__ import annotations

from tritonpu.language import core as tl
from tritonpu.language.core import SemanticError, tensor
from tritonpu.language.memory import cat, interleave, join, split
from tritonpu.language.semantic import (_canon_axis, arange, compare, floordiv, mod, mul, permute, reshape,
                                        to_tensor, where)


def _halves(x2, t):
    """Rows [a | b] of width 2t -> (a, b) transposed: two (t, R) blocks."""
    r = x2.shape[0]
    rows = permute(reshape(x2, [2 * r, t]), [1, 0])            # (t, 2R): a0 b0 a1 b1 ...
    return split(reshape(rows, [t, r, 2]))


def _unhalves(a, b):
    """The inverse of :func:`_halves`: (t, R) blocks a and b -> rows [a | b] (R, 2t)."""
    t, r = a.shape
    rows = reshape(join(a, b), [t, 2 * r])
    return reshape(permute(rows, [1, 0]), [r, 2 * t])


def _on_rows(x, dim, what, fn):
    """``fn`` applied to the (B, n) rows of ``x`` with ``dim`` (None: the last) moved last; the
    result in ``x``'s shape and dimension order."""
    x = to_tensor(x)
    if not x.shape:
        raise SemanticError(f"tl.{what} needs a block, got a scalar")
    rank = len(x.shape)
    d = rank - 1 if tl._unwrap(dim) is None else _canon_axis(tl._unwrap(dim), rank, "dim")
    order = [i for i in range(rank) if i != d] + [d]
    moved = permute(x, order) if d != rank - 1 else x
    shape, n = moved.shape, moved.shape[-1]
    if n & (n - 1):
        raise SemanticError(f"tl.{what} needs a power-of-two size along its dimension, got {n}")
    out = reshape(fn(reshape(moved, [moved.numel // n, n])), shape)
    return permute(out, [order.index(i) for i in range(rank)]) if d != rank - 1 else out


def flip(x, dim=None) -> tensor:
    def rows_flipped(rows):                 # (B, n) -> each row reversed
        b, m = rows.shape[0], rows.shape[1] // 2
        if m == 0:
            return rows
        even, odd = split(reshape(rows, [b, m, 2]))
        both = rows_flipped(cat(odd, even, can_reorder=True))          # (2B, m): odd rows, then even
        pairs = permute(reshape(both, [2, b * m]), [1, 0])              # (B*m, 2)
        rev_odd, rev_even = split(pairs)
        return interleave(reshape(rev_odd, [b, m]), reshape(rev_even, [b, m]))
    return _on_rows(x, dim, "flip", rows_flipped)


def sort(x, dim=None, descending=False) -> tensor:
    return _on_rows(x, dim, "sort", lambda rows: _bitonic(rows, bool(tl._unwrap(descending))))


def _bitonic(rows, desc):
    b, n = rows.shape
    s = 2
    while s <= n:
        t = s // 2
        while t >= 1:
            groups = n // (2 * t)
            x2 = reshape(rows, [b * groups, 2 * t])
            lo, hi = _halves(x2, t)                                      # (t, R)
            q = mod(arange(0, b * groups), groups)                       # the pair group of each row
            # rows of blocks that this stage sorts ascending (descending for a descending sort)
            up = compare(mod(floordiv(mul(q, 2 * t), s), 2), 0, "ne" if desc else "eq")
            swap = where(up, compare(lo, hi, "gt"), compare(hi, lo, "gt"))  # (t, R), broadcast of up
            new_lo, new_hi = where(swap, hi, lo), where(swap, lo, hi)
            rows = reshape(_unhalves(new_lo, new_hi), [b, n])
            t //= 2
        s *= 2
    return rows

