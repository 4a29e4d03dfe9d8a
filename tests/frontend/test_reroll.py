"""Re-rolling ``tl.static_range`` loops whose trips load memory (tritonpu/frontend/reroll.py).

A rolled loop must compute what the unrolled trips computed: integer data, compared exactly with
numpy; float matmuls, bitwise against the same kernel written with ``range`` (and within fp16
tolerances of numpy). Whether a loop was rolled is read from the IR's op names.
"""
from __future__ import annotations

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from test_control_flow import ir_ops


@tritonpu.jit
def _mm(a_ptr, b_ptr, c_ptr, N, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
        STATIC: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BN)
    rm = (pid // num_pid_n) * BM + tl.arange(0, BM)
    rn = (pid % num_pid_n) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    if STATIC:
        for k in tl.static_range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(a, b)
    else:
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def test_a_static_range_k_loop_runs_as_the_range_loop():
    # unrolled, each trip's tiles took one L1 buffer per operand (the next trip's load waited for
    # the last one to be read) and no panel: 1024^3 at 128x128x64 ran 1.47x the cycles of range
    n, bm, bn, bk = 256, 64, 64, 32
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float16)
    b = rng.standard_normal((n, n)).astype(np.float16)
    out = {}
    for static in (True, False):
        c = np.zeros((n, n), np.float32)
        h = _mm[((n // bm) * (n // bn),)](a, b, c, n, K=n, BM=bm, BN=bn, BK=bk, STATIC=static)
        out[static] = (c, h.stats.cycles, ir_ops(h).count("for"), ir_ops(h).count("dot"))
    assert out[True][2:] == out[False][2:] == (1, 1)
    assert out[True][0].tobytes() == out[False][0].tobytes()
    assert out[True][1] == out[False][1]
    np.testing.assert_allclose(out[True][0], a.astype(np.float64) @ b.astype(np.float64), rtol=2e-3, atol=2e-2)


@tritonpu.jit
def _rows(x_ptr, out_ptr, W: tl.constexpr, KIND: tl.constexpr):
    # sums the rows of x (int32, 8 rows of W) into out in ways that roll up or not
    cols = tl.arange(0, W)
    acc = tl.zeros((W,), tl.int32)
    if KIND == "plain":                    # rolls: the row offset k * W is affine in k
        for k in tl.static_range(8):
            acc += tl.load(x_ptr + k * W + cols)
    elif KIND == "stride3":                # rolls: k // 3 over range(0, 24, 3): step does not divide d
        for k in tl.static_range(0, 24, 3):
            acc += tl.load(x_ptr + (k // 3) * W + cols) * (k // 3 + 1)
    elif KIND == "first":                  # stays unrolled: the first trip differs (a constexpr if)
        for k in tl.static_range(8):
            if k == 0:
                acc = tl.load(x_ptr + cols)
            else:
                acc += tl.load(x_ptr + k * W + cols)
    elif KIND == "float":                  # stays unrolled: a float constant that differs per trip
        for k in tl.static_range(8):
            acc += (tl.load(x_ptr + k * W + cols) * (k * 0.5 + 1.0)).to(tl.int32)
    elif KIND == "read_after":             # stays unrolled: the last trip's row is read after the loop
        for k in tl.static_range(8):
            row = tl.load(x_ptr + k * W + cols)
            acc += row
        acc += row * 100
    elif KIND == "two_back":               # stays unrolled: a trip reads the row of two trips before
        prev = tl.zeros((W,), tl.int32)
        last = tl.zeros((W,), tl.int32)
        for k in tl.static_range(8):
            acc += prev * (k + 1)
            prev = last
            last = tl.load(x_ptr + k * W + cols)
    elif KIND == "nested":                 # both roll: the inner loop inside the outer one
        for i in tl.static_range(2):
            for j in tl.static_range(4):
                row = tl.load(x_ptr + (i * 4 + j) * W + cols)
                acc += row * (i + 1)
    tl.store(out_ptr + cols, acc)


def _expected(x, kind):
    r = x.astype(np.int64)
    if kind in ("plain", "first"):
        return r.sum(0)
    if kind == "stride3":
        return (r * np.arange(1, 9)[:, None]).sum(0)
    if kind == "float":
        return sum(np.trunc(x[k].astype(np.float32) * np.float32(k * 0.5 + 1.0)).astype(np.int64) for k in range(8))
    if kind == "read_after":
        return r.sum(0) + 100 * r[7]
    if kind == "two_back":
        return sum(r[k - 2] * (k + 1) for k in range(2, 8))
    return r[:4].sum(0) + 2 * r[4:].sum(0)


@pytest.mark.parametrize("kind,loops", [("plain", 1), ("stride3", 1), ("first", 0), ("float", 0),
                                        ("read_after", 0), ("two_back", 0), ("nested", 2)])
def test_static_range_rolls_only_where_the_trips_are_copies(kind, loops):
    W = 64
    x = np.random.default_rng(1).integers(-1000, 1000, (8, W)).astype(np.int32)
    out = np.zeros(W, np.int32)
    h = _rows[(1,)](x, out, W=W, KIND=kind)
    np.testing.assert_array_equal(out, _expected(x, kind).astype(np.int32))
    assert ir_ops(h).count("for") == loops


@pytest.mark.parametrize("backend", ["ref", "cpu"])
def test_rolled_loops_on_the_other_backends(backend):
    W = 64
    x = np.random.default_rng(2).integers(-1000, 1000, (8, W)).astype(np.int32)
    for kind in ("stride3", "nested"):
        out = np.zeros(W, np.int32)
        _rows[(1,)](x, out, W=W, KIND=kind, backend=backend)
        np.testing.assert_array_equal(out, _expected(x, kind).astype(np.int32))
