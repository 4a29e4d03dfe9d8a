"""The differential check of the NPU's two engines (``TRITONPU_NPU_ENGINE=check``).

A checked launch runs the reference engine (``interpret``) on copies of the arguments, then the
translating engine (``translate``) on the arguments themselves, and compares: every argument
array byte for byte, what the programs printed, the error raised (type and message) if any, and
every figure of the statistics — cycles, per-core cycles, pipe busy cycles and instruction counts
(per core too), bytes by path, stalls, queue waits, distinct bytes read and written, MACs, the
roofline, and a traced launch's trace events and records.  Guarantee: a checked launch returns
what the translating engine returned, or raises :class:`EngineMismatch` naming the first
difference.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np

from .errors import LaunchError

FIELDS = ("cycles", "core_cycles", "pipe_busy", "pipe_busy_by_core", "instr_count", "bytes_by_path",
          "bytes_by_pipe", "stalls", "queue_wait", "read_bytes", "write_bytes", "cube_macs",
          "macs_by_dtype", "roofline_cycles", "roofline_bound", "cores_used")


class EngineMismatch(LaunchError):
    """The two NPU engines disagree (a defect of the translating engine)."""


def _copies(args: dict) -> dict:
    """Copies of the argument arrays that overlap one another as the arguments do (an in-place
    kernel given one array twice), numbers as they are."""
    from tritonpu.cpu.check import copies_sharing_memory
    arrays = {k: np.from_dlpack(v) if hasattr(v, "__dlpack__") and not isinstance(v, np.ndarray) else v
              for k, v in args.items()}
    names = list(arrays)
    copies = copies_sharing_memory([arrays[k] for k in names], [isinstance(arrays[k], np.ndarray) for k in names])
    return dict(zip(names, copies))


def _outcome(launch, prog, args, engine, **options):
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            stats = launch(prog, args, engine=engine, **options)
        return stats, None, out.getvalue()
    except Exception as e:      # compared below, raised again by the caller
        return None, e, out.getvalue()


def _records(stats):
    r = stats._records
    return None if r is None else (r.bytes, r.stalls, r.high)


def check_engines(launch, prog, args, **options):
    copies = _copies(args)
    ref, ref_err, ref_out = _outcome(launch, prog, copies, "interpret", **options)
    got, err, out = _outcome(launch, prog, args, "translate", **options)
    print(out, end="")

    def mismatch(what, a, b):
        raise EngineMismatch(f"the NPU engines disagree on {what} of {prog.name}: interpret gave {a!r}, "
                             f"translate gave {b!r}")

    if (ref_err is None) != (err is None) or (err is not None and (type(err), str(err)) != (type(ref_err), str(ref_err))):
        mismatch("the error", ref_err, err)
    if out != ref_out:
        mismatch("what the programs printed", ref_out, out)
    for k, v in args.items():
        a, b = copies[k], v
        if isinstance(a, np.ndarray):
            b = np.asarray(b) if isinstance(b, np.ndarray) else np.from_dlpack(b)
            if a.shape != b.shape or a.tobytes() != b.tobytes():
                diff = np.flatnonzero(a.reshape(-1).view(np.uint8) != b.reshape(-1).view(np.uint8))
                mismatch(f"argument {k!r} (first differing byte {diff[0] if diff.size else '?'})", "...", "...")
    if err is not None:
        raise err
    for f in FIELDS:
        if getattr(ref, f) != getattr(got, f):
            mismatch(f, getattr(ref, f), getattr(got, f))
    if ref._trace != got._trace:
        mismatch("the trace events", len(ref._trace or ()), len(got._trace or ()))
    if _records(ref) != _records(got):
        mismatch("the trace records", "...", "...")
    return got
