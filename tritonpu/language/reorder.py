"""``tl.flip``, ``tl.sort``, ``tl.topk`` and ``tl.gather``: made of the exact reordering ops of :mod:`.memory` (``split``,
``join``, ``cat``, ``interleave``) and 2-D transposes, so they run on every backend (blocks of rank
<= 3 throughout). Both work on the rows of a (B, n) view of the block with ``dim`` last.

``flip`` reverses along ``dim`` (the last dimension for None) exactly: the odd elements reversed
interleaved with the even ones reversed, both halves reversed together as the rows of one block,
log2(n) levels. ``sort`` returns the block sorted along ``dim`` (the last dimension for None),
ascending or ``descending``, by a bitonic network whose compare-exchanges swap a pair when it is
out of order by ``>`` (for a power-of-two size: NaNs compare false, so where they end up is
unspecified, as in Triton); another size is sorted by its order keys (a total order on the bits:
NaNs last, or first when descending): by rank when the rows are small, else padded to a power of
two, through the network, and cut back (``slice``).
Equal elements are indistinguishable in the result (values only). ``topk`` is the descending
sort's first ``k``.
``gather(src, index, axis)`` is Triton's: ``out[i][j] = src[index[i][j]][j]`` for axis 0 (and so on),
``index`` shaped like ``src`` except along ``axis``; each element is picked exactly by an
(index == position) comparison over ``src``'s extent along ``axis`` (so it needs index-size x
that-extent elements on chip); an index outside ``[0, src.shape[axis])`` gives 0 (Triton leaves it
undefined).
"""
from __future__ import annotations

