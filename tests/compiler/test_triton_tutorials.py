"""Kernels written the way Triton's tutorials write them (``import tritonpu as triton``), run on the
NPU backend against numpy: grouped-ordering matmul with autotune configs, ``% M`` wrapped offsets
and a jitted activation; the persistent fused softmax with ``tl.range(..., num_stages=)``; the
fused layer-norm forward with fp16 inputs and three passes over the row; the grouped GEMM (tutorial
08), its problems at offsets into one array each."""
import re

import numpy as np
import pytest

import tritonpu as triton
import tritonpu.language as tl
from tritonpu.errors import CompilationError


@triton.autotune(configs=[triton.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=3, num_warps=4)], key=['M', 'N', 'K'])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr, ACTIVATION: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)

@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


def _matmul(a, b, activation=""):
    M, K = a.shape
    K, N = b.shape
    c = np.empty((M, N), dtype=np.float16)
    grid = lambda META: (triton.cdiv(M, META['BLOCK_SIZE_M']) * triton.cdiv(N, META['BLOCK_SIZE_N']), )  # noqa: E731
    h = matmul_kernel[grid](a, b, c, M, N, K, a.strides[0] // 2, a.strides[1] // 2, b.strides[0] // 2,
                            b.strides[1] // 2, c.strides[0] // 2, c.strides[1] // 2, ACTIVATION=activation)
    return c, h


@pytest.mark.parametrize("M,N,K", [(128, 128, 64), (200, 136, 100), (64, 192, 32)])
@pytest.mark.parametrize("activation", ["", "leaky_relu"])
def test_tutorial_matmul(M, N, K, activation):
    rng = np.random.default_rng(M + N + K)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c, h = _matmul(a, b, activation)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    if activation:
        ref = np.where(ref >= 0, ref, 0.01 * ref)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=2e-2, atol=5e-2)
    assert h.backend == "npu" and h.stats.pipe_busy["cube"] > 0


# the tutorial's autotune list: its eight fp16 configs and its two fp8 ones
TUTORIAL_CONFIGS = [(128, 256, 64), (64, 256, 32), (128, 128, 32), (128, 64, 32), (64, 128, 32), (128, 32, 32),
                    (64, 32, 32), (32, 64, 32), (128, 256, 128), (256, 128, 128)]


def _at_config(config, M, N, K, activation, seed, column_major=""):
    """(a, b, c, handle): the tutorial kernel run at one (BM, BN, BK) config on random fp16 inputs
    (those named in ``column_major`` stored column-major: ``x @ W.T`` with ``W`` row-major)."""
    bm, bn, bk = config
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    a = np.asfortranarray(a) if "a" in column_major else a
    b = np.asfortranarray(b) if "b" in column_major else b
    c = np.empty((M, N), np.float16)
    h = matmul_kernel.fn[(triton.cdiv(M, bm) * triton.cdiv(N, bn),)](
        a, b, c, M, N, K, *[s // 2 for s in a.strides + b.strides], N, 1, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
        BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION=activation)
    return a, b, c, h


@pytest.mark.parametrize("config", TUTORIAL_CONFIGS, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("M,N,K", [(200, 300, 160), (256, 256, 128)])
def test_tutorial_matmul_at_every_config_of_its_autotune_list(config, M, N, K):
    """Every config compiles and is right, also where the `% M` / `% N` offsets wrap around (M, N
    not multiples of the block: those programs gather rows / columns straight into L1); no
    operand or address passes through the Unified Buffer."""
    a, b, c, h = _at_config(config, M, N, K, "", seed=sum(config))
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32),
                               rtol=2e-2, atol=5e-2)
    assert set(h.stats.bytes_by_path) == {"gm->l1", "l1->l0a", "l1->l0b", "l0c->gm"}, h.stats.bytes_by_path


@pytest.mark.parametrize("config", TUTORIAL_CONFIGS, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("column_major", ["a", "b"])
def test_tutorial_matmul_with_a_column_major_operand_at_every_config(config, column_major):
    """A column-major operand (``x @ W.T``, ``stride_ak != 1``) is loaded as its transpose and
    transposed on the way to L0: straight into L1 at every config, also the programs whose `% M` /
    `% N` offsets wrap around (a gather of its columns); before, it went through UB and 6 of the 10
    configs did not fit."""
    a, b, c, h = _at_config(config, 200, 300, 160, "", seed=sum(config), column_major=column_major)
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32),
                               rtol=2e-2, atol=5e-2)
    assert set(h.stats.bytes_by_path) == {"gm->l1", "l1->l0a", "l1->l0b", "l0c->gm"}, h.stats.bytes_by_path


