"""``mmad``'s arithmetic: K in chunks of the cube's k0 (16 for fp16/bf16, 8 for fp32), each chunk
summed exactly and added to the fp32 accumulator with one rounding, chunk after chunk -- so a
product's bits depend only on its operands and K, not on the tile sizes a user picks or on how the
compiler splits a dot across ``mmad``s (as a GPU's MMA, whose K step is fixed, behaves)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "kernels"))
import matmul as mm  # noqa: E402
from tpu_util import cube_product  # noqa: E402


@pytest.mark.parametrize("dtype, k0, configs", [
    # (64, 64, 32) rounds every 32 before chunking, (128, 256, 128) is split along K in L0
    (np.float16, 16, [(64, 64, 32), (128, 128, 64), (32, 64, 128), (128, 256, 128)]),
    (np.float32, 8, [(64, 64, 32), (32, 32, 16), (128, 128, 64)]),
])
def test_a_products_bits_do_not_depend_on_the_block_sizes(dtype, k0, configs):
    rng = np.random.default_rng(7)
    M, N, K = 200, 136, 256
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    want = cube_product(a, b, k0)
    for bm, bn, bk in configs:
        c, _ = mm.matmul(a, b, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk)
        np.testing.assert_array_equal(c, want, err_msg=f"BLOCK_M={bm} BLOCK_N={bn} BLOCK_K={bk}")
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(want - exact).max() < 1e-4 * np.abs(exact).max()


def test_a_ragged_k_adds_nothing_for_its_padding():
    """K = 100 with BLOCK_K 32: the last K block's masked rows are zeros, chunks of them add nothing."""
    rng = np.random.default_rng(8)
    a = rng.standard_normal((64, 100)).astype(np.float16)
    b = rng.standard_normal((100, 48)).astype(np.float16)
    c, _ = mm.matmul(a, b, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    np.testing.assert_array_equal(c, cube_product(a, b, 16))
