"""The sanitizer finds GM races between grid programs — accesses Triton leaves unordered — and names
both programs and both source lines; atomics and lock-guarded accesses are not races."""
import inspect
import re

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl


def _line(fn, text):
    src, first = inspect.getsourcelines(fn.fn)
    return first + next(i for i, ln in enumerate(src) if text in ln)


@tritonpu.jit
def forgot_pid(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)                  # the classic bug: no pid * BLOCK
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)


@tritonpu.jit
def reads_the_next_block(x_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    nxt = tl.load(x_ptr + offs + BLOCK)         # the block program pid + 1 writes
    tl.store(x_ptr + offs, nxt + 1)


def test_programs_writing_the_same_block():
    x = np.arange(64 * 100, dtype=np.float32)
    line = _line(forgot_pid, "tl.store(y_ptr")
    with pytest.raises(tritonpu.ExecutionError) as info:
        forgot_pid[(100,)](x, np.zeros(64, np.float32), BLOCK=64)
    msg = str(info.value)
    assert re.search(rf"race: program (\d+) \(core \d+\) writes `y_ptr` byte 0x0, which program (\d+) \(core \d+\) "
                     rf"wrote at line {line} \(`mov\.ub\.gm\.f32 y_ptr\[0\], ", msg), msg
    assert re.match(rf".*test_gm_races\.py:{line}:5: error: race: ", msg)
    assert "make each program touch its own elements, or use atomics" in msg


def test_a_program_reading_what_another_writes():
    x = np.arange(64 * 100, dtype=np.float32)
    read_line, write_line = _line(reads_the_next_block, "nxt = tl.load"), _line(reads_the_next_block, "tl.store(")
    with pytest.raises(tritonpu.ExecutionError, match=rf"test_gm_races.py:{write_line}:5: error: race: program 1 "
                                                      rf"\(core 1\) writes `x_ptr` byte 0x100, which program 0 "
                                                      rf"\(core 0\) read at line {read_line} "):
        reads_the_next_block[(99,)](x, BLOCK=64)


def test_the_check_can_be_switched_off():
    x = np.arange(64 * 4, dtype=np.float32)
    y = np.zeros(64, np.float32)
    forgot_pid[(4,)](x, y, BLOCK=64, sanitize=False)
    np.testing.assert_array_equal(y, x[:64] * 2)


@tritonpu.jit
def in_place(x_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)


@tritonpu.jit
def histogram(x_ptr, bins_ptr, n, NB: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.atomic_add(bins_ptr + x % NB, 1, mask=offs < n)


@tritonpu.jit
def counter(c_ptr, olds_ptr):
    tl.store(olds_ptr + tl.program_id(0), tl.atomic_add(c_ptr, 1))


@tritonpu.jit
def locked_accumulate(x_ptr, acc_ptr, lock_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + offs)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(acc_ptr + offs, tl.load(acc_ptr + offs) + x)      # guarded by the lock
    tl.atomic_xchg(lock_ptr, 0)


def test_no_report_for_own_blocks_atomics_and_locks():
    x = np.arange(64 * 100, dtype=np.float32)
    in_place[(100,)](x, BLOCK=64)                                # each program its own block, in place
    np.testing.assert_array_equal(x, np.arange(64 * 100, dtype=np.float32) * 2)
    v = np.random.default_rng(0).integers(0, 100, 3000).astype(np.int32)
    bins = np.zeros(8, np.int32)
    histogram[(6,)](v, bins, 3000, NB=8, BLOCK=512)              # atomic transfers from every program
    np.testing.assert_array_equal(bins, np.bincount(v % 8, minlength=8))
    c, olds = np.zeros(1, np.int32), np.zeros(30, np.int32)
    counter[(30,)](c, olds)                                      # scalar atomics with their old values
    assert c[0] == 30 and sorted(olds) == list(range(30))
    acc, lock = np.zeros(64, np.float32), np.zeros(1, np.int32)
    h = locked_accumulate[(48,)](x, acc, lock, BLOCK=64)         # LayerNorm-backward's lock pattern
    np.testing.assert_allclose(acc, x.reshape(100, 64)[:48].sum(0), rtol=1e-6)
    # the release waits for the guarded store to land (Triton's atomic_xchg is acq_rel)
    isa = [ln.split(" loc(")[0].strip() for ln in h.asm["isa"].splitlines()]
    k = next(i for i, ln in enumerate(isa) if ln.startswith("satomic.xchg"))
    assert isa[k - 1] == "barrier all" and isa[k - 2].startswith("mov.ub.gm.f32 acc_ptr[0]")


@tritonpu.jit
def locked_first_or_accumulate(x_ptr, acc_ptr, lock_ptr, count_ptr, BLOCK: tl.constexpr):
    # Triton's LayerNorm-backward tutorial: under the lock, the first program stores and sets Count
    # with atomic_xchg, the others read Count plainly and accumulate
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + offs)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    count = tl.load(count_ptr)
    if count == 0:
        tl.atomic_xchg(count_ptr, 1)
    else:
        x += tl.load(acc_ptr + offs)
    tl.store(acc_ptr + offs, x)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)


