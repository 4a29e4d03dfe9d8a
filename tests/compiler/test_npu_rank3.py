"""Rank-3 blocks of pointers on the NPU: memory analysis makes them rank-3 tile transfers, which
the emitter moves as one rank-2 transfer per leading index (codegen/emit_memory.py ``slices``).
Results against numpy and the reference backend: masks on each dimension, runtime and permuted
strides, ``other``, a loop (double buffered or not), and the transfers the ISA shows."""
import re

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl


@tritonpu.jit
def _scale3(x_ptr, y_ptr, nb, nm, nk, sb, sm, sk, B: tl.constexpr, M: tl.constexpr, K: tl.constexpr):
    ib = tl.arange(0, B)[:, None, None]
    im = tl.arange(0, M)[None, :, None]
    ik = tl.arange(0, K)[None, None, :]
    mask = (ib < nb) & (im < nm) & (ik < nk)
    x = tl.load(x_ptr + ib * sb + im * sm + ik * sk, mask=mask, other=-1.0)
    tl.store(y_ptr + ib * (M * K) + im * K + ik, x * 2 + 1)                          # full block
    tl.store(y_ptr + B * M * K + ib * (M * K) + im * K + ik, x, mask=mask)         # masked


@pytest.mark.parametrize("backend", ["npu", "ref"])
@pytest.mark.parametrize("nb,nm,nk", [(4, 16, 32), (3, 16, 32), (4, 9, 32), (4, 16, 20), (2, 5, 7), (0, 16, 32)])
@pytest.mark.parametrize("layout", ["contiguous", "permuted"])
def test_rank3_loads_and_stores(nb, nm, nk, layout, backend):
    B, M, K = 4, 16, 32
    rng = np.random.default_rng(nb * 100 + nm + nk)
    if layout == "contiguous":
        src = rng.standard_normal((nb, nm, nk)).astype(np.float32)
        view = src
    else:                               # stored (nk, nb, nm): strides (nm, 1, nb*nm)
        src = rng.standard_normal((nk, nb, nm)).astype(np.float32)
        view = src.transpose(1, 2, 0)
    sb, sm, sk = (s // 4 for s in view.strides) if src.size else (nm * nk, nk, 1)
    y = np.full(2 * B * M * K, 7.0, np.float32)
    _scale3[(1,)](src, y, nb, nm, nk, sb, sm, sk, B=B, M=M, K=K, backend=backend)
    full = np.full((B, M, K), -1.0, np.float32)
    full[:nb, :nm, :nk] = view
    np.testing.assert_array_equal(y[:B * M * K].reshape(B, M, K), full * 2 + 1)
    masked = np.full((B, M, K), 7.0, np.float32)
    masked[:nb, :nm, :nk] = view
    np.testing.assert_array_equal(y[B * M * K:].reshape(B, M, K), masked)


@tritonpu.jit
def _sum_over_steps(x_ptr, y_ptr, steps, B: tl.constexpr, M: tl.constexpr, K: tl.constexpr):
    offs = tl.arange(0, B)[:, None, None] * (M * K) + tl.arange(0, M)[None, :, None] * K + tl.arange(0, K)[None, None, :]
    acc = tl.zeros((B, M, K), tl.float32)
    for s in range(steps):
        acc += tl.load(x_ptr + s * (B * M * K) + offs).to(tl.float32)
    tl.store(y_ptr + tl.program_id(0) * (B * M * K) + offs, acc)


@pytest.mark.parametrize("double_buffer", [True, False])
def test_rank3_loads_in_a_loop(double_buffer):
    B, M, K, steps = 2, 8, 16, 5
    x = np.random.default_rng(1).standard_normal((steps, B, M, K)).astype(np.float16)
    y = np.zeros((3, B, M, K), np.float32)
    h = _sum_over_steps[(3,)](x, y, steps, B=B, M=M, K=K, double_buffer=double_buffer)
    np.testing.assert_allclose(y, np.broadcast_to(x.astype(np.float32).sum(0), y.shape), rtol=1e-6, atol=1e-6)
    isa = h.asm["isa"]
    assert isa.count("mov.gm.ub.f16") >= B           # one rank-2 transfer per leading index
    # rows of 16 fp16 (32 B) from GM rows 32 B apart into UB rows 32 B apart
    assert re.search(r"mov\.gm\.ub\.f16 ub\[\d+\], x_ptr\[s\d+\], \S+, 32, 32, 32", isa)


@tritonpu.jit
def _reduce3(a_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, K: tl.constexpr, AX: tl.constexpr,
             KIND: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, B)[:, None, None] * (M * K) + tl.arange(0, M)[None, :, None] * K
                + tl.arange(0, K)[None, None, :])
    if KIND == "sum":
        r = tl.sum(a, AX)
    elif KIND == "max":
        r = tl.max(a, AX)
    elif KIND == "argmax":
        r = tl.argmax(a, AX)
    else:
        r = tl.cumsum(a, AX, reverse=KIND == "revcumsum")
    R0: tl.constexpr = M if AX == 0 else B
    R1: tl.constexpr = M if AX == 2 else K
    if KIND in ("cumsum", "revcumsum"):
        tl.store(c_ptr + tl.arange(0, B)[:, None, None] * (M * K) + tl.arange(0, M)[None, :, None] * K
                 + tl.arange(0, K)[None, None, :], r)
    else:
        tl.store(c_ptr + tl.arange(0, R0)[:, None] * R1 + tl.arange(0, R1)[None, :], r)


