"""Triton's rules for memory ops, reductions, scans and dots, building IR ops.

Companion of :mod:`.semantic` (arithmetic and shapes): same conventions, same errors.
"""
from __future__ import annotations

from tritonpu.ir import types as T
from tritonpu.language import core as tl
from tritonpu.language.core import SemanticError, tensor
from tritonpu.language.semantic import (_op, arange, broadcast_pair, broadcast_to_shape, cast, compare, reshape,
                                        expand_dims, full, insert_sub_block, logical_and, same_width_int, sub_block,
                                        to_tensor, where, _canon_axis)


# --------------------------------------------------------------------------------------------
# loads, stores, atomics
# --------------------------------------------------------------------------------------------
def _pointer(ptr, what: str) -> tensor:
    ptr = tl._unwrap(ptr)
    if not isinstance(ptr, tensor) or not ptr.dtype.is_ptr():
        got = ptr.dtype if isinstance(ptr, tensor) else type(ptr).__name__
        raise SemanticError(f"{what} needs a pointer or a block of pointers, got {got}")
    return ptr


def _mask(mask, ptr: tensor, what: str) -> tensor | None:
    mask = tl._unwrap(mask)
    if mask is None:
        return None
    mask = to_tensor(mask)
    if not mask.dtype.is_bool():
        raise SemanticError(f"{what}: mask must be a boolean (int1) tensor, got {mask.dtype}")
    if not ptr.ty.is_block and mask.ty.is_block:
        raise SemanticError(f"{what}: mask cannot be a block when the pointer is a scalar")
    return broadcast_to_shape(mask, ptr.shape)


def _value_for(ptr: tensor, value, what: str) -> tensor:
    value = to_tensor(value)
    if not ptr.ty.is_block and value.ty.is_block:
        raise SemanticError(f"{what}: value cannot be a block when the pointer is a scalar")
    value = broadcast_to_shape(value, ptr.shape)
    return cast(value, ptr.dtype.element_ty)


def load(ptr, mask=None, other=None, cache: str = "", evict: str = "", volatile: bool = False) -> tensor:
    ptr = _pointer(ptr, "tl.load")
    if ptr.dtype.element_ty.is_bool():
        # as Triton: bools are loaded as int8 and compared with 0 (a byte other than 0 or 1 is true)
        i8 = load(cast(ptr, tl.pointer_type(tl.int8)), mask, None if tl._unwrap(other) is None else cast(other, tl.int8),
                  cache, evict, volatile)
        return compare(i8, 0, "ne")
    mask = _mask(mask, ptr, "tl.load")
    operands = [ptr]
    if tl._unwrap(other) is not None:
        if mask is None:
            raise SemanticError("tl.load: `other` cannot be given without `mask`")
        other = _value_for(ptr, other, "tl.load other")
    else:
        other = None
    if mask is not None:
        operands.append(mask)
        if other is not None:
            operands.append(other)
    attrs = {k: v for k, v in (("cache", cache), ("evict", evict)) if v}
    if volatile:
        attrs["volatile"] = True
    return _op("load", operands, T.with_elem(ptr.ty, ptr.ty.scalar.pointee), **attrs)


def store(ptr, value, mask=None, cache: str = "", evict: str = "") -> None:
    ptr = _pointer(ptr, "tl.store")
    value = _value_for(ptr, value, "tl.store")
    mask = _mask(mask, ptr, "tl.store")
    operands = [ptr, value] + ([mask] if mask is not None else [])
    attrs = {k: v for k, v in (("cache", cache), ("evict", evict)) if v}
    from tritonpu.language.semantic import _builder
    _builder().create("store", [x.handle for x in operands], [], attrs)


ATOMIC_SEMS = ("acquire", "release", "acq_rel", "relaxed")      # Triton's memory semantics
ATOMIC_SCOPES = ("gpu", "cta", "sys")


