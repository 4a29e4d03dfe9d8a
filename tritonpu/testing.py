"""Helpers for kernel scripts and tests, named as in ``triton.testing`` where Triton has them."""
from __future__ import annotations

import numpy as np

from tritonpu.runtime.bench import Benchmark, Mark, do_bench, perf_report

__all__ = ["Benchmark", "Mark", "do_bench", "perf_report", "assert_close", "tolerance", "report",
           "double_buffer_report", "filecheck"]

# Default tolerances per dtype: (atol, rtol).
TOLERANCES = {
    np.dtype(np.float64): (1e-12, 1e-12),
    np.dtype(np.float32): (1e-5, 1e-5),
    np.dtype(np.float16): (1e-3, 1e-3),
}


def tolerance(dtype) -> tuple[float, float]:
    dtype = np.dtype(dtype)
    if dtype.kind in "iub":
        return 0.0, 0.0
    if dtype.name == "bfloat16":
        return 1e-2, 1e-2
    return TOLERANCES.get(dtype, (1e-5, 1e-5))


def _host(x) -> np.ndarray:
    """An array, a torch tensor (bfloat16, one that requires grad) or a scalar as a numpy array."""
    from tritonpu.runtime.arrays import as_array
    if isinstance(x, np.ndarray):
        return np.asarray(x)
    if hasattr(x, "detach"):
        x = x.detach()
    a = as_array(x)
    return np.asarray(x) if a is None else a


def _as_compare(x, floating: bool) -> np.ndarray:
    x = _host(x)
    return x.astype(np.float64) if floating else x


def assert_close(actual, expected, atol=None, rtol=None, err_msg: str = "") -> None:
    """Raise AssertionError unless ``actual`` matches ``expected`` within tolerances
    (defaults from the actual array's dtype; integers and booleans must match exactly). Takes
    numpy arrays, torch tensors (bfloat16 too, and ones that require grad) and scalars."""
    actual = _host(actual)
    d_atol, d_rtol = tolerance(actual.dtype)
    floating = actual.dtype.kind not in "iub"
    np.testing.assert_allclose(_as_compare(actual, floating), _as_compare(expected, floating),
                               atol=d_atol if atol is None else atol, rtol=d_rtol if rtol is None else rtol,
                               err_msg=err_msg)


def report(name: str, handle, actual, expected, atol=None, rtol=None) -> bool:
    """Check a kernel's output against numpy and print one line (plus the profile when the
    backend produced one). Returns True when it matches."""
    actual = np.asarray(actual)
    ok = True
    try:
        assert_close(actual, expected, atol, rtol)
    except AssertionError:
        ok = False
    a = np.asarray(actual, np.float64)
    e = np.asarray(expected, np.float64)
    err = float(np.max(np.abs(a - e))) if a.size else 0.0
    print(f"{name}: {'OK' if ok else 'MISMATCH'} against numpy (max abs error {err:.3g}, backend {handle.backend})")
    stats = getattr(handle, "stats", None)
    if stats is not None and hasattr(stats, "profile_table"):
        print(stats.profile_table())
    return ok


def double_buffer_report(name: str, handle, rerun) -> float | None:
    """Print the cycles of an NPU launch next to those of ``rerun(double_buffer=False)`` (the same
    launch compiled without double buffering); returns the ratio (None off the NPU)."""
    stats = getattr(handle, "stats", None)
    if stats is None or not hasattr(stats, "cycles") or handle.backend != "npu":
        return None
    off = rerun(double_buffer=False)
    ratio = off.stats.cycles / stats.cycles if stats.cycles else 0.0
    print(f"{name}: {stats.cycles} cycles with double buffering, {off.stats.cycles} without "
          f"({ratio:.2f}x fewer)")
    return ratio


def filecheck(text: str, checks: str) -> None:
    """A small FileCheck: ``CHECK:`` finds the pattern on a later line, ``CHECK-NEXT:`` on the
    very next line, ``CHECK-NOT:`` asserts the pattern is absent until the next match. Patterns
    are plain substrings. Raises AssertionError showing the text on failure."""
    lines = text.splitlines()
    pos = 0          # index of the next line to search
    pending_not: list[str] = []
    for raw in checks.strip().splitlines():
        raw = raw.strip()
        if not raw:
            continue
        kind, _, pat = raw.partition(":")
        pat = pat.strip()
        if kind == "CHECK-NOT":
            pending_not.append(pat)
            continue
        if kind == "CHECK-NEXT":
            found = pos if pos < len(lines) and pat in lines[pos] else None
        elif kind == "CHECK":
            found = next((i for i in range(pos, len(lines)) if pat in lines[i]), None)
        else:
            raise ValueError(f"unknown check directive {kind!r}")
        end = found if found is not None else len(lines)
        for bad in pending_not:
            for i in range(pos, end):
                if bad in lines[i]:
                    raise AssertionError(f"CHECK-NOT: {bad!r} found on line {i + 1}: {lines[i]!r}\n{text}")
        pending_not = []
        if found is None:
            raise AssertionError(f"{kind}: {pat!r} not found after line {pos}\n{text}")
        pos = found + 1
    for bad in pending_not:
        for i in range(pos, len(lines)):
            if bad in lines[i]:
                raise AssertionError(f"CHECK-NOT: {bad!r} found on line {i + 1}: {lines[i]!r}\n{text}")