@pytest.mark.parametrize("kind", ["sum", "max", "argmax", "cumsum", "revcumsum"])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int32])
def test_rank3_reductions_and_scans(kind, axis, dt):
    B, M, K = 4, 16, 32
    a = (np.random.default_rng(axis).random((B, M, K)) * 100).astype(dt)
    wide = np.float32 if dt == np.float16 else dt
    ref = {"sum": lambda: a.astype(wide).sum(axis), "max": lambda: a.max(axis),
           "argmax": lambda: a.argmax(axis).astype(np.int32),
           "cumsum": lambda: np.cumsum(a.astype(wide), axis).astype(dt),
           "revcumsum": lambda: np.flip(np.cumsum(np.flip(a.astype(wide), axis), axis), axis).astype(dt)}[kind]()
    out = np.zeros(ref.size, ref.dtype)
    _reduce3[(1,)](a, out, B=B, M=M, K=K, AX=axis, KIND=kind)
    atol = 0
    if kind == "revcumsum" and dt != np.int32:
        # suffix sums are total - prefix + x on the NPU (README): rounding of the order of the total
        atol = 4 * np.finfo(dt).eps * float(np.abs(a.astype(np.float64)).sum(axis).max())
    np.testing.assert_allclose(out, ref.ravel(), rtol=2e-3 if dt == np.float16 else 1e-5, atol=atol)


@tritonpu.jit
def _size1_dims(x_ptr, y_ptr, s_ptr, c_ptr, i_ptr, A: tl.constexpr, B: tl.constexpr):
    ra = tl.arange(0, A)[:, None, None]
    rb = tl.arange(0, B)[None, :, None]
    row = tl.load(x_ptr + rb)                           # (1, B, 1): rows of one element
    tl.store(y_ptr + rb, row + 1)
    x = tl.load(x_ptr + ra * B + rb)                    # (A, B, 1), reduced and scanned along B
    tl.store(s_ptr + tl.arange(0, A)[:, None], tl.sum(x, axis=1))
    tl.store(c_ptr + ra * B + rb, tl.cumsum(x, axis=1))
    tl.store(i_ptr + tl.arange(0, A)[:, None], tl.argmax(x, axis=1))


