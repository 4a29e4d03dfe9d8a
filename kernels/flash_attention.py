"""FlashAttention forward: softmax(Q K^T * scale) V one query block per program, streaming over
key/value blocks with the online softmax (running max and sum), two dots per block and a masked
tail when the sequence length is not a multiple of the block.

    tritonpu run kernels/flash_attention.py --emit-isa
"""
import numpy as np

import tritonpu
import tritonpu.language as tl
from tritonpu.testing import double_buffer_report, report


@tritonpu.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_s, scale,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr, CAUSAL: tl.constexpr = False):
    pid_m = tl.program_id(0)
    head = tl.program_id(1)
    base = head * seq_len * stride_s
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + base + offs_m[:, None] * stride_s + offs_d[None, :], mask=offs_m[:, None] < seq_len,
                other=0.0)
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, D), tl.float32)
    hi = seq_len
    if CAUSAL:                  # a query attends to the keys up to its own position
        hi = tl.minimum(seq_len, (pid_m + 1) * BLOCK_M)
    for start in range(0, hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        kv_mask = offs_n[:, None] < seq_len
        k = tl.load(k_ptr + base + offs_n[:, None] * stride_s + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(v_ptr + base + offs_n[:, None] * stride_s + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        keep = offs_n[None, :] < seq_len
        if CAUSAL:
            keep = keep & (offs_n[None, :] <= offs_m[:, None])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * stride_s + offs_d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < seq_len)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, BLOCK_M: int = 32, BLOCK_N: int = 32, causal=False,
              **launch):
    """q, k, v: (heads, seq, D) arrays of one dtype; returns (out, handle)."""
    q, k, v = (np.ascontiguousarray(x) for x in (q, k, v))    # (one layout for q, k, v and out)
    heads, seq, d = q.shape
    out = np.empty_like(q)
    h = attention_kernel[(tritonpu.cdiv(seq, BLOCK_M), heads)](
        q, k, v, out, seq, d, 1.0 / np.sqrt(d), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, D=d, CAUSAL=causal, **launch)
    return out, h


def reference(q, k, v, causal=False):
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    s = q64 @ np.swapaxes(k64, 1, 2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v64


def main(heads: int = 2, seq: int = 200, d: int = 64, seed: int = 0) -> bool:
    rng = np.random.default_rng(seed)
    ok = True
    for dtype, tol in ((np.float32, 1e-4), (np.float16, 2e-2)):
        q, k, v = (rng.standard_normal((heads, seq, d)).astype(dtype) for _ in range(3))
        out, h = attention(q, k, v)
        ok &= report(f"attention {np.dtype(dtype).name} heads={heads} seq={seq} d={d}", h, out,
                     reference(q, k, v), atol=tol, rtol=tol)
        double_buffer_report(f"attention {np.dtype(dtype).name}", h,
                             lambda **o: attention(q, k, v, **o)[1])  # noqa: B023
    out, h = attention(q, k, v, causal=True)
    ok &= report(f"causal attention float16 heads={heads} seq={seq} d={d}", h, out, reference(q, k, v, causal=True),
                 atol=2e-2, rtol=2e-2)
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
