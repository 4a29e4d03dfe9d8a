"""The public ``tl.*`` builtins, with Triton's names and signatures.

Each is a thin ``@builtin`` wrapper over :mod:`.semantic` / :mod:`.memory`. Composite functions
that Triton defines in its standard library (``sigmoid``, ``cdiv``, ``clamp``, ``softmax``...)
are composed here from the same ops, as Triton composes them.
"""
from __future__ import annotations

from tritonpu.language import core as tl
from tritonpu.language import memory as M
from tritonpu.language import block_ptr as BP
from tritonpu.language import semantic as S
from tritonpu.language.core import SemanticError, builtin, tensor
from tritonpu.language.scalars import plain


def _axis_arg(axis):
    return tl._unwrap(axis)


# -- programming model -------------------------------------------------------------------------
@builtin
def program_id(axis):
    if axis not in (0, 1, 2):
        raise SemanticError(f"program_id axis must be 0, 1 or 2, got {axis}")
    return S._op("program_id", [], S.T.i32, axis=axis)


@builtin
def num_programs(axis):
    if axis not in (0, 1, 2):
        raise SemanticError(f"num_programs axis must be 0, 1 or 2, got {axis}")
    return S._op("num_programs", [], S.T.i32, axis=axis)


# -- creation ----------------------------------------------------------------------------------
@builtin
def arange(start, end):
    return S.arange(start, end)


@builtin
def zeros(shape, dtype):
    return S.full(shape, 0, dtype)


@builtin
def to_tensor(x):
    """A tensor of ``x`` (a Python number becomes a scalar of its default type), as ``tl.to_tensor``."""
    return S.to_tensor(x)


@builtin
def zeros_like(input):
    input = S.to_tensor(input)
    return S.full(input.shape, 0, input.dtype)


@builtin
def full(shape, value, dtype):
    return S.full(shape, value, dtype)


@builtin
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False, overflow_mode=None):
    return S.cast(input, dtype, bitcast=bool(bitcast), fp_downcast_rounding=fp_downcast_rounding,
                  overflow_mode=overflow_mode)


# -- memory ------------------------------------------------------------------------------------
@builtin
def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False):
    pointer = tl._unwrap(pointer)
    if isinstance(pointer, BP.block_ptr):
        if tl._unwrap(mask) is not None or tl._unwrap(other) is not None:
            raise SemanticError("tl.load through a block pointer takes boundary_check/padding_option, not "
                                "mask/other")
        ptrs, m = BP.pointers_and_mask(pointer, tl._unwrap(boundary_check), "tl.load")
        fill = BP.fill_value(pointer, tl._unwrap(padding_option)) if m is not None else None
        return M.load(ptrs, m, fill, cache_modifier, eviction_policy, volatile)
    if boundary_check or padding_option:
        raise SemanticError("boundary_check / padding_option need a block pointer (tl.make_block_ptr)")
    return M.load(pointer, mask, other, cache_modifier, eviction_policy, volatile)


@builtin
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    pointer = tl._unwrap(pointer)
    if isinstance(pointer, BP.block_ptr):
        if tl._unwrap(mask) is not None:
            raise SemanticError("tl.store through a block pointer takes boundary_check, not mask")
        ptrs, m = BP.pointers_and_mask(pointer, tl._unwrap(boundary_check), "tl.store")
        return M.store(ptrs, value, m, cache_modifier, eviction_policy)
    if boundary_check:
        raise SemanticError("boundary_check needs a block pointer (tl.make_block_ptr)")
    return M.store(pointer, value, mask, cache_modifier, eviction_policy)


@builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order):
    return BP.make_block_ptr(base, shape, strides, offsets, block_shape, order)


@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    from tritonpu.language import descriptor
    return descriptor.make_tensor_descriptor(base, shape, strides, block_shape, padding_option)


@builtin
def load_tensor_descriptor(desc, offsets):
    return desc.load.__wrapped__(desc, offsets)


@builtin
def store_tensor_descriptor(desc, offsets, value):
    return desc.store.__wrapped__(desc, offsets, value)


@builtin
def advance(base, offsets):
    return BP.advance(tl._unwrap(base), offsets)


