"""triton-ascend's extension module (``tl.extra.cann.extension``, imported as ``al``) and its
``extract_slice`` / ``insert_slice`` (also ``tl.`` names and tensor methods), on all backends,
against numpy slicing; the hints run and change nothing; the rest is a clear error."""
import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
import tritonpu.language.extra.cann.extension as al

BACKENDS = ["ref", "cpu", "npu"]


@tritonpu.jit
def slices_1d(x_ptr, o_ptr, o2_ptr, o3_ptr, start, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    s = tl.extract_slice(x, [start], [8], [2])                    # a runtime offset
    tl.store(o_ptr + tl.arange(0, 8), s)
    tl.store(o2_ptr + offs, al.insert_slice(x, s * 10, [3], [8], [3]))
    al.compile_hint(x, "hint_d", [N, 4])
    al.multibuffer(x, 2)
    acc = 0.0
    for i in al.parallel(0, 4, bind_sub_block=True):
        acc += i * 1.0
    tl.store(o3_ptr, acc + al.sub_vec_id() + al.sub_vec_num())


@pytest.mark.parametrize("backend", BACKENDS)
def test_extract_and_insert_slices_with_runtime_offsets_and_strides(backend):
    x = np.arange(32, dtype=np.float32)
    o, o2, o3 = np.zeros(8, np.float32), np.zeros(32, np.float32), np.zeros(1, np.float32)
    slices_1d[(1,)](x, o, o2, o3, 5, N=32, backend=backend)
    np.testing.assert_array_equal(o, x[5:21:2])
    expect = x.copy()
    expect[3:27:3] = x[5:21:2] * 10
    np.testing.assert_array_equal(o2, expect)
    assert o3[0] == 0 + 1 + 2 + 3 + 0 + 1                          # the loop ran; one vector unit


@tritonpu.jit
def slices_2d(x_ptr, o_ptr, p_ptr, M: tl.constexpr, N: tl.constexpr):
    idx = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + idx)
    s = x.extract_slice([1, 2], [2, 3], [2, 1])
    tl.store(o_ptr + idx, tl.insert_slice(tl.zeros((M, N), tl.float32), s, [0, 0], [2, 3], [1, 1]))
    lead = tl.extract_slice(x, [0, 0], [3, 4], [1, 1])            # the leading sub-block: a view
    tl.store(p_ptr + tl.arange(0, 3)[:, None] * 4 + tl.arange(0, 4)[None, :], lead)


@pytest.mark.parametrize("backend", BACKENDS)
def test_slices_of_2d_blocks(backend):
    x = np.arange(40, dtype=np.float32).reshape(5, 8)
    o, p = np.zeros_like(x), np.zeros((3, 4), np.float32)
    h = slices_2d[(1,)](x, o, p, M=5, N=8, backend=backend)
    expect = np.zeros_like(x)
    expect[:2, :3] = x[1:5:2, 2:5]
    np.testing.assert_array_equal(o, expect)
    np.testing.assert_array_equal(p, x[:3, :4])
    assert "%lead = slice %x : tensor<3x4xf32>" in h.asm["ir"]       # the leading sub-block: one view


@tritonpu.jit
def ascend_ut_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # triton-ascend's pytest_ut/test_extract_slice.py, as written there
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    out_sub = tl.extract_slice(output, [block_start], [32], [1])
    out_idx = block_start + tl.arange(0, 32)
    out_msk = out_idx < n_elements
    tl.store(output_ptr + out_idx, out_sub, mask=out_msk)


def test_triton_ascend_extract_slice_unit_test():
    x, y = np.random.default_rng(0).random((2, 1024), dtype=np.float32)
    out = np.zeros(1024, np.float32)
    ascend_ut_kernel[(1,)](x, y, out, 1024, BLOCK_SIZE=1024)
    np.testing.assert_array_equal(out[:32], (x + y)[:32])


def test_extension_errors_name_what_is_wrong():
    @tritonpu.jit
    def wrong_sizes(x_ptr):
        x = tl.load(x_ptr + tl.arange(0, 16))
        tl.store(x_ptr + tl.arange(0, 16), tl.insert_slice(x, x, [0], [8], [1]))

    with pytest.raises(tritonpu.CompilationError, match=r"insert_slice: the inserted block is \[16\], the sizes say \[8\]"):
        wrong_sizes[(1,)](np.zeros(16, np.float32), backend="ref")

    @tritonpu.jit
    def triple(x_ptr):
        x = tl.load(x_ptr + tl.arange(0, 16))
        al.multibuffer(x, 3)

    with pytest.raises(tritonpu.CompilationError, match=r"multibuffer supports size=2 only"):
        triple[(1,)](np.zeros(16, np.float32), backend="ref")
    with pytest.raises(AttributeError, match=r"triton-ascend's extension `index_select_simd` is not supported"):
        al.index_select_simd
    assert tl.extra.cann.extension is al