def _order_attrs(what: str, sem, scope) -> dict:
    """An atomic's ``sem``/``scope`` as IR attributes; other values are errors, as in Triton."""
    sem, scope = tl._unwrap(sem), tl._unwrap(scope)
    if sem and sem not in ATOMIC_SEMS:
        raise SemanticError(f"{what}: memory semantic {sem!r} not supported (one of {', '.join(ATOMIC_SEMS)})")
    if scope and scope not in ATOMIC_SCOPES:
        raise SemanticError(f"{what}: memory scope {scope!r} not supported (one of {', '.join(ATOMIC_SCOPES)})")
    return {k: str(v) for k, v in (("sem", sem), ("scope", scope)) if v}


def _as_bits(x: tensor, dt: tl.dtype) -> tensor:
    """``x``'s bits as ``dt`` (a pointer: as a pointer to ``dt``)."""
    return cast(x, tl.pointer_type(dt) if x.dtype.is_ptr() else dt, bitcast=True)


# (fp32 / fp64 atomic_max / atomic_min order their bits as Triton's lowering does: each backend
# implements that rule itself, dtypes.bits_atomic, so the NPU keeps its atomic-mode transfers)
def atomic_rmw(kind: str, ptr, val, mask=None, sem=None, scope=None) -> tensor:
    ptr = _pointer(ptr, f"tl.atomic_{kind}")
    val = to_tensor(val)
    if ptr.ty.is_block or val.ty.is_block:
        ptr, val = broadcast_pair(ptr, val)
    elem = ptr.dtype.element_ty
    if kind in ("and", "or", "xor") and not elem.is_int():
        raise SemanticError(f"tl.atomic_{kind} needs an integer pointer, got {ptr.dtype!r}")
    val = cast(val, elem)
    mask = _mask(mask, ptr, f"tl.atomic_{kind}")
    attrs = {"op": kind, **_order_attrs(f"tl.atomic_{kind}", sem, scope)}
    operands = [ptr, val] + ([mask] if mask is not None else [])
    return _op("atomic_rmw", operands, T.with_elem(ptr.ty, elem.ir), **attrs)


def atomic_cas(ptr, cmp, val, sem=None, scope=None) -> tensor:
    ptr = _pointer(ptr, "tl.atomic_cas")
    elem = ptr.dtype.element_ty
    cmp = cast(broadcast_to_shape(to_tensor(cmp), ptr.shape), elem)
    val = cast(broadcast_to_shape(to_tensor(val), ptr.shape), elem)
    attrs = _order_attrs("tl.atomic_cas", sem, scope)
    if elem.is_floating():
        # Triton compares the bits (-0.0 is not 0.0; a NaN matches its own bits)
        bits = same_width_int(elem)
        old = _op("atomic_cas", [_as_bits(ptr, bits), _as_bits(cmp, bits), _as_bits(val, bits)],
                  T.with_elem(ptr.ty, bits.ir), **attrs)
        return _as_bits(old, elem)
    return _op("atomic_cas", [ptr, cmp, val], T.with_elem(ptr.ty, elem.ir), **attrs)


# --------------------------------------------------------------------------------------------
# reductions and scans
# --------------------------------------------------------------------------------------------
def pick_sum_dtype(dt: tl.dtype, requested) -> tl.dtype:
    requested = tl._unwrap(requested)
    if requested is not None:
        return requested
    if dt.is_int_signed() and dt.int_bitwidth < 32:
        return tl.int32
    if dt.is_int_unsigned() and dt.int_bitwidth < 32:
        return tl.uint32
    return dt


def _prepare_axis(x: tensor, axis, what: str):
    axis = tl._unwrap(axis)
    if not x.ty.is_block:
        raise SemanticError(f"{what} needs a block, got a scalar {x.dtype}")
    if axis is None:
        flat = reshape(x, [x.numel]) if len(x.shape) > 1 else x
        return flat, 0, True
    if not isinstance(axis, int):
        raise SemanticError(f"{what}: axis must be a constexpr int or None, got {axis!r}")
    return x, _canon_axis(axis, len(x.shape)), False