from tritonpu.language import core as tl
from tritonpu.language.core import SemanticError, tensor
from tritonpu.language.memory import cat, interleave, join, reduce_sum, select_sum, split
from tritonpu.language.semantic import (_canon_axis, add, and_, arange, broadcast_to_shape, cast, compare, known_int,
                                        expand_dims, floordiv, leading, mod, mul, or_, permute, reshape,
                                        full, insert_sub_block, scalar_constant, sub, sub_block, sub_block_inside,
                                        to_tensor,
                                        where, xor_)


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
    res = fn(reshape(moved, [moved.numel // n, n]))
    out = reshape(res, shape[:-1] + [res.shape[-1]])
    return permute(out, [order.index(i) for i in range(rank)]) if d != rank - 1 else out


def _pow2(n: int) -> bool:
    return n & (n - 1) == 0


def _pick(rows, index):
    """(B, n) rows -> (B, m): element ``index[j]`` of each row at ``j`` (``index``: (m,) or (B, m))."""
    b, n = rows.shape
    m = index.shape[-1]
    idx = broadcast_to_shape(expand_dims(index, 0), [b, m]) if len(index.shape) == 1 else index
    return gather(rows, idx, 1)


def flip(x, dim=None) -> tensor:
    def rows_flipped(rows):                 # (B, n) -> each row reversed
        if not _pow2(rows.shape[1]):        # any size: a gather of the reversed positions
            n = rows.shape[1]
            return _pick(rows, sub(n - 1, arange(0, n)))
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
    desc = bool(tl._unwrap(descending))
    return _on_rows(x, dim, "sort", lambda rows: _bitonic(rows, desc) if _pow2(rows.shape[1])
                    else _keyed_sort(rows, desc))


_ORDER_INT = {8: tl.int8, 16: tl.int16, 32: tl.int32, 64: tl.int64}


def _order_key(rows):
    """Keys whose ``<`` is a total order consistent with the values' (floats by their bits: negatives
    flipped, so -NaN < -inf < ... < -0.0 < 0.0 < ... < inf < NaN; booleans as int8) — one key per
    bit pattern, so :func:`_from_key` gives the values back exactly."""
    dt = rows.dtype
    if dt.is_bool():
        return cast(rows, tl.int8)
    if not dt.is_floating():
        return rows
    return _flip_negatives(cast(rows, _ORDER_INT[dt.primitive_bitwidth], bitcast=True))


def _flip_negatives(bits):
    """The bits of negative integers with all but the sign flipped (its own inverse): the order
    key of a float's bits, and back."""
    return where(compare(bits, 0, "lt"), xor_(bits, (1 << (bits.dtype.primitive_bitwidth - 1)) - 1), bits)


def _from_key(key, dt):
    """The values whose :func:`_order_key` is ``key``."""
    if dt.is_bool():
        return cast(key, dt)
    if not dt.is_floating():
        return key
    return cast(_flip_negatives(key), dt, bitcast=True)


def _rank_sort(rows, desc):
    """Rows sorted by rank: element i goes to position #{j: before(j, i)}, where j comes before i
    when its key is smaller (larger, descending) or equal with j < i — a permutation, so every
    value comes through exactly; (B, n, n) comparisons: for small rows, cheaper than a network."""
    b, n = rows.shape
    key = _order_key(rows)
    ki, kj = expand_dims(key, 2), expand_dims(key, 1)                      # (B, n, 1), (B, 1, n)
    pos = arange(0, n)
    earlier = compare(expand_dims(pos, 0), expand_dims(pos, 1), "lt")      # (n, n): j < i
    before = or_(compare(kj, ki, "gt" if desc else "lt"), and_(compare(kj, ki, "eq"), earlier))
    rank = reduce_sum(cast(before, tl.int32), 2)                           # (B, n)
    at = compare(expand_dims(rank, 1), expand_dims(expand_dims(pos, 0), 2), "eq")   # (B, n_pos, n_i)
    return select_sum(broadcast_to_shape(expand_dims(rows, 1), [b, n, n]), at, 2)


# rows of another size than a power of two are sorted by rank while their (B, n, n) comparisons
# stay this small (a few 16K-element blocks on chip), else by the padded network: both order by the
# keys, so which one runs never changes the result
RANK_SORT_ELEMENTS = 1 << 14


def _keyed_sort(rows, desc):
    b, n = rows.shape
    return _rank_sort(rows, desc) if b * n * n <= RANK_SORT_ELEMENTS else _padded_sort(rows, desc)


def _padded_sort(rows, desc):
    """Rows of any length ``n`` sorted: their order keys padded to the next power of two with the key
    that sorts last (the largest, descending: the smallest), the bitonic network, the first ``n``
    taken back to values. A padding key equal to a real one stands for the same bits, so the first
    ``n`` are exactly the row's values in order (n log^2 n work, the padded row on chip)."""
    b, n = rows.shape
    key = _order_key(rows)
    kt = key.dtype
    bits = kt.primitive_bitwidth
    if kt.is_int_unsigned():
        last = 0 if desc else (1 << bits) - 1
    else:
        last = -(1 << (bits - 1)) if desc else (1 << (bits - 1)) - 1
    width = 1 << (n - 1).bit_length()
    copies = -(-width // n)
    wide = leading(reshape(broadcast_to_shape(expand_dims(key, 1), [b, copies, n]), [b, copies * n]), [b, width])
    padded = where(compare(expand_dims(arange(0, width), 0), n, "lt"), wide, scalar_constant(last, kt))
    return _from_key(leading(_bitonic(padded, desc), [b, n]), rows.dtype)


def topk(x, k, dim=None) -> tensor:
    """Triton's ``tl.topk``: the ``k`` largest elements along ``dim`` (the last for None), largest
    first — the descending sort's first ``k`` (for powers of two, taken by halving; exact)."""
    k = tl._unwrap(k)

    def first_k(rows):
        b, n = rows.shape
        if not isinstance(k, int) or not 1 <= k <= n:
            raise SemanticError(f"tl.topk needs k from 1 to {n} (the size along dim), got {k!r}")
        if not _pow2(n):
            return leading(_keyed_sort(rows, True), [b, k])
        rows = _bitonic(rows, True)
        if not _pow2(k):
            return leading(rows, [b, k])
        while n > k:
            n //= 2
            first, _ = _halves(rows, n)                  # the first half of each row, transposed
            rows = permute(first, [1, 0])
        return rows
    return _on_rows(x, dim, "topk", first_k)


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



def gather(src, index, axis) -> tensor:
    src, index = to_tensor(src), to_tensor(index)
    rank = len(src.shape)
    if not rank or len(index.shape) != rank:
        raise SemanticError(f"tl.gather needs a source block and an index block of one rank, got {src.type} "
                            f"and {index.type}")
    if not index.dtype.is_int():
        raise SemanticError(f"tl.gather needs integer indices, got {index.dtype}")
    d = _canon_axis(tl._unwrap(axis), rank, "axis")
    if any(a != b for i, (a, b) in enumerate(zip(src.shape, index.shape)) if i != d):
        raise SemanticError(f"tl.gather: the index shape {index.shape} must match the source shape "
                            f"{src.shape} except along axis {d}")
    order = [i for i in range(rank) if i != d] + [d]
    moved_src = permute(src, order) if d != rank - 1 else src
    moved_idx = permute(index, order) if d != rank - 1 else index
    n, m = moved_src.shape[-1], moved_idx.shape[-1]
    rows = moved_src.numel // n
    # (rows * m, n): every output element's source row, and whether each of its positions is the index
    # (rank 2 throughout: what the NPU's vector unit takes)
    srcs = _repeat_rows(reshape(moved_src, [rows, n]), m)
    hit = compare(reshape(moved_idx, [rows * m, 1]), expand_dims(arange(0, n), 0), "eq")
    out = reshape(select_sum(srcs, hit, 1), moved_idx.shape)
    return permute(out, [order.index(i) for i in range(rank)]) if d != rank - 1 else out


def _repeat_rows(x, m):
    """(R, n) -> (R * m, n), row q being x's row q // m: for ``m`` a power of two, columns of the
    transpose interleaved with themselves, log2(m) times (exact and rank 2 throughout); else a
    broadcast along a new middle axis."""
    if m & (m - 1):
        r, n = x.shape
        return reshape(broadcast_to_shape(expand_dims(x, 1), [r, m, n]), [r * m, n])
    t = permute(x, [1, 0])
    while m > 1:
        t = interleave(t, t)
        m //= 2
    return permute(t, [1, 0])


# ---- triton-ascend's extract_slice / insert_slice (MLIR's tensor.extract_slice / insert_slice) ----
def _slice_args(x, offsets, sizes, strides, what):
    rank = len(x.shape)
    offsets, sizes, strides = (list(tl._unwrap(v)) for v in (offsets, sizes, strides))
    if not (len(offsets) == len(sizes) == len(strides) == rank):
        raise SemanticError(f"{what} needs one offset, size and stride per dimension of the {rank}-D block, got "
                            f"{len(offsets)}, {len(sizes)} and {len(strides)}")
    sizes = [tl._unwrap(s) for s in sizes]
    strides = [tl._unwrap(s) for s in strides]
    if any(not isinstance(s, int) or s < 1 for s in sizes) or any(not isinstance(s, int) or s < 0 for s in strides):
        raise SemanticError(f"{what}: sizes must be constexpr ints >= 1 and strides constexpr ints >= 0, got {sizes} "
                            f"and {strides}")
    offsets = [tl._unwrap(o) for o in offsets]
    return [_known(o) for o in offsets], [int(s) for s in sizes], [int(s) for s in strides]


def _known(off):
    """An offset the kernel computes from constants alone (an unrolled loop's variable times a
    block size) as its int; any other offset as it is."""
    v = known_int(off)
    return off if v is None else v


def _positions(off, n, stride, shape, axis):
    """``off + arange(n) * stride`` (int32) along ``axis`` of a block of ``shape`` (broadcast)."""
    pos = arange(0, n) if stride == 1 else mul(arange(0, n), stride)
    pos = cast(add(pos, off), tl.int32) if not (isinstance(off, int) and off == 0) else pos
    for d in range(len(shape)):
        if d != axis:
            pos = expand_dims(pos, d)
    return broadcast_to_shape(pos, shape)


def extract_slice(ful, offsets, sizes, strides) -> tensor:
    """The block ``out[i, j, ..] = ful[o0 + i*s0, o1 + j*s1, ..]`` of ``sizes`` (offsets may be runtime
    values; a position outside ``ful`` gives 0). With constant offsets and strides >= 1 that stay
    inside ``ful`` it is a sub-block (a view: the IR's ``slice``); otherwise one exact gather per
    dimension that moves."""
    ful = to_tensor(ful)
    offsets, sizes, strides = _slice_args(ful, offsets, sizes, strides, "extract_slice")
    if sub_block_inside(offsets, sizes, strides, ful.shape):
        return sub_block(ful, offsets, sizes, strides)
    if all(isinstance(o, int) for o in offsets) and all(s >= 1 for s in strides):
        return _padded_slice(ful, offsets, sizes, strides)
    out = ful
    for d, (off, n, stride) in enumerate(zip(offsets, sizes, strides)):
        if isinstance(off, int) and off == 0 and stride == 1 and n == out.shape[d]:
            continue
        shape = list(out.shape)
        shape[d] = n
        out = gather(out, _positions(off, n, stride, shape, d), d)
    return out


def _padded_slice(ful, offsets, sizes, strides) -> tensor:
    """extract_slice at constant offsets reaching past ``ful``: the positions inside as a view,
    written over a block of zeros (vllm-ascend's ``extract_slice(out, (c,), (1536,), (1,))`` of a
    row of 512)."""
    first, count = [], []
    for off, n, st, dim in zip(offsets, sizes, strides, ful.shape):
        i0 = max(0, -(off // st)) if off < 0 else 0                 # the first i with off + i*st >= 0
        i1 = min(n, max(0, -(-(dim - off) // st)))                   # past the last inside
        first.append(i0)
        count.append(max(0, i1 - i0))
    zeros = full(sizes, 0, ful.dtype)
    if 0 in count:
        return zeros
    inside = sub_block(ful, [o + i * st for o, i, st in zip(offsets, first, strides)], count, strides)
    return insert_sub_block(zeros, inside, first, [1] * len(sizes))


def insert_slice(ful, part, offsets, sizes, strides) -> tensor:
    """``ful`` with ``ful[o0 + i*s0, o1 + j*s1, ..] = part[i, j, ..]`` (``part`` of ``sizes``; offsets
    may be runtime values; positions outside ``ful`` are dropped).  With constant offsets and
    strides >= 1 that stay inside ``ful``: the IR's ``insert_slice`` (a copy of ``ful``, ``part``
    copied over the sub-block); otherwise each dimension's positions picked by exact comparisons,
    ``part`` spread over ``ful``'s shape by exact gathers, then one select."""
    ful, part = to_tensor(ful), to_tensor(part)
    offsets, sizes, strides = _slice_args(ful, offsets, sizes, strides, "insert_slice")
    if list(part.shape) != sizes:
        raise SemanticError(f"insert_slice: the inserted block is {part.shape}, the sizes say {sizes}")
    if any(s == 0 for s in strides):
        raise SemanticError("insert_slice: strides must be >= 1 (a stride of 0 writes one position many times)")
    if sub_block_inside(offsets, sizes, strides, ful.shape):
        return insert_sub_block(ful, cast(part, ful.dtype), offsets, strides)
    def picked(shape, d, off, n, stride):
        """(hit, k) along dimension ``d`` of a block of ``shape``: whether ful's position is written,
        and by which element of ``part``."""
        rel = sub(_positions(0, shape[d], 1, shape, d), off)           # position - offset
        k = floordiv(rel, stride) if stride != 1 else rel
        hit = and_(compare(rel, 0, "ge"), compare(k, n, "lt"))
        if stride != 1:
            hit = and_(hit, compare(mod(rel, stride), 0, "eq"))
        return hit, k

    spread, inside = cast(part, ful.dtype), None
    for d, (off, n, stride) in enumerate(zip(offsets, sizes, strides)):
        shape = list(spread.shape)
        shape[d] = ful.shape[d]
        hit, k = picked(shape, d, off, n, stride)
        spread = gather(spread, where(hit, k, 0), d)
        hit, _ = picked(list(ful.shape), d, off, n, stride)
        inside = hit if inside is None else and_(inside, hit)
    return where(inside, spread, ful)
