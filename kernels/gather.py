"""Embedding lookup (gather): each program copies ROWS rows of a table, chosen by an index array,
into the output. Offsets come from loaded data, so on the NPU this is an indexed-row transfer.

    tritonpu run kernels/gather.py --emit-ir
"""
import numpy as np

import tritonpu
import tritonpu.language as tl
from tritonpu.testing import double_buffer_report, report


@tritonpu.jit
def gather_kernel(table_ptr, idx_ptr, out_ptr, n_idx, dim, ROWS: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    row_mask = rows < n_idx
    idx = tl.load(idx_ptr + rows, mask=row_mask, other=0)
    for d0 in range(0, dim, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        mask = row_mask[:, None] & (cols[None, :] < dim)
        vals = tl.load(table_ptr + idx[:, None] * dim + cols[None, :], mask=mask)
        tl.store(out_ptr + rows[:, None] * dim + cols[None, :], vals, mask=mask)


def gather(table: np.ndarray, idx: np.ndarray, ROWS: int = 64, BLOCK_D: int = 128, **launch):
    table, idx = np.ascontiguousarray(table), np.ascontiguousarray(idx)  # (rows of `dim` elements)
    n, dim = idx.size, table.shape[1]
    out = np.empty((n, dim), table.dtype)
    h = gather_kernel[(tritonpu.cdiv(n, ROWS),)](table, idx, out, n, dim, ROWS=ROWS, BLOCK_D=BLOCK_D, **launch)
    return out, h


def main(vocab: int = 5000, dim: int = 200, n: int = 1000, seed: int = 0) -> bool:
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((vocab, dim), dtype=np.float32)
    idx = rng.integers(0, vocab, n).astype(np.int32)
    out, h = gather(table, idx)
    ok = report(f"gather {n} rows of {vocab}x{dim}", h, out, table[idx])
    double_buffer_report("gather", h, lambda **o: gather(table, idx, **o)[1])
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
