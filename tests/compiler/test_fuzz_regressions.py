"""Silent wrong results found by differential fuzzing (npu vs ref vs cpu), each as its reproducer:
every backend must give the reference's bits."""
from __future__ import annotations

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl

BACKENDS = ["npu", "ref", "cpu"]


@tritonpu.jit
def _bitcast_pid(out_ptr, bits_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    bits = pid.to(tl.float32, bitcast=True)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs)
    tl.store(bits_ptr + pid, bits)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_scalar_bitcast_leaves_its_operand_alone(backend):
    """The bitcast's result once took pid's register while pid was still live: every program
    wrote the first block."""
    out, bits = np.full(64, -1, np.int32), np.zeros(4, np.float32)
    _bitcast_pid[(4,)](out, bits, BLOCK=16, backend=backend)
    np.testing.assert_array_equal(out, np.arange(64, dtype=np.int32))
    np.testing.assert_array_equal(bits.view(np.int32), np.arange(4, dtype=np.int32))


@tritonpu.jit
def _scan(x_ptr, y_ptr, BLOCK: tl.constexpr, PROD: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if PROD:
        y = tl.cumprod(x, 0, reverse=True)
    else:
        y = tl.cumsum(x, 0, reverse=True)
    tl.store(y_ptr + offs, y)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("head,expect", [([np.inf, 1, 0], [np.inf, 1, 0]), ([1, 1e8, -1e8], [1, 0, -1e8])])
def test_reverse_cumsum_sums_from_the_right(backend, head, expect):
    """A reverse cumsum was total - prefix + x: an inf anywhere made every element NaN, and a
    cancellation ahead of an element reached it (y[0] = 0 instead of 1)."""
    x = np.zeros(16, np.float32)
    x[:3] = head
    y = np.full(16, 7, np.float32)
    _scan[(1,)](x, y, BLOCK=16, PROD=False, backend=backend)
    assert y[:3].tolist() == expect and not y[3:].any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_reverse_cumprod_multiplies_from_the_right(backend):
    x = np.array([2, 0.5, np.inf, 0, 3, 1, -1, 2] * 2, np.float32)
    y = np.zeros(16, np.float32)
    _scan[(1,)](x, y, BLOCK=16, PROD=True, backend=backend)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(y, np.flip(np.cumprod(np.flip(x))))


@tritonpu.jit
def _fma(a_ptr, b_ptr, c_ptr, y_ptr, s_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.fma(tl.load(a_ptr + offs), tl.load(b_ptr + offs), tl.load(c_ptr + offs)))
    tl.store(s_ptr, tl.fma(tl.load(a_ptr + 1), tl.load(b_ptr + 1), tl.load(c_ptr + 1)))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_fma_rounds_once(backend, dtype):
    """tl.fma on the vector unit was vmul + vadd, 1-2 ulp off the fused result on ~30% of lanes.
    Checked against a*b + c in f64 rounded to the type (the products are exact in f64, and no lane
    of these data lands on a tie, so that is the fused result), and lane 0 against the f32
    double-rounding trap that f64-then-f32 falls into."""
    rng = np.random.default_rng(7)
    a, b, c = (rng.standard_normal(256).astype(dtype) for _ in range(3))
    a[1], b[1], c[1] = 1 + 2.0 ** -6, 1 - 2.0 ** -6, -1     # cancellation: exactly -2^-12
    y, s = np.zeros(256, dtype), np.zeros(1, dtype)
    if dtype == np.float32:
        a[0] = b[0] = 1 + 2.0 ** -12
        c[0] = 2.0 ** -80         # just above a tie: fused rounds up, f64-then-f32 rounds to even
    _fma[(1,)](a, b, c, y, s, BLOCK=256, backend=backend)
    exact = (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(dtype)
    if dtype == np.float32:
        assert y[0] == np.float32(1 + 2.0 ** -11 + 2.0 ** -23)
        exact[0] = y[0]
    np.testing.assert_array_equal(y, exact)
    assert s[0] == -(2.0 ** -12)


@tritonpu.jit
def _scalar_literals(out_ptr, h_ptr, x, y, z):
    tl.store(out_ptr, x * 0.3)
    tl.store(out_ptr + 1, y * 0.1 + 0.7)
    tl.store(h_ptr, z.to(tl.float16) * 0.1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_scalar_float_literals_have_their_types_value(backend):
    """A literal in scalar arithmetic is an fp32 (fp16) value, as Triton types it: the scalar unit
    multiplied by the f64 0.3 (1 ulp off the fp32 product, e.g. in tl.rand's scale)."""
    out, h = np.zeros(2, np.float32), np.zeros(1, np.float16)
    _scalar_literals[(1,)](out, h, 195015197, 1.5, 3, backend=backend)
    assert out[0] == np.float32(195015197) * np.float32(0.3)
    assert out[1] == np.float32(1.5) * np.float32(0.1) + np.float32(0.7)
    assert h[0] == np.float16(np.float32(np.float16(3)) * np.float32(np.float16(0.1)))


@tritonpu.jit
def _neg_zero(x_ptr, d_ptr, m_ptr, s_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(d_ptr + offs, x / -0.0)
    tl.store(m_ptr + offs, x * -0.0)
    tl.store(s_ptr + offs, tl.where(x > 2.0, -0.0, x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_literal_negative_zero_keeps_its_sign(backend):
    """`-0.0` in the assembly was 0 + -0.0 = +0.0: x / -0.0 gave +inf on the NPU."""
    x = np.array([0.0, 1.0, 5.0, 200.0] * 4, np.float32)
    d, m, s = (np.zeros(16, np.float32) for _ in range(3))
    _neg_zero[(1,)](x, d, m, s, BLOCK=16, backend=backend)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(d, x / np.float32(-0.0))
    assert m.view(np.int32).tolist() == (x * np.float32(-0.0)).view(np.int32).tolist()
    assert s.view(np.int32).tolist() == np.where(x > 2, np.float32(-0.0), x).astype(np.float32).view(np.int32).tolist()


@tritonpu.jit
def _zero_and_negative_zero(o_ptr):
    v = tl.full([], 3.0, tl.float32)
    z = (0.001 >= v).to(tl.int8)                # 0, and 0.0 once a float
    tl.store(o_ptr, z / 1)
    tl.store(o_ptr + 1, z / -1)                 # -0.0: folded to a constant equal to 0.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_cse_keeps_zero_and_negative_zero_apart(backend):
    """Fuzz seed 505243: CSE keyed float constants by value, and -0.0 == 0.0, so the constant -0.0
    folded from `0 / -1` was replaced by an earlier 0.0: the NPU stored +0.0."""
    o = np.ones(2, np.float32)
    _zero_and_negative_zero[(1,)](o, backend=backend)
    assert o.view(np.int32).tolist() == np.array([0.0, -0.0], np.float32).view(np.int32).tolist()


@tritonpu.jit
def _maxnum(x_ptr, y_ptr, o_ptr, BLOCK: tl.constexpr, OP: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "maximum":
        tl.store(o_ptr + offs, tl.maximum(x, y))
    elif OP == "minimum":
        tl.store(o_ptr + offs, tl.minimum(x, y))
    elif OP == "max":
        tl.store(o_ptr, tl.max(x, axis=0))
    else:
        tl.store(o_ptr, tl.min(x, axis=0))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", ["maximum", "minimum", "max", "min"])
def test_maxnum_and_minnum_return_the_number_for_a_signalling_nan(backend, op):
    """tl.maximum / tl.minimum / tl.max / tl.min ignore NaNs as LLVM's maxnum does -- signalling
    ones too (numpy's fmax, which the NPU used, gave NaN for those when it worked in place)."""
    bits = np.arange(16).astype(np.float32).view(np.uint32).copy()
    bits[1], bits[2], bits[3] = 0x7F800001, 0xFF800001, 0x7FC00000       # +sNaN, -sNaN, qNaN
    x = bits.view(np.float32)
    y = np.full(16, 0.5, np.float16)
    out = np.zeros(16, np.float32)
    _maxnum[(1,)](y if False else x, y, out, BLOCK=16, OP=op, backend=backend)
    nums = np.where(np.isnan(x), np.float32(0.5), x)
    want = {"maximum": np.maximum(nums, np.float32(0.5)), "minimum": np.minimum(nums, np.float32(0.5))}
    if op in want:
        np.testing.assert_array_equal(out, want[op])
    else:
        assert out[0] == (15.0 if op == "max" else 0.0)


@tritonpu.jit
def _branch_view(x_ptr, o_ptr, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    offs = rows[:, None] * BN + cols[None, :]
    x = tl.load(x_ptr + offs)
    v0 = cols | rows[:, None]          # noqa: F841  (dead: it changed the buffers the NPU planned)
    if pid:
        w = tl.broadcast_to(rows[:, None], [BM, BN])
    else:
        w = x.to(tl.int32)
    tl.store(o_ptr + offs, tl.where(w != 0, rows[None, :].to(tl.float32), -1.0))


@tritonpu.jit
def _branch_bitcast(x_ptr, y_ptr, o0_ptr, o1_ptr, BM: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BM + tl.arange(0, BM)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if pid == 0:
        w = y.to(tl.float32)
    else:
        w = x.to(tl.float32, bitcast=True)
    tl.store(o0_ptr + offs, w)
    tl.store(o1_ptr + offs, x.to(tl.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_view_yielded_by_an_if_does_not_share_the_result_buffer_with_what_lives_on(backend):
    """An if whose other branch yields a view (a broadcast of `rows`, a bitcast of `x`) must not
    give the if's result the buffer of the viewed tile while that tile is read after the if: the
    taken branch overwrote `rows` / `x` (found by differential fuzzing)."""
    x = np.zeros((16, 16), np.float32)
    x[1, 1], x[2, 3], x[0, 5], x[9, 12] = 5, 7, 1, 2
    out = np.zeros((16, 16), np.float32)
    _branch_view[(1,)](x, out, BM=16, BN=16, backend=backend)
    rows = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(out, np.where(x != 0, rows[None, :], np.float32(-1)))
    xi = np.array([3, -2, 100, 7, 1000000, 0, 1, 42] * 2, np.int32)
    yi = np.arange(16, dtype=np.int32)
    o0, o1 = np.zeros(16, np.float32), np.zeros(16, np.float32)
    _branch_bitcast[(1,)](xi, yi, o0, o1, BM=16, backend=backend)
    np.testing.assert_array_equal(o0, yi.astype(np.float32))
    np.testing.assert_array_equal(o1, xi.astype(np.float32))


@tritonpu.jit
def _if_yields_a_value_the_other_branch_reads(x_ptr, o_ptr, n, s, BM: tl.constexpr):
    offs = tl.program_id(0) * BM + tl.arange(0, BM)
    v = tl.load(x_ptr + offs).to(tl.float32)
    if s > 3:
        w = v
    else:
        w = offs / v            # offs.to(f32) was computed in the if's buffer, which v shared
    tl.store(o_ptr + offs, w, mask=offs < n)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_in_place_chain_in_one_branch_leaves_the_other_branchs_value_alone(backend):
    """Found by the fuzzer (seed 301028): the then-branch yields v (made before the if) and the
    else-branch reads v after computing a temporary in place of its result: the temporary took
    the if's buffer, which v shared, so the else-branch divided the temporary by itself."""
    x = (np.arange(32) + 1).astype(np.float16)
    o = np.zeros(32, np.float32)
    _if_yields_a_value_the_other_branch_reads[(2,)](x, o, 32, 2, BM=16, backend=backend)
    np.testing.assert_array_equal(o, np.arange(32, dtype=np.float32) / x.astype(np.float32))
