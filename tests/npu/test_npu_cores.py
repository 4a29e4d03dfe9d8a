"""Cores advance together (tritonpu/npu/launch.py): the shared L2 sees their reads in time order.

A line several cores read is paid for at DDR rate by the core that reaches it first in simulated
time — when its transfer runs, not when it was issued —, not by core 0 because it is simulated first; results and statistics are deterministic;
programs with atomics or device prints run core after core.
"""
import numpy as np

import tritonpu
import tritonpu.language as tl
from tritonpu.npu import assemble
from tritonpu.npu.launch import _interleavable


@tritonpu.jit
def _late_reader(x_ptr, out_ptr, spin_ptr, DELAY: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    spin = 0
    for i in range(0, (tl.num_programs(0) - 1 - pid) * DELAY):    # the last program reads first
        spin += i
    # every program reads the same block, once its wait is over (the address needs `spin`)
    x = tl.load(x_ptr + (spin & 0) + tl.arange(0, BLOCK))
    tl.store(out_ptr + pid, tl.sum(x, axis=0))
    tl.store(spin_ptr + pid, spin)


def test_the_core_that_reads_a_shared_line_first_in_time_pays_its_ddr_read():
    # 24 programs, one per core; program p waits (23 - p) * 200 loop trips (more than a 500-cycle slice apart) before it reads the
    # block all of them read: core 23 is the first in simulated time, so it alone reads the block
    # from DDR (at 32 B/cycle) and the others find it in L2 (110 B/cycle).  Simulating core after
    # core, core 0 would pay it.
    x = np.arange(1 << 14, dtype=np.float32) / 1024
    out, spin = np.zeros(24, np.float32), np.zeros(24, np.int32)
    h = _late_reader[(24,)](x, out, spin, DELAY=200, BLOCK=1 << 14, sanitize=False)
    assert np.allclose(out, x.sum(), rtol=1e-5)
    assert list(spin) == [sum(range((23 - p) * 200)) for p in range(24)]
    mte2 = [b["mte2"] for b in h.stats.pipe_busy_by_core]
    cold, warm = 64 * 1024 // 32, -(-64 * 1024 // 110)           # the block's beat cycles
    assert mte2[23] - mte2[0] == cold - warm and len(set(mte2[:23])) == 1, mte2   # (+ the same flags)
    again = _late_reader[(24,)](x, out, spin, DELAY=200, BLOCK=1 << 14, sanitize=False).stats
    assert again.core_cycles == h.stats.core_cycles               # deterministic


def test_a_read_issued_early_behind_a_long_mte2_queue_comes_later_in_time():
    # core 0 first reads a private 64 KiB block (2048 DDR beat cycles on MTE2), then the shared 16 KiB
    # block; core 1 reads only the shared block.  Core 0's scalar unit issues both reads at once, but
    # its MTE2 gets to the shared block at cycle 2048, long after core 1 read it at cycle ~3: core 1
    # pays the DDR read, core 0 finds the block in L2.  (Ordered by issue time, core 0 paid it.)
    prog = assemble(""".kernel k
.param x gm f32
.param y gm f32
    block_idx s0
    br.ne s0, 0, shared
    mov.gm.ub ub[0], y[0], 1, 65536, 0, 0
shared:
    mov.gm.ub ub[65536], x[0], 1, 16384, 0, 0
""")
    x, y = np.zeros(4096, np.float32), np.zeros(16384, np.float32)
    for cores in (2, 24):               # (24: the other programs' cores have nothing to do)
        st = prog.run(dict(x=x, y=y), grid=(2,), cores=cores)
        mte2 = [b["mte2"] for b in st.pipe_busy_by_core[:2]]
        assert mte2 == [65536 // 32 + -(-16384 // 110), 16384 // 32], mte2


def test_programs_with_scalar_atomics_or_device_prints_run_core_after_core():
    """Scalar atomics return old values and prints show an order: those programs run core after core.
    Atomic transfers return nothing and interleave like any transfer."""
    plain = assemble(".kernel k\n.param x gm f32\nmov.gm.ub.f32 ub[0], x[0], 1, 64, 0, 64\n")
    atomic = assemble(".kernel k\n.param x gm f32\nmov.ub.gm.f32 x[0], ub[0], 1, 64, 0, 64, atomic=add\n")
    satomic = assemble(".kernel k\n.param x gm i32\nsatomic.add.i32 s1, x[0], 1\n")
    printing = assemble('.kernel k\n.string m "v"\ndbg.prints.i32 m, 3\n')
    assert _interleavable(plain) and _interleavable(atomic)
    assert not _interleavable(satomic) and not _interleavable(printing)