@triton.jit
def wrapped_trans_matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, BM: tl.constexpr, BN: tl.constexpr,
                         BK: tl.constexpr, A_T: tl.constexpr):
    # the tutorial's `% M` / `% N` offsets, one operand loaded with K along its rows and given to
    # tl.dot through tl.trans
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    offs_m = (pid_m * BM + tl.arange(0, BM)) % M
    offs_n = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    if A_T:
        a_ptrs = a_ptr + offs_k[:, None] * sak + offs_m[None, :] * sam          # [BK, BM]
        b_ptrs = b_ptr + offs_k[:, None] * sbk + offs_n[None, :] * sbn
    else:
        a_ptrs = a_ptr + offs_m[:, None] * sam + offs_k[None, :] * sak
        b_ptrs = b_ptr + offs_n[:, None] * sbn + offs_k[None, :] * sbk          # [BN, BK]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        if A_T:
            a = tl.trans(tl.load(a_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0))
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0)
        else:
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0)
            b = tl.trans(tl.load(b_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0))
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    om, on = pid_m * BM + tl.arange(0, BM), pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + om[:, None] * N + on[None, :], acc, mask=(om[:, None] < M) & (on[None, :] < N))


@pytest.mark.parametrize("a_t", [True, False])
@pytest.mark.parametrize("column_major", ["", "a", "b"])
def test_tl_trans_of_a_tile_whose_offsets_wrap(a_t, column_major):
    """tl.trans of an operand loaded with K along its rows, with wrapped `% M` / `% N` offsets: when
    the load's rows are not contiguous it is loaded transposed -- under the no-wrap guard too (the
    guard yields the tile, viewed after it; tl.trans reads the tile itself) -- and right."""
    M, N, K = 200, 136, 96
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    a = np.asfortranarray(a) if column_major == "a" else a
    b = np.asfortranarray(b) if column_major == "b" else b
    c = np.zeros((M, N), np.float32)
    h = wrapped_trans_matmul[(triton.cdiv(M, 64), triton.cdiv(N, 64))](
        a, b, c, M, N, K, *[s // 2 for s in a.strides + b.strides], BM=64, BN=64, BK=32, A_T=a_t)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
    assert set(h.stats.bytes_by_path) == {"gm->l1", "l1->l0a", "l1->l0b", "l0c->gm"}, h.stats.bytes_by_path


@triton.jit
def wrapped_and_masked_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # the tutorial's `% M` / `% N` offsets and, beside them, the bounds `offs_am < M` some kernels keep
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    offs_am = (pid_m * BM + tl.arange(0, BM)) % M
    offs_bn = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_am[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_bn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        left = K - k * BK
        a = tl.load(a_ptrs, mask=(offs_am[:, None] < M) & (offs_k[None, :] < left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < left) & (offs_bn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * N
    om, on = pid_m * BM + tl.arange(0, BM), pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + om[:, None] * N + on[None, :], acc, mask=(om[:, None] < M) & (on[None, :] < N))


@pytest.mark.parametrize("M,N,K", [(256, 256, 128), (200, 136, 96)])
def test_a_bound_beside_wrapped_offsets_is_known_to_hold(M, N, K):
    """`offs_am < M` with `offs_am = (..) % M` holds whenever M > 0: the mask is that uniform
    condition, so the load stays a tile (or a row gather where the offsets wrap) straight into L1
    -- it was an element-by-element load whose pointer block did not fit UB at 128x128x64."""
    rng = np.random.default_rng(9)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    h = wrapped_and_masked_matmul[(triton.cdiv(M, 128), triton.cdiv(N, 128))](a, b, c, M, N, K, BM=128, BN=128, BK=64)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
    assert set(h.stats.bytes_by_path) == {"gm->l1", "l1->l0a", "l1->l0b", "l0c->gm"}, h.stats.bytes_by_path


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr,
                   num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


@pytest.mark.parametrize("rows,cols", [(1823, 781), (5, 64), (97, 1000)])
def test_tutorial_fused_softmax(rows, cols):
    x = np.random.default_rng(rows).standard_normal((rows, cols)).astype(np.float32)
    y = np.empty_like(x)
    programs = min(48, rows)
    h = softmax_kernel[(programs, 1, 1)](y, x, x.strides[0] // 4, y.strides[0] // 4, rows, cols,
                                         BLOCK_SIZE=triton.next_power_of_2(cols), num_stages=2)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    assert 'double_buffer = "on' in h.asm["double-buffer"]
    assert "reuse_loaded_tiles" not in h.asm["buffer-planning"]        # only when nothing else fits


@pytest.mark.parametrize("cols", [20000, 32768])
def test_tutorial_fused_softmax_with_a_row_of_half_the_unified_buffer(cols):
    # BLOCK_SIZE = next_power_of_2(cols) = 32768 fp32: 128 KB of UB's 192. It fits only when the
    # row's tile is reused in place (x - max, exp, / sum) rather than kept for its transfers
    rows = 6
    x = np.random.default_rng(cols).standard_normal((rows, cols)).astype(np.float32)
    y = np.empty_like(x)
    h = softmax_kernel[(4, 1, 1)](y, x, cols, cols, rows, cols, BLOCK_SIZE=triton.next_power_of_2(cols),
                                  num_stages=2)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert "reuse_loaded_tiles = true" in h.asm["buffer-planning"]


def test_tutorial_softmax_sizes_its_grid_from_the_warmed_kernel():
    # the tutorial's occupancy code: warmup, _init_handles, n_regs, metadata.shared, then a launch of
    # the warmed kernel with the runtime arguments only (older tutorial) or with the constexprs too
    props = triton.runtime.driver.active.utils.get_device_properties(0)
    rows, cols = 300, 781
    x = np.random.default_rng(1).standard_normal((rows, cols)).astype(np.float32)
    y = np.zeros_like(x)
    block, num_warps = triton.next_power_of_2(cols), 8
    kernel = softmax_kernel.warmup(y, x, cols, cols, rows, cols, BLOCK_SIZE=block, num_stages=2,
                                   num_warps=num_warps, grid=(1,))
    kernel._init_handles()
    occupancy = props["max_num_regs"] // (kernel.n_regs * props["warpSize"] * num_warps)
    assert 0 < kernel.metadata.shared <= props["max_shared_mem"]
    occupancy = min(occupancy, props["max_shared_mem"] // kernel.metadata.shared)
    assert occupancy == 1                         # one program at a time per AI core
    programs = min(props["multiprocessor_count"] * occupancy, rows)
    e = np.exp(x - x.max(1, keepdims=True))
    h = kernel[(programs, 1, 1)](y, x, cols, cols, rows, cols)
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    assert h.grid == (programs, 1, 1) and h.stats.programs == programs
    y[:] = 0
    kernel[(programs, 1, 1)](y, x, cols, cols, rows, cols, block, 2)
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


@triton.jit
def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@pytest.mark.parametrize("M,N,block", [(300, 1000, 512), (7, 64, 64), (33, 4096, 1024)])
def test_tutorial_layer_norm_forward(M, N, block):
    rng = np.random.default_rng(N)
    x = rng.standard_normal((M, N)).astype(np.float16)
    w = rng.random(N).astype(np.float16)
    b = rng.random(N).astype(np.float16)
    y = np.empty_like(x)
    mean = np.empty(M, np.float32)
    rstd = np.empty(M, np.float32)
    _layer_norm_fwd_fused[(M,)](x, y, w, b, mean, rstd, x.strides[0] // 2, N, 1e-5, BLOCK_SIZE=block)
    xf = x.astype(np.float32)
    mu = xf.mean(1, keepdims=True)
    var = ((xf - mu) ** 2).mean(1, keepdims=True)
    ref = (xf - mu) / np.sqrt(var + 1e-5) * w.astype(np.float32) + b.astype(np.float32)
    np.testing.assert_allclose(y.astype(np.float32), ref, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(mean, mu[:, 0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rstd, 1 / np.sqrt(var[:, 0] + 1e-5), rtol=1e-4)


def test_a_256x256_accumulator_names_the_line_the_user_wrote():
    """A 256x256 fp32 accumulator fits neither L0C (128 KiB) nor UB.  The message pointed at an
    'if' the source does not have (a pass had made the K loop two versions); it names the user's
    tl.dot and a block size that fits."""
    a = np.zeros((200, 100), np.float16)
    b = np.zeros((100, 300), np.float16)
    c = np.empty((200, 300), np.float16)
    with pytest.raises(CompilationError) as e:
        matmul_kernel.fn[(2,)](a, b, c, 200, 300, 100, 100, 1, 300, 1, 300, 1, BLOCK_SIZE_M=256, BLOCK_SIZE_N=256,
                               BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION="")
    msg = str(e.value)
    # (the accumulator, kept in L0C since session 19, overflows L0C at the user's tl.dot)
    assert "'if'" not in msg and "of L0C at once" in msg and "accumulator = tl.dot(a, b, accumulator)" in msg, msg
    assert "it fits with BLOCK_SIZE_M=128" in msg or "it fits with BLOCK_SIZE_N=128" in msg, msg


@pytest.mark.parametrize("config", [(128, 256, 64), (256, 128, 128)], ids=lambda c: "x".join(map(str, c)))
def test_the_leaky_relu_epilogue_at_the_largest_configs_runs_a_few_rows_at_a_time(config):
    """The tutorial's own activation at its first autotune config: the 128x256 fp32 accumulator
    and leaky_relu's temporaries do not fit UB together (263680 bytes: it did not compile); the
    epilogue-rows pass drains the accumulator from L0C a few rows at a time and runs the epilogue
    on each (results element for element as before)."""
    a, b, c, h = _at_config(config, 260, 300, 100, "leaky_relu", seed=7)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), np.where(ref >= 0, ref, 0.01 * ref), rtol=2e-2, atol=5e-2)
    ir = h.asm["epilogue-rows"]
    starts = [int(s) for s in re.findall(r"= slice %\w+ \{offsets = \[(\d+), 0\][,}]", ir)]
    assert len(starts) >= 2 and starts[:2] == [0, starts[1]] and starts[1] in (16, 32, 64, 128), ir
    assert "mov.l0c.ub.f32.f32" in h.asm["isa"]          # FIX drains the rows


@triton.jit
def _wrapped_matmul_row_scale(a_ptr, b_ptr, c_ptr, s_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                              BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = (pid_m * BM + tl.arange(0, BM)) % M
    offs_bn = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + offs_am[:, None] * K + (k + offs_k)[None, :])
        b = tl.load(b_ptr + (k + offs_k)[:, None] * N + offs_bn[None, :])
        acc = tl.dot(a, b, acc)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    acc = acc * tl.load(s_ptr + offs_m, mask=offs_m < M, other=0.0)[:, None]        # per-row dequant scale
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.float16),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@pytest.mark.parametrize("M,N", [(256, 256), (200, 300)])
def test_the_versions_of_a_wrapped_k_loop_share_their_zeros_in_l0c(M, N):
    """The ``% M`` / ``% N`` guards make the K loop four versions (unswitch), all starting from the
    same ``tl.zeros``: they were a 128x256 fp32 tile in UB (no single loop used them), and with a
    per-row scale epilogue the tutorial's first config needed 263680 bytes of UB.  The zeros are
    made in L0C, as for one loop."""
    K = 128
    rng = np.random.default_rng(M)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = (rng.standard_normal((K, N)) / 8).astype(np.float16)
    s = rng.standard_normal(M).astype(np.float32)
    c = np.zeros((M, N), np.float16)
    h = _wrapped_matmul_row_scale[(triton.cdiv(M, 128), triton.cdiv(N, 256))](a, b, c, s, M, N, K, BM=128, BN=256,
                                                                              BK=64)
    np.testing.assert_allclose(c.astype(np.float32), (a.astype(np.float32) @ b.astype(np.float32)) * s[:, None],
                               rtol=2e-2, atol=2e-2)
    assert not re.search(r"= splat %\w+ \{ub = \d+\} : tensor<128x256xf32>", h.asm["buffer-planning"])


@triton.jit
def grouped_matmul_kernel(a_all, b_all, c_all, group_offs, group_gemm_sizes, g_lds, group_size,
                          NUM_SM: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                          BLOCK_SIZE_K: tl.constexpr):
    # Triton's grouped GEMM (tutorial 08) as written, except that each problem's matrices are at
    # offsets into one array each (the tutorial loads raw addresses and casts them to pointers)
    tile_idx = tl.program_id(0)
    last_problem_end = 0
    for g in range(group_size):
        gm = tl.load(group_gemm_sizes + g * 3)
        gn = tl.load(group_gemm_sizes + g * 3 + 1)
        gk = tl.load(group_gemm_sizes + g * 3 + 2)
        num_m_tiles = tl.cdiv(gm, BLOCK_SIZE_M)
        num_n_tiles = tl.cdiv(gn, BLOCK_SIZE_N)
        num_tiles = num_m_tiles * num_n_tiles
        while (tile_idx >= last_problem_end and tile_idx < last_problem_end + num_tiles):
            k = gk
            lda = tl.load(g_lds + g * 3)
            ldb = tl.load(g_lds + g * 3 + 1)
            ldc = tl.load(g_lds + g * 3 + 2)
            a_ptr = a_all + tl.load(group_offs + g * 3)
            b_ptr = b_all + tl.load(group_offs + g * 3 + 1)
            c_ptr = c_all + tl.load(group_offs + g * 3 + 2)
            tile_idx_in_gemm = tile_idx - last_problem_end
            tile_m_idx = tile_idx_in_gemm // num_n_tiles
            tile_n_idx = tile_idx_in_gemm % num_n_tiles
            offs_am = tile_m_idx * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_bn = tile_n_idx * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            offs_k = tl.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + offs_am[:, None] * lda + offs_k[None, :]
            b_ptrs = b_ptr + offs_k[:, None] * ldb + offs_bn[None, :]
            accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
            for kk in range(0, tl.cdiv(k, BLOCK_SIZE_K)):
                tl.multiple_of(a_ptrs, [16, 16])
                tl.multiple_of(b_ptrs, [16, 16])
                a = tl.load(a_ptrs)
                b = tl.load(b_ptrs)
                accumulator += tl.dot(a, b)
                a_ptrs += BLOCK_SIZE_K
                b_ptrs += BLOCK_SIZE_K * ldb
            c = accumulator.to(tl.float16)
            offs_cm = tile_m_idx * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_cn = tile_n_idx * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            c_ptrs = c_ptr + ldc * offs_cm[:, None] + offs_cn[None, :]
            tl.store(c_ptrs, c)
            tile_idx += NUM_SM
        last_problem_end = last_problem_end + num_tiles


@pytest.mark.parametrize("config", [(128, 128, 32), (64, 64, 32)], ids=lambda c: "x".join(map(str, c)))
def test_tutorial_grouped_gemm(config):
    """Four problems of different shapes (leading dimensions read from memory: their sign unknown to
    the compiler) on NUM_SM persistent programs, at the tutorial's 128x128x32 (before session 34:
    213504 bytes of UB, the strides' other branch moved its pointer blocks element by element)."""
    BM, BN, BK = config
    sizes = [(256, 256, 256), (512, 256, 128), (128, 512, 256), (256, 128, 512)]
    rng = np.random.default_rng(8)
    A = [(rng.random((m, k)) - 0.5).astype(np.float16) for m, n, k in sizes]
    B = [(rng.random((k, n)) - 0.5).astype(np.float16) for m, n, k in sizes]
    a_all = np.concatenate([x.ravel() for x in A])
    b_all = np.concatenate([x.ravel() for x in B])
    c_all = np.zeros(sum(m * n for m, n, k in sizes), np.float16)
    offs, at = [], np.zeros(3, np.int64)
    for m, n, k in sizes:
        offs += list(at)
        at += (m * k, k * n, m * n)
    NUM_SM = 24
    h = grouped_matmul_kernel[(NUM_SM,)](a_all, b_all, c_all, np.array(offs, np.int32),
                                         np.array([x for s in sizes for x in s], np.int32),
                                         np.array([x for m, n, k in sizes for x in (k, n, n)], np.int32), len(sizes),
                                         NUM_SM=NUM_SM, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK)
    at = 0
    for (m, n, k), a, b in zip(sizes, A, B):
        ref = a.astype(np.float32) @ b.astype(np.float32)
        np.testing.assert_allclose(c_all[at:at + m * n].reshape(m, n).astype(np.float32), ref, rtol=1e-2, atol=1e-2)
        at += m * n
    assert "element-by-element" not in h.asm["isa"]