def _keep(r: tensor, x_shape, axis, all_axes: bool, keep_dims: bool) -> tensor:
    if not keep_dims:
        return r
    if all_axes:
        return reshape(r, [1] * len(x_shape)) if len(x_shape) > 1 or r.ty.is_block else expand_dims(r, 0)
    return expand_dims(r, axis)


def reduce(x, axis, kind: str, keep_dims=False) -> tensor:
    x = to_tensor(x)
    if x.dtype.is_bool() and kind in ("max", "min", "argmax", "argmin"):
        # over the 0/1 values as int8: the same extrema and first indices (the NPU's vector unit
        # reduces no i1 blocks)
        r = reduce(cast(x, tl.int8), axis, kind, keep_dims)
        return cast(r, tl.int1) if kind in ("max", "min") else r
    shape0 = x.shape
    x, ax, all_axes = _prepare_axis(x, axis, f"tl.{kind}")
    shape = x.shape
    del shape[ax]
    out_elem = T.i32 if kind in ("argmax", "argmin") else x.ty.scalar
    r = _op("reduce", [x], T.block(out_elem, shape), op=kind, axis=ax)
    return _keep(r, shape0, ax, all_axes, bool(tl._unwrap(keep_dims)))


def reduce_sum(x, axis=None, keep_dims=False, dtype=None) -> tensor:
    x = to_tensor(x)
    x = cast(x, pick_sum_dtype(x.dtype, dtype))
    return reduce(x, axis, "sum", keep_dims)


def _bf16_as_fp32(x: tensor) -> tensor:
    """Triton's max/min (with indices too), cumsum and cumprod compute bfloat16 in float32."""
    return cast(x, tl.float32) if x.dtype == tl.bfloat16 else x


def reduce_minmax(kind: str, x, axis=None, return_indices=False, keep_dims=False) -> tensor | tuple:
    x = _bf16_as_fp32(to_tensor(x))
    if tl._unwrap(return_indices):
        return reduce(x, axis, kind, keep_dims), reduce(x, axis, "arg" + kind, keep_dims)
    if x.dtype.primitive_bitwidth < 32:
        x = cast(x, tl.float32 if x.dtype.is_floating() else tl.int32)
    return reduce(x, axis, kind, keep_dims)


def cumsum(x, axis=0, reverse=False, dtype=None) -> tensor:
    x = _bf16_as_fp32(to_tensor(x))
    x = cast(x, pick_sum_dtype(x.dtype, dtype))
    return _scan("sum", "tl.cumsum", x, axis, reverse)


def cumprod(x, axis=0, reverse=False) -> tensor:
    """Inclusive running product along ``axis``, in the input's dtype (as Triton: no widening but
    bfloat16's to float32)."""
    return _scan("prod", "tl.cumprod", _bf16_as_fp32(to_tensor(x)), axis, reverse)


def _scan(kind, what, x, axis, reverse) -> tensor:
    x, ax, all_axes = _prepare_axis(x, axis, what)
    attrs = {"op": kind, "axis": ax}
    if tl._unwrap(reverse):
        attrs["reverse"] = True
    return _op("scan", [x], x.ty, **attrs)


# --------------------------------------------------------------------------------------------
# join / split: a new last dimension of 2, made of selects and sums (every backend, exact)
# --------------------------------------------------------------------------------------------
def join(a, b) -> tensor:
    """(..., 2): ``a`` at [..., 0], ``b`` at [..., 1] (broadcast to one shape; one dtype)."""
    a, b = to_tensor(a), to_tensor(b)
    if a.dtype != b.dtype:
        raise SemanticError(f"tl.join needs operands of one dtype, got {a.dtype} and {b.dtype}")
    if a.shape != b.shape:
        a, b = broadcast_pair(a, b)
    shape = a.shape
    if len(shape) > 1:              # on rows of 2 (rank <= 2 blocks: what the NPU's vector unit takes)
        return reshape(join(reshape(a, [a.numel]), reshape(b, [b.numel])), shape + [2])
    first = compare(arange(0, 2), 0, "eq")
    return where(first, expand_dims(a, len(shape)), expand_dims(b, len(shape)))


