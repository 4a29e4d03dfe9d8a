"""Shared helpers for the tests (imported as ``tpu_util``; tests/ is put on sys.path by conftest).

Tolerances (atol, rtol) per dtype, used wherever a float result is compared with numpy:
fp64 1e-12/1e-12, fp32 1e-5/1e-5 (transcendentals 1e-5 relative, numpy computes in fp32 too),
fp16 1e-3/2e-3 (half an ulp of fp16 is ~4.9e-4 relative), bf16 1e-2/1.6e-2 (an ulp of bf16 is 2**-7);
integers and bools are compared exactly.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

import tritonpu
import tritonpu.language as tl

bf16 = np.dtype(ml_dtypes.bfloat16)


TOL = {
    np.dtype(np.float64): (1e-12, 1e-12),
    np.dtype(np.float32): (1e-5, 1e-5),
    np.dtype(np.float16): (1e-3, 2e-3),
    bf16: (1e-2, 1.6e-2),
}

TL_OF = {
    np.dtype(np.float32): tl.float32, np.dtype(np.float16): tl.float16, bf16: tl.bfloat16,
    np.dtype(np.float64): tl.float64, np.dtype(np.int8): tl.int8, np.dtype(np.int16): tl.int16,
    np.dtype(np.int32): tl.int32, np.dtype(np.int64): tl.int64, np.dtype(np.uint8): tl.uint8,
    np.dtype(np.bool_): tl.int1,
}


def assert_close(actual, expected, dtype=None, atol=None, rtol=None):
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    dt = np.dtype(dtype) if dtype is not None else actual.dtype
    if dt.kind in "iub" and atol is None:
        assert actual.dtype == expected.dtype or dtype is not None, (actual.dtype, expected.dtype)
        np.testing.assert_array_equal(actual, expected)
        return
    a, r = TOL.get(dt, (1e-5, 1e-5))
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                               atol=a if atol is None else atol, rtol=r if rtol is None else rtol, equal_nan=True)


def rand(shape, dtype, seed=0, lo=-4, hi=4):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(lo, info.min), min(hi, info.max) + 1, size=shape).astype(dt)
    return rng.uniform(lo, hi, size=shape).astype(np.float32).astype(dt)


def ir_of(handle) -> str:
    return handle.asm["ir"]


def ir_result_types(handle, op: str) -> list[str]:
    """Result types of every ``op`` in the launch's IR text (in order)."""
    out = []
    for line in ir_of(handle).splitlines():
        body = line.strip()
        if "=" in body and body.split("=", 1)[1].strip().split(" ")[0] == op:
            out.append(body.rsplit(" : ", 1)[1].split(" loc(")[0])
    return out


def cube_product(a, b, k0=16):
    """``a @ b`` as the NPU's cube computes it (see ``mmad`` in README's modelling choices): for each
    ``k0``-wide chunk of K the exact sum, added to the fp32 accumulator with one rounding."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for j in range(0, a.shape[1], k0):
        part = a[:, j:j + k0].astype(np.float64) @ b[j:j + k0].astype(np.float64)
        acc = (acc.astype(np.float64) + part).astype(np.float32)
    return acc
