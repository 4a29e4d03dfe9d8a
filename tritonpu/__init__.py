"""tritonpu: Triton-style kernels on a virtual Ascend-class NPU.

    import tritonpu as triton            # the same names as Triton
    import tritonpu.language as tl
"""
__version__ = "0.1.0"

from tritonpu.errors import CompilationError, ExecutionError, LaunchError, TritonpuError  # noqa: E402
from tritonpu.runtime.autotune import Config, autotune, heuristics  # noqa: E402
from tritonpu.runtime.jit import JITFunction, LaunchHandle, jit  # noqa: E402
from tritonpu import language, testing  # noqa: E402


def constexpr_function(fn):
    """``@triton.constexpr_function``: a plain Python function a kernel may call on constexpr values
    (evaluated while the kernel is compiled)."""
    fn.__tritonpu_constexpr_function__ = True
    return fn


@constexpr_function
def cdiv(x: int, y: int) -> int:
    """Ceiling division, as ``triton.cdiv`` (callable in a kernel on constexpr values)."""
    return (x + y - 1) // y


@constexpr_function
def next_power_of_2(n: int) -> int:
    """The smallest power of 2 >= n, as ``triton.next_power_of_2`` (whose bit trick gives 0 for
    n <= 0)."""
    n = int(n)
    if n <= 0:
        return 0
    return 1 << (n - 1).bit_length()


__all__ = ["jit", "JITFunction", "LaunchHandle", "autotune", "heuristics", "Config", "cdiv", "next_power_of_2",
           "constexpr_function",
           "CompilationError", "ExecutionError", "LaunchError", "TritonpuError", "language", "testing", "__version__"]

