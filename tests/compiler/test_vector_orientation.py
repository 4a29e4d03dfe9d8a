"""Vector instructions over many short rows read their operands transposed when that takes fewer
repeats (the cost model charges a repeat per 256 B of each row): element-by-element work always,
reductions along short rows when the result cannot change (integers; floats of rows of two)."""
import re

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl

rng = np.random.default_rng(7)


@tritonpu.jit
def tall(x_ptr, y_ptr, o_ptr, s_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + r * C + c)
    y = tl.trans(tl.load(y_ptr + tl.arange(0, C)[:, None] * R + tl.arange(0, R)[None, :]))   # a transposed view
    tl.store(o_ptr + r * C + c, tl.where(x > y, x, y * 2))
    tl.store(s_ptr + tl.arange(0, R), tl.sum(x + y, 1))


def _isa_lines(h, mnemonic):
    """The assembly lines of one mnemonic, without their source locations."""
    lines = (re.sub(r"\s+loc\(.*\)$", "", ln.strip()) for ln in h.asm["isa"].splitlines())
    return [ln for ln in lines if ln.startswith(mnemonic)]


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_tall_thin_blocks_are_read_transposed(dtype):
    R, C = 2048, 2
    x = rng.integers(-50, 50, (R, C)).astype(dtype)
    y = rng.integers(-50, 50, (C, R)).astype(dtype)
    o, s = np.zeros((R, C), dtype), np.zeros(R, dtype)
    h = tall[(1,)](x, y, o, s, R=R, C=C, backend="npu")
    yt = y.T
    np.testing.assert_array_equal(o, np.where(x > yt, x, yt * 2))
    np.testing.assert_array_equal(s, (x + yt).sum(1).astype(dtype))
    T = "i32" if dtype == np.int32 else "f32"
    mixed = _isa_lines(h, f"vcmp.gt.{T}") + _isa_lines(h, f"vadd.{T}")     # dense x against transposed y
    assert len(mixed) == 2 and all(re.search(r"ub\[\d+, 1, 2\], ub\[\d+\], 2048, rows=2$", ln) for ln in mixed), mixed
    red = _isa_lines(h, f"vreduce.sum.{T}")
    assert len(red) == 1 and re.search(r", 2048, rows=2, axis=0$", red[0]), red


@tritonpu.jit
def rowsum(x_ptr, s_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    x = tl.load(x_ptr + r * C + tl.arange(0, C)[None, :])
    tl.store(s_ptr + tl.arange(0, R), tl.sum(x, 1))


def test_float_sums_of_longer_rows_keep_their_order():
    """A float sum over rows of 8 stays a row-wise reduction (a transposed one could add in
    another order); the same kernel on int32 is read transposed."""
    R, C = 1024, 8
    xf = rng.standard_normal((R, C)).astype(np.float32)
    s = np.zeros(R, np.float32)
    h = rowsum[(1,)](xf, s, R=R, C=C, backend="npu")
    assert [re.search(r"rows=\d+.*$", ln).group(0) for ln in _isa_lines(h, "vreduce.sum.f32")] == ["rows=1024"]
    np.testing.assert_allclose(s, xf.sum(1), rtol=1e-6, atol=1e-6)
    xi = rng.integers(-9, 9, (R, C)).astype(np.int32)
    si = np.zeros(R, np.int32)
    h = rowsum[(1,)](xi, si, R=R, C=C, backend="npu")
    assert [re.search(r"rows=\d+.*$", ln).group(0) for ln in _isa_lines(h, "vreduce.sum.i32")] == ["rows=8, axis=0"]
    np.testing.assert_array_equal(si, xi.sum(1))


def test_moe_style_topk_costs_a_twentieth_of_before():
    """Routing 4096 tokens to 8 of 64 experts (64 tokens per program): the sort network's pair
    selects and sums ran one repeat per pair (733119 cycles); now 40308 (40127 before session 31's
    L2 model brought a line's first read whole from DDR -- its rows of 256 B are half a line each,
    and the second half of each line was charged at the L2 rate; 40126 before a loop's
    first set went before its pipe's first work in the run before the loop, session 27; 40263
    before i32 scalar ops carried their wrap, session 15; 40258 before the drains after a loop were
    placed where needed, session 16)."""
    @tritonpu.jit
    def route(x_ptr, o_ptr, N: tl.constexpr, K: tl.constexpr, R: tl.constexpr):
        r = tl.program_id(0) * R + tl.arange(0, R)[:, None]
        x = tl.load(x_ptr + r * N + tl.arange(0, N)[None, :])
        tl.store(o_ptr + r * K + tl.arange(0, K)[None, :], tl.topk(x, K))

    x = rng.standard_normal((4096, 64)).astype(np.float32)
    o = np.zeros((4096, 8), np.float32)
    h = route[(64,)](x, o, N=64, K=8, R=64, backend="npu", sanitize=False)
    np.testing.assert_array_equal(o, np.sort(x, 1)[:, ::-1][:, :8])
    assert h.stats.cycles == 40308