def _atomic(kind):
    def fn(pointer, val, mask=None, sem=None, scope=None):
        return M.atomic_rmw(kind, pointer, val, mask, sem, scope)
    fn.__name__ = f"atomic_{kind}"
    return builtin(fn)


atomic_add, atomic_max, atomic_min = _atomic("add"), _atomic("max"), _atomic("min")
atomic_xchg, atomic_and, atomic_or, atomic_xor = _atomic("xchg"), _atomic("and"), _atomic("or"), _atomic("xor")


@builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    return M.atomic_cas(pointer, cmp, val, sem, scope)


# -- math --------------------------------------------------------------------------------------
def _math1(name):
    def fn(x):
        return S.unary_math(name, x)
    fn.__name__ = name
    return builtin(fn)


exp, exp2, log, log2 = _math1("exp"), _math1("exp2"), _math1("log"), _math1("log2")
sqrt, rsqrt, sin, cos = _math1("sqrt"), _math1("rsqrt"), _math1("sin"), _math1("cos")
floor, ceil, erf = _math1("floor"), _math1("ceil"), _math1("erf")
# libdevice's (Triton's core namespace has none of these)
tanh, asin, acos, atan, tan = _math1("tanh"), _math1("asin"), _math1("acos"), _math1("atan"), _math1("tan")
sinh, cosh, log1p, expm1 = _math1("sinh"), _math1("cosh"), _math1("log1p"), _math1("expm1")
log10, rint = _math1("log10"), _math1("rint")


@builtin
def sqrt_rn(x):
    return S.unary_math("sqrt", x, ("fp32",))


@builtin
def abs(x):
    return S.abs_(x)


@builtin
def fma(x, y, z):
    return S.fma(x, y, z)


@builtin
def maximum(x, y, propagate_nan=None):
    return S.maximum(x, y, _propagate(propagate_nan))


@builtin
def minimum(x, y, propagate_nan=None):
    return S.minimum(x, y, _propagate(propagate_nan))


def _propagate(p) -> bool:
    p = tl._unwrap(p)
    return p is not None and str(getattr(p, "name", p)).upper() == "ALL"


@builtin
def clamp(x, min, max, propagate_nan=None):
    x = S.to_tensor(x)
    if not x.dtype.is_floating():
        raise SemanticError(f"tl.clamp supports floating-point tensors only, got {x.dtype}")
    return S.minimum(S.maximum(x, min, _propagate(propagate_nan)), max, _propagate(propagate_nan))


@builtin
def where(condition, x, y):
    return S.where(condition, x, y)


@builtin
def sigmoid(x):
    # Triton's standard library: 1 / (1 + exp(-x)), with exp's dtype check.
    return S.truediv(1, S.add(1, S.unary_math("exp", S.minus(S.to_tensor(x)))))


@builtin
def softmax(x, dim=None, keep_dims=False, ieee_rounding=False):
    axis = 0 if dim is None else dim
    z = S.sub(x, M.reduce_minmax("max", x, axis, keep_dims=True))
    num = S.unary_math("exp", z)
    den = M.reduce_sum(num, axis, keep_dims=True)
    return S.truediv(num, den)


@builtin
def fdiv(x, y, ieee_rounding=False):
    return S.truediv(x, y)


@builtin
def div_rn(x, y):
    return S.truediv(x, y)


def _cdiv_impl(x, div):
    """``(x + div - 1) // div`` on integers, as Triton; on floats (triton-ascend accepts them)
    ``ceil(x / div)``."""
    x, div = tl._unwrap(x), tl._unwrap(div)
    if not isinstance(x, tensor) and not isinstance(div, tensor):
        return (x + div - 1) // div
    x, div = S.binary_operands(x, div, div_or_mod=True)
    if x.dtype.is_floating():
        return S.unary_math("ceil", S.truediv(x, div))
    return S.floordiv(S.sub(S.add(x, div), 1), div)


@builtin
def cdiv(x, div):
    return _cdiv_impl(x, div)


