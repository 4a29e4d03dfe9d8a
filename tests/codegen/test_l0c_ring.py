"""The L0C ring (codegen/l0c_ring.py): the programs a core runs alternate halves of L0C, so FIX
drains one program's accumulator while the cube computes the next one's."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.codegen.asmlist import Access, Fence, If, Instr, Loop, render
from tritonpu.codegen.l0c_ring import ring_l0c
from tritonpu.codegen.sync import insert_sync
from tritonpu.npu import assemble
from tritonpu.npu.errors import RaceError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from cube import plain_matmul, tutorial_matmul  # noqa: E402

HEAD = ".kernel t\n.param x gm f32\n.param y gm f32\n.param n i32\n"
L0C, ALIGN = 128 * 1024, 64
KB = 1024                       # a 16 x 16 f32 tile


def programs(trips_reg="n"):
    """A persistent loop: trip s1 multiplies x's 16 x 16 tile s1 by tile 0 of B (x[8 KiB:]) and
    FIX writes the product to y's tile s1."""
    def ins(text, pipe, reads=(), writes=()):
        return Instr(text, pipe, tuple(reads), tuple(writes))
    body = [
        ins("set_program s1", "S"),
        ins("mul s2, s1, 1024", "S"),
        ins("mov.gm.l1 l1[0], x[s2], 1, 1024, 0, 0", "MTE2", [Access.gm("x")], [Access("l1", 0, KB)]),
        ins("mov.gm.l1 l1[1024], x[8192], 1, 1024, 0, 0", "MTE2", [Access.gm("x")], [Access("l1", KB, 2 * KB)]),
        ins("mov.l1.l0a l0a[0], l1[0], 1, 1024, 0, 0", "MTE1", [Access("l1", 0, KB)], [Access("l0a", 0, KB)]),
        ins("mov.l1.l0b l0b[0], l1[1024], 1, 1024, 0, 0", "MTE1", [Access("l1", KB, 2 * KB)],
            [Access("l0b", 0, KB)]),
        ins("mmad.f32.f32 l0c[0], l0a[0], l0b[0], 16, 16, 16, init=1", "M",
            [Access("l0a", 0, KB), Access("l0b", 0, KB)], [Access("l0c", 0, KB)]),
        ins("mov.l0c.gm.f32.f32 y[s2], l0c[0], 16, 64, 64, 64", "FIX", [Access("l0c", 0, KB)], [Access.gm("y")]),
    ]
    return [Loop(Instr(f"for s1, 0, {trips_reg}, 1", "S"), body, programs=True)]


def lines(nodes):
    return [ln.strip() for ln in render(nodes)]


def run(nodes, trips):
    x = np.random.default_rng(trips).random(8 * 256 + 256).astype(np.float32)
    y = np.zeros(8 * 256, np.float32)
    assemble(HEAD + "\n".join(render(nodes)) + "\n", "t.s").run({"x": x, "y": y, "n": trips}, grid=(1,),
                                                                 sanitize=True)
    b = x[2048:2304].reshape(16, 16)
    for t in range(trips):
        np.testing.assert_allclose(y[t * 256:(t + 1) * 256].reshape(16, 16),
                                   x[t * 256:(t + 1) * 256].reshape(16, 16) @ b, rtol=1e-5)


