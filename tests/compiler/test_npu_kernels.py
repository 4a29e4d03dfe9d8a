"""Kernels through the whole NPU path: results against numpy, what moved (bytes per path), the
assembly that ran (FileCheck), the stages kept in ``h.asm``, the CLI, and compile errors."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.codegen.pipeline import NPU_PIPELINE
from tritonpu.testing import assert_close, filecheck

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))



def _kernels(stem):
    import importlib.util
    spec = importlib.util.spec_from_file_location(f"npu_kernels_{stem}", os.path.join(ROOT, "kernels", f"{stem}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


scale_bias_softmax = _kernels("softmax").scale_bias_softmax_kernel


def _sbs_reference(x, b, scale):
    z = x.astype(np.float64) * scale + b
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("rows,cols,block", [(8, 1000, 1024), (5, 64, 64), (3, 1, 16)])
def test_scale_bias_softmax_moves_exactly_its_own_bytes(rows, cols, block):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    b = rng.standard_normal(cols).astype(np.float32)
    out = np.zeros_like(x)
    h = scale_bias_softmax[(rows,)](x, b, out, cols, 0.5, BLOCK=block)
    assert h.backend == "npu"
    assert_close(out, _sbs_reference(x, b, 0.5), atol=1e-6, rtol=1e-5)
    # fused on chip: each program reads its row and the bias once and writes its row once
    assert h.stats.bytes_by_path == {"gm->ub": rows * cols * 4 * 2, "ub->gm": rows * cols * 4}
    assert h.stats.cycles > 0 and 0 < h.stats.efficiency <= 1


def test_every_stage_is_kept_and_the_isa_is_what_ran():
    x = np.ones((2, 64), np.float32)
    out = np.zeros_like(x)
    h = scale_bias_softmax[(2,)](x, np.zeros(64, np.float32), out, 64, 1.0, BLOCK=64)
    assert ["ir"] + NPU_PIPELINE + ["isa"] == [k for k in ["ir"] + NPU_PIPELINE + ["isa"] if k in h.asm]
    filecheck(h.asm["memory-analysis"], """
        CHECK: load_tile
        CHECK: load_tile
        CHECK: store_tile
        CHECK-NOT: = load %""")
    filecheck(h.asm["isa"], """
        CHECK: .kernel scale_bias_softmax_kernel
        CHECK: .param x_ptr gm f32
        CHECK: block_idx
        CHECK: mov.gm.ub.f32
        CHECK: mov.gm.ub.f32
        CHECK: set_flag MTE2, V
        CHECK: wait_flag MTE2, V
        CHECK: vmuls.f32
        CHECK: vreduce.max.f32
        CHECK: vexp.f32
        CHECK: vreduce.sum.f32
        CHECK: vdiv.f32
        CHECK: set_flag V, MTE3
        CHECK: wait_flag V, MTE3
        CHECK: mov.ub.gm.f32""")
    assert "vdup" not in h.asm["isa"]          # fused: no splat is materialised


@tritonpu.jit
def loop_branch_kernel(x_ptr, out_ptr, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.zeros((BLOCK,), tl.float32)
    total = 0.0
    for i in range(ITERS):
        x = tl.load(x_ptr + i * n + offs, mask=mask, other=0.0)
        if i % 2 == 0:
            acc += x
        else:
            acc -= x * 0.5
        total += tl.sum(x, axis=0)
    j = 0
    while j < 3:
        acc = acc * 2.0
        j += 1
    tl.store(out_ptr + offs, acc + total, mask=mask)


@pytest.mark.parametrize("n", [100, 256, 1])
def test_runtime_loops_and_branches(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((4, n)).astype(np.float32)
    out = np.zeros(n, np.float32)
    loop_branch_kernel[(tritonpu.cdiv(n, 128),)](x, out, n, ITERS=4, BLOCK=128)
    acc = x[0] - x[1] * 0.5 + x[2] - x[3] * 0.5
    want = acc * 8 + sum(x[i][np.arange(n)].sum() for i in range(4))
    # `total` sums each program's own block only
    per_prog = np.zeros(n)
    for p in range(tritonpu.cdiv(n, 128)):
        sl = slice(p * 128, min(n, p * 128 + 128))
        per_prog[sl] = x[:, sl].sum()
    want = acc.astype(np.float64) * 8 + per_prog
    assert_close(out, want, atol=1e-4, rtol=1e-5)


@tritonpu.jit
def grid2d_kernel(x_ptr, out_ptr, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride + rn[None, :], mask=mask, other=0)
    y = tl.where(x > 0, x, -x) + (rm[:, None] * 1000 + rn[None, :])
    tl.store(out_ptr + rn[None, :] * M + rm[:, None], y, mask=mask)      # transposed store


def test_2d_grid_masks_and_transposed_store():
    M, N = 37, 50
    x = np.arange(M * N, dtype=np.int32).reshape(M, N) - 900
    out = np.zeros((N, M), np.int32)
    h = grid2d_kernel[(tritonpu.cdiv(M, 16), tritonpu.cdiv(N, 32))](x, out, M, N, N, BM=16, BN=32)
    want = (np.abs(x) + np.arange(M)[:, None] * 1000 + np.arange(N)[None, :]).T
    np.testing.assert_array_equal(out, want)
    assert "gather" not in h.asm["isa"] and "scatter" not in h.asm["isa"]


@tritonpu.jit
def indirect_kernel(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    i = tl.load(idx_ptr + offs, mask=m, other=0)
    v = tl.load(x_ptr + i, mask=m & (i >= 0), other=-1.0)
    tl.store(out_ptr + (n - 1 - offs), v, mask=m)
    tl.atomic_add(out_ptr + n, tl.sum(v, axis=0))


def test_data_dependent_addresses_gather_element_by_element():
    x = np.arange(50, dtype=np.float32) * 1.5
    idx = np.array([3, -1, 49, 0, 7, 7, 20], np.int32)
    out = np.zeros(8, np.float32)
    h = indirect_kernel[(1,)](x, idx, out, 7, BLOCK=8)
    v = np.where(idx >= 0, x[np.maximum(idx, 0)], -1.0)
    np.testing.assert_array_equal(out[:7], v[::-1])
    assert out[7] == v.sum() - 1.0        # lane 7 is masked off: other = -1.0 joins the sum
    assert "gather.gm.ub.f32" in h.asm["isa"] and "element-by-element" in h.asm["isa"]


@tritonpu.jit
def too_big_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x * 2 + offs.to(tl.float32), mask=m)


@pytest.mark.parametrize("n", [(1 << 16) * 3 - 5, 1000])
def test_elementwise_blocks_larger_than_ub_are_tiled(n):
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    out = np.zeros_like(x)
    h = too_big_kernel[(tritonpu.cdiv(n, 1 << 16),)](x, out, n, BLOCK=1 << 16)
    assert_close(out, x.astype(np.float64) * 2 + np.arange(n), rtol=1e-6, atol=1e-2)
    filecheck(h.asm["tiling"], """
        CHECK: for
        CHECK: load_tile
        CHECK: store_tile""")
    import re
    assert re.search(r"= load_tile [^:]*: tensor<16384xf32>", h.asm["tiling"])
    assert h.stats.bytes_by_path == {"gm->ub": n * 4, "ub->gm": n * 4}


@tritonpu.jit
def too_big_sum_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr, tl.sum(x, axis=0))


def test_a_block_that_cannot_be_tiled_is_a_compilation_error_naming_it():
    x = np.zeros(1 << 16, np.float32)
    with pytest.raises(tritonpu.CompilationError) as info:
        too_big_sum_kernel[(1,)](x, x, BLOCK=1 << 16)
    text = str(info.value)
    assert "tensor<65536xf32>" in text and "262144 bytes" in text and "Unified Buffer (196608 bytes)" in text
    line = next(i for i, src in enumerate(open(__file__), 1) if "tl.store(out_ptr, tl.sum(x, axis=0))" in src)
    assert f"the reduction at line {line} needs its whole block on chip" in text
    assert "x = tl.load(x_ptr + offs)" in text
    src, caret = text.splitlines()[-2:]
    assert caret.index("^") == src.index("tl.load")           # the column of the op, not column 1


def test_cli_prints_passes_isa_and_profile():
    r = subprocess.run([sys.executable, "-m", "tritonpu.cli", "run", "kernels/vector_add.py",
                        "--print-ir-after=memory-analysis", "--emit-isa", "--profile"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    filecheck(r.stdout, """
        CHECK: // ---- add_kernel: ir after memory-analysis ----
        CHECK: load_tile
        CHECK: // ---- add_kernel: isa ----
        CHECK: .kernel add_kernel
        CHECK: mov.gm.ub.f32
        CHECK: // ---- add_kernel: profile, grid
        CHECK: roofline:
        CHECK: OK against numpy""")
    bad = subprocess.run([sys.executable, "-m", "tritonpu.cli", "run", "kernels/vector_add.py",
                          "--print-ir-after=nosuchpass"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "unknown pass 'nosuchpass'" in bad.stderr


def test_a_carried_value_that_overflows_ub_is_reported_at_its_source_line():
    # attention with 256x128 blocks at head dim 128: the loop-carried accumulator is the largest
    # value live at the peak; its group starts with the loop's region argument, which has no
    # source — the error names the line of the loop that carries it (it had no location)
    fa = _kernels("flash_attention")
    q = np.zeros((1, 256, 128), np.float16)
    with pytest.raises(tritonpu.CompilationError) as e:
        fa.attention(q, q, q, BLOCK_M=256, BLOCK_N=128)
    first = str(e.value).splitlines()[0]
    assert re.match(r".*kernels/flash_attention\.py:\d+:\d+: error: the kernel needs \d+ bytes of Unified Buffer", first)
    assert "`acc_2` (tensor<256x128xf32>) alone takes 131072 bytes" in first


@tritonpu.jit
def _gathered_rows_matmul(a_ptr, b_ptr, c_ptr, idx_ptr, N, K, T, BM: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr):
    """A fused-MoE-style matmul: A's rows picked by token ids, padding ids (>= T) masked out."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    tok = tl.load(idx_ptr + rm)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptr + tok[:, None] * K + (k * BK + rk)[None, :],
                    mask=(tok < T)[:, None] & (rk[None, :] < K - k * BK), other=0.0)
        b = tl.load(b_ptr + (k * BK + rk)[:, None] * N + rn[None, :],
                    mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(tok < T)[:, None] & (rn[None, :] < N))


