"""Vector add: the "hello world" of kernels. One block of BLOCK elements per program, masked tail.

    tritonpu run kernels/vector_add.py --emit-ir
"""
import numpy as np

import tritonpu
import tritonpu.language as tl
from tritonpu.testing import double_buffer_report, report


@tritonpu.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x: np.ndarray, y: np.ndarray, BLOCK: int = 1024, **launch):
    x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)    # (elements one after another)
    out = np.empty_like(x)
    n = x.size
    grid = lambda meta: (tritonpu.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    handle = add_kernel[grid](x, y, out, n, BLOCK=BLOCK, **launch)
    return out, handle


def main(n: int = 98_432, seed: int = 0) -> bool:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    out, handle = add(x, y)
    ok = report(f"vector_add n={n}", handle, out, x + y)
    double_buffer_report("vector_add", handle, lambda **o: add(x, y, **o)[1])
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
