"""``tl.reduce`` and ``tl.associative_scan`` with the kernel's own ``@jit`` combine function,
built by the frontend from the function's inlined bodies, ``tl.split`` and ``tl.interleave``.

Guarantees: along ``axis``, the inputs (one tensor or a tuple of tensors, reduced together) are
paired neighbour by neighbour — element 2i
with 2i+1, as ``tl.split`` takes them, the left one first — and ``combine_fn(left..., right...)``
is inlined once per level, log2(size) times, until one element is left (an odd number left —
sizes that are not powers of two — is folded left to right, each element picked exactly by a
one-hot select). The order is a balanced tree, as Triton's (an associative ``combine_fn`` gives the same result as any other order; a
non-commutative one sees its operands in element order). ``axis=None`` reduces all elements;
``keep_dims`` keeps the axis with size 1. Every backend runs the same IR (selects, integer sums,
reshapes and the function's own ops).

``associative_scan(input, axis, combine_fn, reverse=False)`` is the inclusive scan by the odd-even
recursion: combine neighbour pairs, scan the pairs' results (half the size), then the odd
positions are those prefixes and the even ones combine the previous prefix (a shift by one, itself
a recursion of splits and interleaves) with their own element — log2(size) levels, the combine
function applied in element order; an odd size is scanned element by element. ``reverse`` is
Triton's: the scan of the flipped block, flipped back — element ``i`` is the scan from the end down
to ``i``, the accumulated right part the combine function's first operand (``combine(acc, x[i])``).
"""
from __future__ import annotations

from tritonpu.language import core as tl
from tritonpu.language import memory as M
from tritonpu.language import semantic as S
from tritonpu.language.core import SemanticError, tensor


def _blocks(inputs, what):
    """(single, blocks): one tensor or a tuple of tensors of one shape."""
    single = isinstance(inputs, tensor)
    xs = [S.to_tensor(x) for x in ([inputs] if single else list(inputs))]
    if not xs or any(x.shape != xs[0].shape for x in xs):
        raise SemanticError(f"tl.{what} needs one tensor or a tuple of tensors of one shape")
    return single, xs


def _combiner(inline, combine_fn, n, what):
    """(left blocks, right blocks) -> the blocks ``combine_fn(*left, *right)`` returns (n of them)."""
    def combine(left, right):
        out = inline(combine_fn, list(left) + list(right))
        out = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(out) != n:
            raise SemanticError(f"the combine function of tl.{what} returns {len(out)} values for "
                                f"{n} inputs")
        return [S.to_tensor(o) for o in out]
    return combine


def _last(xs, ax):
    """The blocks with axis ``ax`` moved last, and the order that moves it back (None: in place)."""
    rank = len(xs[0].shape)
    if ax == rank - 1:
        return xs, None
    order = [d for d in range(rank) if d != ax] + [ax]
    return [S.permute(x, order) for x in xs], [order.index(d) for d in range(rank)]


