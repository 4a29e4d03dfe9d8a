"""``tl.reduce`` and ``tl.associative_scan`` with the kernel's own ``@jit`` combine function,
built by the frontend from the function's inlined bodies, ``tl.split`` and ``tl.interleave``.

Guarantees: along ``axis`` (its size a power of two, as every block dimension), the inputs (one
tensor or a tuple of tensors, reduced together) are paired neighbour by neighbour — element 2i
with 2i+1, as ``tl.split`` takes them, the left one first — and ``combine_fn(left..., right...)``
is inlined once per level, log2(size) times, until one element is left. The order is a balanced
tree, as Triton's (an associative ``combine_fn`` gives the same result as any other order; a
non-commutative one sees its operands in element order). ``axis=None`` reduces all elements;
``keep_dims`` keeps the axis with size 1. Every backend runs the same IR (selects, integer sums,
reshapes and the function's own ops).

``associative_scan(input, axis, combine_fn, reverse=False)`` is the inclusive scan by the odd-even
recursion: combine neighbour pairs, scan the pairs' results (half the size), then the odd
positions are those prefixes and the even ones combine the previous prefix (a shift by one, itself
a recursion of splits and interleaves) with their own element — log2(size) levels, the combine
function applied in element order. ``reverse`` scans from the end.
"""
from __future__ import annotations

from tritonpu.language import core as tl
from tritonpu.language import memory as M
from tritonpu.language import semantic as S
from tritonpu.language.core import SemanticError, tensor


def reduce(inline, inputs, axis, combine_fn, keep_dims=False):
    """``inline(fn, args)`` inlines the @jit ``fn`` and returns its result."""
    single = isinstance(inputs, tensor)
    xs = [S.to_tensor(x) for x in ([inputs] if single else list(inputs))]
    if not xs or any(x.shape != xs[0].shape for x in xs):
        raise SemanticError("tl.reduce needs one tensor or a tuple of tensors of one shape")
    axis, keep_dims = tl._unwrap(axis), bool(tl._unwrap(keep_dims))
    shape0 = xs[0].shape
    if axis is None:
        xs = [S.reshape(x, [x.numel]) for x in xs]
        ax = 0
    else:
        if not shape0:
            raise SemanticError("tl.reduce of a scalar needs axis=None")
        ax = S._canon_axis(axis, len(shape0))
    rank = len(xs[0].shape)
    if ax != rank - 1:                                      # the reduced axis last
        order = [d for d in range(rank) if d != ax] + [ax]
        xs = [S.permute(x, order) for x in xs]
    while xs[0].shape[-1] > 1:
        n = xs[0].shape[-1]
        halves = [M.split(S.reshape(x, x.shape[:-1] + [n // 2, 2])) for x in xs]
        out = inline(combine_fn, [h[0] for h in halves] + [h[1] for h in halves])
        out = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(out) != len(xs):
            raise SemanticError(f"the combine function of tl.reduce returns {len(out)} values for "
                                f"{len(xs)} inputs")
        xs = [S.to_tensor(o) for o in out]
    xs = [S.reshape(x, x.shape[:-1]) if len(x.shape) > 1 else S.reshape(x, []) for x in xs]
    if keep_dims:
        if axis is None:
            xs = [S.reshape(x, [1] * len(shape0)) for x in xs]
        else:
            xs = [S.expand_dims(x, ax) for x in xs]
    return xs[0] if single else tuple(xs)


def _pairs(xs):
    """Each block's (even, odd) elements along the last axis."""
    n = xs[0].shape[-1]
    return [M.split(S.reshape(x, x.shape[:-1] + [n // 2, 2])) for x in xs]


def _shift(x, left):
    """x moved by one along its last axis (to the right: [?, x0, x1, ...]; to the left:
    [x1, x2, ..., ?]); the vacated element is unspecified."""
    n = x.shape[-1]
    if n == 1:
        return x
    even, odd = M.split(S.reshape(x, x.shape[:-1] + [n // 2, 2]))
    if left:
        return M.interleave(odd, _shift(even, True))
    return M.interleave(_shift(odd, False), even)


def associative_scan(inline, inputs, axis, combine_fn, reverse=False):
    single = isinstance(inputs, tensor)
    xs = [S.to_tensor(x) for x in ([inputs] if single else list(inputs))]
    if not xs or any(x.shape != xs[0].shape for x in xs) or not xs[0].shape:
        raise SemanticError("tl.associative_scan needs one block or a tuple of blocks of one shape")
    rank = len(xs[0].shape)
    ax = S._canon_axis(tl._unwrap(axis), rank)
    order = [d for d in range(rank) if d != ax] + [ax]
    if ax != rank - 1:
        xs = [S.permute(x, order) for x in xs]

    def combine(left, right):
        out = inline(combine_fn, list(left) + list(right))
        out = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(out) != len(xs):
            raise SemanticError(f"the combine function of tl.associative_scan returns {len(out)} values "
                                f"for {len(xs)} inputs")
        return [S.to_tensor(o) for o in out]

    def scan(ys):
        n = ys[0].shape[-1]
        if n == 1:
            return ys
        halves = _pairs(ys)
        even, odd = [h[0] for h in halves], [h[1] for h in halves]
        sums = scan(combine(even, odd))         # forward: x0..x(2j+1); reverse: x(2j)..x(n-1)
        pos = S.arange(0, n // 2)
        if not reverse:                         # even 2j: (x0..x(2j-1)) then x(2j); 2j = 0: x0
            prev = combine([_shift(t, False) for t in sums], even)
            first = S.compare(pos, 0, "eq")
            evens = [S.where(first, e, p) for e, p in zip(even, prev)]
            return [M.interleave(e, o) for e, o in zip(evens, sums)]
        nxt = combine(odd, [_shift(t, True) for t in sums])     # odd 2j+1: x(2j+1) then x(2j+2)..
        last = S.compare(pos, n // 2 - 1, "eq")
        odds = [S.where(last, o, q) for o, q in zip(odd, nxt)]
        return [M.interleave(e, o) for e, o in zip(sums, odds)]

    xs = scan(xs)
    if ax != rank - 1:
        back = [order.index(d) for d in range(rank)]
        xs = [S.permute(x, back) for x in xs]
    return xs[0] if single else tuple(xs)
