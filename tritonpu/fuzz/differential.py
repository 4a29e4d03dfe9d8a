"""Differential check of one generated case: the reference evaluator against the NPU, the cpu
backend, and the NPU with optional passes switched off.

Every run starts from the same arrays (``make_args``) and every array is compared afterwards —
outputs, inputs (which must stay unchanged) and the lanes a mask leaves alone.

Comparison (``compare``): bit for bit, except
  * NaNs: only their positions are compared (sign and payload are not specified);
  * signed zeros: ``-0.0`` and ``0.0`` are equal when the kernel takes a maximum or a minimum
    (Triton does not order them);
  * values marked approximate by the generator (transcendentals, float sums reduced in another
    order): relative tolerance 1e-5 for fp32, 1e-2 for fp16, plus an absolute slack of a tenth of
    that relative to the output's largest finite magnitude.

Outcome categories of a run (``Outcome.category``):
  ``ok``, ``mismatch`` (different bits), ``internal`` (a raw Python exception, a launch error
  wrapping one, or an "internal compiler error"), ``error`` (a tritonpu error where the reference
  ran), ``timeout``, and two that are not failures: ``resource`` (the kernel does not fit the
  Unified Buffer) and ``unsupported`` (a backend refuses a kernel the reference runs).
  When the reference itself rejects the kernel the case is ``rejected`` (a generator gap, counted).
"""
from __future__ import annotations

import atexit
import importlib.util
import itertools
import os
import random
import re
import shutil
import signal
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

from tritonpu.codegen.pipeline import OPTIONAL_PASSES
from tritonpu.errors import CompilationError, TritonpuError

from .generate import Case, make_args

FAILURES = ("mismatch", "internal", "error", "timeout")


@dataclass(frozen=True)
class Run:
    """One way of running a case: a name for reports, a backend, launch options."""
    name: str
    backend: str
    options: tuple = ()

    def kwargs(self) -> dict:
        return dict(self.options)


REF = Run("ref", "ref")
BASE_RUNS = (Run("npu", "npu"), Run("cpu", "cpu"))
VARIANTS = tuple(Run(f"npu-no-{p}", "npu", (("disable_passes", (p,)),)) for p in OPTIONAL_PASSES) + (
    Run("npu-cores1", "npu", (("cores", 1),)), Run("npu-cores5", "npu", (("cores", 5),)))


def runs_for(seed: int, n_variants: int) -> list:
    """The base runs and ``n_variants`` of the pass-off / core-count variants (chosen by the seed;
    all of them when ``n_variants`` is negative)."""
    if n_variants < 0 or n_variants >= len(VARIANTS):
        return list(BASE_RUNS + VARIANTS)
    return list(BASE_RUNS) + random.Random(seed * 7919 + 1).sample(VARIANTS, n_variants)


@dataclass
class Outcome:
    run: str
    category: str
    detail: str = ""


@dataclass
class Verdict:
    """The result of checking one case: an outcome per run."""
    case: Case
    outcomes: list = field(default_factory=list)
    seconds: float = 0.0
    rejected: str = ""

    @property
    def failures(self) -> list:
        """``category:run`` of every failing run."""
        return [f"{o.category}:{o.run}" for o in self.outcomes if o.category in FAILURES]

    @property
    def status(self) -> str:
        if self.failures:
            return "fail"
        return "rejected" if self.rejected else "ok"

    def categories(self) -> list:
        """Every run's category (``rejected`` for a case the reference refuses)."""
        if self.rejected:
            return ["rejected"]
        return [o.category for o in self.outcomes]

    def report(self) -> str:
        lines = [f"seed {self.case.seed}: {self.status}" + (f" ({self.rejected})" if self.rejected else "")]
        for o in self.outcomes:
            if o.category != "ok":
                lines.append(f"  {o.run}: {o.category}: {o.detail}")
        if self.failures:
            lines.append("kernel:\n" + self.case.file_text())
        return "\n".join(lines)


# ---------------------------------------------------------------------------------- loading
_DIR = None
_COUNTER = itertools.count()


def _case_dir() -> str:
    global _DIR
    if _DIR is None:
        _DIR = tempfile.mkdtemp(prefix="tritonpu-fuzz-")
        atexit.register(shutil.rmtree, _DIR, True)
    return _DIR


