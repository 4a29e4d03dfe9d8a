"""Atomics as the 910B does them: ``tl.atomic_add/max/min`` whose old values are not used become
transfers in an atomic mode — tiles (``mov.ub.gm ... atomic=``), a dot accumulator straight from
L0C (``mov.l0c.gm ... atomic=add``: split-K), rows (``scatter.ub.gm ... atomic=``) and scattered
elements (one atomic segment each) — with the reference's results, and no more cycles than the
plain store of the same tile."""
import re

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl

rng = np.random.default_rng(3)


def _isa_lines(h, pattern):
    lines = [ln.split(" loc(")[0].strip() for ln in h.asm["isa"].splitlines()]
    return [ln for ln in lines if re.search(pattern, ln)]


@tritonpu.jit
def tile_atomic(x_ptr, acc_ptr, n, BLOCK: tl.constexpr, KIND: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + offs)
    if KIND == "add":
        tl.atomic_add(acc_ptr + offs, x, mask=offs < n)
    elif KIND == "max":
        tl.atomic_max(acc_ptr + offs, x, mask=offs < n)
    else:
        tl.atomic_min(acc_ptr + offs, x, mask=offs < n, sem="relaxed", scope="gpu")


@tritonpu.jit
def tile_store(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + offs)
    tl.store(out_ptr + tl.program_id(0) * BLOCK + offs, x, mask=offs < n)


@pytest.mark.parametrize("kind", ["add", "max", "min"])
@pytest.mark.parametrize("dtype", [np.int32, np.int16, np.int8])
def test_tile_atomics_are_atomic_transfers(kind, dtype):
    x = rng.integers(-50, 50, 32 * 256).astype(dtype)
    out = {}
    for backend in ("ref", "npu"):
        acc = np.full(256, 7, dtype)
        h = tile_atomic[(32,)](x, acc, 200, BLOCK=256, KIND=kind, backend=backend)
        out[backend] = acc
    np.testing.assert_array_equal(out["npu"], out["ref"])         # integers: exact whatever the order
    T = np.dtype(dtype).name.replace("int", "i")
    assert _isa_lines(h, "atomic=") == [f"mov.ub.gm.{T} acc_ptr[0], ub[{a}], 1, s{r}, {256 * x.itemsize}, 0, "
                                       f"atomic={kind}" for a, r in _addr_regs(h)]
    assert not _isa_lines(h, "satomic")


def _addr_regs(h):
    """(UB address, register) of each atomic transfer, as emitted (the test checks the rest)."""
    return [(int(m.group(1)), int(m.group(2))) for m in
            re.finditer(r"mov\.ub\.gm\.\w+ acc_ptr\[0\], ub\[(\d+)\], 1, s(\d+)", h.asm["isa"])]


def test_a_tile_atomic_add_costs_what_the_store_costs():
    x = np.ones(64 * 1024, np.float32)
    acc = np.zeros(1024, np.float32)
    atomic = tile_atomic[(64,)](x, acc, 1024, BLOCK=1024, KIND="add").stats.cycles
    np.testing.assert_array_equal(acc, np.full(1024, 64, np.float32))
    store = tile_store[(64,)](x, np.zeros_like(x), 1024 * 64, BLOCK=1024).stats.cycles
    assert atomic <= 1.5 * store, (atomic, store)


@tritonpu.jit
def splitk(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT: tl.constexpr):
    pid_m, pid_n, pid_k = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    k_per = K // SPLIT
    for k in range(pid_k * k_per, (pid_k + 1) * k_per, BK):
        acc += tl.dot(tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :]),
                      tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :]))
    tl.atomic_add(c_ptr + rm[:, None] * N + rn[None, :], acc)


def test_split_k_accumulates_from_l0c():
    M, N, K = 128, 128, 1024
    a = (rng.random((M, K)) - 0.5).astype(np.float16)
    b = (rng.random((K, N)) - 0.5).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    h = splitk[(2, 2, 4)](a, b, c, M, N, K, BM=64, BN=64, BK=64, SPLIT=4)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-4, atol=1e-4)
    # (the programs a core runs alternate halves of L0C: the accumulator is at the ring register)
    assert _isa_lines(h, "atomic=") == ["mov.l0c.gm.f32.f32 c_ptr[s{}], l0c[s{}+0], 64, 256, 256, s{}, atomic=add".format(
        *re.search(r"c_ptr\[s(\d+)\], l0c\[s(\d+)\+0\], 64, 256, 256, s(\d+)", h.asm["isa"]).groups())]