_SAME_WIDTH_INT = {8: tl.int8, 16: tl.int16, 32: tl.int32, 64: tl.int64}


_JOINED: dict = {}         # id(a join's result) -> (that value, a, b): see joined_reshape
_JOINED_KEEP = 256


def record_join(j: tensor, a, b) -> tensor:
    """Remember that ``j`` is ``join(a, b)`` (the user's): a reshape merging its pair back into
    one dimension is then a concatenation or an interleave of views (:func:`joined_reshape`)."""
    _JOINED[id(j.handle)] = (j.handle, to_tensor(a), to_tensor(b))
    while len(_JOINED) > _JOINED_KEEP:
        del _JOINED[next(iter(_JOINED))]
    return j


def _made_by(x: tensor, name: str):
    """The op named ``name`` that made ``x``, or None."""
    op = x.handle.owner if isinstance(x, tensor) else None
    return op if op is not None and op.name == name else None


def _swaps_last_two(op) -> bool:
    order = op.attrs["order"]
    r = len(order)
    return r >= 2 and order == list(range(r - 2)) + [r - 1, r - 2]


def halves(a):
    """``split(a)`` as two views of the block ``a`` was made from, or None: ``x.reshape([.., 2,
    n]).permute(.., swapping the last two)`` splits x's last dimension into its halves (Triton's
    tutorials split an accumulator so), ``x.reshape([.., n, 2])`` into its even and odd positions.
    Bit for bit the elements ``split`` picks."""
    a = to_tensor(a)
    perm = _made_by(a, "permute")
    if perm is not None and _swaps_last_two(perm):
        rs = _made_by(tensor(perm.operands[0], perm.operands[0].type), "reshape")
        if rs is not None:
            x = tensor(rs.operands[0], rs.operands[0].type)
            two, n = rs.result.type.shape[-2:]
            if two == 2 and x.shape[:-1] == list(rs.result.type.shape[:-2]) and x.shape[-1] == 2 * n:
                lead = [0] * (len(x.shape) - 1)
                size, ones = x.shape[:-1] + [n], [1] * len(x.shape)
                return sub_block(x, lead + [0], size, ones), sub_block(x, lead + [n], size, ones)
    rs = _made_by(a, "reshape")
    if rs is not None and a.shape and a.shape[-1] == 2:
        x = tensor(rs.operands[0], rs.operands[0].type)
        n = a.shape[-2] if len(a.shape) >= 2 else 0
        if len(a.shape) >= 2 and x.shape[:-1] == a.shape[:-2] and x.shape[-1] == 2 * n:
            lead = [0] * (len(x.shape) - 1)
            size, steps = x.shape[:-1] + [n], [1] * (len(x.shape) - 1) + [2]
            return sub_block(x, lead + [0], size, steps), sub_block(x, lead + [1], size, steps)
    return None


def joined_reshape(x, shape):
    """``reshape(x, shape)`` as the two blocks of a ``join`` put back into one, or None: ``join(a,
    b).permute(.., swapping the last two).reshape([.., 2n])`` is ``a`` then ``b`` along the last
    dimension, ``join(a, b).reshape([.., 2n])`` the two interleaved -- each written into its place
    of the result (insert_slice), not built element by element."""
    x = to_tensor(x)
    shape = [int(tl._unwrap(d)) for d in shape]
    perm = _made_by(x, "permute")
    src, steps = x, 1
    if perm is not None and _swaps_last_two(perm):
        src = tensor(perm.operands[0], perm.operands[0].type)
    else:
        steps = 2
    entry = _JOINED.get(id(src.handle))
    if entry is None or entry[0] is not src.handle:
        return None
    a, b = entry[1], entry[2]
    if a.shape != b.shape or not a.shape or shape != a.shape[:-1] + [2 * a.shape[-1]]:
        return None
    n, lead, ones = a.shape[-1], [0] * (len(shape) - 1), [1] * (len(shape) - 1)
    if steps == 1:
        whole = _rejoined(a, b, 4)
        if whole is not None:
            return whole
    at_b = [n] if steps == 1 else [1]
    out = insert_sub_block(full(shape, 0, a.dtype), a, lead + [0], ones + [steps])
    return insert_sub_block(out, b, lead + at_b, ones + [steps])


