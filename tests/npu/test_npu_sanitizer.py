"""Each sanitizer error provoked by a program, and reported with instruction, line, core,
addresses and kernel source location."""
from __future__ import annotations

import numpy as np
import pytest

from tritonpu.npu import (DeadlockError, FlagError, LaunchError, MisalignedError, NpuError,
                          OutOfBoundsError, RaceError, assemble)


def run(text, grid=(1,), **args):
    return assemble(text, filename="k.s").run(args, grid=grid)


def test_gm_out_of_bounds_names_instruction_line_core_addresses_and_loc():
    x = np.zeros(256, np.float32)                          # 1024 bytes
    text = """.kernel k
.param x gm f32
    block_idx s0
    mul s1, s0, 512
    mov.gm.ub ub[0], x[s1], 1, 512, 0, 0 loc("kern.py":12:7)
"""
    run(text, grid=(2,), x=x)                              # programs 0 and 1 fit
    with pytest.raises(OutOfBoundsError) as e:
        run(text, grid=(3,), x=x)
    err = e.value
    assert err.line == 5 and err.core == 2 and err.program == 2
    assert err.addrs == {"x": (1024, 1536)} and err.loc == ("kern.py", 12, 7)
    msg = str(err)
    assert "out-of-bounds" in msg and "line 5" in msg and "mov.gm.ub ub[0], x[s1], 1, 512, 0, 0" in msg
    assert "kern.py:12:7" in msg and "core 2" in msg and "0x400" in msg


def test_gm_out_of_bounds_on_store_scatter_and_scalar():
    x = np.zeros(16, np.int32)
    with pytest.raises(OutOfBoundsError, match="write x"):
        run(".param x gm i32\n    mov.ub.gm x[32], ub[0], 1, 64, 0, 0\n", x=x)
    with pytest.raises(OutOfBoundsError, match="scatter to x"):
        run(".param x gm i32\n    vdup.i32 ub[0], 100, 8\n    barrier all\n"
            "    scatter.ub.gm x[0], ub[64], ub[0], 8, 4, 4, 4\n", x=x)
    with pytest.raises(OutOfBoundsError):
        run(".param x gm i32\n    sld.i32 s1, x[64]\n", x=x)
    with pytest.raises(OutOfBoundsError):
        run(".param x gm i32\n    sst.i32 x[-4], 1\n", x=x)


def test_onchip_out_of_bounds():
    with pytest.raises(OutOfBoundsError, match="outside UB") as e:
        run("    vadd.f32 ub[196352], ub[0], ub[0], 512\n")   # 192 KiB - 256 + 2048 bytes
    assert e.value.addrs == {"ub": (196352, 196352 + 2048)}
    with pytest.raises(OutOfBoundsError, match="outside L0A"):
        run("    mmad.f32.f16 l0c[0], l0a[0], l0b[0], 256, 256, 16\n")
    with pytest.raises(OutOfBoundsError, match="outside L1"):
        run("    mov.ub.l1 l1[524288], ub[0], 1, 32, 0, 0\n")


@pytest.mark.parametrize("line,space,align", [
    ("vadd.f32 ub[16], ub[0], ub[0], 8", "ub", 32),
    ("mov.ub.l1 l1[48], ub[0], 1, 32, 0, 0", "l1", 32),
    ("mov.l1.l0a l0a[256], l1[0], 1, 512, 0, 0", "l0a", 512),
    ("mov.l1.l0b l0b[32], l1[0], 1, 512, 0, 0", "l0b", 512),
    ("mmad.f32.f16 l0c[32], l0a[0], l0b[0], 16, 16, 16", "l0c", 64),
])
def test_misaligned_onchip_addresses(line, space, align):
    with pytest.raises(MisalignedError) as e:
        run(f"    {line}\n")
    assert f"{align}-byte aligned" in str(e.value) and space in e.value.addrs
    # the same program runs with the sanitizer off
    assemble(f"    {line}\n").run({}, sanitize=False)


def test_misaligned_scalar_access():
    with pytest.raises(MisalignedError):
        run("    sld.i32 s1, ub[2]\n")


def test_wait_without_set_is_a_deadlock_not_a_hang():
    with pytest.raises(DeadlockError) as e:
        run("    set_flag MTE2, V, 1\n    wait_flag MTE2, V, 0\n")
    assert "deadlock" in str(e.value) and e.value.line == 2
    # a set that comes after the wait in program order does not help
    with pytest.raises(DeadlockError):
        run("    wait_flag V, MTE3, 0\n    set_flag V, MTE3, 0\n")
    # one set satisfies one wait only
    with pytest.raises(DeadlockError):
        run("    set_flag V, MTE3, 0\n    wait_flag V, MTE3, 0\n    wait_flag V, MTE3, 0\n")


