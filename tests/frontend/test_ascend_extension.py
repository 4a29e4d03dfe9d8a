"""triton-ascend's extension module (``tl.extra.cann.extension``, imported as ``al``) and its
``extract_slice`` / ``insert_slice`` (also ``tl.`` names and tensor methods), on all backends,
against numpy slicing; the hints run and change nothing; the rest is a clear error."""
import re

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
def score_halves(q_ptr, k_ptr, o_ptr, odd_ptr, full_ptr, M: tl.constexpr, N: tl.constexpr, D: tl.constexpr):
    # attention-sized scores split with constant offsets (the columns' halves, every other row and
    # column from (1, 1)) and a half written back: sub-block views and one insert, no gathers
    rm, rn, rd, rh = tl.arange(0, M), tl.arange(0, N), tl.arange(0, D), tl.arange(0, N // 2)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    k = tl.load(k_ptr + rn[:, None] * D + rd[None, :])
    s = tl.dot(q, tl.trans(k))
    left = tl.extract_slice(s, [0, 0], [M, N // 2], [1, 1])
    right = tl.extract_slice(s, [0, N // 2], [M, N // 2], [1, 1])
    odd = tl.extract_slice(s, [1, 1], [M // 2, N // 2], [2, 2])
    r = left * 2.0 + right
    tl.store(o_ptr + rm[:, None] * (N // 2) + rh[None, :], r)
    tl.store(odd_ptr + tl.arange(0, M // 2)[:, None] * (N // 2) + rh[None, :], odd)
    full = tl.insert_slice(s, r, [0, N // 2], [M, N // 2], [1, 1])
    full = tl.insert_slice(full, odd * 0.5, [1, 0], [M // 2, N // 2], [2, 2])
    tl.store(full_ptr + rm[:, None] * N + rn[None, :], full)


@pytest.mark.parametrize("backend", BACKENDS)
def test_constant_slices_of_attention_tiles_are_views_and_one_insert(backend):
    """With constant offsets and strides, extract_slice is a sub-block view (``slice``) and
    insert_slice one ``insert_slice`` op (a copy, the part copied over): a 128 x 128 fp32 score
    tile fits the NPU (with gathers it needed a 32768 x 2 block); a sub-block not starting 32-byte
    aligned in UB is copied element by element (a note says so)."""
    M, N, D = 128, 128, 64
    rng = np.random.default_rng(7)
    q = rng.standard_normal((M, D)).astype(np.float16)
    k = rng.standard_normal((N, D)).astype(np.float16)
    o, odd, full = np.zeros((M, N // 2), np.float32), np.zeros((M // 2, N // 2), np.float32), np.zeros((M, N), np.float32)
    h = score_halves[(1,)](q, k, o, odd, full, M=M, N=N, D=D, backend=backend)
    s = q.astype(np.float32) @ k.astype(np.float32).T
    r = s[:, :N // 2] * 2 + s[:, N // 2:]
    np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(odd, s[1::2, 1::2], rtol=1e-5, atol=1e-4)
    expect = s.copy()
    expect[:, N // 2:] = r
    expect[1::2, ::2] = s[1::2, 1::2] * 0.5
    np.testing.assert_allclose(full, expect, rtol=1e-5, atol=1e-4)
    ir = h.asm["ir"]
    assert re.search(r"= slice %s \{offsets = \[0, 64\], steps = \[1, 1\]\} : tensor<128x64xf32>", ir), ir
    assert re.search(r"= slice %s \{offsets = \[1, 1\], steps = \[2, 2\]\} : tensor<64x64xf32>", ir)
    assert len(re.findall(r"= insert_slice ", ir)) == 2 and "select" not in ir
    if backend == "npu":
        assert any("copied one element at a time" in n for n in h.stats.notes)


@pytest.mark.parametrize("backend", BACKENDS)
def test_constant_slices_of_rank_3_blocks(backend):
    @tritonpu.jit
    def rank3(x_ptr, o_ptr, p_ptr):
        i = tl.arange(0, 4)[:, None, None] * 64 + tl.arange(0, 8)[None, :, None] * 8 + tl.arange(0, 8)[None, None, :]
        x = tl.load(x_ptr + i)
        s = tl.extract_slice(x, [1, 0, 4], [2, 8, 4], [2, 1, 1])
        j = tl.arange(0, 2)[:, None, None] * 32 + tl.arange(0, 8)[None, :, None] * 4 + tl.arange(0, 4)[None, None, :]
        tl.store(o_ptr + j, s)
        tl.store(p_ptr + i, tl.insert_slice(x, s + 1000.0, [0, 0, 0], [2, 8, 4], [1, 1, 2]))

    x = np.arange(256, dtype=np.float32).reshape(4, 8, 8)
    o, p = np.zeros((2, 8, 4), np.float32), np.zeros_like(x)
    rank3[(1,)](x, o, p, backend=backend)
    np.testing.assert_array_equal(o, x[1::2, :, 4:])
    expect = x.copy()
    expect[:2, :, 0:8:2] = x[1::2, :, 4:] + 1000
    np.testing.assert_array_equal(p, expect)


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


@tritonpu.jit
def halves_of_a_product(a_ptr, b_ptr, c_ptr, t_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # triton-ascend's matmul tutorial: the accumulator stored in halves, one per vector sub-block
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    acc = tl.dot(tl.load(a_ptr + rm[:, None] * K + rk[None, :]), tl.load(b_ptr + rk[:, None] * N + rn[None, :]))
    SUB: tl.constexpr = M // 2
    for s in al.parallel(0, 2, bind_sub_block=True):
        half = al.extract_slice(acc, (s * SUB, 0), (SUB, N), (1, 1))
        rows = s * SUB + tl.arange(0, SUB)
        tl.store(c_ptr + rows[:, None] * N + rn[None, :], half.to(tl.float16))
    x8 = tl.full((4,), 127, tl.int8)
    for i in range(4):
        off = i * 1                          # a name made from the variable places the slice
        part = tl.extract_slice(x8, (off,), (1,), (1,))
        tl.store(t_ptr + i + tl.arange(0, 1), part + i)     # i is an int32: 127 + i does not wrap


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_loop_whose_variable_places_slices_is_unrolled_into_views(backend):
    """``for s in parallel(0, 2)``: unrolled (the variable an int32 constant in each trip), the
    slices are views of the 64 KiB accumulator; before, a one-hot gather of a 32768 x 2 block did not
    fit the NPU's UB (the triton-ascend matmul tutorial at both its configs)."""
    M = N = 128
    K = 64
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(s).astype(np.float16) for s in ((M, K), (K, N)))
    c, t = np.zeros((M, N), np.float16), np.zeros(4, np.int32)
    h = halves_of_a_product[(1,)](a, b, c, t, M=M, N=N, K=K, backend=backend)
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2,
                               atol=1e-2)
    assert t.tolist() == [127, 128, 129, 130]
    ir = h.asm["ir"]
    assert re.search(r"= slice %acc \{offsets = \[64, 0\], steps = \[1, 1\]\} : tensor<64x128xf32>", ir), ir
    assert "for " not in ir and "gather" not in ir


@tritonpu.jit
def padded_slices(x_ptr, o_ptr, p_ptr, N: tl.constexpr, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(o_ptr + tl.arange(0, B), al.extract_slice(x, (N // 2,), (B,), (1,)))      # past the end
    tl.store(p_ptr + tl.arange(0, 8), tl.extract_slice(x, (-5,), (8,), (2,)))         # before the start


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_constant_slice_reaching_past_the_block_is_a_view_padded_with_zeros(backend):
    """vllm-ascend's swiglu_quant slices 1536 elements of a 512-element row: the positions inside are
    a view, the rest zeros (as the gather gave), with no gather."""
    x = np.arange(1, 65, dtype=np.float32)
    o, p = np.zeros(48, np.float32), np.zeros(8, np.float32)
    h = padded_slices[(1,)](x, o, p, N=64, B=48, backend=backend)
    assert o.tolist() == x[32:].tolist() + [0.0] * 16
    assert p.tolist() == [0.0, 0.0, 0.0] + x[1:11:2].tolist()
    assert "gather" not in h.asm["ir"] and "select" not in h.asm["ir"]
