"""LayerNorm forward: one row per program; mean and variance over the row, then scale and shift.

Two kernels, as Triton users write them: ``layernorm_row_kernel`` holds the row in one block
(``BLOCK = next_power_of_2(n_cols)``): it reads the row once and does the least vector work;
``layernorm_kernel`` walks the row in column blocks, three passes, for rows of any length.
``layernorm()`` picks the first when the row fits in ``MAX_ROW_BLOCK`` elements, unless a BLOCK
is given.

    tritonpu run kernels/layernorm.py --emit-ir
"""
import numpy as np

import tritonpu
import tritonpu.language as tl
from tritonpu.testing import double_buffer_report, report


@tritonpu.jit
def layernorm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, n_cols, eps,
                     BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride
    y_row = y_ptr + row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc2 = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        d = tl.where(cols < n_cols, x - mean, 0.0)
        acc2 += d * d
    var = tl.sum(acc2, axis=0) / n_cols
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < n_cols
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (x - mean) * rstd * w + b, mask=mask)


@tritonpu.jit
def layernorm_row_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, n_cols, eps,
                         BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(xc * xc, axis=0) / n_cols + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * stride + cols, xc * rstd * w + b, mask=mask)


MAX_ROW_BLOCK = 8192       # fp32 elements of a row held in one block (32 KiB of Unified Buffer)


def layernorm(x, w, b, eps=1e-5, BLOCK=None, **launch):
    """``BLOCK=None``: the one-block kernel when the row fits, else column blocks of 512."""
    # (one row stride for x and y: rows of contiguous columns; w and b element after element)
    x, w, b = (np.ascontiguousarray(a) for a in (x, w, b))
    rows, cols = x.shape
    y = np.empty_like(x)
    mean = np.empty(rows, np.float32)
    rstd = np.empty(rows, np.float32)
    if BLOCK is None and tritonpu.next_power_of_2(cols) <= MAX_ROW_BLOCK:
        kernel, BLOCK = layernorm_row_kernel, tritonpu.next_power_of_2(cols)
    else:
        kernel, BLOCK = layernorm_kernel, BLOCK or 512
    h = kernel[(rows,)](x, y, w, b, mean, rstd, x.shape[1], cols, eps, BLOCK=BLOCK, **launch)
    return y, mean, rstd, h


def reference(x, w, b, eps=1e-5):
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def main(rows: int = 64, cols: int = 1500, seed: int = 0) -> bool:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    w = rng.standard_normal(cols, dtype=np.float32)
    b = rng.standard_normal(cols, dtype=np.float32)
    ok = True
    for label, block in (("row in one block", None), ("column blocks of 512", 512)):
        y, mean, rstd, h = layernorm(x, w, b, BLOCK=block)
        ok &= report(f"layernorm {rows}x{cols} ({label})", h, y, reference(x, w, b), atol=1e-4, rtol=1e-4)
        double_buffer_report("layernorm", h, lambda **o: layernorm(x, w, b, BLOCK=block, **o)[3])
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