def _half_of(v, k: int):
    """(x, n) when ``v`` is x's half ``k`` along its last dimension as :func:`halves` makes it (a
    slice of the first or last n of 2n), else None."""
    op = _made_by(v, "slice")
    if op is None:
        return None
    x = op.operands[0]
    n = v.shape[-1]
    offsets, steps = op.attrs.get("offsets") or [0] * len(v.shape), op.attrs.get("steps") or [1] * len(v.shape)
    if list(x.type.shape[:-1]) != v.shape[:-1] or x.type.shape[-1] != 2 * n or any(st != 1 for st in steps) or \
            list(offsets) != [0] * (len(v.shape) - 1) + [k * n]:
        return None
    return x, n


def _same(x, y, depth: int) -> bool:
    """Whether the values ``x`` and ``y`` are equal by construction: one value, or the same pure op
    (name, attributes, type) of such values (``alpha[:, None]`` written twice)."""
    if x is y:
        return True
    ox, oy = x.owner, y.owner
    return depth > 0 and ox is not None and oy is not None and ox.name == oy.name and ox.attrs == oy.attrs and \
        x.type == y.type and not ox.regions and not ox.opdef.effects and len(ox.results) == 1 and \
        len(ox.operands) == len(oy.operands) and all(_same(p, q, depth - 1) for p, q in zip(ox.operands, oy.operands))


def _rejoined(a: tensor, b: tensor, depth: int):
    """``a`` and ``b`` side by side as one block when they are the two halves of one block, or the
    same elementwise op of such halves and of operands the halves share (a column broadcast
    across the last dimension: ``acc0 * alpha[:, None]``, ``acc1 * alpha[:, None]``) -- the op on
    the whole block, element for element what the two halves computed -- else None."""
    ha, hb = _half_of(a, 0), _half_of(b, 1)
    if ha is not None and hb is not None and ha[0] is hb[0]:
        return tensor(ha[0], ha[0].type)
    oa, ob = a.handle.owner, b.handle.owner
    if depth == 0 or oa is None or ob is None or oa.name != ob.name or oa.attrs != ob.attrs or \
            len(oa.results) != 1 or oa.regions or oa.opdef.effects or \
            oa.opdef.kind not in ("elementwise", "compare", "select", "cast"):
        return None
    shape = a.shape[:-1] + [2 * a.shape[-1]]
    ins = []
    for x, y in zip(oa.operands, ob.operands):
        tx, ty = tensor(x, x.type), tensor(y, y.type)
        if not x.type.is_block:                     # a scalar: the same for both
            if not _same(x, y, 4):
                return None
            ins.append(tx)
            continue
        whole = _rejoined(tx, ty, depth - 1)
        if whole is None:
            bx, by = _made_by(tx, "broadcast"), _made_by(ty, "broadcast")
            src = bx.operands[0] if bx is not None else None
            if src is None or by is None or not _same(by.operands[0], src, 4) or src.type.shape[-1] != 1:
                return None
            whole = broadcast_to_shape(tensor(src, src.type), shape)
        ins.append(whole)
    return _op(oa.name, ins, T.block(a.ty.scalar, shape), **oa.attrs)


