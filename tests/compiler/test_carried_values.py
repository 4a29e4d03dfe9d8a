"""Values a loop or a branch carries, on the NPU: yields are simultaneous (a value computed in place
over one carried tile may be yielded for another), and a carried pointer stays in one argument."""
from __future__ import annotations

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.errors import CompilationError
from tritonpu.ir import parse_function
from tritonpu.passes.rewrite import root


@tritonpu.jit
def fib_blocks(X, O, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(X + offs)
    b = tl.load(X + BLOCK + offs)
    for i in range(n):
        a, b = b, a + b
    tl.store(O + offs, a)
    tl.store(O + BLOCK + offs, b)


@tritonpu.jit
def rotate3(X, O, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(X + offs)
    b = tl.load(X + BLOCK + offs)
    c = tl.load(X + 2 * BLOCK + offs)
    for i in range(n):
        a, b, c = b, c, a * 2
    tl.store(O + offs, a)
    tl.store(O + BLOCK + offs, b)
    tl.store(O + 2 * BLOCK + offs, c)


@tritonpu.jit
def cross_while(X, O, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(X + offs)
    b = tl.load(X + BLOCK + offs)
    i = 0
    while i < n:
        a, b = b * 2, a * 3
        i += 1
    tl.store(O + offs, a)
    tl.store(O + BLOCK + offs, b)


def _python(n, *vals, step):
    for _ in range(n):
        vals = step(*vals)
    return vals


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("n", [0, 1, 3, 4])
def test_yields_are_simultaneous_when_a_result_sits_in_another_carried_tile(dtype, n):
    """``a, b = b, a + b``: the sum is computed in place over a's tile, then a's tile takes b.  The
    copies at the end of a trip ran in an order that overwrote the sum first (a, b = 10, 10 after 3
    trips from 1, 10: a silent wrong result); now a copy runs only when nothing still to be copied
    reads what it writes."""
    BLOCK = 16
    x = np.concatenate([np.arange(BLOCK), 100 + np.arange(BLOCK)]).astype(dtype)
    o = np.zeros(2 * BLOCK, dtype)
    fib_blocks[(1,)](x, o, n, BLOCK=BLOCK)
    a, b = _python(n, x[:BLOCK], x[BLOCK:], step=lambda a, b: (b, a + b))
    np.testing.assert_array_equal(o, np.concatenate([a, b]))

    x3 = np.concatenate([x, 7 + np.arange(BLOCK, dtype=dtype)])
    o3 = np.zeros(3 * BLOCK, dtype)
    rotate3[(1,)](x3, o3, n, BLOCK=BLOCK)
    a, b, c = _python(n, x3[:BLOCK], x3[BLOCK:2 * BLOCK], x3[2 * BLOCK:], step=lambda a, b, c: (b, c, a * 2))
    np.testing.assert_array_equal(o3, np.concatenate([a, b, c]))

    o = np.zeros(2 * BLOCK, dtype)
    cross_while[(1,)](x, o, n, BLOCK=BLOCK)
    a, b = _python(n, x[:BLOCK], x[BLOCK:], step=lambda a, b: (b * 2, a * 3))
    np.testing.assert_array_equal(o, np.concatenate([a, b]))


@tritonpu.jit
def pingpong_for(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    src = X
    dst = Y
    for i in range(n):
        tl.store(dst + offs, tl.load(src + offs) + 1.0)
        src, dst = dst, src


@tritonpu.jit
def pingpong_while(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    src = X
    dst = Y
    i = 0
    while i < n:
        tl.store(dst + offs, tl.load(src + offs) + 1.0)
        src, dst = dst, src
        i += 1


@tritonpu.jit
def pointer_by_branch(X, Y, O, c, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if c > 0:
        p = X
    else:
        p = Y
    tl.store(O + offs, tl.load(p + offs))


MESSAGE = ("a pointer that may point into different kernel arguments (`X` or `Y`: chosen by a branch, or swapped "
           "in a loop as in `src, dst = dst, src`) is not supported on the NPU: an instruction addresses one "
           "argument; branch around the loads and stores of each argument instead")


@pytest.mark.parametrize("kernel,line", [(pingpong_for, "for i in range(n):"), (pingpong_while, "while i < n:")])
def test_a_pointer_swapped_between_arguments_in_a_loop_is_a_compile_error(kernel, line):
    """Ping-pong buffers read and wrote X only (X, Y = 0, 1 after 5 trips instead of 4, 5); the ref
    and CPU backends run them."""
    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(CompilationError) as e:
        kernel[(1,)](x, y, 5, BLOCK=8)
    assert MESSAGE in str(e.value) and line in str(e.value)
    kernel[(1,)](x, y, 5, BLOCK=8, backend="ref")
    np.testing.assert_array_equal(x, 4)
    np.testing.assert_array_equal(y, 5)


def test_a_pointer_chosen_by_a_branch_is_a_compile_error():
    x, y, o = np.ones(8, np.float32), np.full(8, 2, np.float32), np.zeros(8, np.float32)
    with pytest.raises(CompilationError) as e:
        pointer_by_branch[(1,)](x, y, o, 0, BLOCK=8)       # (it read X for c <= 0 before)
    assert MESSAGE in str(e.value) and "if c > 0:" in str(e.value)


@tritonpu.jit
def carried_ptrs(A, B, O, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    pa = A + offs
    pb = B
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(n):
        acc += tl.load(pa) + tl.load(pb + offs)
        pa += BLOCK
        pa, pb = pa, pb + BLOCK
    tl.store(O + offs, acc)


def test_root_follows_a_carried_pointer_to_its_argument_and_gives_none_for_a_swap():
    """Passes decide from ``root`` whether a loop may prefetch a load (nothing in it writes the
    argument): a carried pointer is resolved through its initial value and its yields."""
    a, b, o = np.ones(64, np.float32), np.ones(64, np.float32), np.zeros(8, np.float32)
    h = carried_ptrs[(1,)](a, b, o, 2, BLOCK=8, backend="ref")
    fn = parse_function(h.asm["ir"])
    roots = sorted(root(op.operands[0]).name for op in fn.walk() if op.name == "load")
    assert roots == ["A", "B"]
    h = pingpong_for[(1,)](np.zeros(8, np.float32), np.zeros(8, np.float32), 2, BLOCK=8, backend="ref")
    fn = parse_function(h.asm["ir"])
    assert [root(op.operands[0]) for op in fn.walk() if op.name in ("load", "store")] == [None, None]


@tritonpu.jit
def cross_from_other(X, O, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(X + offs)
    b = tl.load(X + BLOCK + offs)
    for i in range(n):
        a, b = b, (a + 1) * 2
    tl.store(O + offs, a)
    tl.store(O + BLOCK + offs, b)


@tritonpu.jit
def cross_if_result(X, O, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(X + offs)
    b = tl.load(X + BLOCK + offs)
    for i in range(n):
        if i % 2 == 0:
            r = a * 2 + 1
        else:
            r = a - 1
        a, b = b, r
    tl.store(O + offs, a)
    tl.store(O + BLOCK + offs, b)


@tritonpu.jit
def cross_reduced(X, O, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(X + offs)
    s = tl.sum(a, axis=0) * 0
    r = s + 1
    for i in range(n):
        s, r = r, tl.sum(a, axis=0) * 2
        a = a + 1
    tl.store(O + offs, a)
    tl.store(O + BLOCK, s)
    tl.store(O + BLOCK + 1, r)


def _cross_model(name, n, x):
    B = len(x) // 2
    a, b = x[:B].copy(), x[B:].copy()
    if name == "cross_from_other":
        for _ in range(n):
            a, b = b, (a + 1) * 2
        return np.concatenate([a, b])
    if name == "cross_if_result":
        for i in range(n):
            a, b = b, (a * 2 + 1 if i % 2 == 0 else a - 1)
        return np.concatenate([a, b])
    s, r = 0, 1
    for _ in range(n):
        s, r = r, a.sum() * 2
        a = a + 1
    return np.concatenate([a, [s, r], np.zeros(B - 2, x.dtype)])


@pytest.mark.parametrize("kernel", [cross_from_other, cross_if_result, cross_reduced])
@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("opts", [{}, {"double_buffer": False}])
def test_a_carried_value_yielded_into_another_slot_keeps_its_buffer_until_the_trip_ends(kernel, n, opts):
    """``a, b = b, f(a)``: f(a) was computed straight into b's carried buffer (coalescing let the new
    b take it, the yield's read of b for a's slot not counted), so a got the new b (a, b = 2, 2 for
    a, b = 16, 2).  Also through an if's result and for reduced scalars carried in UB."""
    B = 16
    x = np.arange(2 * B, dtype=np.int32)
    o = np.zeros(2 * B, np.int32)
    kernel[(1,)](x, o, n, BLOCK=B, **opts)
    want = _cross_model(kernel.__name__ if hasattr(kernel, "__name__") else kernel.fn.__name__, n, x)
    np.testing.assert_array_equal(o, want)


@tritonpu.jit
def dot_and_previous(A, Bm, O, nk, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    keep = tl.zeros((BM, BN), tl.float32)
    for kk in range(nk):
        a = tl.load(A + kk * BM * BK + rm[:, None] * BK + rk[None, :])
        b = tl.load(Bm + kk * BK * BN + rk[:, None] * BN + rn[None, :])
        acc, keep = tl.dot(a, b, acc), acc
    tl.store(O + rm[:, None] * BN + rn[None, :], acc)
    tl.store(O + BM * BN + rm[:, None] * BN + rn[None, :], keep)


@pytest.mark.parametrize("nk", [1, 2, 3])
@pytest.mark.parametrize("opts", [{}, {"double_buffer": False}])
def test_an_accumulator_and_its_previous_value_carried_side_by_side(nk, opts):
    S = 16
    rs = np.random.RandomState(0)
    A = rs.randint(-3, 4, size=3 * S * S).astype(np.float16)
    Bm = rs.randint(-3, 4, size=3 * S * S).astype(np.float16)
    acc = keep = np.zeros((S, S), np.float32)
    for kk in range(nk):
        part = A[kk * S * S:(kk + 1) * S * S].reshape(S, S).astype(np.float32) @ \
            Bm[kk * S * S:(kk + 1) * S * S].reshape(S, S).astype(np.float32)
        acc, keep = part + acc, acc
    o = np.zeros(2 * S * S, np.float32)
    dot_and_previous[(1,)](A, Bm, o, nk, BM=S, BN=S, BK=S, **opts)
    np.testing.assert_array_equal(o, np.concatenate([acc.ravel(), keep.ravel()]))