@builtin
def umulhi(x, y):
    """The high half of the double-width product of two integers of one width (as unsigned)."""
    x, y = S.binary_operands(x, y)
    dt = x.dtype
    if not dt.is_int() or dt.primitive_bitwidth not in (8, 16, 32):
        raise SemanticError(f"tl.umulhi takes 8-, 16- or 32-bit integers, got {dt}")
    bits = dt.primitive_bitwidth
    unsigned = tl.dtype(f"uint{bits}")
    wide = tl.uint64
    a = S.cast(S.cast(x, unsigned, bitcast=True), wide)
    b = S.cast(S.cast(y, unsigned, bitcast=True), wide)
    hi = S.cast(S.shr(S.mul(a, b), S.scalar_constant(bits, wide)), unsigned)
    return S.cast(hi, dt, bitcast=True)


# -- shapes ------------------------------------------------------------------------------------
@builtin
def reshape(input, *shape, can_reorder=False):
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    joined = M.joined_reshape(input, shape)      # a join's pair put back together: two inserts
    return joined if joined is not None else S.reshape(input, shape)


view = reshape


@builtin
def trans(input, *dims):
    input = S.to_tensor(input)
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    if not dims:
        if len(input.shape) != 2:
            raise SemanticError(f"tl.trans without dims needs a 2-D tensor, got shape {input.shape}")
        dims = (1, 0)
    return S.permute(input, dims)


@builtin
def permute(input, *dims):
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    return S.permute(input, dims)


@builtin
def broadcast_to(input, *shape):
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    input = S.to_tensor(input)
    shape = [int(tl._unwrap(d)) for d in shape]
    while len(input.shape) < len(shape):
        input = S.expand_dims(input, 0)
    return S.broadcast_to_shape(input, shape)


@builtin
def broadcast(input, other):
    return S.broadcast_pair(S.to_tensor(input), S.to_tensor(other))


@builtin
def expand_dims(input, axis):
    axes = [plain(tl._unwrap(a)) for a in (list(axis) if isinstance(axis, (list, tuple)) else [axis])]
    input = S.to_tensor(input)
    rank = len(input.shape) + len(axes)
    if any(not isinstance(a, int) or not -rank <= a < rank for a in axes):
        raise SemanticError(f"tl.expand_dims: axis {axis} out of range for a result of rank {rank} "
                            f"(from {-rank} to {rank - 1})")
    canon = sorted(a % rank for a in axes)
    if len(set(canon)) != len(canon):
        raise SemanticError(f"tl.expand_dims: axis {axis} names a dimension twice")
    for a in canon:
        input = S.expand_dims(input, a)
    return input


@builtin
def ravel(x):
    x = S.to_tensor(x)
    return S.reshape(x, [x.numel])


# -- reductions and scans ----------------------------------------------------------------------
@builtin
def sum(input, axis=None, keep_dims=False, dtype=None):
    return M.reduce_sum(input, axis, keep_dims, dtype)


