"""Numbers assigned to names in a kernel are Triton's scalar tensors (``language/scalars.py``).

Triton's ``visit_Assign`` turns ``x = -7`` into an int32 scalar tensor, so ``x // 2`` is -3 (C
truncation; Python gives -4), ``2**31 - 1`` assigned and plus one wraps, ``1.0 + 1e-8`` assigned
is fp32's 1.0, and a tensor meeting an assigned number is promoted as with a tensor of that type.
``x: tl.constexpr = -7`` stays a Python number.  Values are Triton's, written out by hand; every
backend must agree.
"""
from __future__ import annotations

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl

BACKENDS = ["ref", "npu", "cpu"]


@tritonpu.jit
def int_kernel(out_ptr, x_ptr):
    x = -7
    tl.store(out_ptr + 0, x // 2)                 # -3: truncation, not Python's floor
    tl.store(out_ptr + 1, x % 2)                  # -1: the dividend's sign
    b = 2**31 - 1
    tl.store(out_ptr + 2, b + 1)                  # int32 wraps
    base_idx = 0
    tl.store(out_ptr + 3, base_idx.to(tl.int64) + 5)   # a scalar tensor has .to()
    n = 4
    offs = tl.arange(0, n)                        # still usable where a constexpr is needed
    v = tl.load(x_ptr + offs)
    tl.store(out_ptr + 4 + offs, v // n)
    c: tl.constexpr = -7
    tl.store(out_ptr + 8, c // 2)                 # a constexpr keeps Python's semantics: -4
    y = -7
    y //= 2
    tl.store(out_ptr + 9, y)                      # -3
    t = (-7, 2)
    tl.store(out_ptr + 10, t[0] // t[1])          # tuples' numbers too: -3
    u = 2**31
    tl.store(out_ptr + 11, u + u)                 # uint32: wraps to 0
    w = 2**40
    tl.store(out_ptr + 12, w + w)                 # int64
    acc = 0
    for i in range(4):
        acc += i - 2                              # a runtime loop carries it as int32
    tl.store(out_ptr + 13, acc // 4)              # -2 // 4 = 0 (Python: -1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_assigned_integers_follow_triton_scalar_semantics(backend):
    out = np.zeros(14, np.int64)
    x = np.array([-9, 9, -1, 4], np.int64)
    int_kernel[(1,)](out, x, backend=backend)
    assert out.tolist() == [-3, -1, -2**31, 5, -2, 2, 0, 1, -4, -3, -3, 0, 2**41, 0]


@tritonpu.jit
def float_kernel(out_ptr, h_ptr, hout_ptr, i8_ptr, i8out_ptr):
    a = 1.0 + 1e-8
    tl.store(out_ptr + 0, a - 1.0)                # fp32: 1.0 + 1e-8 is 1.0
    tiny = 1e-40
    tl.static_assert(tiny.dtype == tl.float64)    # below fp32's normal range: fp64, as in Triton
    tl.store(out_ptr + 1, tiny * 1e30)
    offs = tl.arange(0, 4)
    h = tl.load(h_ptr + offs)
    scale = 0.1
    y = h * scale                                 # fp16 tensor x fp32 scalar tensor -> fp32
    tl.static_assert(y.dtype == tl.float32)
    tl.static_assert((h * 0.1).dtype == tl.float16)   # a literal does not take part
    tl.store(hout_ptr + offs, y)
    k = tl.load(i8_ptr + offs)
    three = 3
    z = k + three                                 # int8 + int32 scalar tensor -> int32
    tl.static_assert(z.dtype == tl.int32)
    tl.store(i8out_ptr + offs, z)


@pytest.mark.parametrize("backend", BACKENDS)
def test_assigned_floats_are_fp32_and_promote_tensors(backend):
    out = np.zeros(2, np.float64)
    h = np.array([1, 2, 3, 1000], np.float16)
    hout = np.zeros(4, np.float32)
    k = np.array([127, -128, 0, 1], np.int8)
    kout = np.zeros(4, np.int32)
    float_kernel[(1,)](out, h, hout, k, kout, backend=backend)
    assert out[0] == 0.0
    assert out[1] == pytest.approx(1e-10, rel=1e-12)
    np.testing.assert_array_equal(hout, h.astype(np.float32) * np.float32(0.1))
    assert kout.tolist() == [130, -125, 3, 4]


def test_an_assigned_number_reports_triton_errors_at_its_line():
    @tritonpu.jit
    def k(out_ptr):
        f = 2.5
        tl.store(out_ptr, f // 2)

    with pytest.raises(tritonpu.CompilationError, match=r"`//` needs integer operands, got fp32") as e:
        k[(1,)](np.zeros(1, np.float32), backend="ref")
    assert "tl.store(out_ptr, f // 2)" in str(e.value)


@tritonpu.jit
def pointer_kernel(x_ptr, out_ptr, n_cols, skip_first, BLOCK: tl.constexpr):
    start = 0
    if skip_first > 0:                            # a runtime if merges the two numbers
        start = 1
    cols = tl.arange(0, BLOCK)
    m = start + cols < n_cols
    x = tl.load(x_ptr + start + cols, mask=m, other=0.0)
    tl.store(out_ptr + cols, x, mask=m)
    i = 5
    tl.store(out_ptr + i, 7.0)                    # a pointer plus an assigned number
    p = out_ptr
    p += i + 1
    f = 1.5
    tl.store(p, (f > 1.0).to(tl.float32) + (f < 1.0))   # a comparison is an int1 scalar
    if f > 1.0:
        tl.store(out_ptr + 7, 9.0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("skip", [1, 2])        # 1 is specialized to a constant, 2 is not
def test_assigned_numbers_in_pointer_arithmetic_and_comparisons(backend, skip):
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    pointer_kernel[(1,)](x, out, 16, skip, BLOCK=16, backend=backend)
    assert out[:9].tolist() == [1, 2, 3, 4, 5, 7, 1, 9, 9]


@tritonpu.jit
def axis_kernel(o_ptr):
    a = tl.arange(0, 4)[:, None] * 4 + tl.arange(0, 4)[None, :]
    ax = -1                                       # a constant's own value, Python's -1 % 2
    tl.store(o_ptr + tl.arange(0, 4), tl.sum(a, axis=ax))
    e = tl.expand_dims(tl.arange(0, 4), ax)      # (4, 1)
    tl.store(o_ptr + 4 + tl.arange(0, 4)[:, None] * 4 + tl.arange(0, 4)[None, :], e + tl.zeros((4, 4), tl.int32))
    tl.store(o_ptr + 20 + tl.arange(0, 4), tl.flip(tl.arange(0, 4), dim=ax))


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_assigned_negative_axis_counts_from_the_end(backend):
    out = np.zeros(24, np.int32)
    axis_kernel[(1,)](out, backend=backend)
    assert out[:4].tolist() == [6, 22, 38, 54]
    assert out[4:20].reshape(4, 4).tolist() == [[i] * 4 for i in range(4)]
    assert out[20:].tolist() == [3, 2, 1, 0]
