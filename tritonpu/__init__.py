"""tritonpu: Triton-style kernels on a virtual Ascend-class NPU.

    import tritonpu as triton            # the same names as Triton
    import tritonpu.language as tl
"""
__version__ = "0.1.0"

from tritonpu.errors import CompilationError, ExecutionError, LaunchError, TritonpuError  # noqa: E402
from tritonpu.runtime.autotune import Config, autotune, heuristics  # noqa: E402
from tritonpu.runtime.jit import JITFunction, LaunchHandle, jit  # noqa: E402
from tritonpu import language, testing  # noqa: E402


def cdiv(x: int, y: int) -> int:
    """Ceiling division, as ``triton.cdiv``."""
    return (x + y - 1) // y


def next_power_of_2(n: int) -> int:
    """The smallest power of 2 >= n, as ``triton.next_power_of_2`` (whose bit trick gives 0 for
    n <= 0)."""
    n = int(n)
    if n <= 0:
        return 0
    return 1 << (n - 1).bit_length()


__all__ = ["jit", "JITFunction", "LaunchHandle", "autotune", "heuristics", "Config", "cdiv", "next_power_of_2",
           "CompilationError", "ExecutionError", "LaunchError", "TritonpuError", "language", "testing", "__version__"]