@tritonpu.jit
def unlocked_count(count_ptr, out_ptr):
    tl.atomic_xchg(count_ptr, 1)                   # atomic, but the read below is plain and unguarded
    tl.store(out_ptr + tl.program_id(0), tl.load(count_ptr))


def test_an_atomic_under_the_lock_is_ordered_with_plain_accesses_under_it():
    x = np.random.default_rng(0).standard_normal((6, 32)).astype(np.float32)
    acc, lock, count = np.zeros(32, np.float32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    locked_first_or_accumulate[(6,)](x, acc, lock, count, BLOCK=32)      # sanitizer on: no report
    np.testing.assert_allclose(acc, x.sum(0), rtol=1e-5, atol=1e-6)
    assert count[0] == 1 and lock[0] == 0
    with pytest.raises(tritonpu.ExecutionError, match=r"race: program 1 \(core 1\) atomically writes `count_ptr` byte "
                                                      r"0x0, which program 0 \(core 0\) read at line"):
        unlocked_count[(4,)](np.zeros(1, np.int32), np.zeros(4, np.int32))


@tritonpu.jit
def last_program_reduces(x_ptr, part_ptr, count_ptr, out_ptr, NP: tl.constexpr, BLOCK: tl.constexpr,
                         STORE_LATE: tl.constexpr):
    # CUDA's threadFenceReduction: partials published by an acq_rel ticket, the last program sums them
    pid = tl.program_id(0)
    s = tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), 0)
    if not STORE_LATE:
        tl.store(part_ptr + pid, s)
    ticket = tl.atomic_add(count_ptr, 1)
    if STORE_LATE:
        tl.store(part_ptr + pid, s)                # after its release: nothing orders it
    if ticket == NP - 1:
        tl.store(out_ptr, tl.sum(tl.load(part_ptr + tl.arange(0, NP)), 0))


def test_a_release_and_an_acquire_order_plain_accesses():
    x = np.random.default_rng(2).standard_normal((32, 64)).astype(np.float32)
    part, count, out = np.zeros(32, np.float32), np.zeros(1, np.int32), np.zeros(1, np.float32)
    last_program_reduces[(32,)](x, part, count, out, NP=32, BLOCK=64, STORE_LATE=False)   # sanitizer on
    np.testing.assert_allclose(out[0], x.sum(), rtol=1e-5)
    store_line = _line(last_program_reduces, "tl.store(part_ptr + pid, s)                # after")
    with pytest.raises(tritonpu.ExecutionError, match=rf"race: program 23 \(core 23\) reads `part_ptr` byte 0x0, "
                                                      rf"which program 0 \(core 0\) wrote at line {store_line}"):
        last_program_reduces[(32,)](x, part, np.zeros(1, np.int32), out, NP=32, BLOCK=64, STORE_LATE=True)


