"""L1 panel reuse across a core's programs (tritonpu/passes/panel_reuse.py).

* the IR the pass makes: which loads become panels, the versions of the K loop, the state the
  program loop carries, the trip count decided from the launch's arguments (a guard) or checked at
  run time (IR text without them);
* what it leaves alone: a kernel that writes the operand's argument, a launch whose arrays share
  memory, a K loop longer than L1 holds (and the guard that compiles again for a shorter one);
* end to end, sanitizer on: blocked matmuls and Triton's tutorial matmul (grouped order, wrapped
  offsets, masked K) against numpy and bitwise against the pass switched off, for several shapes,
  block sizes and core counts;
* what it saves: the exact GM -> L1 bytes of a launch whose cores each run one column of blocks.
"""
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.ir import parse_function, print_function, verify
from tritonpu.passes import PassManager
from tritonpu.testing import filecheck

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from cube import plain_matmul as blocked_matmul  # noqa: E402  (acc += tl.dot(a, b), no masks)
from cube import tutorial_matmul  # noqa: E402  (Triton's tutorial as published)


@tritonpu.jit
def masked_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    grid_n = tl.cdiv(N, BN)
    pid_m = pid // grid_n
    pid_n = pid % grid_n
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        k_left = K - k * BK
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + (k * BK + offs_k)[None, :],
                    mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptr + (k * BK + offs_k)[:, None] * stride_bk + offs_n[None, :],
                    mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _inputs(M, N, K, seed=0):
    rng = np.random.default_rng(seed)
    a = (rng.random((M, K)) - 0.5).astype(np.float16)
    b = (rng.random((K, N)) - 0.5).astype(np.float16)
    return a, b, a.astype(np.float32) @ b.astype(np.float32)