@builtin
def max(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    return M.reduce_minmax("max", input, axis, return_indices, keep_dims)


@builtin
def min(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    return M.reduce_minmax("min", input, axis, return_indices, keep_dims)


@builtin
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    return M.reduce(S.to_tensor(input), axis, "argmax", keep_dims)


@builtin
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    return M.reduce(S.to_tensor(input), axis, "argmin", keep_dims)


@builtin
def cumsum(input, axis=0, reverse=False, dtype=None):
    return M.cumsum(input, axis, reverse, dtype)


@builtin
def cumprod(input, axis=0, reverse=False):
    return M.cumprod(input, axis, reverse)


@builtin
def reduce(input, axis, combine_fn, keep_dims=False):
    """Reduce with a @jit ``combine_fn``; the frontend builds it (tritonpu/frontend/combine.py)."""
    raise SemanticError("tl.reduce is built by the kernel compiler; call it inside a @tritonpu.jit function")


@builtin
def associative_scan(input, axis, combine_fn, reverse=False):
    """Scan with a @jit ``combine_fn``; the frontend builds it (tritonpu/frontend/combine.py)."""
    raise SemanticError("tl.associative_scan is built by the kernel compiler; call it inside a "
                        "@tritonpu.jit function")


@builtin
def join(a, b):
    return M.record_join(M.join(a, b), a, b)


@builtin
def split(a):
    return M.halves(a) or M.split(a)


@builtin
def interleave(a, b):
    return M.interleave(a, b)


@builtin
def flip(x, dim=None):
    from tritonpu.language import reorder
    return reorder.flip(x, dim)


@builtin
def histogram(input, num_bins, mask=None):
    return M.histogram(input, num_bins, mask)


@builtin
def sort(x, dim=None, descending=False):
    from tritonpu.language import reorder
    return reorder.sort(x, dim, descending)


@builtin
def topk(x, k, dim=None):
    from tritonpu.language import reorder
    return reorder.topk(x, k, dim)


@builtin
def gather(src, index, axis):
    from tritonpu.language import reorder
    return reorder.gather(src, index, axis)


@builtin
def extract_slice(ful, offsets, sizes, strides):
    """triton-ascend's ``extract_slice``: ``out[i, ..] = ful[offsets[0] + i * strides[0], ..]``, of ``sizes``."""
    from tritonpu.language import reorder
    return reorder.extract_slice(ful, offsets, sizes, strides)


@builtin
def insert_slice(ful, sub, offsets, sizes, strides):
    """triton-ascend's ``insert_slice``: ``ful`` with ``sub`` written at ``offsets`` with ``strides``."""
    from tritonpu.language import reorder
    return reorder.insert_slice(ful, sub, offsets, sizes, strides)


@builtin
def cat(input, other, can_reorder=False):
    return M.cat(input, other, can_reorder)


@builtin
def dot(input, other, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
        out_dtype=tl.float32):
    return M.dot(input, other, acc, input_precision, allow_tf32, max_num_imprecise_acc, out_dtype)


# -- debugging ---------------------------------------------------------------------------------
@builtin
def device_print(prefix, *args, hex=False):
    if not isinstance(prefix, str):
        raise SemanticError(f"tl.device_print's first argument must be a string prefix, got {prefix!r}")
    vals = [S.to_tensor(a) for a in args]
    from tritonpu.language.semantic import _builder
    attrs = {"prefix": prefix}
    if hex:
        attrs["hex"] = True
    _builder().create("print", [v.handle for v in vals], [], attrs)


@builtin
def device_assert(cond, msg="", mask=None):
    """Checked only in debug mode (launch ``debug=True``, ``@jit(debug=True)`` or ``TRITON_DEBUG=1``),
    as in Triton; otherwise nothing."""
    if not tl._state.debug:
        return
    cond = S.to_tensor(cond)
    if mask is not None:
        cond = S.logical_or(cond, S.not_(mask))       # masked-off lanes pass
    if not cond.dtype.is_bool():
        cond = S.compare(cond, 0, "ne")
    from tritonpu.language.semantic import _builder
    _builder().create("assert", [cond.handle], [], {"msg": str(msg)})


@builtin
def static_assert(cond, msg=""):
    if isinstance(cond, tensor):
        raise SemanticError("tl.static_assert needs a constexpr condition; use tl.device_assert for runtime values")
    if not cond:
        raise SemanticError(f"static assertion failed: {msg}" if msg else "static assertion failed")


@builtin
def static_print(*values, sep=" ", end="\n", file=None, flush=False):
    print(*values, sep=sep, end=end, flush=flush)


@builtin
def multiple_of(input, values):
    return input


@builtin
def max_contiguous(input, values):
    return input


@builtin
def max_constancy(input, values):
    return input


@builtin
def debug_barrier():
    return None


@builtin
def logical_and(x, y):
    """Elementwise ``x and y`` of two values taken as booleans (nonzero is true)."""
    return S.logical_and(x, y)


@builtin
def logical_or(x, y):
    """Elementwise ``x or y`` of two values taken as booleans (nonzero is true)."""
    return S.logical_or(x, y)


TENSOR_METHODS = {
    name: globals()[name]
    for name in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "floor", "ceil", "erf", "abs",
                 "sigmoid", "softmax", "reshape", "view", "trans", "permute", "broadcast_to", "expand_dims",
                 "ravel", "sum", "max", "min", "argmax", "argmin", "cumsum", "cumprod", "cast", "split", "flip", "sort", "histogram",
                 "gather", "topk", "logical_and", "logical_or", "cdiv", "extract_slice", "insert_slice")
}