@tritonpu.jit
def xor_into_one(acc_ptr, x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_xor(acc_ptr + offs * 0, tl.load(x_ptr + tl.program_id(0) * BLOCK + offs))


def test_an_emulated_atomic_is_atomic_all_the_way():
    """Found by the fuzzer: atomic_xor runs as a compare-and-swap loop whose first read was a plain
    load — reported as racing with the other programs' atomics."""
    x = np.arange(4 * 8, dtype=np.int32)
    acc = np.zeros(1, np.int32)
    xor_into_one[(4,)](acc, x, BLOCK=8)
    assert acc[0] == np.bitwise_xor.reduce(x)


# ---- within one core: GM accesses of two pipes need a flag like on-chip ones ----------------------
_STORE_THEN_LOAD = """.kernel t
.param x gm f32
.param y gm f32
mov.gm.ub ub[0], x[0], 1, 4096, 0, 0
set_flag MTE2, MTE3, 0
wait_flag MTE2, MTE3, 0
mov.ub.gm y[0], ub[0], 1, 4096, 0, 0
{sync}
mov.gm.ub ub[4096], y[{off}], 1, 4096, 0, 0
set_flag MTE2, MTE3, 1
wait_flag MTE2, MTE3, 1
mov.ub.gm x[0], ub[4096], 1, 4096, 0, 0
"""


@pytest.mark.parametrize("sync,off,race", [
    ("", 0, True),                                                      # MTE2 reads what MTE3 has not landed
    ("", 2048, True),                                                   # overlapping bytes only
    ("", 4096, False),                                                  # other bytes of y: no race
    ("set_flag MTE3, MTE2, 0\nwait_flag MTE3, MTE2, 0", 0, False),      # ordered by a flag
    ("barrier all", 0, False),
])
def test_a_gm_load_of_bytes_another_pipe_stores_needs_a_flag(sync, off, race):
    from tritonpu.npu import assemble
    from tritonpu.npu.errors import RaceError
    prog = assemble(_STORE_THEN_LOAD.format(sync=sync, off=off), "t.s")
    x, y = np.arange(2048, dtype=np.float32), np.zeros(2048, np.float32)
    if not race:
        prog.run({"x": x, "y": y}, grid=(1,), sanitize=True)
        return
    with pytest.raises(RaceError) as info:
        prog.run({"x": x, "y": y}, grid=(1,), sanitize=True)
    msg = str(info.value)
    assert msg.startswith("race: read-after-write race on GM argument y: pipe MTE2 reads "
                          f"y[{off:#x}, {off + 4096:#x}) while pipe MTE3's write of y[0x0, 0x1000) (line 7: "
                          "mov.ub.gm y[0], ub[0], 1, 4096, 0, 0) is not ordered before it"), msg
    assert "at line 9: mov.gm.ub ub[4096], y[" in msg
    prog.run({"x": x, "y": y}, grid=(1,), sanitize=False)      # (the sanitizer's check, not the machine's)


def test_a_scalar_read_of_gm_a_pipe_stores_needs_a_flag():
    from tritonpu.npu import assemble
    from tritonpu.npu.errors import RaceError
    text = _STORE_THEN_LOAD.split("{sync}")[0] + "sld.f32 s0, y[8]\n"
    with pytest.raises(RaceError, match=r"read-after-write race on GM argument y: pipe S reads y\[0x8, 0xc\)"):
        assemble(text, "t.s").run({"x": np.ones(2048, np.float32), "y": np.zeros(2048, np.float32)},
                                   grid=(1,), sanitize=True)
    text = _STORE_THEN_LOAD.split("{sync}")[0] + "set_flag MTE3, S, 0\nwait_flag MTE3, S, 0\nsld.f32 s0, y[8]\n"
    assemble(text, "t.s").run({"x": np.ones(2048, np.float32), "y": np.zeros(2048, np.float32)},
                              grid=(1,), sanitize=True)


def test_spans_say_whether_a_range_overlaps_one_added_before():
    # the check skips the per-byte records where no byte was accessed before: Spans must never
    # call a range fresh that overlaps an earlier one (checked against a per-byte reference)
    from tritonpu.npu.gm_races import Spans
    rng = np.random.default_rng(5)
    for _ in range(20):
        spans, seen = Spans(), np.zeros(400, bool)
        for _ in range(60):
            lo = int(rng.integers(0, 390))
            hi = lo + int(rng.integers(1, 10))
            assert spans.add(lo, hi) == (not seen[lo:hi].any()), (lo, hi, spans.los, spans.his)
            seen[lo:hi] = True
            assert all(a < b for a, b in zip(spans.his, spans.los[1:]))        # disjoint, not touching
            covered = np.zeros(400, bool)
            for a, b in zip(spans.los, spans.his):
                covered[a:b] = True
            assert (covered == seen).all()
