"""``tl.join`` / ``tl.split`` / ``tl.interleave`` / ``tl.cat`` / ``tl.flip`` / ``tl.sort``
(tritonpu/language/memory.py, reorder.py): bit-exact on every backend and dtype — -0.0, NaN and infinities
included — made of selects and integer sums over a new last dimension of 2 (blocks of rank > 2 go
through rows of 2, which the NPU's vector unit takes); a last dimension other than 2 is a
compilation error."""
import ml_dtypes
import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.errors import CompilationError


@tritonpu.jit
def _roundtrip(x_ptr, y_ptr, j_ptr, s0_ptr, s1_ptr, i_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(x_ptr + offs)
    b = tl.load(y_ptr + offs)
    j = tl.join(a, b)
    tl.store(j_ptr + offs[:, None] * 2 + tl.arange(0, 2)[None, :], j)
    p, q = j.split()
    tl.store(s0_ptr + offs, p)
    tl.store(s1_ptr + offs, q)
    tl.store(i_ptr + tl.arange(0, 2 * N), tl.interleave(a, b))


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16", "f64", "i32", "i8", "u8"])
@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_join_split_interleave_are_exact(dt, backend):
    npdt = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f64": np.float64,
            "i32": np.int32, "i8": np.int8, "u8": np.uint8}[dt]
    rng = np.random.default_rng(1)
    if dt.startswith(("f", "b")):
        x = rng.standard_normal(32).astype(npdt)
        y = (rng.standard_normal(32) * 3).astype(npdt)
        x[0], x[1], y[2], y[3] = -0.0, np.nan, -np.inf, -0.0
    else:
        x, y = (rng.integers(0 if dt == "u8" else -100, 100, 32).astype(npdt) for _ in range(2))
    j, s0, s1, il = np.zeros((32, 2), npdt), np.zeros(32, npdt), np.zeros(32, npdt), np.zeros(64, npdt)
    _roundtrip[(1,)](x, y, j, s0, s1, il, N=32, backend=backend)
    both = np.stack([x, y], axis=1)
    assert j.tobytes() == both.tobytes()
    assert s0.tobytes() == x.tobytes() and s1.tobytes() == y.tobytes()
    assert il.tobytes() == both.reshape(-1).tobytes()


@tritonpu.jit
def _complex_abs2(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    # interleaved (re, im) pairs, split from a rank-3 block
    offs = tl.arange(0, M)[:, None] * (2 * N) + tl.arange(0, 2 * N)[None, :]
    re, im = tl.split(tl.reshape(tl.load(x_ptr + offs), (M, N, 2)))
    tl.store(o_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], re * re + im * im)


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_split_of_a_rank_3_block(backend):
    z = (np.random.default_rng(2).standard_normal((8, 16)) + 1j * np.random.default_rng(3).standard_normal((8, 16)))
    x = z.astype(np.complex64).view(np.float32)              # (8, 32): re, im, re, im, ...
    o = np.zeros((8, 16), np.float32)
    _complex_abs2[(1,)](x, o, M=8, N=16, backend=backend)
    re, im = x[:, 0::2], x[:, 1::2]
    np.testing.assert_array_equal(o, re * re + im * im)


