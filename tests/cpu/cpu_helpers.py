"""Helpers of the cpu-backend tests: run IR text or @jit kernels on the reference evaluator and on
the cpu backend, and compare (floats within a few ulps / the dtype tolerance, ints exactly)."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from tritonpu.cpu import engine
from tritonpu.ir import parse_function, verify
from tritonpu.ref import evaluator
from tritonpu.runtime.jit import CompiledKernel

BF16 = np.dtype(ml_dtypes.bfloat16)
NP = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
      "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16, "bf16": BF16, "f32": np.float32,
      "f64": np.float64}
FLOATS = ("f16", "bf16", "f32", "f64")
INTS = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")


def ir_kernel(text: str, name: str = "k") -> CompiledKernel:
    """A CompiledKernel from IR text whose op lines may omit ``loc(...)`` (added here)."""
    lines = ['#f0 = "test.ir"']
    for i, line in enumerate(text.strip().splitlines(), 1):
        s = line.rstrip()
        if s.strip() and not s.strip().startswith(("func", "^bb")) and s.strip() not in ("{", "}") \
                and not s.rstrip().endswith("{") and " loc(" not in s:
            s += f" loc(#f0:{i}:1)"
        elif s.strip().startswith("}") and s.strip() != "}" and " loc(" not in s:
            s += f" loc(#f0:{i}:1)"
        lines.append(s)
    fn = parse_function("\n".join(lines))
    verify(fn)
    return CompiledKernel(name, fn, {"ir": text})


def run_both(kernel: CompiledKernel, args: list, grid=(1, 1, 1)):
    """(ref outputs, cpu outputs): copies of every array argument after each run."""
    grid = tuple(grid) + (1,) * (3 - len(grid))
    ref_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    cpu_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    evaluator.run(kernel.fn, ref_args, grid)
    engine.launch(kernel, cpu_args, grid)
    return ([a for a in ref_args if isinstance(a, np.ndarray)], [a for a in cpu_args if isinstance(a, np.ndarray)])


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in units in the last place between same-dtype float arrays (NaN == NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    it = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ai, bi = a.view(it).astype(np.int64), b.view(it).astype(np.int64)
    bits = a.dtype.itemsize * 8
    ai = np.where(ai < 0, -(1 << (bits - 1)) - ai, ai)
    bi = np.where(bi < 0, -(1 << (bits - 1)) - bi, bi)
    d = np.abs(ai - bi)
    both_nan = np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64))
    return np.where(both_nan, 0, d)


def assert_close(got, want, max_ulps=0, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if got.dtype.kind == "f" or got.dtype == BF16:
        u = ulps(got, want)
        assert u.max(initial=0) <= max_ulps, f"{what}: {int(u.max())} ulps apart at {np.argmax(u)}: " \
                                             f"{got.ravel()[np.argmax(u)]} vs {want.ravel()[np.argmax(u)]}"
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def values(dt: str, n: int, rng, small=False) -> np.ndarray:
    """Test values of IR dtype ``dt``: edge cases first, then random ones."""
    npdt = np.dtype(NP[dt])
    if dt == "i1":
        return rng.integers(0, 2, n).astype(np.bool_)
    if dt in FLOATS:
        edge = [0.0, -0.0, 1.0, -1.5, 2.5, 0.5, 3.0, -7.25]
        r = rng.standard_normal(n) * (3 if small else 50)
        return np.concatenate([edge, r])[:n].astype(npdt)
    info = np.iinfo(npdt)
    lo, hi = (max(info.min, -100), min(info.max, 100)) if small else (info.min, info.max)
    edge = [0, 1, lo, hi, -1 if info.min < 0 else 2, 7, 3]
    r = rng.integers(lo, hi, n, dtype=npdt, endpoint=True)
    return np.concatenate([np.asarray(edge, dtype=npdt), r])[:n].astype(npdt)