def load_kernel(case: Case):
    """The case's ``kern`` as a ``@tritonpu.jit`` function (its source written to a temporary
    file: the frontend reads a kernel's source from its file)."""
    path = os.path.join(_case_dir(), f"case_{case.seed}_{os.getpid()}_{next(_COUNTER)}.py")
    with open(path, "w") as fh:
        fh.write(case.file_text())
    spec = importlib.util.spec_from_file_location(f"tritonpu_fuzz_case_{next(_COUNTER)}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.kern


class Timeout(BaseException):
    """A run took longer than its time bound (a BaseException: no ``except Exception`` inside
    tritonpu may turn it into an error of the kernel's)."""


def _alarm(*_):
    raise Timeout()


def run_case(kern, case: Case, run: Run, timeout: float = 60.0) -> list:
    """Launch the case once; returns all its arrays afterwards (bounded by ``timeout`` seconds
    when called from the main thread)."""
    arrays, scalars, consts, _, grid = make_args(case.meta)
    timed = timeout and threading.current_thread() is threading.main_thread()
    if timed:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        kern[grid](*arrays, *scalars, **consts, backend=run.backend, **run.kwargs())
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    return arrays


# ---------------------------------------------------------------------------------- comparing
_MINMAX = re.compile(r"\b(maximum|minimum|max|min|atomic_max|atomic_min|argmax|argmin)\(")


def compare(got: np.ndarray, want: np.ndarray, approx: int = 0, zero_sign_ok: bool = False) -> np.ndarray:
    """Indices of the lanes where ``got`` differs from ``want`` (see the module docstring)."""
    if got.dtype.kind != "f":
        return np.nonzero(got != want)[0]
    ui = np.dtype(f"u{got.dtype.itemsize}")
    g64, w64 = got.astype(np.float64), want.astype(np.float64)
    eq = (got.view(ui) == want.view(ui)) | (np.isnan(g64) & np.isnan(w64))
    if zero_sign_ok:
        eq |= (g64 == 0) & (w64 == 0)
    if approx:
        rtol = 1e-5 if approx == 1 else 1e-2
        fin = np.abs(w64[np.isfinite(w64)])
        scale = fin.max() if fin.size else 1.0
        with np.errstate(invalid="ignore"):
            eq |= np.isclose(g64, w64, rtol=rtol, atol=rtol * max(scale, 1e-30) * 1e-1)
    return np.nonzero(~eq)[0]


def _classify(e: BaseException) -> tuple:
    msg = (str(e).strip().splitlines() or [""])[0][:300]
    if isinstance(e, Timeout):
        return "timeout", "no result within the time bound"
    if isinstance(e, CompilationError):
        if "internal" in str(e):
            return "internal", msg
        if "Unified Buffer" in str(e):
            return "resource", msg
        return "unsupported", msg
    if isinstance(e, TritonpuError):
        text = str(e)
        if re.search(r"\b(KeyError|IndexError|TypeError|AttributeError|ValueError|AssertionError|"
                      r"ZeroDivisionError|OverflowError|RecursionError|MemoryError|NameError)\b", text):
            return "internal", f"{type(e).__name__}: {msg}"
        return "error", f"{type(e).__name__}: {msg}"
    tb = traceback.format_exception(type(e), e, e.__traceback__)
    return "internal", f"{type(e).__name__}: {msg}\n" + "".join(tb[-6:])


def check_case(case: Case, runs=None, n_variants: int = 2, timeout: float = 60.0) -> Verdict:
    """Run ``case`` on the reference and on ``runs`` (default: npu, cpu and ``n_variants`` pass-off
    variants) and compare every array."""
    t0 = time.perf_counter()
    verdict = Verdict(case)
    runs = list(runs) if runs is not None else runs_for(case.seed, n_variants)
    try:
        kern = load_kernel(case)
        want = run_case(kern, case, REF, timeout)
    except (Exception, Timeout) as e:       # noqa: BLE001 - classified below
        cat, msg = _classify(e)
        if cat in ("unsupported", "resource"):
            verdict.rejected = msg
        else:
            verdict.outcomes.append(Outcome("ref", cat, msg))
        verdict.seconds = time.perf_counter() - t0
        return verdict
    _, _, _, out_idx, _ = make_args(case.meta)
    approx = {i: o.get("approx", 0) for i, o in zip(out_idx, case.meta["outs"])}
    zero_ok = bool(_MINMAX.search(case.source))
    for run in runs:
        try:
            got = run_case(kern, case, run, timeout)
        except (Exception, Timeout) as e:   # noqa: BLE001 - classified
            verdict.outcomes.append(Outcome(run.name, *_classify(e)))
            continue
        with np.errstate(all="ignore"):
            bad = _differences(got, want, approx, zero_ok)
        verdict.outcomes.append(Outcome(run.name, "mismatch" if bad else "ok", "; ".join(bad)))
    verdict.seconds = time.perf_counter() - t0
    return verdict


def _differences(got, want, approx, zero_ok) -> list:
    """One line per array that differs: how many lanes, the first few values."""
    bad = []
    for i, (g, w) in enumerate(zip(got, want)):
        lanes = compare(g, w, approx.get(i, 0), zero_ok)
        if lanes.size:
            k = lanes[:4].tolist()
            bad.append(f"array {i} ({g.dtype}, approx={approx.get(i, 0)}): {lanes.size} lanes differ, "
                       f"e.g. {k}: got {g[k].tolist()} want {w[k].tolist()}")
    return bad
