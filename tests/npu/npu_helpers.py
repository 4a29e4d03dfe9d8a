"""Shared helpers of the virtual-NPU tests (imported by the test_npu_*.py files)."""
from __future__ import annotations

import numpy as np

from tritonpu.dtypes import from_numpy
from tritonpu.npu import assemble

A, B, C, O = 0, 8192, 16384, 65536
BUFS = f""".buffer A ub {A} 8192
.buffer B ub {B} 8192
.buffer C ub {C} 8192
.buffer O ub {O} 65536
"""


def tname(dt):
    return from_numpy(np.dtype(dt)).name


def vec_program(body, inputs, out):
    """Program text: inputs k -> UB A/B/C, out -> UB O; body (vector code); O -> out."""
    lines = [".kernel t"]
    for k, a in enumerate(inputs):
        lines.append(f".param in{k} gm {tname(a.dtype)}")
    lines.append(f".param out gm {tname(out.dtype)}")
    lines.append(BUFS)
    for k, a in enumerate(inputs):
        lines.append(f"    mov.gm.ub ub[{(A, B, C)[k]}], in{k}[0], 1, {a.nbytes}, 0, 0")
    lines.append(f"    mov.gm.ub ub[O], out[0], 1, {out.nbytes}, 0, 0")
    lines += ["    set_flag MTE2, V, 0", "    wait_flag MTE2, V, 0", body,
              "    set_flag V, MTE3, 0", "    wait_flag V, MTE3, 0",
              f"    mov.ub.gm out[0], ub[O], 1, {out.nbytes}, 0, 0"]
    return "\n".join(lines) + "\n"


def run_vec(body, inputs, out, **kw):
    """Run vector ``body`` with ``inputs`` in UB at A, B, C and ``out`` at O; returns out."""
    args = {f"in{k}": a for k, a in enumerate(inputs)}
    args["out"] = out
    assemble(vec_program(body, inputs, out)).run(args, **kw)
    return out


def run_scalar(body, n=8, dtype=np.int64, params="", args=None, **kw):
    """Run scalar ``body`` (which stores to out[...]); returns out."""
    out = np.zeros(n, dtype)
    text = f".kernel t\n.param out gm {tname(dtype)}\n{params}\n{body}\n"
    assemble(text).run(dict(out=out, **(args or {})), **kw)
    return out


def rng(seed=0):
    return np.random.default_rng(seed)
