"""``tl.sort``: a bitonic network made of the exact reordering ops of :mod:`.memory` (``split``,
``join``) and 2-D transposes, so it runs on every backend (blocks of rank <= 3 throughout).

Guarantees: the block comes back sorted along ``dim`` (the last dimension for None; its size a
power of two), ascending or ``descending``, by the comparisons Triton's own network makes (a pair
is swapped when it is out of order by ``>``; NaNs compare false, so where they end up is
unspecified, as in Triton). Equal elements are indistinguishable in the result (values only).
"""
from __future__ import annotations

from tritonpu.language import core as tl
from tritonpu.language.core import SemanticError, tensor
from tritonpu.language.memory import join, split
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


def sort(x, dim=None, descending=False) -> tensor:
    x = to_tensor(x)
    if not x.shape:
        raise SemanticError("tl.sort needs a block, got a scalar")
    rank = len(x.shape)
    d = rank - 1 if tl._unwrap(dim) is None else _canon_axis(tl._unwrap(dim), rank, "dim")
    order = [i for i in range(rank) if i != d] + [d]
    moved = permute(x, order) if d != rank - 1 else x
    shape, n = moved.shape, moved.shape[-1]
    if n & (n - 1):
        raise SemanticError(f"tl.sort needs a power-of-two size along the sorted dimension, got {n}")
    rows = reshape(moved, [moved.numel // n, n])
    b = rows.shape[0]
    desc = bool(tl._unwrap(descending))
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
    out = reshape(rows, shape)
    if d != rank - 1:
        out = permute(out, [order.index(i) for i in range(rank)])
    return out

