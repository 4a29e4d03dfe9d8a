"""Helpers of the NPU-op tests: run IR text on the reference evaluator and on the NPU backend
(compiler + virtual NPU) and compare.  Value generators and ulps come from the cpu helpers."""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cpu"))
from cpu_helpers import BF16, FLOATS, INTS, NP, assert_close, ulps, values  # noqa: E402,F401

from tritonpu.codegen.pipeline import launch_npu  # noqa: E402
from tritonpu.ir import parse_function, print_function, verify  # noqa: E402
from tritonpu.ref import evaluator  # noqa: E402
from tritonpu.runtime.jit import CompiledKernel  # noqa: E402

ALL = FLOATS + INTS + ("i1",)


def ir_kernel(text: str, name: str = "k") -> CompiledKernel:
    """A CompiledKernel from IR text whose op lines may omit ``loc(...)`` (added here); its
    ``asm["ir"]`` is the printed function (what the NPU compiler parses)."""
    lines = ['#f0 = "test.ir"']
    for i, line in enumerate(text.strip().splitlines(), 1):
        s = line.rstrip()
        st = s.strip()
        if st and not st.startswith(("func", "^bb")) and st not in ("{", "}") and not st.endswith("{") \
                and " loc(" not in s:
            s += f" loc(#f0:{i}:1)"
        elif st.startswith("}") and st != "}" and " loc(" not in s:
            s += f" loc(#f0:{i}:1)"
        lines.append(s)
    fn = parse_function("\n".join(lines))
    verify(fn)
    return CompiledKernel(name, fn, {"ir": print_function(fn)})


def run_ref_npu(kernel: CompiledKernel, args: list, grid=(1, 1, 1), options=None):
    """(ref outputs, npu outputs): copies of every array argument after each run."""
    grid = tuple(grid) + (1,) * (3 - len(grid))
    ref_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    npu_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    evaluator.run(kernel.fn, ref_args, grid)
    launch_npu(kernel, npu_args, grid, dict(options or {}))
    return ([a for a in ref_args if isinstance(a, np.ndarray)], [a for a in npu_args if isinstance(a, np.ndarray)])
