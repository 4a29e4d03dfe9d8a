"""Blocked matmul C = A @ B with a K loop accumulating in fp32 (tl.dot), masked ragged edges,
grouped program ordering for L2 reuse as in Triton's tutorial.

    tritonpu run kernels/matmul.py --emit-ir
"""
import numpy as np

import tritonpu
import tritonpu.language as tl
from tritonpu.testing import double_buffer_report, report


@tritonpu.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (pid % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _strided(x: np.ndarray) -> np.ndarray:
    """``x`` itself when its strides are whole, non-negative numbers of elements (a view of rows,
    columns or a transpose: the kernel addresses it with them), else a contiguous copy."""
    return x if all(s >= 0 and s % x.itemsize == 0 for s in x.strides) else np.ascontiguousarray(x)


def _elements(x: np.ndarray) -> tuple:
    return tuple(s // x.itemsize for s in x.strides)


def matmul(a: np.ndarray, b: np.ndarray, out_dtype=np.float32, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8,
           **launch):
    M, K = a.shape
    _, N = b.shape
    a, b = _strided(a), _strided(b)
    c = np.empty((M, N), out_dtype)
    grid = lambda meta: (tritonpu.cdiv(M, meta["BLOCK_M"]) * tritonpu.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
    h = matmul_kernel[grid](a, b, c, M, N, K, *_elements(a), *_elements(b), *_elements(c),
                            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, **launch)
    return c, h


def main(M: int = 200, N: int = 136, K: int = 100, seed: int = 0) -> bool:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    c, h = matmul(a, b)
    ok = report(f"matmul fp32 {M}x{N}x{K}", h, c, a.astype(np.float64) @ b, atol=1e-4, rtol=1e-4)
    a16, b16 = a.astype(np.float16), b.astype(np.float16)
    c16, h16 = matmul(a16, b16, np.float32)
    ok &= report(f"matmul fp16->fp32 {M}x{N}x{K}", h16, c16, a16.astype(np.float64) @ b16.astype(np.float64),
                 atol=1e-3, rtol=1e-3)
    double_buffer_report("matmul fp16->fp32", h16, lambda **o: matmul(a16, b16, np.float32, **o)[1])
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
