"""The precision check: ``kernel[grid](..., check=True)`` or ``tritonpu run FILE.py --check``.

The kernel runs on a *baseline* backend on copies of the array arguments (the cpu backend; the
reference evaluator when the checked backend is the cpu backend itself), then on the requested
backend in place. Every array argument that either run modified is compared element by element:
max absolute error, max relative error (``|a - b| / |b|`` over elements with ``b != 0``), and
whether every element is within the dtype's tolerance ``|a - b| <= atol + rtol * |b|`` (NaNs
must match NaNs, infinities must be equal):

    dtype   rtol   atol
    f64     1e-12  1e-14
    f32     1e-5   1e-6
    f16     1e-3   1e-5
    bf16    1e-2   1e-5
    ints, bool: exact

The report is printed and returned; the runtime stores it on the launch handle as ``h.check``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

TOLERANCES = {"f64": (1e-12, 1e-14), "f32": (1e-5, 1e-6), "f16": (1e-3, 1e-5), "bf16": (1e-2, 1e-5)}


@dataclass
class OutputCheck:
    name: str
    dtype: str
    max_abs: float
    max_rel: float
    rtol: float
    atol: float
    bad: int            # elements outside the tolerance
    size: int

    @property
    def ok(self) -> bool:
        return self.bad == 0


@dataclass
class CheckReport:
    kernel: str
    backend: str
    baseline: str
    outputs: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outputs)

    def __str__(self) -> str:
        lines = [f"check {self.kernel}: {self.backend} vs {self.baseline} -> {'OK' if self.ok else 'MISMATCH'}"]
        if not self.outputs:
            lines.append("  (no array argument was modified)")
        for o in self.outputs:
            tol = "exact" if o.rtol == 0 and o.atol == 0 else f"rtol {o.rtol:g} atol {o.atol:g}"
            verdict = "ok" if o.ok else f"{o.bad}/{o.size} elements outside"
            lines.append(f"  {o.name:<16} {o.dtype:<5} max abs {o.max_abs:.3e}  max rel {o.max_rel:.3e}  "
                         f"({tol}): {verdict}")
        return "\n".join(lines)


def compare(name: str, dtype_name: str, got: np.ndarray, want: np.ndarray) -> OutputCheck:
    rtol, atol = TOLERANCES.get(dtype_name, (0.0, 0.0))
    if dtype_name in TOLERANCES:
        a, b = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        both = ~(nan_a | nan_b)
        with np.errstate(all="ignore"):
            diff = np.where(both & (a == b), 0.0, np.abs(a - b))
            diff = np.where(both, diff, 0.0)
            rel = np.where(both & (b != 0), diff / np.abs(b), 0.0)
            bad = (nan_a != nan_b) | (both & ~(diff <= atol + rtol * np.abs(b)))
        finite = np.isfinite(diff)
        max_abs = float(diff[finite].max()) if finite.any() else 0.0
        if not finite.all():
            max_abs = float("inf")
        max_rel = float(rel.max()) if rel.size else 0.0
    else:
        a, b = got.ravel(), want.ravel()
        bad = a != b
        if a.dtype == np.bool_:
            a, b = a.astype(np.int64), b.astype(np.int64)
        d = np.abs(a.astype(np.float64) - b.astype(np.float64))
        max_abs = float(d.max()) if d.size else 0.0
        with np.errstate(all="ignore"):
            r = np.where(b != 0, d / np.abs(b.astype(np.float64)), 0.0)
        max_rel = float(r.max()) if r.size else 0.0
    return OutputCheck(name, dtype_name, max_abs, max_rel, rtol, atol, int(np.count_nonzero(bad)), int(got.size))


def copies_sharing_memory(arrays: list, is_ptr: list) -> list:
    """Copies of the arrays (those ``is_ptr`` marks; the rest as they are) that overlap one another
    exactly as the originals do (an in-place kernel given ``x`` as input and output, a view and its
    base), so that a run on the copies computes what a run on the originals does."""
    out = list(arrays)
    spans = sorted((a.__array_interface__["data"][0], a.__array_interface__["data"][0] + a.nbytes, i)
                   for i, (a, p) in enumerate(zip(arrays, is_ptr)) if p)
    groups: list = []
    for lo, hi, i in spans:
        if groups and lo < groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], hi)
            groups[-1][2].append((lo, i))
        else:
            groups.append([lo, hi, [(lo, i)]])
    for lo, hi, members in groups:
        buf = np.empty(hi - lo, np.uint8)
        for start, i in members:
            a = np.ascontiguousarray(arrays[i])
            buf[start - lo:start - lo + a.nbytes] = a.reshape(-1).view(np.uint8)
        for start, i in members:
            a = arrays[i]
            out[i] = np.ndarray(a.shape, a.dtype, buffer=buf, offset=start - lo, strides=a.strides)
    return out


def checked_launch(backends: dict, name: str, kernel, arrays, grid, options):
    """Run ``name`` in place and the baseline on copies; compare; print and return via options."""
    baseline = "ref" if name == "cpu" else "cpu"
    ptr_args = [p for p in kernel.fn.args]
    before = [a.copy() if p.type.is_ptr else None for p, a in zip(ptr_args, arrays)]
    base = copies_sharing_memory(arrays, [p.type.is_ptr for p in ptr_args])
    opts = {k: v for k, v in options.items() if k not in ("check", "backend")}
    backends[baseline](kernel, base, grid, opts)
    stats = backends[name](kernel, arrays, grid, options)
    report = CheckReport(kernel.name, name, baseline)
    for p, orig, want, got in zip(ptr_args, before, base, arrays):
        if not p.type.is_ptr:
            continue
        raw = lambda x: x.reshape(-1).view(np.uint8)  # noqa: E731
        if np.array_equal(raw(orig), raw(got)) and np.array_equal(raw(orig), raw(want)):
            continue
        report.outputs.append(compare(p.name or "?", p.type.pointee.kind.name, got, want))
    print(report, flush=True)
    options["_check_report"] = report
    return stats
