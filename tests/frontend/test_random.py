"""tl.randint/randint4x/rand/randn (Philox-4x32-10, Triton's streams) and tl.umulhi, on every backend."""
import numpy as np
import pytest

import tritonpu as triton
import tritonpu.language as tl

BACKENDS = ["ref", "npu", "cpu"]


@triton.jit
def philox_kat(out_ptr, seed, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a, b, c, d = tl.randint4x(seed, offs * 0)
    tl.store(out_ptr + offs, a)
    tl.store(out_ptr + BLOCK + offs, b)
    tl.store(out_ptr + 2 * BLOCK + offs, c)
    tl.store(out_ptr + 3 * BLOCK + offs, d)


@pytest.mark.parametrize("backend", BACKENDS)
def test_philox_matches_the_random123_known_answer(backend):
    out = np.zeros(4 * 16, np.uint32)
    philox_kat[(1,)](out, 0, BLOCK=16, backend=backend)
    # Random123's kat_vectors: philox4x32-10, counter 0, key 0
    assert [int(v) for v in out[::16]] == [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]


@triton.jit
def rand_kernel(u_ptr, n_ptr, n, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(u_ptr + offs, tl.rand(seed, offs), mask=m)
    tl.store(n_ptr + offs, tl.randn(seed, offs), mask=m)


@pytest.mark.parametrize("backend", BACKENDS)
def test_rand_and_randn_are_the_same_stream_everywhere_and_look_right(backend):
    n = 5000
    u, z = np.zeros(n, np.float32), np.zeros(n, np.float32)
    rand_kernel[(triton.cdiv(n, 512),)](u, z, n, 1234, BLOCK=512, backend=backend)
    ru, rz = np.zeros(n, np.float32), np.zeros(n, np.float32)
    rand_kernel[(triton.cdiv(n, 512),)](ru, rz, n, 1234, BLOCK=512, backend="ref")
    np.testing.assert_array_equal(u, ru)
    np.testing.assert_allclose(z, rz, rtol=1e-6, atol=1e-6)
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.02
    assert abs(z.mean()) < 0.05 and abs(z.std() - 1) < 0.05
    other = np.zeros(n, np.float32)
    rand_kernel[(triton.cdiv(n, 512),)](other, rz, n, 99, BLOCK=512, backend=backend)
    assert not np.array_equal(other, u)                       # another seed, another stream


@triton.jit
def dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


def test_seeded_dropout_as_in_the_triton_tutorial():
    n = 3000
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    a, b = np.zeros_like(x), np.zeros_like(x)
    dropout_kernel[(triton.cdiv(n, 1024),)](x, a, n, 0.5, 42, BLOCK=1024)
    dropout_kernel[(triton.cdiv(n, 1024),)](x, b, n, 0.5, 42, BLOCK=1024, backend="ref")
    np.testing.assert_array_equal(a, b)
    kept = a != 0
    assert 0.45 < kept.mean() < 0.55
    np.testing.assert_allclose(a[kept], x[kept] * 2, rtol=1e-6)


@triton.jit
def umulhi_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.umulhi(tl.load(x_ptr + offs), tl.load(y_ptr + offs)))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", [np.uint32, np.int32])
def test_umulhi_is_the_high_half_of_the_unsigned_product(backend, dt):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32).view(dt)
    y = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32).view(dt)
    out = np.zeros(64, dt)
    umulhi_kernel[(1,)](x, y, out, BLOCK=64, backend=backend)
    want = ((x.view(np.uint32).astype(np.uint64) * y.view(np.uint32).astype(np.uint64)) >> 32).astype(np.uint32)
    np.testing.assert_array_equal(out.view(np.uint32), want)


@triton.jit
def _rand_at(out_ptr, seed, off):
    tl.store(out_ptr, tl.rand(seed, off))


@triton.jit
def _rand_literal_seed(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.rand(7, offs))
    tl.store(out_ptr + BLOCK + offs, tl.randint(7, 3).to(tl.float32) * 0.0 + tl.rand(7, 3))


@pytest.mark.parametrize("backend", BACKENDS)
def test_rand_never_returns_one(backend):
    """(seed 12345, offset 89346407) draws the largest 31-bit value: Triton's scale keeps it below 1
    (2^-31 exactly, the old constant, rounded it to 1.0)."""
    out = np.zeros(1, np.float32)
    _rand_at[(1,)](out, 12345, 89346407, backend=backend)
    assert out[0] == np.float32(np.nextafter(np.float32(1), np.float32(0)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_rand_takes_literal_seeds_and_offsets(backend):
    """`tl.rand(7, offs)` as Triton accepts it: the same stream as a seed passed as an argument."""
    lit = np.zeros(32, np.float32)
    _rand_literal_seed[(1,)](lit, BLOCK=16, backend=backend)
    arg = np.zeros(1, np.float32)
    for i in (0, 5, 15):
        _rand_at[(1,)](arg, 7, i, backend=backend)
        assert lit[i] == arg[0]
    _rand_at[(1,)](arg, 7, 3, backend=backend)
    assert (lit[16:] == arg[0]).all()