@tritonpu.jit
def embedding_bwd(idx_ptr, grad_ptr, dw_ptr, D: tl.constexpr, ROWS: tl.constexpr):
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    idx = tl.load(idx_ptr + r)
    cols = tl.arange(0, D)
    tl.atomic_add(dw_ptr + idx[:, None] * D + cols[None, :], tl.load(grad_ptr + r[:, None] * D + cols[None, :]))


def test_row_scatter_add_is_an_atomic_scatter():
    V, D, T = 50, 64, 256
    idx = rng.integers(0, V, T).astype(np.int32)
    g = rng.integers(-9, 9, (T, D)).astype(np.int32)
    dw = np.zeros((V, D), np.int32)
    h = embedding_bwd[(T // 32,)](idx, g, dw, D=D, ROWS=32)
    expect = np.zeros((V, D), np.int32)
    np.add.at(expect, idx, g)
    np.testing.assert_array_equal(dw, expect)
    atomics = _isa_lines(h, "atomic=")
    assert atomics and all(ln.startswith("scatter.ub.gm.i32 dw_ptr[") and ln.endswith("idx=i32, atomic=add")
                           for ln in atomics), atomics


@tritonpu.jit
def histogram_add(x_ptr, bins_ptr, n, NB: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.atomic_add(bins_ptr + x % NB, 1, mask=offs < n)


@tritonpu.jit
def counter_old_values(x_ptr, olds_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_add(x_ptr + offs * 0, 1)               # the old values are used: element by element
    tl.store(olds_ptr + tl.program_id(0) * BLOCK + offs, old)


def test_scattered_elements_and_used_old_values():
    x = rng.integers(0, 1000, 3000).astype(np.int32)
    bins = np.zeros(16, np.int32)
    h = histogram_add[(tritonpu.cdiv(3000, 512),)](x, bins, 3000, NB=16, BLOCK=512)
    np.testing.assert_array_equal(bins, np.bincount(x % 16, minlength=16))
    atomics = _isa_lines(h, "atomic=")
    assert atomics and all(re.fullmatch(r"scatter\.ub\.gm\.i32 bins_ptr\[0\], ub\[\d+\], ub\[\d+\], 512, 4, 1, 4, "
                                        r"idx=i64, mask=ub\[\d+\], atomic=add", ln) for ln in atomics), atomics
    counter, olds = np.zeros(1, np.int32), np.zeros(4 * 16, np.int32)
    h = counter_old_values[(4,)](counter, olds, BLOCK=16)
    assert counter[0] == 64 and sorted(olds) == list(range(64))
    assert _isa_lines(h, "satomic.add.i32") and not _isa_lines(h, "atomic=")


@tritonpu.jit
def same_address(acc_ptr, BM: tl.constexpr):
    offs = tl.arange(0, BM)
    tl.atomic_add(acc_ptr + offs * 0, offs * 0 + 1)          # every lane adds 1 to acc[0]


@tritonpu.jit
def colliding(acc_ptr, K, BM: tl.constexpr):
    offs = tl.program_id(0) * BM + tl.arange(0, BM)
    tl.atomic_add(acc_ptr + offs % K, offs * 0 + 1)          # lanes i and i+K hit the same element


@pytest.mark.parametrize("backend", ["ref", "cpu", "npu"])
def test_lanes_of_one_transfer_adding_to_one_element_all_land(backend):
    """Found by the fuzzer: an atomic transfer whose segments overlap in GM (stride 0) kept one add
    per program, not one per lane."""
    a = np.zeros(4, np.int32)
    same_address[(3,)](a, BM=16, backend=backend)
    b = np.zeros(8, np.int32)
    colliding[(2,)](b, 8, BM=16, backend=backend)
    assert a[0] == 48 and b.tolist() == [4] * 8