@tritonpu.jit
def _split_of_four(x_ptr, N: tl.constexpr):
    a, b = tl.split(tl.reshape(tl.load(x_ptr + tl.arange(0, N)), (N // 4, 4)))
    tl.store(x_ptr + tl.arange(0, N // 4), a + b)


def test_split_needs_a_last_dimension_of_two():
    with pytest.raises(CompilationError) as e:
        _split_of_four[(1,)](np.zeros(16, np.float32), N=16)
    assert "tl.split needs a last dimension of size 2, got shape [4, 4]" in str(e.value), str(e.value)
    assert "test_join_split.py" in str(e.value)


@tritonpu.jit
def _cat_sum(x_ptr, y_ptr, o_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    c = tl.cat(tl.load(x_ptr + offs), tl.load(y_ptr + offs), can_reorder=True)       # (2M, N)
    tl.store(o_ptr + tl.arange(0, N), tl.sum(c, axis=0))
    tl.store(c_ptr + tl.arange(0, 2 * M)[:, None] * N + tl.arange(0, N)[None, :], c)


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_cat_holds_both_blocks(backend):
    # Triton's cat may reorder elements (can_reorder=True is required): the column sums are what a
    # program may rely on; tritonpu keeps the order — a's rows, then b's
    rng = np.random.default_rng(5)
    x, y = (rng.integers(-50, 50, (8, 16)).astype(np.int32) for _ in range(2))
    o, c = np.zeros(16, np.int32), np.zeros((16, 16), np.int32)
    _cat_sum[(1,)](x, y, o, c, M=8, N=16, backend=backend)
    np.testing.assert_array_equal(o, x.sum(0) + y.sum(0))
    np.testing.assert_array_equal(c, np.concatenate([x, y]))


@tritonpu.jit
def _cat_ordered(x_ptr, N: tl.constexpr):
    a = tl.load(x_ptr + tl.arange(0, N))
    tl.store(x_ptr + tl.arange(0, 2 * N), tl.cat(a, a))


def test_cat_without_can_reorder_is_an_error_as_in_triton():
    with pytest.raises(CompilationError, match="may reorder elements; pass can_reorder=True"):
        _cat_ordered[(1,)](np.zeros(32, np.float32), N=16)


@tritonpu.jit
def _flips(x_ptr, last_ptr, first_ptr, row_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(last_ptr + offs, tl.flip(x))                  # dim=None: the last dimension
    tl.store(first_ptr + offs, tl.flip(x, 0))
    tl.store(row_ptr + tl.arange(0, N), tl.load(x_ptr + tl.arange(0, N)).flip())


@pytest.mark.parametrize("dt", ["f32", "f16", "i32", "i8"])
@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_flip_is_exact_along_either_dimension(dt, backend):
    npdt = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i8": np.int8}[dt]
    x = (np.random.default_rng(6).standard_normal((8, 32)) * 10).astype(npdt)
    if dt.startswith("f"):
        x[0, 0], x[1, 1], x[2, 2] = -0.0, np.nan, -np.inf
    last, first, row = np.zeros_like(x), np.zeros_like(x), np.zeros(32, npdt)
    _flips[(1,)](x, last, first, row, M=8, N=32, backend=backend)
    assert last.tobytes() == np.flip(x, 1).tobytes()
    assert first.tobytes() == np.flip(x, 0).tobytes()
    assert row.tobytes() == np.flip(x[0]).tobytes()


@tritonpu.jit
def _sorts(x_ptr, up_ptr, down_ptr, cols_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(up_ptr + offs, tl.sort(x))
    tl.store(down_ptr + offs, x.sort(descending=True))
    tl.store(cols_ptr + offs, tl.sort(x, 0))


@pytest.mark.parametrize("dt", ["f32", "f16", "i32", "u8"])
@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_sort(dt, backend):
    npdt = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "u8": np.uint8}[dt]
    rng = np.random.default_rng(8)
    x = (rng.standard_normal((8, 32)) * 10).astype(npdt) if dt.startswith("f") else \
        rng.integers(0, 200 if dt == "u8" else 1000, (8, 32)).astype(npdt)
    up, down, cols = (np.zeros_like(x) for _ in range(3))
    _sorts[(1,)](x, up, down, cols, M=8, N=32, backend=backend)
    np.testing.assert_array_equal(up, np.sort(x, axis=1))
    np.testing.assert_array_equal(down, np.sort(x, axis=1)[:, ::-1])
    np.testing.assert_array_equal(cols, np.sort(x, axis=0))



@tritonpu.jit
def _sort_rows(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(y_ptr + offs, tl.sort(tl.load(x_ptr + offs), descending=True))


@tritonpu.jit
def _half_row_sums(x_ptr, o_ptr, R: tl.constexpr, N: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.arange(0, R)[:, None]
    x = tl.load(x_ptr + (pid * R + r) * N + tl.arange(0, N)[None, :])
    tl.store(o_ptr + pid * R + tl.arange(0, R), tl.sum(x, axis=1))


def test_long_sorts_fit_their_networks_in_ub():
    # the network's reshapes of transposed halves are copies into planned tiles (they were scratch
    # the emitter never gave back: a 1024-element row did not fit); 8192 fits, 16384 does not
    x = np.random.default_rng(5).standard_normal((4, 1024)).astype(np.float32)
    y = np.zeros_like(x)
    h = _sort_rows[(4,)](x, y, N=1024)
    np.testing.assert_array_equal(y, np.sort(x, axis=1)[:, ::-1])
    assert not h.stats.notes
    with pytest.raises(CompilationError) as e:
        _sort_rows[(4,)](np.zeros((4, 16384), np.float32), np.zeros((4, 16384), np.float32), N=16384)
    assert "Unified Buffer" in str(e.value)
    assert str(e.value).splitlines()[-1].index("^") == str(e.value).splitlines()[-2].index("tl.sort")


def test_a_kernel_whose_temporaries_fit_only_without_double_buffering_compiles_without_it():
    # an fp16 row sum widens its 16x1536 block to fp32 (a temporary): that fits UB next to the loaded
    # block, not next to its second buffer too.  The kernel is compiled again with the temporary's
    # room kept free (UB_HEADROOM), where double buffering judges itself that it does not fit, and
    # the notes say so (before session 28: compiled again without the double-buffer pass)
    x = (np.random.default_rng(6).random((48 * 16, 1536)) - 0.5).astype(np.float16)
    o = np.zeros(48 * 16, np.float16)
    h = _half_row_sums[(48,)](x, o, R=16, N=1536)
    np.testing.assert_allclose(o, x.astype(np.float32).sum(1), atol=0.05)
    assert any(n.startswith("UB planned with 98304 bytes left free for the emitter's temporaries: the kernel needs "
                            "196672 bytes") for n in h.stats.notes), h.stats.notes
    assert 'double_buffer = "off: the kernel needs' in h.asm["double-buffer"]


@tritonpu.jit
def _gathers(s_ptr, i_ptr, o_ptr, v_ptr, j_ptr, w_ptr, M: tl.constexpr, N: tl.constexpr, MI: tl.constexpr,
             NI: tl.constexpr, AXIS: tl.constexpr, L: tl.constexpr):
    src = tl.load(s_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    idx = tl.load(i_ptr + tl.arange(0, MI)[:, None] * NI + tl.arange(0, NI)[None, :])
    tl.store(o_ptr + tl.arange(0, MI)[:, None] * NI + tl.arange(0, NI)[None, :], tl.gather(src, idx, AXIS))
    row = tl.load(v_ptr + tl.arange(0, N))                          # 1-D, a permutation of L picks
    tl.store(w_ptr + tl.arange(0, L), row.gather(tl.load(j_ptr + tl.arange(0, L)), 0))


@pytest.mark.parametrize("axis,shapes", [(0, (16, 32, 8, 32)), (1, (16, 32, 16, 64)), (1, (8, 16, 8, 4))])
@pytest.mark.parametrize("dt", ["f32", "f16", "i32", "u8"])
@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_gather_matches_take_along_axis_bit_for_bit(axis, shapes, dt, backend):
    M, N, MI, NI = shapes
    npdt = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "u8": np.uint8}[dt]
    rng = np.random.default_rng(axis + M)
    src = (rng.standard_normal((M, N)) * 50).astype(npdt)
    if dt.startswith("f"):
        src[0, 0], src[1, 1] = -0.0, np.nan                   # come through as they are
    idx = rng.integers(0, M if axis == 0 else N, (MI, NI)).astype(np.int32)
    idx[0, 0] = 0
    out = np.zeros((MI, NI), npdt)
    j = rng.integers(0, N, 8).astype(np.int64)
    w = np.zeros(8, npdt)
    _gathers[(1,)](src, idx, out, src[2].copy(), j, w, M=M, N=N, MI=MI, NI=NI, AXIS=axis, L=8, backend=backend)
    bits = np.uint16 if dt == "f16" else (np.uint8 if dt == "u8" else np.uint32)
    np.testing.assert_array_equal(out.view(bits), np.take_along_axis(src, idx, axis).view(bits))
    np.testing.assert_array_equal(w.view(bits), src[2][j].view(bits))


@tritonpu.jit
def _bad_gather(s_ptr, o_ptr):
    src = tl.load(s_ptr + tl.arange(0, 16)[:, None] * 8 + tl.arange(0, 8)[None, :])
    idx = tl.zeros((4, 4), tl.int32)
    tl.store(o_ptr + tl.arange(0, 4)[:, None] * 4 + tl.arange(0, 4)[None, :], tl.gather(src, idx, 0))


def test_gather_shape_mismatch_is_a_compilation_error():
    with pytest.raises(CompilationError) as e:
        _bad_gather[(1,)](np.zeros(128, np.float32), np.zeros(16, np.float32), backend="ref")
    assert "tl.gather: the index shape [4, 4] must match the source shape [16, 8] except along axis 0" in str(e.value)
    assert "tl.gather(src, idx, 0)" in str(e.value)


@tritonpu.jit
def _halves_and_back(x_ptr, h_ptr, e_ptr, y_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    rm, rn, rh = tl.arange(0, M), tl.arange(0, N), tl.arange(0, N // 2)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    h0, h1 = x.reshape([M, 2, N // 2]).permute(0, 2, 1).split()      # the column halves
    e0, e1 = tl.split(tl.reshape(x, [M, N // 2, 2]))                  # even and odd columns
    half = rm[:, None] * (N // 2) + rh[None, :]
    tl.store(h_ptr + half, h0)
    tl.store(h_ptr + M * (N // 2) + half, h1)
    tl.store(e_ptr + half, e0)
    tl.store(e_ptr + M * (N // 2) + half, e1)
    y = tl.join(h0 * 2, h1 + 1).permute(0, 2, 1).reshape([M, N])      # the halves side by side
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], y)
    z = tl.reshape(tl.join(e0, e1 - 1), (M, N))                        # interleaved
    tl.store(z_ptr + rm[:, None] * N + rn[None, :], z)


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_a_split_of_a_reshaped_block_and_a_join_reshaped_back_are_views_and_inserts(backend):
    """Triton's tutorials split an accumulator as ``acc.reshape([M, 2, N // 2]).permute(0, 2, 1)
    .split()`` and put it back with ``join(..).permute(0, 2, 1).reshape([M, N])``: the halves are
    views of the block (slices), the join two insert_slices -- no selects or sums over pairs."""
    M, N = 16, 64
    x = (np.arange(M * N, dtype=np.float32).reshape(M, N) - 300.5)
    x[0, 0], x[1, 1] = -0.0, np.nan
    h, e = np.zeros((2, M, N // 2), np.float32), np.zeros((2, M, N // 2), np.float32)
    y, z = np.zeros_like(x), np.zeros_like(x)
    k = _halves_and_back[(1,)](x, h, e, y, z, M=M, N=N, backend=backend)
    same = lambda got, want: got.tobytes() == np.ascontiguousarray(want).tobytes()  # noqa: E731
    assert same(h[0], x[:, :N // 2]) and same(h[1], x[:, N // 2:])
    assert same(e[0], x[:, 0::2]) and same(e[1], x[:, 1::2])
    assert same(y, np.concatenate([x[:, :N // 2] * 2, x[:, N // 2:] + 1], axis=1))
    want = x.copy()
    want[:, 1::2] -= 1
    assert same(z, want)
    if backend == "npu":
        ir = k.asm["dce"]
        assert "reduce" not in ir and "select" not in ir
        assert ir.count("= insert_slice ") == 4 and "steps = [1, 2]" in ir


@tritonpu.jit
def _subtiled_epilogue(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk, rh = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K), tl.arange(0, N // 2)
    acc = tl.dot(tl.load(a_ptr + rm[:, None] * K + rk[None, :]), tl.load(b_ptr + rk[:, None] * N + rn[None, :]))
    acc0, acc1 = tl.split(tl.permute(tl.reshape(acc, (M, 2, N // 2)), (0, 2, 1)))
    tl.store(c_ptr + rm[:, None] * N + rh[None, :], acc0.to(tl.float16))
    tl.store(c_ptr + rm[:, None] * N + N // 2 + rh[None, :], acc1.to(tl.float16))


def test_tutorial_09s_epilogue_subtile_at_128x256_fits():
    """Before, the split took the 128 KiB fp32 accumulator into UB (262144 bytes, a CompilationError
    at Triton's persistent-matmul tutorial's default config)."""
    M, N, K = 128, 256, 64
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    _subtiled_epilogue[(1,)](a, b, c, M=M, N=N, K=K)
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=2e-2)


@tritonpu.jit
def _scaled_halves(x_ptr, s_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr, SPLIT: tl.constexpr):
    rm, rn = tl.arange(0, M), tl.arange(0, N)
    acc = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    alpha = tl.load(s_ptr + rm)
    for _ in range(2):
        if SPLIT:       # Triton's attention tutorial (06) on Blackwell: each half scaled, joined back
            acc0, acc1 = acc.reshape([M, 2, N // 2]).permute(0, 2, 1).split()
            acc0 = acc0 * alpha[:, None]
            acc1 = acc1 * alpha[:, None]
            acc = tl.join(acc0, acc1).permute(0, 2, 1).reshape([M, N])
        else:
            acc = acc * alpha[:, None]
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc)


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_halves_scaled_alike_and_joined_back_are_the_whole_block_scaled(backend):
    """The same elementwise op on both halves, with an operand the halves share (a column of
    scales broadcast along the rows), joined back, is that op on the whole block: the kernel is
    the unsplit one (at 128 x 128 fp32 in a loop it did not fit UB: 231936 bytes)."""
    M, N = 128, 128
    rng = np.random.default_rng(4)
    x, s = rng.standard_normal((M, N)).astype(np.float32), rng.standard_normal(M).astype(np.float32)
    y, y1 = np.zeros_like(x), np.zeros_like(x)
    h = _scaled_halves[(1,)](x, s, y, M=M, N=N, SPLIT=True, backend=backend)
    _scaled_halves[(1,)](x, s, y1, M=M, N=N, SPLIT=False, backend=backend)
    assert y.tobytes() == y1.tobytes() == (x * s[:, None] * s[:, None]).tobytes()
    if backend == "npu":
        assert "insert_slice" not in h.asm["dce"] and "slice" not in h.asm["dce"]
