"""``tl.reduce(input, axis, combine_fn)``: a reduction with the kernel's own ``@jit`` combine
function, built by the frontend as a tree of the function's inlined bodies.

Guarantees: along ``axis`` (its size a power of two, as every block dimension), the inputs (one
tensor or a tuple of tensors, reduced together) are paired neighbour by neighbour — element 2i
with 2i+1, as ``tl.split`` takes them, the left one first — and ``combine_fn(left..., right...)``
is inlined once per level, log2(size) times, until one element is left. The order is a balanced
tree, as Triton's (an associative ``combine_fn`` gives the same result as any other order; a
non-commutative one sees its operands in element order). ``axis=None`` reduces all elements;
``keep_dims`` keeps the axis with size 1. Every backend runs the same IR (selects, integer sums,
reshapes and the function's own ops).
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