def split(a) -> tuple:
    """The two halves of a last dimension of 2, bit for bit: each is the sum along it of the block
    with the other half zeroed, taken over the bits as integers (so -0.0 and NaNs come through)."""
    a = to_tensor(a)
    if not a.shape or a.shape[-1] != 2:
        raise SemanticError(f"tl.split needs a last dimension of size 2, got shape {a.shape}")
    if len(a.shape) > 2:            # on rows of 2 (rank <= 2 blocks: what the NPU's vector unit takes)
        shape = a.shape[:-1]
        return tuple(reshape(h, shape) for h in split(reshape(a, [a.numel // 2, 2])))
    pick = arange(0, 2)
    return tuple(select_sum(a, compare(pick, k, "eq"), len(a.shape) - 1) for k in (0, 1))


def select_sum(a: tensor, chosen: tensor, axis: int) -> tensor:
    """The one element of ``a`` that ``chosen`` (broadcast against it) picks along ``axis``, bit for
    bit: the sum over ``axis`` of ``a``'s bits as integers with the others zeroed (so -0.0 and NaNs
    come through; none chosen gives 0)."""
    dt = a.dtype
    if dt.is_floating():
        bits = cast(a, _SAME_WIDTH_INT[dt.primitive_bitwidth], bitcast=True)
    elif dt.is_bool():
        bits = cast(a, tl.int8)
    else:
        bits = a
    v = cast(reduce_sum(where(chosen, bits, 0), axis), bits.dtype)
    return cast(v, dt, bitcast=True) if dt.is_floating() else cast(v, dt)


def cat(a, b, can_reorder=False) -> tensor:
    """Both blocks (one shape, one dtype) along the first dimension: ``a``'s rows, then ``b``'s.
    Triton's ``cat`` may reorder elements and requires ``can_reorder=True``; so does this one
    (which keeps the order anyway)."""
    a, b = to_tensor(a), to_tensor(b)
    if not tl._unwrap(can_reorder):
        raise SemanticError("tl.cat: the current implementation of `cat` always may reorder elements; "
                            "pass can_reorder=True (as Triton requires)")
    if a.dtype != b.dtype or a.shape != b.shape or not a.shape:
        raise SemanticError(f"tl.cat needs two blocks of one shape and dtype, got {a.type} and {b.type}")
    n = a.numel
    first = compare(expand_dims(arange(0, 2), 1), 0, "eq")                  # (2, 1)
    both = where(first, expand_dims(reshape(a, [n]), 0), expand_dims(reshape(b, [n]), 0))   # (2, n)
    return reshape(both, [2 * a.shape[0]] + a.shape[1:])


def histogram(x, num_bins, mask=None) -> tensor:
    """int32 counts of the values 0 .. num_bins - 1 in the 1-D integer block ``x`` (bins of width 1
    from 0; values outside are not counted; lanes where ``mask`` is false are left out): one
    (N, num_bins) comparison summed over N."""
    x = to_tensor(x)
    num_bins = int(tl._unwrap(num_bins))
    if len(x.shape) != 1 or not x.dtype.is_int():
        raise SemanticError(f"tl.histogram needs a 1-D block of integers, got {x.type}")
    hit = compare(expand_dims(x, 1), expand_dims(arange(0, num_bins), 0), "eq")     # (N, bins)
    if tl._unwrap(mask) is not None:
        hit = logical_and(hit, expand_dims(to_tensor(mask), 1))
    return reduce_sum(cast(hit, tl.int32), 0)


def interleave(a, b) -> tensor:
    """a and b interleaved along their last dimension: ``join`` then merge the last two."""
    j = join(a, b)
    shape = j.shape
    return reshape(j, shape[:-2] + [shape[-2] * 2]) if len(shape) > 1 else j


# --------------------------------------------------------------------------------------------
# dot
# --------------------------------------------------------------------------------------------
def dot(a, b, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
        out_dtype=tl.float32) -> tensor:
    a, b = to_tensor(a), to_tensor(b)
    acc, out_dtype = tl._unwrap(acc), tl._unwrap(out_dtype)
    if len(a.shape) == 3 and len(b.shape) == 3:
        return _batched_dot(a, b, acc, dict(input_precision=input_precision, allow_tf32=allow_tf32,
                                            out_dtype=out_dtype))
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise SemanticError(f"tl.dot needs 2-D operands (or two 3-D ones, batched), got shapes {a.shape} "
                            f"and {b.shape}")
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise SemanticError(f"tl.dot: inner dimensions differ: {a.shape} @ {b.shape}")
    if min(m, k, n) < 16:
        raise SemanticError(f"tl.dot: every dimension must be >= 16, got {a.shape} @ {b.shape}")
    if a.dtype != b.dtype:
        raise SemanticError(f"tl.dot: both operands must have the same dtype, got {a.dtype} and {b.dtype}")
    # the result type, by Triton's rule: int8 -> int32; fp32 and bf16 -> fp32 and fp64 -> fp64
    # whatever out_dtype says; fp16 -> out_dtype (fp32 or fp16); out_dtype bf16 is refused
    if a.dtype.is_int():
        if a.dtype.int_bitwidth != 8:
            raise SemanticError(f"tl.dot supports int8 integer operands, got {a.dtype}")
        ret = tl.int32
    elif out_dtype == tl.bfloat16:
        raise SemanticError("tl.dot: out_dtype=bfloat16 is unsupported; use out_dtype=float32/float16 and "
                            "cast with .to(tl.bfloat16)")
    elif a.dtype in (tl.float32, tl.bfloat16):
        ret = tl.float32
    elif a.dtype == tl.float64:
        ret = tl.float64
    else:
        ret = out_dtype
        if ret not in (tl.float32, tl.float16):
            raise SemanticError(f"tl.dot: out_dtype must be float32 or float16, got {ret!r}")
    precision = tl._unwrap(input_precision)
    if precision is None and tl._unwrap(allow_tf32) is not None:
        precision = "tf32" if tl._unwrap(allow_tf32) else "ieee"
    if precision not in (None, "tf32", "tf32x3", "ieee", "hf32", "bf16x3"):
        raise SemanticError(f"tl.dot: unknown input_precision {precision!r}")
    res_ty = T.block(ret.ir, [m, n])
    operands = [a, b]
    if acc is not None:
        acc = to_tensor(acc)
        if acc.shape != [m, n]:
            raise SemanticError(f"tl.dot: acc must have shape {[m, n]}, got {acc.shape}")
        if acc.dtype != ret:
            raise SemanticError(f"tl.dot: acc must have dtype {ret}, got {acc.dtype}")
        operands.append(acc)
    attrs = {"input_precision": precision} if precision else {}
    return _op("dot", operands, res_ty, **attrs)


def _batched_dot(a, b, acc, kw) -> tensor:
    """``[B, M, K] @ [B, K, N]``: one 2-D dot per batch entry, each operand's entry a view of it (a
    slice), the products written into their places of the result (insert_slice)."""
    nb = a.shape[0]
    if b.shape[0] != nb:
        raise SemanticError(f"tl.dot: batch dimensions differ: {a.shape} @ {b.shape}")
    if acc is not None:
        acc = to_tensor(acc)
        if len(acc.shape) != 3 or acc.shape[0] != nb:
            raise SemanticError(f"tl.dot: acc must have shape {[nb, a.shape[1], b.shape[2]]}, got {acc.shape}")
    def entry(x, i):
        return reshape(sub_block(x, [i, 0, 0], [1] + x.shape[1:], [1, 1, 1]), x.shape[1:])

    out = None
    for i in range(nb):
        c = dot(entry(a, i), entry(b, i), entry(acc, i) if acc is not None else None, **kw)
        if out is None:
            out = full([nb] + c.shape, 0, c.dtype)
        out = insert_sub_block(out, reshape(c, [1] + c.shape), [i, 0, 0], [1, 1, 1])
    return out