def test_event_set_twice_without_wait():
    with pytest.raises(FlagError) as e:
        run("    set_flag MTE2, V, 3\n    set_flag MTE2, V, 3\n")
    assert e.value.line == 2 and "first set at line 1" in str(e.value)
    run("    set_flag MTE2, V, 3\n    set_flag MTE2, V, 4\n    wait_flag MTE2, V, 3\n"
        "    set_flag MTE2, V, 3\n    wait_flag MTE2, V, 3\n    wait_flag MTE2, V, 4\n")


def test_read_after_write_race():
    x = np.zeros(1024, np.float32)
    text = """.param x gm f32
    mov.gm.ub ub[0], x[0], 1, 4096, 0, 0
    vadd.f32 ub[8192], ub[2048], ub[2048], 64 loc("k.py":3:9)
"""
    with pytest.raises(RaceError) as e:
        run(text, x=x)
    err = e.value
    msg = str(err)
    assert "read-after-write" in msg and "pipe V reads ub[0x800, 0x900)" in msg
    assert "MTE2's write of ub[0x0, 0x1000)" in msg and "line 2" in msg and err.line == 3
    assert err.loc == ("k.py", 3, 9) and err.core == 0
    # ordered by a flag: no race; by barrier all: no race
    run(text.replace("    vadd", "    set_flag MTE2, V, 0\n    wait_flag MTE2, V, 0\n    vadd"), x=x)
    run(text.replace("    vadd", "    barrier all\n    vadd"), x=x)
    # a flag between the wrong pipes does not order it
    with pytest.raises(RaceError):
        run(text.replace("    vadd", "    set_flag MTE2, MTE3, 0\n    wait_flag MTE2, MTE3, 0\n    vadd"), x=x)
    # disjoint addresses do not race
    run(text.replace("ub[2048], ub[2048]", "ub[4096], ub[4096]"), x=x)
    # sanitize=False skips the check
    assemble(text).run(dict(x=x), sanitize=False)


def test_write_after_read_race():
    x = np.zeros(2048, np.float32)
    text = """.param x gm f32
    mov.gm.ub ub[0], x[0], 1, 4096, 0, 0
    set_flag MTE2, V, 0
    wait_flag MTE2, V, 0
    vexp.f32 ub[8192], ub[0], 1024
    mov.gm.ub ub[0], x[4096], 1, 4096, 0, 0
"""
    with pytest.raises(RaceError, match="write-after-read race on ub: pipe MTE2 writes"):
        run(text, x=x)
    fixed = text.replace("    mov.gm.ub ub[0], x[4096]",
                         "    set_flag V, MTE2, 0\n    wait_flag V, MTE2, 0\n    mov.gm.ub ub[0], x[4096]")
    run(fixed, x=x)


def test_write_after_write_race():
    x = np.zeros(1024, np.float32)
    text = ".param x gm f32\n    mov.gm.ub ub[0], x[0], 1, 4096, 0, 0\n    vdup.f32 ub[64], 0.0, 8\n"
    with pytest.raises(RaceError, match="write-after-write"):
        run(text, x=x)


def test_race_on_l0c_between_cube_and_fix():
    c = np.zeros(256, np.float32)
    text = """.param c gm f32
    mmad.f32.f16 l0c[0], l0a[0], l0b[0], 16, 16, 16
    mov.l0c.gm.f32.f32 c[0], l0c[0], 1, 1024, 0, 0
"""
    with pytest.raises(RaceError, match="pipe FIX reads l0c"):
        run(text, c=c)


def test_ordering_is_transitive_and_through_the_scalar_unit():
    x = np.zeros(1024, np.float32)
    # MTE2 -> V -> MTE3: MTE3 may read what MTE2 wrote (V knew it when it set the flag)
    run(""".param x gm f32
    mov.gm.ub ub[0], x[0], 1, 4096, 0, 0
    set_flag MTE2, V, 0
    wait_flag MTE2, V, 0
    vadd.f32 ub[4096], ub[0], ub[0], 1024
    set_flag V, MTE3, 0
    wait_flag V, MTE3, 0
    mov.ub.gm x[0], ub[0], 1, 4096, 0, 0
""", x=x)
    # V -> S (the scalar unit waits), then everything S issues afterwards is ordered
    run(""".param x gm f32
    vdup.f32 ub[0], 1.0, 1024
    set_flag V, S, 0
    wait_flag V, S, 0
    sld.f32 s1, ub[0]
    mov.ub.gm x[0], ub[0], 1, 4096, 0, 0
""", x=x)
    # without the wait the scalar load races with the vector write
    with pytest.raises(RaceError, match="pipe S reads"):
        run("    vdup.f32 ub[0], 1.0, 1024\n    sld.f32 s1, ub[0]\n")