def _blocked(a, b, BM, BN, BK, cores=None, off=False, sanitize=True, c=None):
    (M, K), N = a.shape, b.shape[1]
    c = np.zeros((M, N), np.float32) if c is None else c
    opts = {"disable_passes": ("panel-reuse",)} if off else {}
    h = blocked_matmul[(M // BM * (N // BN),)](a, b, c, K, N=N, BM=BM, BN=BN, BK=BK,
                                               cores=cores, sanitize=sanitize, **opts)
    return c, h


def _tutorial(a, b, BM, BN, BK, cores=None, off=False):
    (M, K), N = a.shape, b.shape[1]
    c = np.zeros((M, N), np.float16)
    opts = {"disable_passes": ("panel-reuse",)} if off else {}
    grid = (triton_cdiv(M, BM) * triton_cdiv(N, BN),)
    strides = [s // a.itemsize for s in a.strides + b.strides]
    h = tutorial_matmul[grid](a, b, c, M, N, K, *strides, N, 1, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN,
                              BLOCK_SIZE_K=BK, GROUP_SIZE_M=8, cores=cores, sanitize=True, **opts)
    return c, h


def triton_cdiv(a, b):
    return -(-a // b)


# =============================================================================================
# the IR
# =============================================================================================

def test_both_operands_become_panels_with_the_trip_count_the_launch_gives():
    a, b, _ = _inputs(256, 256, 256)
    _, h = _blocked(a, b, 64, 64, 32, cores=4)
    ir = h.asm["panel-reuse"]
    # P carries the panel's state: which operand it holds and each operand's tag; each operand's
    # version is an `if` on its miss flag: a loop that fills the panel and one that only reads it
    filecheck(ir, """
        CHECK: = for %0, %3, %1,
        CHECK: set_program %pid
        CHECK: panel = "8 slots"
        CHECK: panel_fill
        CHECK-NEXT: panel_tile
        CHECK: dot
        CHECK: } {
        CHECK-NOT: panel_fill
        CHECK: panel = "8 slots"
        CHECK-NOT: panel_fill
        CHECK: = constant {value = false} : i1
        CHECK-NOT: panel_fill
        CHECK: panel_tile
        CHECK-NOT: panel_fill
        CHECK: dot
        CHECK: panel = "8 slots"
        CHECK: panel_fill
        CHECK-NEXT: panel_tile
        CHECK: dot
        CHECK: } {
        CHECK-NOT: panel_fill
        CHECK: panel = "8 slots"
        CHECK-NOT: panel_fill
        CHECK: panel_tile
        CHECK-NOT: panel_fill
        CHECK: dot
        CHECK-NOT: panel_fill
        CHECK: yield
    """)
    # the filling loop runs on the operand's miss flag (the `if`'s condition), the reading one's
    # tiles on the constant false
    misses = re.findall(r"= if (%\d+) \{", ir)
    fills = re.findall(r"panel_fill %\d+, (%\d+),", ir)
    assert len(fills) == 2 and set(fills) <= set(misses)
    no = set(re.findall(r"(%\d+) = constant \{value = false\} : i1", ir))
    reads = re.findall(r"panel_tile %\d+, (%\d+) ", ir)
    assert len(reads) == 4 and sorted(r in no for r in reads) == [False, False, True, True]
    assert len(re.findall(r"panel_fill .*\{event = 0, shape = \[64, 32\], slots = 8\}", ir)) == 1
    assert len(re.findall(r"panel_fill .*\{event = 0, shape = \[32, 64\], slots = 8\}", ir)) == 1
    # the trip count came from K: no compare against the slots at run time
    assert 'pred = "le"' not in ir
    # after double buffering the fills run one trip ahead, on an event per buffer
    db = h.asm["double-buffer"]
    assert re.search(r"panel_fill .*event = 1", db) and re.search(r"panel_tile .*event = 1", db)


def test_the_loop_a_hit_runs_fills_nothing_and_runs_its_loads_further_ahead():
    """Short K trips (32x64x32): the loops that fill a panel keep six buffers (their trips load
    twice the bytes), those that only read one more: eight when B's 32x64 tile is still loaded,
    fourteen when only A's 32x32 is (two trips' loads under one flag) -- the loads' and the fills'
    flags are one per trip or pair of trips (a prefetch group), so the trips in flight fit the
    eight event ids."""
    a, b, ref = _inputs(256, 256, 1024)
    c, h = _blocked(a, b, 32, 64, 32, cores=4)
    db = h.asm["double-buffer"]
    attrs = re.findall(r'(double_buffer = "on: \d+ buffers"|panel = "32 slots")', db)
    assert attrs == ['double_buffer = "on: 6 buffers"', 'panel = "32 slots"', 'double_buffer = "on: 8 buffers"',
                     'panel = "32 slots"', 'double_buffer = "on: 6 buffers"', 'panel = "32 slots"',
                     'double_buffer = "on: 14 buffers"', 'panel = "32 slots"'], attrs
    # the loads and the fills carry their trip's group; the filling loops' fills have events 0..5
    assert re.search(r"load_tile .*prefetch = \d+", db) and re.search(r"panel_fill .*prefetch = \d+", db)
    assert set(re.findall(r"panel_fill .*event = (\d)", db)) == {"0", "1", "2", "3", "4", "5"}
    c0, h0 = _blocked(a, b, 32, 64, 32, cores=4, off=True)
    assert c.tobytes() == c0.tobytes()
    np.testing.assert_allclose(c, ref, atol=1e-3, rtol=1e-3)


def test_without_the_launch_arguments_a_program_checks_that_its_trips_fit():
    a, b, _ = _inputs(256, 256, 256)
    _, h = _blocked(a, b, 64, 64, 32, cores=4)
    fn = parse_function(h.asm["stagger"])          # what the pass gets, as `tritonpu opt` would
    PassManager(["panel-reuse"]).run(fn)
    verify(fn)
    out = print_function(fn)
    slots = [int(n) for n in re.findall(r'panel = "(\d+) slots"', out)]
    # each operand's loop that fills its panel and the one that only reads it
    assert len(slots) == 4 and slots[0] == slots[1] and slots[2] == slots[3] and min(slots) >= 8
    for n in set(slots):        # ceil(K / 32) <= slots, computed per program
        assert re.search(rf"%\w+ = constant \{{value = {n}\}} : i32", out)
    assert out.count('{pred = "le"}') == 2
    # A's versions, B's versions (filling, reading) and the loop as written (for a program whose
    # trips do not fit)
    assert len(re.findall(r"= for ", out)) == 6 and "minimum" not in out
    assert out.count("panel_fill ") == 2


def test_an_operand_whose_argument_the_kernel_writes_gets_no_panel():
    @tritonpu.jit
    def writes_a(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid = tl.program_id(0)
        rm = pid * BM + tl.arange(0, BM)
        rn = tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)
        tl.store(a_ptr + rm[:, None] * K + rk[None, :], tl.zeros((BM, BK), dtype=tl.float16))

    a, b, _ = _inputs(128, 64, 128)
    c = np.zeros((128, 64), np.float32)
    h = writes_a[(4,)](a, b, c, 128, BM=32, BN=64, BK=32, cores=2, sanitize=False)
    ir = h.asm["panel-reuse"]
    # A (32 x 32 tiles) is written by the kernel: only B (32 x 64) is kept
    assert "shape = [32, 32]" not in ir and "shape = [32, 64]" in ir


def test_a_launch_whose_arrays_share_memory_gets_no_panel():
    a, b, _ = _inputs(128, 128, 128)
    buf = np.zeros(128 * 128 * 2, np.float32)
    a_view = buf.view(np.float16)[:128 * 128].reshape(128, 128)
    a_view[...] = a
    c = buf[:128 * 128].reshape(128, 128)           # C overlaps A
    _, h = _blocked(a_view, b, 32, 32, 32, cores=2, sanitize=False, c=c)
    assert "panel_fill" not in h.asm["panel-reuse"]


def test_a_k_loop_longer_than_l1_holds_keeps_its_first_trips_and_a_shorter_one_all():
    # A's panel would be 128 x 4096 fp16 = 1 MiB, B's 4096 x 64 = 512 KiB: the first trips of the
    # K loop use one, the rest go on as written (MTE2 paces this loop: 24 KiB per 128-cycle trip)
    a, b, ref = _inputs(256, 128, 4096, seed=1)
    c, h = _blocked(a, b, 128, 64, 64, cores=2)
    slots = [int(n) for n in re.findall(r'panel = "(\d+) slots"', h.asm["panel-reuse"])]
    assert slots and all(8 <= n < 64 for n in slots)
    np.testing.assert_allclose(c, ref, atol=2e-2, rtol=1e-2)
    c_off, _ = _blocked(a, b, 128, 64, 64, cores=2, off=True)
    assert c.tobytes() == c_off.tobytes()
    # a launch whose K fits the panel compiles again (the guard) with a slot per trip
    a2, b2, ref2 = _inputs(256, 128, 512, seed=2)
    c2, h2 = _blocked(a2, b2, 128, 64, 64, cores=2)
    assert set(re.findall(r'panel = "(\d+) slots"', h2.asm["panel-reuse"])) == {"8"}
    np.testing.assert_allclose(c2, ref2, atol=1e-2, rtol=1e-3)


@pytest.mark.parametrize("K", [256, 4096])
def test_a_cube_bound_k_loop_gets_no_panel(K):
    # 128 x 256 x 64 fp16 tiles: 48 KiB per trip (447 MTE2 cycles) against 512 on the cube -- the
    # panel would save MTE2 work the loop does not wait for
    a, b, _ = _inputs(256, 512, K, seed=3)
    _, h = _blocked(a, b, 128, 256, 64, cores=2)
    assert "panel_fill" not in h.asm["panel-reuse"]


# =============================================================================================
# end to end
# =============================================================================================

@pytest.mark.parametrize("M,N,K,BM,BN,BK,cores", [
    (256, 256, 256, 64, 64, 32, 4),        # cores run columns of blocks: B is kept
    (256, 256, 256, 64, 64, 32, 3),        # no core runs one column: hits only by chance
    (128, 512, 128, 32, 64, 32, 2),        # rows: A is kept
    (256, 128, 192, 64, 32, 64, 1),        # one core runs every program
    (512, 256, 64, 128, 128, 32, 24),      # fewer programs than cores: no next program, no panel
])
def test_blocked_matmul_is_right_and_bitwise_unchanged(M, N, K, BM, BN, BK, cores):
    a, b, ref = _inputs(M, N, K)
    c, h = _blocked(a, b, BM, BN, BK, cores=cores)
    # (a panel only where some program finds its tiles there: program_runs.NONE)
    assert ("panel_fill" in h.asm["panel-reuse"]) == (M // BM * (N // BN) > cores)
    np.testing.assert_allclose(c, ref, atol=1e-2, rtol=1e-3)
    c_off, _ = _blocked(a, b, BM, BN, BK, cores=cores, off=True)
    assert c.tobytes() == c_off.tobytes()


@pytest.mark.parametrize("M,N,K,BM,BN,BK,cores", [
    (512, 512, 512, 64, 128, 32, 4),       # grouped order: a core's programs share rows of A
    (320, 192, 200, 64, 64, 32, 3),        # wrapped edges and a masked last K block
    (256, 256, 96, 32, 64, 32, 5),
])
def test_tutorial_matmul_is_right_and_bitwise_unchanged(M, N, K, BM, BN, BK, cores):
    a, b, ref = _inputs(M, N, K)
    c, h = _tutorial(a, b, BM, BN, BK, cores=cores)
    assert "panel_fill" in h.asm["panel-reuse"]
    np.testing.assert_allclose(c.astype(np.float32), ref, atol=2e-2, rtol=1e-2)
    c_off, _ = _tutorial(a, b, BM, BN, BK, cores=cores, off=True)
    assert c.tobytes() == c_off.tobytes()


@pytest.mark.parametrize("layout", ["a", "b"])
def test_a_column_major_operand_is_kept_viewed_transposed(layout):
    """A column-major operand is loaded as its transpose and read through a transposed view
    (memory-analysis): it is a panel all the same, its reads ordered after the fills (sanitizer
    on), and the results are bitwise those without panels."""
    a, b, ref = _inputs(512, 512, 256, seed=3)
    a, b = (np.asfortranarray(a), b) if layout == "a" else (a, np.asfortranarray(b))
    c, h = _tutorial(a, b, 64, 128, 32, cores=4)
    assert re.search(r"(%\d+) = panel_tile .*\n\s*%\d+ = permute \1 ", h.asm["panel-reuse"])
    np.testing.assert_allclose(c.astype(np.float32), ref, atol=2e-2, rtol=1e-2)
    c_off, _ = _tutorial(a, b, 64, 128, 32, cores=4, off=True)
    assert c.tobytes() == c_off.tobytes()


def test_cores_running_one_column_each_load_its_b_panel_once():
    # 4 x 4 programs, pid_n = pid % 4, on 4 cores: core c runs pid c, c + 4, c + 8, c + 12, all in
    # column c -- B's 256 x 64 panel is loaded once per core, A's blocks once per program
    M = N = K = 256
    BM = BN = 64
    BK = 32
    a, b, ref = _inputs(M, N, K)
    c, h = _blocked(a, b, BM, BN, BK, cores=4)
    np.testing.assert_allclose(c, ref, atol=1e-2, rtol=1e-3)
    programs = (M // BM) * (N // BN)
    a_bytes = programs * BM * K * 2
    assert h.stats.bytes_by_path["gm->l1"] == a_bytes + 4 * K * BN * 2
    _, off = _blocked(a, b, BM, BN, BK, cores=4, off=True)
    assert off.stats.bytes_by_path["gm->l1"] == a_bytes + programs * K * BN * 2
    assert h.stats.cycles < off.stats.cycles


@pytest.mark.parametrize("double_buffer", [True, False])
def test_a_split_k_loop_goes_on_in_the_same_accumulator(double_buffer):
    # K = 4096 in 64-wide steps: the panel holds the first trips, a second loop the rest, the
    # accumulator staying in L0C across both (with and without double buffering)
    a, b, ref = _inputs(256, 128, 4096, seed=4)
    c = np.zeros((256, 128), np.float32)
    h = blocked_matmul[(4,)](a, b, c, 4096, N=128, BM=128, BN=64, BK=64, cores=2,
                             double_buffer=double_buffer, sanitize=True)
    assert "panel_fill" in h.asm["panel-reuse"] and "vadd" not in h.asm["isa"]     # never drained to UB
    np.testing.assert_allclose(c, ref, atol=2e-2, rtol=1e-2)
    c_off = np.zeros_like(c)
    blocked_matmul[(4,)](a, b, c_off, 4096, N=128, BM=128, BN=64, BK=64, cores=2,
                         double_buffer=double_buffer, sanitize=True, disable_passes=("panel-reuse",))
    assert c.tobytes() == c_off.tobytes()


@pytest.mark.parametrize("M,N,K,BM,BN,BK,cores", [
    (200, 136, 100, 64, 64, 32, 3),        # ragged in every dimension: masked rows are zeros
    (256, 192, 160, 64, 64, 32, 3),        # every program's B column repeats on its core
])
def test_masked_rows_are_zeros_in_the_panel_too(M, N, K, BM, BN, BK, cores):
    a, b, ref = _inputs(M, N, K, seed=5)
    out = {}
    for off in (False, True):
        c = np.zeros((M, N), np.float32)
        h = masked_matmul[(triton_cdiv(M, BM) * triton_cdiv(N, BN),)](
            a, b, c, M, N, K, K, N, N, BM=BM, BN=BN, BK=BK, cores=cores, sanitize=True,
            **({"disable_passes": ("panel-reuse",)} if off else {}))
        out[off] = c
        if not off:
            assert "panel_fill" in h.asm["panel-reuse"]
    np.testing.assert_allclose(out[False], ref, atol=1e-2, rtol=1e-3)
    assert out[False].tobytes() == out[True].tobytes()


@tritonpu.jit
def staged_a(a_ptr, b_ptr, c_ptr, K, N, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    pid_m = pid // (N // BN)
    pid_n = pid % (N // BN)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    x = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = (x * 2.0).to(tl.float16)          # computed on the vector unit: staged in L1 by the dot
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def _staged(a, b, K, BN=64, cores=2, **opts):
    M, N = a.shape[0], b.shape[1]
    c = np.zeros((M, N), np.float32)
    h = staged_a[((M // 32) * (N // BN),)](a, b, c, K, N, BM=32, BN=BN, BK=64, cores=cores, sanitize=True, **opts)
    return c, h


def test_a_dot_operand_staged_in_l1_keeps_its_room_beside_the_panel():
    # B's panel of a long K loop takes what L1 has left: the L1 copy of A (made on the vector unit,
    # staged by the dot after buffer planning) must still fit -- it did not (528384 bytes of L1)
    M, N, K = 64, 128, 8192
    rng = np.random.default_rng(6)
    a = (rng.random((M, 64)) - 0.5).astype(np.float16)
    b = (rng.random((K, N)) - 0.5).astype(np.float16)
    ref = (2 * a.astype(np.float32)) @ b.astype(np.float32).reshape(K // 64, 64, N).sum(0)
    c, h = _staged(a, b, K)
    assert "panel_fill" in h.asm["panel-reuse"] and not h.stats.notes
    np.testing.assert_allclose(c, ref, atol=2e-2, rtol=1e-2)
    c_off, _ = _staged(a, b, K, disable_passes=("panel-reuse",))
    assert c.tobytes() == c_off.tobytes()


def test_when_l1_still_overflows_beside_a_panel_the_kernel_compiles_without_panels(monkeypatch):
    import tritonpu.passes.panel_reuse as pr
    size = pr.PanelReuse._size

    def too_big(self, fn, P, F, cands):         # a panel misjudged: 140 slots of 4 KiB, more than L1
        out = size(self, fn, P, F, cands)
        for c in out:
            c.slots = 140
        return out
    monkeypatch.setattr(pr.PanelReuse, "_size", too_big)
    M, N, K = 64, 128, 4096
    rng = np.random.default_rng(7)
    a = (rng.random((M, 64)) - 0.5).astype(np.float16)
    b = (rng.random((K, N)) - 0.5).astype(np.float16)
    ref = (2 * a.astype(np.float32)) @ b.astype(np.float32).reshape(K // 64, 64, N).sum(0)
    # (a specialization no other test compiled; on 4 cores a core's next program reads the same
    # columns of B: a panel is kept)
    c, h = _staged(a, b, K, BN=32, cores=4)
    assert h.stats.notes == ["L1 panels left out: the kernel needs 573440 bytes of L1 at once but L1 holds 524288: "
                             "its L1 panel alone takes them"]
    assert "panel-reuse" not in h.asm                   # compiled again without the pass
    np.testing.assert_allclose(c, ref, atol=2e-2, rtol=1e-2)


@tritonpu.jit
def causal_matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  GRID_N: tl.constexpr):
    pid = tl.program_id(0)
    pid_m = pid % GRID_N
    pid_n = pid // GRID_N
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, (pid_m + 1) * BM, BK):           # the K range grows with the row block
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * (GRID_N * BN) + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * (GRID_N * BN) + rn[None, :], acc)


@pytest.mark.parametrize("cores", [1, 3, 4, 8])
def test_a_trip_count_from_the_program_id_is_checked_per_program(cores):
    M = N = K = 256
    BM = BN = 64
    BK = 32
    a, b, _ = _inputs(M, N, K, seed=8)
    ref = np.zeros((M, N), np.float32)
    for m in range(M // BM):
        kk = (m + 1) * BM
        ref[m * BM:(m + 1) * BM] = a[m * BM:(m + 1) * BM, :kk].astype(np.float32) @ b[:kk].astype(np.float32)
    out = {}
    for off in (False, True):
        c = np.zeros((M, N), np.float32)
        h = causal_matmul[(16,)](a, b, c, K, BM=BM, BN=BN, BK=BK, GRID_N=4, cores=cores, sanitize=True,
                                 **({"disable_passes": ("panel-reuse",)} if off else {}))
        out[off] = c
        if not off and cores % 4 == 0:      # a core's next program has the same row block
            assert "panel_fill" in h.asm["panel-reuse"] and '{pred = "le"}' in h.asm["panel-reuse"]
        elif not off:                       # no program ever finds its tiles in a panel: none
            assert "panel_fill" not in h.asm["panel-reuse"]
    np.testing.assert_allclose(out[False], ref, atol=1e-2, rtol=1e-3)
    assert out[False].tobytes() == out[True].tobytes()


@pytest.mark.parametrize("M, N, K", [(1, 64, 513), (48, 32, 256)])
def test_the_tutorial_at_16x16x16_compiles_with_fewer_buffers_when_the_registers_run_out(M, N, K):
    """At 16 x 16 x 16 the K loop's trips are short, so double buffering keeps 16 trips' loads in
    flight -- their addresses and extents, in each of the panel's versions of the loop, outnumbered
    the 64 scalar registers ("out of scalar registers" at the load's line).  The kernel is compiled
    again keeping half as many trips ahead, with a note, and is right."""
    rng = np.random.default_rng(K)
    a = (rng.random((M, K)) - 0.5).astype(np.float16)
    b = (rng.random((K, N)) - 0.5).astype(np.float16)
    c = np.empty((M, N), np.float16)
    grid = (-(-M // 16) * -(-N // 16),)
    # (on 2 cores a core's next program shares an operand: the panel's versions are kept)
    h = tutorial_matmul[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16,
                              BLOCK_SIZE_K=16, GROUP_SIZE_M=8, cores=2)
    assert h.stats.notes == ["pipelined loops keep at most 8 buffers per load: out of scalar registers with 16"]
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), ref, atol=2e-2, rtol=1e-2)