@pytest.mark.parametrize("BM,BN,BK", [(64, 64, 64), (128, 128, 64)])
def test_rows_masked_by_data_are_a_row_gather_and_a_row_scatter(BM, BN, BK):
    """``mask=(tok < T)[:, None] & ...`` on the load of rows picked by ``tok`` and on the store:
    a row gather and a row scatter with a row mask (rows with a padding id read nothing and are
    not written).  The load was element by element with a pointer block in UB: 128x128x64 did not
    compile."""
    rng = np.random.default_rng(BM)
    T, N, K, R = 200, 192, 160, 256
    a = rng.standard_normal((T, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    idx = rng.integers(0, T, R).astype(np.int32)
    idx[rng.random(R) < 0.3] = T + 7                   # padding ids
    ref = np.zeros((R, N), np.float32)
    ok = idx < T
    ref[ok] = a[idx[ok]].astype(np.float32) @ b.astype(np.float32)
    c = np.full((R, N), 3.0, np.float16)
    h = _gathered_rows_matmul[(R // BM, -(-N // BN))](a, b, c, idx, N, K, T, BM=BM, BN=BN, BK=BK)
    np.testing.assert_allclose(c[ok].astype(np.float32), ref[ok], rtol=2e-2, atol=5e-2)
    assert (c[~ok] == 3.0).all()                        # rows with a padding id are not written
    isa = h.asm["isa"]
    assert "element-by-element" not in isa and "gather.gm.l1.f16" in isa and "scatter.ub.gm.f16" in isa, isa


@tritonpu.jit
def _flipped_rows_matmul(a_ptr, b_ptr, c_ptr, M, K, scm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :]),
                     tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :]), acc)
    tl.store(c_ptr + (M - 1 - rm[:, None]) * scm + rn[None, :], acc)      # rows reversed: stride -scm


