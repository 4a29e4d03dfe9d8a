"""Trip extents (tritonpu/passes/trip_extents.py): a loop's minimum/maximum that picks the same
operand on every trip becomes that operand, when the launch's arguments decide it (a guard).

* golden tests: IR text in, exact IR out -- the K tail mask's extent ``min(max(K - 32k, 0), 32)``
  is 32 when 32 divides K, ``K - 32k`` when it does not (only the ``max`` goes), untouched without
  launch values or when an intermediate value would wrap on some trip;
* end to end: Triton's masked K loop gives numpy's answer at a K that 32 divides and at one it
  does not; the first compiles no per-trip zero fill; a launch at the other K compiles again.
"""
import re

import numpy as np

import tritonpu
import tritonpu.language as tl
from tritonpu.passes import PassManager
from tritonpu.passes.specialize import launch_values

from test_pipelining import run_fn, strip_locs
from tritonpu.ir import print_function, verify

KLOOP = """
func @k(%x: ptr<f16>, %K: i32, %nt: i32) {
  %z = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %B = constant {value = 32} : i32
  for %z, %nt, %one {
  ^bb(%k: i32):
    %kb = mul %k, %B : i32
    %rem = sub %K, %kb : i32
    %lo = maximum %rem, %z : i32
    %v = minimum %lo, %B : i32
    %kb64 = cast %kb : i64
    %p = addptr %x, %kb64 : ptr<f16>
    %t = load_tile %p, %one, %v : tensor<32xf16>
    yield
  } loc(#f0:90:0)
  return
}
"""


def _run(text, scalars):
    with launch_values(scalars) as guards:
        fn = run_fn(text, ["trip-extents"])
    verify(fn)
    return strip_locs(print_function(fn)), guards


def _load_line(out):
    return next(ln.strip() for ln in out.splitlines() if "load_tile" in ln)


def test_a_tail_mask_that_never_cuts_is_the_full_extent():
    out, guards = _run(KLOOP, {"K": 1024, "nt": 32})
    assert _load_line(out) == "%t = load_tile %p, %one, %B : tensor<32xf16>"
    assert len(guards) == 2 and all(g.expected for g in guards)      # max, then min


def test_a_tail_mask_that_cuts_the_last_trip_keeps_the_minimum():
    out, guards = _run(KLOOP, {"K": 1000, "nt": 32})          # the last trip has 8 valid
    assert "%v = minimum %rem, %B : i32" in out              # the max went: K - 32k >= 0 always
    assert _load_line(out) == "%t = load_tile %p, %one, %v : tensor<32xf16>"
    assert [g.expected for g in guards] == [True]


def test_without_launch_values_nothing_changes():
    fn = run_fn(KLOOP, ["trip-extents"])
    out = strip_locs(print_function(fn))
    assert "%v = minimum %lo, %B : i32" in out and "%lo = maximum %rem, %z : i32" in out


def test_a_chain_that_wraps_on_some_trip_is_left_alone():
    """k * 2^30 in i32 wraps at k = 2: ``minimum(k * 2^30, 2^31 - 1)`` is not decided from the
    first and last trips (they would say the first operand), so it stays."""
    text = KLOOP.replace("%B = constant {value = 32} : i32",
                         "%B = constant {value = 32} : i32\n  %big = constant {value = 1073741824} : i32\n"
                         "  %top = constant {value = 2147483647} : i32")
    text = text.replace("%kb = mul %k, %B : i32", "%kb = mul %k, %big : i32")
    text = text.replace("%rem = sub %K, %kb : i32\n    %lo = maximum %rem, %z : i32\n    %v = minimum %lo, %B : i32",
                        "%v = minimum %kb, %top : i32")
    out, guards = _run(text, {"K": 0, "nt": 4})
    assert "%v = minimum %kb, %top : i32" in out and guards == []


def test_a_loop_that_may_not_run_is_left_alone():
    out, guards = _run(KLOOP, {"K": 1024, "nt": 0})
    assert "%v = minimum %lo, %B : i32" in out and guards == []


@tritonpu.jit
def _kloop(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptr + rm[:, None] * K + (k * BK + rk)[None, :], mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptr + (k * BK + rk)[:, None] * BN + rn[None, :], mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


def test_e2e_the_masked_k_loop_is_exact_and_compiles_again_for_a_k_with_a_tail():
    rng = np.random.default_rng(3)
    for K, tail in ((96, False), (80, True), (96, False)):
        a = (rng.random((32, K)) - 0.5).astype(np.float16)
        b = (rng.random((K, 32)) - 0.5).astype(np.float16)
        c = np.empty((32, 32), np.float32)
        h = _kloop[(1,)](a, b, c, K, BM=32, BN=32, BK=32)
        np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), atol=1e-3, rtol=1e-3)
        loop = h.asm["isa"].split("for ", 2)[-1]
        assert ("__zeros" in loop) == tail, loop
    arts = [x for k, v in h.kernel.backend_artifacts.items() if k[0] == "npu" for x in v]
    assert len(arts) == 2          # K = 96 twice: the second launch reused the first compile
    c2 = np.empty((32, 32), np.float32)
    _kloop[(1,)](a, b, c2, K, BM=32, BN=32, BK=32, disable_passes=("trip-extents",))
    assert c2.tobytes() == c.tobytes()


@tritonpu.jit
def _min64(out, A, B):
    for k in range(0, 4):
        tl.store(out + k, tl.minimum(A - k * 16, B))


@tritonpu.jit
def _mask64(x, y, N, L, B: tl.constexpr):
    o = tl.arange(0, B)
    for k in range(0, 4):
        m = o < tl.minimum(N - k * B, L)
        tl.store(y + k * B + o, tl.load(x + k * B + o, mask=m, other=0), mask=m)


def test_64_bit_operands_are_left_alone():
    """A - k*16 and B are int64 here: x - y overflows int64 (a 64-bit check could not see it
    wrap), so the pass keeps the minimum; before, it picked B on every trip."""
    o = np.zeros(4, np.int64)
    A, B = -2 ** 63 + 100, 2 ** 62
    _min64[(1,)](o, np.int64(A), np.int64(B))
    assert o.tolist() == [A - 16 * k for k in range(4)]
    x, y = np.arange(1, 65, dtype=np.int32), np.zeros(64, np.int32)
    _mask64[(1,)](x, y, np.int64(A), np.int64(B), B=16)
    assert not y.any()



@tritonpu.jit
def _if_yields_two(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    a = 0
    b = 0
    for i in range(0, 4):
        if i % 2 == 0:              # an `if` yielding two values, one of them in a masked offset
            a = i
            b = i + 1
        offs = a * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        tl.store(y_ptr + offs, x + b, mask=offs < n)


def test_a_value_an_if_yields_with_another_is_left_alone():
    """Reduced from triton-ascend's persistent matmul tutorial: the pass asked the two-result `if`
    for its one result (an internal AssertionError)."""
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    _if_yields_two[(1,)](x, y, 50, BLOCK=16)
    ref = np.zeros(64, np.float32)
    a = b = 0
    for i in range(4):
        a, b = (i, i + 1) if i % 2 == 0 else (a, b)
        lanes = np.arange(a * 16, min(a * 16 + 16, 50))
        ref[lanes] = x[lanes] + b
    assert y.tolist() == ref.tolist()