def test_flags_and_races_carry_across_programs_on_a_core():
    x = np.zeros(2 * 1024, np.float32)
    # each program loads its tile; without a V->MTE2 flag the second program on the core
    # overwrites the buffer the first program's vadd read: a race across programs
    text = """.param x gm f32
    block_idx s0
    mul s1, s0, 4096
    mov.gm.ub ub[0], x[s1], 1, 4096, 0, 0
    set_flag MTE2, V, 0
    wait_flag MTE2, V, 0
    vadd.f32 ub[8192], ub[0], ub[0], 1024
"""
    assemble(text).run(dict(x=x), grid=(2,))             # two cores: fine
    with pytest.raises(RaceError, match="write-after-read") as e:
        assemble(text).run(dict(x=x), grid=(2,), cores=1)
    assert e.value.program == 1 and e.value.core == 0


def test_endless_loop_is_stopped():
    with pytest.raises(LaunchError, match="more than 1000 instructions"):
        assemble("top:\n    jmp top\n").run({}, max_steps=1000)


SPIN = """.kernel k
.param flag gm i32
    block_idx s0
    br.eq s0, 1, produce
wait:
    satomic.cas.i32 s1, flag[0], 1, 1 loc("k.py":7:14)
    br.eq s1, 0, wait
    jmp done
produce:
    satomic.xchg.i32 s1, flag[0], 1 loc("k.py":5:8)
done:
"""


def test_a_program_waiting_for_a_later_one_on_another_core_gets_it():
    # cores with scalar atomics take turns (program order); a spinning one gives way after a while
    flag = np.zeros(1, np.int32)
    st = assemble(SPIN).run(dict(flag=flag), grid=(2,))
    assert flag[0] == 1 and st.programs == 2


def test_a_program_waiting_for_a_later_one_on_its_own_core_is_stopped_at_its_line():
    with pytest.raises(LaunchError) as e:
        assemble(SPIN).run(dict(flag=np.zeros(1, np.int32)), grid=(2,), cores=1, max_steps=20_000)
    msg = str(e.value)
    assert "more than 20000 instructions (an endless loop? a program that waits for another one" in msg
    assert "grid programs beyond the cores run one after another" in msg
    assert "kernel source: k.py:7:14" in msg                     # the jump back has no line: the atomic's


def test_launch_errors():
    prog = assemble(".param x gm f32\n.param n i32\n    nop\n")
    with pytest.raises(LaunchError, match="missing GM argument"):
        prog.run({"n": 1})
    with pytest.raises(LaunchError, match="dtype i32"):
        prog.run({"x": np.zeros(4, np.int32), "n": 1})
    with pytest.raises(LaunchError, match="C-contiguous"):
        prog.run({"x": np.zeros((4, 4), np.float32).T, "n": 1})
    with pytest.raises(LaunchError, match="unknown argument"):
        prog.run({"x": np.zeros(4, np.float32), "n": 1, "m": 2})
    with pytest.raises(LaunchError, match="grid"):
        prog.run({"x": np.zeros(4, np.float32), "n": 1}, grid=(0,))
    assert issubclass(LaunchError, NpuError) and issubclass(RaceError, NpuError)


def test_a_flag_still_pending_when_a_core_finishes_is_reported():
    from tritonpu.npu import assemble
    from tritonpu.npu.errors import FlagError
    prog = assemble(".kernel k\n.param x gm f32\nset_flag MTE2, V, 3\nmov.gm.ub.f32 ub[0], x[0], 1, 64, 0, 64\n")
    with pytest.raises(FlagError, match=r"event \(MTE2, V, 3\) set at assembly line 3 is still pending when core 0 "
                                        r"finishes: no wait_flag consumed it"):
        prog.run(dict(x=np.zeros(16, np.float32)), grid=(1,))
    prog.run(dict(x=np.zeros(16, np.float32)), grid=(1,), sanitize=False)      # the check is the sanitizer's