def test_the_programs_alternate_halves_and_the_cube_waits_for_the_drain_two_programs_back():
    nodes = programs()
    assert ring_l0c(nodes, L0C, ALIGN)
    insert_sync(nodes)
    got = lines(nodes)
    # the register no instruction names: 0 before the loop, flipped at the end of each trip; the
    # product (no FIX -> M wait before it: the previous program's drain reads the other half),
    # then the cube waits for that drain (the fence: a pair carried over the back edge, set before
    # the loop, drained after it) before this program's drain
    head = got.index("for s1, 0, n, 1")
    assert "mov s0, 0  // programs alternate halves of L0C" in got[:head] and "set_flag FIX, M, 7" in got[:head]
    mmad = got.index("mmad.f32.f32 l0c[s0+0], l0a[0], l0b[0], 16, 16, 16, init=1")
    assert not any(ln.startswith("wait_flag FIX, M") for ln in got[:mmad])
    assert got[mmad + 1:] == [
        "set_flag M, MTE1, 7",
        "wait_flag FIX, M, 7",
        "set_flag M, FIX, 0",
        "wait_flag M, FIX, 0",
        "mov.l0c.gm.f32.f32 y[s2], l0c[s0+0], 16, 64, 64, 64",
        "set_flag FIX, M, 7",
        "sub.i32 s0, 65536, s0  // L0C half of the next program",
        "endfor",
        "wait_flag FIX, M, 7",
        "wait_flag M, MTE1, 7",
        "wait_flag MTE1, MTE2, 6",
        "wait_flag MTE1, MTE2, 7",
    ]
    for trips in (0, 1, 2, 3, 5):
        run(nodes, trips)


def test_without_the_ring_the_product_waits_for_the_previous_drain():
    nodes = programs()
    insert_sync(nodes)
    got = lines(nodes)
    mmad = got.index("mmad.f32.f32 l0c[0], l0a[0], l0b[0], 16, 16, 16, init=1")
    assert got[mmad - 1].startswith("wait_flag FIX, M")
    run(nodes, 3)


def test_the_fence_is_what_orders_the_trip_two_programs_on():
    """The loop marked as a ring without its fence: the third program's product overwrites the half
    the first program's drain may still read -- the sanitizer sees it."""
    nodes = programs()
    assert ring_l0c(nodes, L0C, ALIGN)
    loop = nodes[1]
    loop.body[:] = [n for n in loop.body if not isinstance(n, Fence)]
    insert_sync(nodes)
    with pytest.raises(RaceError):
        run(nodes, 5)