@pytest.mark.parametrize("backend", ["npu", "ref"])
@pytest.mark.parametrize("A,B", [(2, 4), (3, 8), (4, 5)])
def test_blocks_with_size_1_dimensions(A, B, backend):
    """A (1, B, 1) block's rows of one element land in one transfer (before: one per element, at
    addresses the machine refuses: not 32-byte aligned), and an (A, B, 1) block reduces and scans
    along B (before: refused as "rank > 3"). Sanitizer on."""
    x = np.random.default_rng(A * B).integers(-50, 50, (A, B)).astype(np.int32)
    y, c = np.zeros(B, np.int32), np.zeros((A, B), np.int32)
    s, i = np.zeros(A, np.int32), np.zeros(A, np.int32)
    _size1_dims[(1,)](x, y, s, c, i, A=A, B=B, backend=backend)
    np.testing.assert_array_equal(y, x.reshape(-1)[:B] + 1)
    np.testing.assert_array_equal(s, x.sum(1))
    np.testing.assert_array_equal(c, np.cumsum(x, 1))
    np.testing.assert_array_equal(i, x.argmax(1))


@tritonpu.jit
def _strided_cols(x_ptr, y_ptr, z_ptr, sxm, sxn, n_rows, n_cols, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BM)
    c = tl.arange(0, BN)
    m = (r[:, None] < n_rows) & (c[None, :] < n_cols)
    v = tl.load(x_ptr + r[:, None] * sxm + c[None, :] * sxn, mask=m, other=-1.0)
    tl.store(y_ptr + r[:, None] * BN + c[None, :], v)                       # dense
    tl.store(z_ptr + r[:, None] * sxm + c[None, :] * sxn, v * 2, mask=m)    # back through the strides


@pytest.mark.parametrize("backend", ["npu", "ref"])
@pytest.mark.parametrize("BN,n_cols,step", [(5, 5, 2), (5, 3, 2), (6, 6, 3), (8, 8, 2), (3, 3, 0)])
def test_a_strided_row_not_a_multiple_of_32_bytes(backend, BN, n_cols, step):
    """Rows of x[:, ::2] with 5 float columns (20 bytes) were moved one element at a time to UB rows
    at 20-byte steps, which the machine refuses (not 32-byte aligned); they go through aligned
    scratch rows now, on the way in and out. Sanitizer on."""
    BM, n_rows = 4, 3
    base = np.arange(BM * 24, dtype=np.float32).reshape(BM, 24)
    sxn = step
    y = np.zeros((BM, BN), np.float32)
    z = np.zeros_like(base)
    _strided_cols[(1,)](base, y, z, 24, sxn, n_rows, n_cols, BM=BM, BN=BN, backend=backend)
    want = np.full((BM, BN), -1.0, np.float32)
    cols = np.arange(n_cols) * sxn
    want[:n_rows, :n_cols] = base[:n_rows][:, cols]
    np.testing.assert_array_equal(y, want)
    want_z = np.zeros_like(base)
    if step:
        want_z[:n_rows][:, cols] = 2 * base[:n_rows][:, cols]
    else:       # every column is element 0 of its row: the last store wins, all equal
        want_z[:n_rows, 0] = 2 * base[:n_rows, 0]
    np.testing.assert_array_equal(z, want_z)


@tritonpu.jit
def _many_slices(out, inp, n, X: tl.constexpr, Y: tl.constexpr, Z: tl.constexpr):
    idx = tl.arange(0, X)[:, None, None] * Y * Z + tl.arange(0, Y)[None, :, None] * Z + tl.arange(0, Z)[None, None, :]
    m = tl.arange(0, X)[:, None, None] < n
    tl.store(out + idx, tl.load(inp + idx, mask=m, other=0) * 2, mask=m)


@pytest.mark.parametrize("X,n", [(64, 64), (128, 100), (256, 3)])
def test_a_rank3_block_with_many_leading_rows(X, n):
    """One transfer per leading index, each with temporaries of its own: 64 leading rows ran out of
    the 64 scalar registers (triton-ascend's test_associative_scan copies a (128, 4, 16) block)."""
    x = np.random.default_rng(X).random((X, 4, 16)).astype(np.float32)
    o = np.zeros_like(x)
    _many_slices[(1,)](o, x, n, X=X, Y=4, Z=16)
    want = x * 2
    want[n:] = 0
    np.testing.assert_array_equal(o, want)
