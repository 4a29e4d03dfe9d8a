"""Tensor descriptors — ``tl.make_tensor_descriptor`` in the kernel and ``TensorDescriptor`` from the
host — on every backend, against numpy: loads pad outside the described shape, stores leave it
alone, and a matmul reads its operands through them."""
import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.tools.tensor_descriptor import TensorDescriptor

BACKENDS = ["ref", "cpu", "npu"]
rng = np.random.default_rng(5)


@tritonpu.jit
def scale_dev(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    xd = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN], padding_option=PAD)
    yd = tl.make_tensor_descriptor(y_ptr, shape=[M + 8, N + 8], strides=[N + 8, 1], block_shape=[BM, BN])
    m, n = tl.program_id(0) * BM, tl.program_id(1) * BN
    yd.store([m, n], xd.load([m, n]) * 2)          # y is larger: the padding lands in y


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_device_descriptors_pad_loads_and_mask_stores(backend, pad):
    M, N = 20, 30
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = np.full((M + 8, N + 8), -7.0, np.float32)
    scale_dev[(2, 2)](x, y, M, N, BM=16, BN=16, PAD=pad, backend=backend)
    expect = np.full((M + 8, N + 8), -7.0, np.float32)
    expect[:32, :32] = np.nan if pad == "nan" else 0.0      # the blocks cover 32 x 32, x only 20 x 30
    expect[:M, :N] = 2 * x
    np.testing.assert_array_equal(y, expect)


@tritonpu.jit
def matmul_desc(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    m, n = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([m, k]), b_desc.load([k, n]), acc)
    c_desc.store([m, n], acc)


@pytest.mark.parametrize("backend", BACKENDS)
def test_host_descriptors_from_numpy_and_torch(backend):
    torch = pytest.importorskip("torch")
    M, N, K = 40, 48, 72
    a = torch.randn(M, K).half()
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = torch.zeros(M, N)
    grid = (tritonpu.cdiv(M, 32), tritonpu.cdiv(N, 32))
    matmul_desc[grid](TensorDescriptor.from_tensor(a, [32, 32]), TensorDescriptor.from_tensor(b, [32, 32]),
                      TensorDescriptor(c, [M, N], [N, 1], [32, 32]), K, BM=32, BN=32, BK=32, backend=backend)
    np.testing.assert_allclose(c.numpy(), a.float().numpy() @ b.astype(np.float32), rtol=1e-3, atol=1e-3)


@tritonpu.jit
def copy3(x_desc, y_ptr, A, B, C, BA: tl.constexpr, BB: tl.constexpr, BC: tl.constexpr):
    yd = tl.make_tensor_descriptor(y_ptr, [A, B, C], [B * C, C, 1], [BA, BB, BC])
    yd.store([0, tl.program_id(0) * BB, 0], x_desc.load([0, tl.program_id(0) * BB, 0]) + 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_rank3_descriptors(backend):
    x = rng.integers(-9, 9, (2, 12, 8)).astype(np.int32)
    y = np.zeros_like(x)
    copy3[(3,)](TensorDescriptor.from_tensor(x, [2, 4, 8]), y, 2, 12, 8, BA=2, BB=4, BC=8, backend=backend)
    np.testing.assert_array_equal(y, x + 1)


def test_descriptor_errors_say_what_works():
    with pytest.raises(ValueError, match=r"TensorDescriptor: the last stride must be 1, got \[1, 4\]"):
        TensorDescriptor(np.zeros(16, np.float32), [4, 4], [1, 4], [4, 4])

    @tritonpu.jit
    def bad(x_ptr, N):
        d = tl.make_tensor_descriptor(x_ptr, [N, N], [1, N], [16, 16])
        d.store([0, 0], d.load([0, 0]))

    with pytest.raises(tritonpu.CompilationError, match="tl.make_tensor_descriptor: the last stride must be the "
                                                        r"constant 1 \(the block's rows are contiguous\)"):
        bad[(1,)](np.zeros(256, np.float32), 16, backend="ref")


@tritonpu.jit
def _maybe_make_desc(desc_or_ptr, shape, strides, block_shape):
    if isinstance(desc_or_ptr, tl.tensor_descriptor):      # Triton's tutorial 06 (3.4+)
        return desc_or_ptr
    else:
        return tl.make_tensor_descriptor(desc_or_ptr, shape, strides, block_shape)


@tritonpu.jit
def _copy_either(x, y, N, BLOCK: tl.constexpr):
    dx = _maybe_make_desc(x, shape=[N, 16], strides=[16, 1], block_shape=[BLOCK, 16])
    dy = _maybe_make_desc(y, shape=[N, 16], strides=[16, 1], block_shape=[BLOCK, 16])
    dy.store([tl.program_id(0) * BLOCK, 0], dx.load([tl.program_id(0) * BLOCK, 0]) + 1)


@pytest.mark.parametrize("host", [False, True])
def test_isinstance_tells_a_descriptor_from_a_pointer(host):
    x = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    y = np.zeros_like(x)
    args = (TensorDescriptor(x, [64, 16], [16, 1], [16, 16]), TensorDescriptor(y, [64, 16], [16, 1], [16, 16])) \
        if host else (x, y)
    _copy_either[(4,)](*args, 64, BLOCK=16)
    np.testing.assert_array_equal(y, x + 1)


@tritonpu.jit
def _square_desc(xd, yd, BM: tl.constexpr, BN: tl.constexpr):
    m = tl.program_id(0) * BM
    a = xd.load([m, 0])
    yd.store([m, 0], tl.dot(a, tl.trans(a)) + tl.zeros((BM, BN), tl.float32))


def test_a_block_too_large_names_the_host_descriptors():
    # a 256 x 256 fp32 product does not fit L0C; halving BM cannot help while the host's
    # descriptors keep their 256-row blocks: say so
    x = np.zeros((512, 256), np.float16)
    y = np.zeros((512, 256), np.float32)
    with pytest.raises(tritonpu.CompilationError) as e:
        _square_desc[(2,)](TensorDescriptor(x, [512, 256], [256, 1], [256, 256]),
                           TensorDescriptor(y, [512, 256], [256, 1], [256, 256]), BM=256, BN=256)
    assert "did not make it fit, but the TensorDescriptor arguments xd, yd kept the block_shape made on the " \
           "host: try smaller blocks with descriptors made for them" in str(e.value), str(e.value)
