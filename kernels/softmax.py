"""Row softmax, two ways.

* ``softmax_kernel``: one row per program, the whole row in one block (BLOCK >= n_cols).
* ``online_softmax_kernel``: for long rows; loops over column blocks keeping a running max and
  sum (the "online softmax"), then a second pass writes the normalised values.

    tritonpu run kernels/softmax.py --emit-ir
"""
import numpy as np

import tritonpu
import tritonpu.language as tl
from tritonpu.testing import double_buffer_report, report


@tritonpu.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)


@tritonpu.jit
def online_softmax_kernel(out_ptr, in_ptr, row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = in_ptr + row * row_stride
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, x)
        # a lane that has seen only masked columns keeps m = -inf: exp(-inf - -inf) would be NaN
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp(m - m_safe) + tl.exp(x - m_safe)
        m = m_new
    row_max = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(m - row_max), axis=0)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=-float("inf"))
        tl.store(out_ptr + row * row_stride + cols, tl.exp(x - row_max) / total, mask=cols < n_cols)


@tritonpu.jit
def scale_bias_softmax_kernel(x_ptr, b_ptr, out_ptr, n_cols, scale, BLOCK: tl.constexpr):
    """softmax(x * scale + bias) per row: the attention-score epilogue, fused on chip."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    z = x * scale + b
    z = z - tl.max(z, axis=0)
    e = tl.exp(z)
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


def softmax(x: np.ndarray, **launch):
    x = np.ascontiguousarray(x)         # (the kernel reads rows of contiguous columns)
    rows, cols = x.shape
    out = np.empty_like(x)
    BLOCK = tritonpu.next_power_of_2(cols)
    handle = softmax_kernel[(rows,)](out, x, x.shape[1], out.shape[1], cols, BLOCK=BLOCK, **launch)
    return out, handle


def online_softmax(x: np.ndarray, BLOCK: int = 256, **launch):
    x = np.ascontiguousarray(x)         # (the kernel reads rows of contiguous columns)
    rows, cols = x.shape
    out = np.empty_like(x)
    handle = online_softmax_kernel[(rows,)](out, x, x.shape[1], cols, BLOCK=BLOCK, **launch)
    return out, handle


def scale_bias_softmax(x: np.ndarray, bias: np.ndarray, scale: float, **launch):
    x, bias = np.ascontiguousarray(x), np.ascontiguousarray(bias)   # (rows of contiguous columns)
    rows, cols = x.shape
    out = np.empty_like(x)
    handle = scale_bias_softmax_kernel[(rows,)](x, bias, out, cols, scale, BLOCK=tritonpu.next_power_of_2(cols),
                                                **launch)
    return out, handle


def reference(x: np.ndarray) -> np.ndarray:
    z = x - x.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def main(rows: int = 128, cols: int = 781, long_cols: int = 3000, seed: int = 0) -> bool:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    out, h = softmax(x)
    ok = report(f"softmax {rows}x{cols}", h, out, reference(x))
    x2 = rng.standard_normal((rows // 4, long_cols), dtype=np.float32)
    out2, h2 = online_softmax(x2)
    ok &= report(f"online softmax {rows // 4}x{long_cols}", h2, out2, reference(x2))
    bias = rng.standard_normal(cols, dtype=np.float32)
    out3, h3 = scale_bias_softmax(x, bias, 0.5)
    ok &= report(f"scale-bias-softmax {rows}x{cols}", h3, out3, reference(x * np.float32(0.5) + bias))
    double_buffer_report("softmax", h, lambda **o: softmax(x, **o)[1])
    double_buffer_report("online softmax", h2, lambda **o: online_softmax(x2, **o)[1])
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
