"""The table of backends a launch can run on: name -> function(kernel, arrays, grid, options)."""
from __future__ import annotations

import os


def _ref(kernel, arrays, grid, options):
    from tritonpu.ref import evaluator
    _without_npu_stages(kernel)
    evaluator.run(kernel.fn, arrays, grid)
    return None


def _cpu(kernel, arrays, grid, options):
    from tritonpu import cpu
    _without_npu_stages(kernel)
    return cpu.launch(kernel, arrays, grid, options)


def _without_npu_stages(kernel) -> None:
    """``h.asm`` shows what the latest launch ran: not the NPU passes and assembly of an earlier NPU
    launch (the NPU compilation itself is kept for the next NPU launch)."""
    from tritonpu.codegen.pipeline import NPU_PIPELINE
    stages = set(NPU_PIPELINE) | {"isa"}
    if stages & set(kernel.asm):
        kernel.asm = {k: v for k, v in kernel.asm.items() if k not in stages}   # a new dict (see launch_npu)


def _npu(kernel, arrays, grid, options):
    from tritonpu.codegen.pipeline import launch_npu
    return launch_npu(kernel, arrays, grid, options)


BACKENDS = {
    "ref": _ref,
    "cpu": _cpu,
    "npu": _npu,
}


def launch(name, kernel, arrays, grid, options):
    if grid[0] * grid[1] * grid[2] == 0:
        return None
    if options.get("check") or os.environ.get("TRITONPU_CHECK"):
        from tritonpu.cpu.check import checked_launch
        return checked_launch(BACKENDS, name, kernel, arrays, grid, options)
    return BACKENDS[name](kernel, arrays, grid, options)
