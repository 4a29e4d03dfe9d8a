"""L0C by halves (codegen/l0c_halves.py): an accumulator that fills more than half of L0C is issued
by row halves; FIX drains the first half while the cube writes the second, and the next program's
first product into the second half zeroes it (no zeroing product waiting for its drain)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from tritonpu.codegen.asmlist import Access, If, Instr, Loop, render
from tritonpu.codegen.l0c_halves import by_halves

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from cube import tutorial_matmul  # noqa: E402

H = 64 * 1024                   # one half of a 128 x 256 f32 accumulator
R0, R1 = Access("l0c", 0, H), Access("l0c", H, 2 * H)


def mmad(r, init="0", k=64):
    return Instr(f"mmad.f32.f16 l0c[{r.lo}], l0a[0], l0b[0], 64, {k}, 256, init={init}", "M",
                 (Access("l0a", 0, 8192),) + ((r,) if init == "0" else ()), (r,))


def drain(r):
    return Instr(f"mov.l0c.gm.f16.f32 c[{r.lo}], l0c[{r.lo}], 64, 1024, 1024, 512", "FIX", (r,), (Access.gm("c"),))


def lines(nodes):
    return [ln.strip() for ln in render(nodes)]


def program(epilogue=True):
    """Zero both halves, a K loop of products by halves, the last step's products (``epilogue``)
    in each branch of a version ``If``, then the two drains."""
    z0, z1 = mmad(R0, "1", 0), mmad(R1, "1", 0)
    loop = Loop(Instr("for s1, 0, s2, 1", "S"), [mmad(R0), mmad(R1)])
    tail = [mmad(R0), mmad(R1)] if epilogue else []
    d0, d1 = drain(R0), drain(R1)
    branch = If([Instr("br.eq s3, 0", "S")], [z0, z1, loop] + tail, [mmad(R0, "1"), mmad(R1, "1")])
    return [branch, d0, d1], z1, d0, d1


def test_the_first_drain_waits_for_its_own_half_only():
    nodes, z1, d0, d1 = program()
    by_halves(nodes, [], [d0, d1])
    then, orelse = nodes[0].then, nodes[0].orelse
    # a fence on FIX reading the first half, right after the last product into it, on both paths;
    # none for the second drain (the first drain is between: FIX's queue would hold it back)
    assert [type(n).__name__ for n in then[3:]] == ["Instr", "Fence", "Instr"]
    assert then[4].pipe == "FIX" and then[4].reads == (R0,)
    assert [type(n).__name__ for n in orelse] == ["Instr", "Fence", "Instr"] and orelse[1].reads == (R0,)


def test_the_first_product_that_runs_zeroes_the_second_half():
    nodes, z1, d0, d1 = program()
    by_halves(nodes, [z1], [])
    assert lines(nodes[0].then) == [
        "mmad.f32.f16 l0c[0], l0a[0], l0b[0], 64, 0, 256, init=1",
        "mov s0, 1  // the first product that runs zeroes its half of the accumulator",
        "for s1, 0, s2, 1",
        "mmad.f32.f16 l0c[0], l0a[0], l0b[0], 64, 64, 256, init=0",
        "mmad.f32.f16 l0c[65536], l0a[0], l0b[0], 64, 64, 256, init=s0",
        "mov s0, 0",
        "endfor",
        "mmad.f32.f16 l0c[0], l0a[0], l0b[0], 64, 64, 256, init=0",
        "mmad.f32.f16 l0c[65536], l0a[0], l0b[0], 64, 64, 256, init=s0",
    ]


def test_no_product_that_surely_runs_keeps_the_zeroing():
    """The loop may run no trip: without a product after it on every path, the zeroing stays."""
    nodes, z1, d0, d1 = program(epilogue=False)
    before = lines(nodes)
    by_halves(nodes, [z1], [])
    assert lines(nodes) == before


def test_another_access_between_keeps_the_zeroing():
    nodes, z1, d0, d1 = program()
    nodes[0].then.insert(3, drain(R1))          # FIX reads the half between the zeroing and the products
    before = lines(nodes)
    by_halves(nodes, [z1], [])
    assert lines(nodes) == before


def _tutorial(M, N, K, cores, **opts):
    rng = np.random.default_rng(M + N)
    a = (rng.random((M, K)) - 0.5).astype(np.float16)
    b = (rng.random((K, N)) - 0.5).astype(np.float16)
    c = np.full((M, N), 7, np.float16)
    grid = (-(-M // 128) * -(-N // 256),)
    h = tutorial_matmul[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=256,
                              BLOCK_SIZE_K=64, GROUP_SIZE_M=8, cores=cores, sanitize=True, **opts)
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2,
                               atol=2e-2)
    return c, h


@pytest.mark.parametrize("shape", [(512, 512, 256), (296, 300, 136)], ids=["whole", "ragged"])
def test_the_tutorial_at_128x256_by_halves_same_bits(shape):
    """128 x 256 fp32 fills L0C: by halves, FIX drains one half while the cube writes the other,
    the bits the same as with the stage off, and fewer cycles when cores change programs
    (ragged: the last row block has 40 rows, its second half none -- a drain of no rows)."""
    c, h = _tutorial(*shape, cores=2)
    off, h_off = _tutorial(*shape, cores=2, disable_passes=("l0c-halves",))
    isa, isa_off = h.asm["isa"], h_off.asm["isa"]
    assert "l0c[65536], l0a[8192], l0b[0], 64, 64, 256, init=s" in isa
    assert "mmad.f32.f16 l0c[0], l0a[0], l0b[0], 128, 64, 256" in isa_off and "init=s" not in isa_off
    assert isa.count("mov.l0c.gm") == 2 and isa_off.count("mov.l0c.gm") == 1
    assert c.tobytes() == off.tobytes()
    assert h.stats.cycles < h_off.stats.cycles