@pytest.mark.parametrize("change", ["big", "cube after the drain", "no free register", "code after the loop"])
def test_the_ring_is_left_out_where_it_does_not_hold(change):
    nodes = programs()
    body = nodes[0].body
    if change == "big":             # the programs' L0C tiles do not fit half of L0C
        body[6].writes = (Access("l0c", 0, L0C // 2 + ALIGN),)
    elif change == "cube after the drain":
        body.append(Instr("mmad.f32.f32 l0c[1024], l0a[0], l0b[0], 16, 16, 16, init=1", "M",
                          (Access("l0a", 0, KB), Access("l0b", 0, KB)), (Access("l0c", KB, 2 * KB),)))
    elif change == "no free register":
        body.append(Instr(" ".join(f"s{r}" for r in range(64)), "S"))
    else:
        nodes.append(Instr("mov.l0c.gm.f32.f32 y[0], l0c[0], 16, 64, 64, 64", "FIX", (Access("l0c", 0, KB),),
                           (Access.gm("y"),)))
    before = lines(nodes)
    assert not ring_l0c(nodes, L0C, ALIGN)
    assert lines(nodes) == before and not nodes[0].l0c_ring


# ---- kernels ------------------------------------------------------------------------------------

def _plain(n, bm, bk, rng, **opts):
    a = (rng.random((n, n)) - 0.5).astype(np.float16)
    b = (rng.random((n, n)) - 0.5).astype(np.float16)
    c = np.empty((n, n), np.float32)
    h = plain_matmul[((n // bm) ** 2,)](a, b, c, n, N=n, BM=bm, BN=bm, BK=bk, sanitize=True, **opts)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
    return c, h


@pytest.mark.parametrize("n, block, cores", [(512, 128, 2), (512, 128, 3), (256, 64, 24)])
def test_a_persistent_matmul_alternates_halves_same_bits(n, block, cores):
    c, h = _plain(n, block, 64, np.random.default_rng(cores), cores=cores)
    isa = h.asm["isa"]
    assert "// programs alternate halves of L0C" in isa and "mmad.f32.f16 l0c[s" in isa
    off, h_off = _plain(n, block, 64, np.random.default_rng(cores), cores=cores, disable_passes=("l0c-ring",))
    assert "l0c[s" not in h_off.asm["isa"]
    assert c.tobytes() == off.tobytes()
    if block == 128:        # several programs a core, each drain 256 cycles: the cube does not wait for it
        assert h.stats.cycles < h_off.stats.cycles


def test_an_accumulator_larger_than_half_of_l0c_keeps_its_place():
    rng = np.random.default_rng(1)
    a = (rng.random((256, 512)) - 0.5).astype(np.float16)
    b = (rng.random((512, 512)) - 0.5).astype(np.float16)
    c = np.empty((256, 512), np.float16)
    h = tutorial_matmul[(4,)](a, b, c, 256, 512, 512, 512, 1, 512, 1, 512, 1, BLOCK_SIZE_M=128,
                              BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, cores=2, sanitize=True)
    assert "l0c[s" not in h.asm["isa"]          # 128 x 256 f32: all of L0C
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2,
                               atol=2e-2)


@pytest.mark.parametrize("shape", [(200, 136, 72), (256, 256, 128)])
def test_the_tutorial_at_ragged_and_whole_sizes(shape):
    M, N, K = shape
    rng = np.random.default_rng(M)
    a = (rng.random((M, K)) - 0.5).astype(np.float16)
    b = (rng.random((K, N)) - 0.5).astype(np.float16)
    outs = []
    for opts in ({}, {"disable_passes": ("l0c-ring",)}):
        c = np.full((M, N), 7, np.float16)
        grid = (-(-M // 64) * -(-N // 64),)
        h = tutorial_matmul[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64,
                                  BLOCK_SIZE_K=32, GROUP_SIZE_M=2, cores=3, sanitize=True, **opts)
        outs.append((c, h.asm["isa"]))      # (h.asm: the kernel's last launch)
    (c, isa), (c_off, isa_off) = outs
    assert "l0c[s" in isa and "l0c[s" not in isa_off
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2,
                               atol=2e-2)
    assert c.tobytes() == c_off.tobytes()


@tritonpu.jit
def matmul_gelu(a_ptr, b_ptr, c_ptr, N: tl.constexpr, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr):
    pid = tl.program_id(0)
    rm = pid // (N // BN) * BM + tl.arange(0, BM)
    rn = pid % (N // BN) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :]),
                      tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :]))
    acc = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def test_an_epilogue_on_the_vector_unit_between_programs():
    """FIX drains each program's accumulator to UB for the vector unit's GELU."""
    rng = np.random.default_rng(5)
    a = (rng.random((256, 128)) - 0.5).astype(np.float16)
    b = (rng.random((128, 256)) - 0.5).astype(np.float16)
    outs = []
    for opts in ({}, {"disable_passes": ("l0c-ring",)}):
        c = np.empty((256, 256), np.float32)
        h = matmul_gelu[(16,)](a, b, c, N=256, K=128, BM=64, BN=64, BK=32, cores=3, sanitize=True, **opts)
        outs.append((c, h.asm["isa"]))
    assert "l0c[s" in outs[0][1] and "mov.l0c.ub" in outs[0][1] and "l0c[s" not in outs[1][1]
    x = a.astype(np.float32) @ b.astype(np.float32)
    from math import erf
    ref = 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))
    np.testing.assert_allclose(outs[0][0], ref, rtol=1e-3, atol=1e-3)
    assert outs[0][0].tobytes() == outs[1][0].tobytes()


def test_disable_passes_names_the_ring():
    from tritonpu.codegen.pipeline import OPTIONAL_PASSES, codegen_passes_for
    assert "l0c-ring" in OPTIONAL_PASSES
    assert codegen_passes_for({"disable_passes": ("l0c-ring",)}) == ["l0c-halves"]
    assert codegen_passes_for({}) == ["l0c-ring", "l0c-halves"]


# ---- soundness on random programs ---------------------------------------------------------------

def _random_body(rng, kinds, depth=0):
    """Products (M) into a few L0C tiles and FIX drains of them (``kinds``), in random order, some in
    branches (taken by the trip's parity) or in inner loops."""
    out = []
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        t = rng.randrange(3)                   # which 1 KiB L0C tile
        kind = rng.choice(kinds)
        if r < 0.7 and kind == "M":
            out += [Instr(f"mmad.f32.f32 l0c[{t * KB}], l0a[0], l0b[0], 16, 16, 16, init=0", "M",
                          (Access("l0a", 0, KB), Access("l0b", 0, KB), Access("l0c", t * KB, (t + 1) * KB)),
                          (Access("l0c", t * KB, (t + 1) * KB),))]
        elif r < 0.7:
            out += [Instr(f"mov.l0c.gm.f32.f32 y[s7+{t * KB}], l0c[{t * KB}], 16, 64, 64, 64", "FIX",
                          (Access("l0c", t * KB, (t + 1) * KB),), (Access.gm("y"),))]
        elif r < 0.85 and depth < 2:
            test = [Instr("and s3, s1, 1", "S"), Instr("br.eq s3, 0, {target}", "S")]
            out.append(If(test, _random_body(rng, kinds, depth + 1),
                          _random_body(rng, kinds, depth + 1) if rng.random() < 0.6 else []))
        elif depth < 2:
            reg = f"s{4 + depth}"
            out.append(Loop(Instr(f"for {reg}, 0, {rng.randint(0, 2)}, 1", "S"), _random_body(rng, kinds, depth + 1)))
    return out


def _random_program(seed):
    """A persistent loop: each trip starts most of the tiles afresh (``init=1``), accumulates into
    them, then drains them -- or, now and then, mixes the two or reads a tile an earlier trip left."""
    import random as _r
    rng = _r.Random(seed)
    head = programs()[0].body[:6]               # set_program, the offsets, the operands to L0A / L0B
    head.insert(2, Instr("mul s7, s1, 4096", "S"))     # (y: 4 KiB a trip)
    fresh = [Instr(f"mmad.f32.f32 l0c[{t * KB}], l0a[0], l0b[0], 16, 16, 16, init=1", "M",
                   (Access("l0a", 0, KB), Access("l0b", 0, KB)), (Access("l0c", t * KB, (t + 1) * KB),))
             for t in range(3) if rng.random() < 0.9]
    if rng.random() < 0.25:
        body = _random_body(rng, ("M", "FIX"))
    else:
        body = _random_body(rng, ("M",)) + _random_body(rng, ("FIX",))
    return [Loop(Instr("for s1, 0, n, 1", "S"), head + fresh + body, programs=True)]


def _run_y(nodes, trips):
    x = np.random.default_rng(0).random(8 * 256 + 256).astype(np.float32)
    y = np.zeros(5 * 1024, np.float32)
    assemble(HEAD + "\n".join(render(nodes)) + "\n", "t.s").run({"x": x, "y": y, "n": trips}, grid=(1,),
                                                                 sanitize=True)
    return y


@pytest.mark.parametrize("seed", range(200))
def test_random_programs_with_the_ring_pass_the_sanitizer_and_write_the_same(seed):
    ringed, plain = _random_program(seed), _random_program(seed)
    applied = ring_l0c(ringed, L0C, ALIGN)
    insert_sync(ringed, max_events=3)
    insert_sync(plain, max_events=3)
    for trips in (0, 1, 2, 3, 5):
        assert _run_y(ringed, trips).tobytes() == _run_y(plain, trips).tobytes()
    if applied:
        assert any("l0c[s0+" in ln for ln in lines(ringed))