@pytest.mark.parametrize("K", [32, 64])
def test_a_stride_negative_at_run_time_is_not_a_tile_transfer(K):
    """``(M - 1 - rm) * scm`` has the row stride ``-scm``: a transfer moves ascending rows only, and
    FIX stored the accumulator with that stride -- an ExecutionError ('negative transfer stride')
    for a right kernel.  The launch's arguments decide the sign (a guard): this launch stores its
    rows one by one, a scatter of rows ``arange * -scm`` (before: element by element, a pointer
    block in UB; a launch whose stride is >= 0 compiles the tile store)."""
    M = N = 32
    rng = np.random.default_rng(K)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    c = np.zeros((M, N), np.float32)
    h = _flipped_rows_matmul[(1,)](a, b, c, M, K, N, BM=32, BN=32, BK=32)
    np.testing.assert_allclose(c, ref[::-1], rtol=1e-3, atol=1e-3)
    isa = h.asm["isa"]
    assert "mov.l0c.gm" not in isa and "element-by-element" not in isa and "scatter.ub.gm.f32" in isa, isa


@tritonpu.jit
def _loaded_strides_matmul(a_ptr, b_ptr, c_ptr, lds, M, N, K,
                           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # Triton's grouped GEMM (tutorial 08): each problem's leading dimensions come from memory, and
    # here its first rows too -- a stride of either sign, known when the program runs
    lda, ldb, ldc = tl.load(lds), tl.load(lds + 1), tl.load(lds + 2)
    a_first, c_first = tl.load(lds + 3), tl.load(lds + 4)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + a_first + rm[:, None] * lda + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * ldb + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
        a_ptrs += BK
        b_ptrs += BK * ldb
    tl.store(c_ptr + c_first + rm[:, None] * ldc + rn[None, :], acc.to(tl.float16))


@pytest.mark.parametrize("flip", [False, True])
def test_dot_operands_with_strides_loaded_from_memory(flip):
    """Strides read from memory have a sign the compiler cannot know: the tile transfer is guarded
    by ``stride >= 0`` and the other branch picks the rows ``arange * stride`` apart by an index
    vector (a gather of rows straight into L1, a scatter of rows for the store) -- before, that
    branch moved a pointer block element by element, held whole in UB: at 128x128x32 the kernel
    needed 213504 bytes of UB and did not compile.  ``flip``: A's and C's rows go backwards
    (stride -K, -N from their last rows: row i of the product still lands in row i), so the launch
    runs the gathers; else the tile transfers."""
    M, N, K, BM, BN, BK = 256, 256, 64, 128, 128, 32
    rng = np.random.default_rng(7)
    a = (rng.random((M, K)) - 0.5).astype(np.float16)
    b = (rng.random((K, N)) - 0.5).astype(np.float16)
    c = np.full((M, N), 3.0, np.float16)
    lds = np.array([-K, N, -N, (M - 1) * K, (M - 1) * N] if flip else [K, N, N, 0, 0], np.int32)
    h = _loaded_strides_matmul[(M // BM, N // BN)](a, b, c, lds, M, N, K, BM=BM, BN=BN, BK=BK)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=1e-2, atol=1e-2)
    isa = h.asm["isa"]
    assert "element-by-element" not in isa, isa
    for line in ("mov.gm.l1.f16", "gather.gm.l1.f16", "scatter.ub.gm.f16"):
        assert line in isa, line
    if flip:    # the cube's operands came by the gathers: as many rows as the tiles have, per K step
        assert h.stats.bytes_by_path["gm->l1"] == (M // BM) * (N // BN) * (BM * K + K * BN) * 2