def _pairs(xs):
    """Each block's (even, odd) elements along the last axis, as two lists."""
    n = xs[0].shape[-1]
    halves = [M.split(S.reshape(x, x.shape[:-1] + [n // 2, 2])) for x in xs]
    return [h[0] for h in halves], [h[1] for h in halves]


def reduce(inline, inputs, axis, combine_fn, keep_dims=False):
    """``inline(fn, args)`` inlines the @jit ``fn`` and returns its result."""
    single, xs = _blocks(inputs, "reduce")
    axis, keep_dims = tl._unwrap(axis), bool(tl._unwrap(keep_dims))
    shape0 = xs[0].shape
    if axis is None:
        xs, ax = [S.reshape(x, [x.numel]) for x in xs], 0
    elif not shape0:
        raise SemanticError("tl.reduce of a scalar needs axis=None")
    else:
        ax = S._canon_axis(axis, len(shape0))
    xs, _ = _last(xs, ax)
    combine = _combiner(inline, combine_fn, len(xs), "reduce")
    while xs[0].shape[-1] > 1 and xs[0].shape[-1] % 2 == 0:
        xs = combine(*_pairs(xs))
    n = xs[0].shape[-1]
    if n == 1:
        xs = [S.reshape(x, x.shape[:-1]) for x in xs]
    else:                                   # an odd size left: fold its elements in order
        acc = [_take(x, 0) for x in xs]
        for i in range(1, n):
            acc = combine(acc, [_take(x, i) for x in xs])
        xs = acc
    if keep_dims:
        xs = [S.reshape(x, [1] * len(shape0)) if axis is None else S.expand_dims(x, ax) for x in xs]
    return xs[0] if single else tuple(xs)


def _take(x, i):
    """Element ``i`` along the last axis, bit for bit (one-hot select)."""
    return M.select_sum(x, S.compare(S.arange(0, x.shape[-1]), i, "eq"), len(x.shape) - 1)


def _place(cols, n):
    """Blocks ``cols[i]`` (shape ``s``) as the elements ``i`` of one block of shape ``s + [n]``."""
    out = S.broadcast_to_shape(S.expand_dims(cols[0], len(cols[0].shape)), cols[0].shape + [n])
    pos = S.arange(0, n)
    for i in range(1, n):
        out = S.where(S.compare(pos, i, "eq"), S.expand_dims(cols[i], len(cols[i].shape)), out)
    return out


def _shift(x, left):
    """x moved by one along its last axis (to the right: [?, x0, x1, ...]; to the left:
    [x1, x2, ..., ?]); the vacated element is unspecified."""
    n = x.shape[-1]
    if n == 1:
        return x
    if n % 2:                               # odd: element by element
        cols = [_take(x, i) for i in range(n)]
        return _place(cols[1:] + cols[-1:] if left else cols[:1] + cols[:-1], n)
    even, odd = M.split(S.reshape(x, x.shape[:-1] + [n // 2, 2]))
    if left:
        return M.interleave(odd, _shift(even, True))
    return M.interleave(_shift(odd, False), even)


def associative_scan(inline, inputs, axis, combine_fn, reverse=False):
    single, xs = _blocks(inputs, "associative_scan")
    if not xs[0].shape:
        raise SemanticError("tl.associative_scan needs a block, got a scalar")
    xs, back = _last(xs, S._canon_axis(tl._unwrap(axis), len(xs[0].shape)))
    combine = _combiner(inline, combine_fn, len(xs), "associative_scan")

    def scan(ys):
        n = ys[0].shape[-1]
        if n == 1:
            return ys
        if n % 2:                               # odd: element by element, in order
            cols = [[_take(y, i) for y in ys] for i in range(n)]
            order = range(n - 1, -1, -1) if reverse else range(n)
            out, acc = [None] * n, None
            for i in order:
                acc = cols[i] if acc is None else combine(acc, cols[i])
                out[i] = acc
            return [_place([out[i][k] for i in range(n)], n) for k in range(len(ys))]
        even, odd = _pairs(ys)
        # forward: x0..x(2j+1); reverse (the flipped block's order): x(n-1)..x(2j)
        sums = scan(combine(odd, even) if reverse else combine(even, odd))
        pos = S.arange(0, n // 2)
        if not reverse:                         # even 2j: (x0..x(2j-1)) then x(2j); 2j = 0: x0
            prev = combine([_shift(t, False) for t in sums], even)
            first = S.compare(pos, 0, "eq")
            evens = [S.where(first, e, p) for e, p in zip(even, prev)]
            return [M.interleave(e, o) for e, o in zip(evens, sums)]
        nxt = combine([_shift(t, True) for t in sums], odd)     # odd 2j+1: x(n-1)..x(2j+2), then x(2j+1)
        last = S.compare(pos, n // 2 - 1, "eq")
        odds = [S.where(last, o, q) for o, q in zip(odd, nxt)]
        return [M.interleave(e, o) for e, o in zip(sums, odds)]

    xs = scan(xs)
    if back is not None:
        xs = [S.permute(x, back) for x in xs]
    return xs[0] if single else tuple(xs)
