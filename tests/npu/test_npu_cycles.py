"""The cycle model against hand computations (the ascend910b numbers of DESIGN.md §5).

Every instruction gets a cost check (the last test checks that none is missing); then the
pipe/flag/barrier timing rules, the L2 model, multi-core launches and the roofline.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.isa import INSTRUCTIONS, MACHINES
from tritonpu.npu import assemble

COST_COVERED: set[str] = set()
SLOW = {"vdiv", "vdivs", "vrdivs", "vexp", "vexp2", "vlog", "vlog2", "vsqrt", "vrsqrt", "vrecip",
        "vsin", "vcos", "verf", "vtanh", "vsigmoid", "vpow", "vpows",
        "vasin", "vacos", "vatan", "vtan", "vsinh", "vcosh", "vlog1p", "vexpm1", "vlog10"}


def durations(text, args=None, **kw):
    """[(mnemonic, pipe, start, cycles)] of every executed instruction, and the stats."""
    prog = assemble(text)
    st = prog.run(args or {}, trace=True, **kw)
    out = [(prog.code[i].mnemonic, p, s, d) for (_, p, s, d, i, _) in st._trace]
    return out, st


def cost(text, mnemonic, args=None, nth=0, **kw):
    ev, _ = durations(text, args, **kw)
    hits = [d for (mn, _, _, d) in ev if mn == mnemonic]
    return hits[nth]


# ---- scalar, control, sync: 1 cycle ---------------------------------------------------------
def test_scalar_control_sync_cost_one_cycle():
    g = np.zeros(4, np.int32)
    body = [".param g gm i32", '.string msg "v: "', "    mov s1, 1", "    sst.u8 ub[64], s1"]
    for name, ins in INSTRUCTIONS.items():
        if ins.pipe not in ("S", "src", "dst", "arg"):
            continue
        if name in ("sld", "sst") or name.startswith("satomic") or name in ("for", "endfor", "exit"):
            continue
        n = len([o for o in ins.operands if not o[1].endswith("?")])
        if ins.impl == "sync":
            line = {"set_flag": "set_flag S, V, 0", "wait_flag": "wait_flag S, V, 0",
                    "barrier": "barrier all"}[name]
        elif name in ("jmp",) or name.startswith("br."):
            line = f"{name} " + ", ".join(["1"] * (n - 1) + ["next_" + name.replace('.', '_')])
            line += f"\nnext_{name.replace('.', '_')}:"
        elif name == "cvt":
            line = "cvt.i32 s1, 5"
        elif name == "ffma":
            line = "ffma.f32 s1, 2, 2, 2"
        elif ins.impl == "dbg":       # print / assert on the scalar unit: 1 cycle each
            line = {"dbg.print": "dbg.print.i32 msg, ub[0], 4, rows=2, rank=2",
                    "dbg.prints": "dbg.prints.f32 msg, 2.5", "dbg.assert": "dbg.assert msg, ub[64], 1",
                    "dbg.asserts": "dbg.asserts msg, 1"}[name]
        else:
            line = f"{name} " + ", ".join(["s1"] + ["2"] * (n - 1)) if n else name
        body.append("    " + line)
        COST_COVERED.add(name)
    body += ["    for s5, 0, 2, 1", "    endfor", "    exit"]
    COST_COVERED.update(["for", "endfor", "exit"])
    ev, st = durations("\n".join(body) + "\n", dict(g=g))
    assert all(d == 1 for (_, _, _, d) in ev)
    # every instruction issued one scalar cycle after the previous one, nothing stalled
    assert st.cycles == len(ev) and st.pipe_busy["scalar"] == len(ev)


def test_scalar_memory_costs():
    g = np.zeros(4, np.int32)
    text = """.param g gm i32
    sld.i32 s1, ub[0]
    sst.i32 ub[4], s1
    sld.i32 s1, g[0]
    sst.i32 g[4], s1
    satomic.add.i32 s2, g[0], 1
    satomic.max.i32 s2, g[0], 1
    satomic.min.i32 s2, g[0], 1
    satomic.xchg.i32 s2, g[0], 1
    satomic.cas.i32 s2, g[0], 1, 2
"""
    ev, st = durations(text, dict(g=g))
    assert [d for (_, _, _, d) in ev] == [1, 1] + [201] * 7       # 1 + 200 GM latency
    assert st.cycles == 2 + 7 * 201
    COST_COVERED.update(["sld", "sst", "satomic.add", "satomic.max", "satomic.min",
                         "satomic.xchg", "satomic.cas"])


# ---- vector: rows * ceil(cols*eb/256) repeats ------------------------------------------------
def _vector_line(name, ins):
    t = ""
    if ins.types:
        sets = ins.type_sets()
        t = "." + ".".join("f32" if "f32" in s else "i32" for s, _ in sets)
    ops = []
    for oname, kind in ins.operands:
        if kind.startswith("ub"):
            ops.append({"dst": "ub[0]"}.get(oname, "ub[8192]"))
        elif oname == "cols":
            ops.append("100")
        else:
            ops.append("2")
    return f"{name}{t} " + ", ".join(ops) + ", rows=3"


@pytest.mark.parametrize("name", [n for n, i in INSTRUCTIONS.items()
                                  if i.pipe == "V" and i.impl != "xfer"])
def test_vector_cost(name):
    ins = INSTRUCTIONS[name]
    line = _vector_line(name, ins)
    c = cost(f"    {line}\n", line.split()[0])
    # f32/i32 rows=3 cols=100: 3 * ceil(400/256) = 6 repeats
    if ins.impl in ("vreduce", "vscan"):
        assert c == 6 + 7                                         # + ceil(log2(100))
    elif name in SLOW:
        assert c == 12
    else:
        assert c == 6
    COST_COVERED.add(name)


def test_vector_cost_rules_by_width_and_axis():
    assert cost("    vadd.f16 ub[0], ub[512], ub[1024], 100, rows=3\n", "vadd.f16") == 3
    assert cost("    vadd.f32 ub[0], ub[512], ub[1024], 64\n", "vadd.f32") == 1
    assert cost("    vadd.f32 ub[0], ub[512], ub[1024], 65\n", "vadd.f32") == 2
    assert cost("    vcast.f16.f32 ub[0], ub[512], 100, rows=3\n", "vcast.f16.f32") == 6
    assert cost("    vreduce.sum.f32 ub[0], ub[512], 100, rows=3, axis=0\n", "vreduce.sum.f32") == 6 + 2
    assert cost("    mov s1, 0\n    vexp.f32 ub[0], ub[512], s1\n", "vexp.f32") == 1   # empty: 1
    # a register count is the mask: a ragged tail of 70 f32 costs 2 repeats
    assert cost("    mov s1, 70\n    vexp.f32 ub[0], ub[512], s1\n", "vexp.f32") == 4


# ---- transfers: latency + 32 B beats per segment ---------------------------------------------
# The latency is pipelined: the pipe is busy (and the trace shows the transfer) only for the
# beats, the pipe takes its next instruction then, and the data lands `latency` cycles later.
def test_cold_64k_gm_to_ub_costs_200_plus_2048():
    x = np.zeros(16384, np.float32)
    one = ".param x gm f32\n    mov.gm.ub ub[0], x[0], 1, 65536, 0, 0\n"
    ev, st = durations(one, dict(x=x))
    assert ev[0][2:] == (0, 2048)                             # cold: DDR, 32 B/cycle beats
    assert st.cycles == 200 + 2048 and st.pipe_busy["mte2"] == 2048      # lands 200 later
    ev, st = durations(one + one.split("\n", 1)[1], dict(x=x))
    assert ev[1][2:] == (2048, 596)                           # again: L2, ceil(2048*32/110),
    assert st.cycles == 2048 + 596 + 200                      # right after the first's beats
    assert st.pipe_busy["mte2"] == 2048 + 596
    assert st.bytes_by_path == {"gm->ub": 131072}
    COST_COVERED.update(["mov.gm.ub"])


def test_a_transfer_that_reads_no_gm_byte_has_no_latency():
    """valid=0 (only pad is written) or no segments: 1 cycle, nothing lands later -- a flag set
    after it fires at once; a real read still lands 200 cycles after its beats."""
    x = np.zeros(1024, np.float32)
    for move in ("mov.gm.ub.f32 ub[0], x[0], 4, 256, 256, 256, valid=0, pad=0.0",
                 "mov.gm.ub ub[0], x[0], 0, 256, 256, 256",
                 "gather.gm.ub ub[0], x[0], ub[4096], 0, 256, 256, 256"):
        text = f".param x gm f32\n    {move}\n    set_flag MTE2, V, 0\n    wait_flag MTE2, V, 0\n" \
               "    vadds.f32 ub[0], ub[0], 1.0, 64\n"
        ev, st = durations(text, dict(x=x))
        assert [(mn, start, d) for mn, _, start, d in ev] == [
            (move.split()[0], 0, 1), ("set_flag", 1, 1), ("wait_flag", 2, 1), ("vadds.f32", 3, 1)], ev
        assert st.cycles == 4
    ev, st = durations(".param x gm f32\n    mov.gm.ub.f32 ub[0], x[0], 4, 256, 256, 256, valid=32, pad=0.0\n"
                       "    set_flag MTE2, V, 0\n    wait_flag MTE2, V, 0\n    vadds.f32 ub[0], ub[0], 1.0, 64\n",
                       dict(x=x))
    # 4 segments of 32 B (valid=) 256 B apart: lines 0 and 1, each read for the first time, come
    # whole from DDR (2 x 16 beats); the data lands at 32 + 200
    assert [(start, d) for _, _, start, d in ev] == [(0, 32), (32, 1), (232, 1), (233, 1)]


def test_l2_lines_segments_and_misalignment():
    x = np.zeros(8192, np.uint8)
    text = """.param x gm u8
    mov.gm.ub ub[0], x[0], 1, 512, 0, 0
    mov.gm.ub ub[0], x[0], 1, 1024, 0, 0
    mov.gm.l1 l1[0], x[2064], 1, 64, 0, 0
    mov.gm.l1 l1[0], x[2560], 4, 100, 512, 128
    mov.gm.ub ub[0], x[3072], 4, 64, 64, 64
"""
    ev, st = durations(text, dict(x=x))
    d = [e[3] for e in ev]                                    # beats (+ 200 latency, pipelined)
    assert d[0] == 16                                         # one cold line
    assert d[1] == 21                                         # line 0 warm (16*32/110), line 1 cold (16)
    assert d[2] == 16                                         # 64 B at offset 16 of new line 4: the line
    # 4 segments of 100 B at 512 B stride, in new lines 5, 6, 7, 8: four lines from DDR
    assert d[3] == 64
    # 4 segments of 64 B, all in line 6 (read before): 2 beats each (3 granules where a
    # segment straddles two), all warm: ceil(8*32/110)
    assert d[4] == 3
    # back to back on MTE2; the last lands 200 after its beats
    assert st.cycles == 16 + 21 + 16 + 64 + 3 + 200
    COST_COVERED.add("mov.gm.l1")


def test_gather_rows_share_lines_within_one_transfer():
    t = np.zeros((64, 64), np.float32)                        # rows of 256 B: 2 per 512 B line
    idx = np.array([0, 1, 0, 10], np.int32)
    text = """.param t gm f32
.param idx gm i32
    mov.gm.ub ub[0], idx[0], 1, 16, 0, 0
    gather.gm.ub ub[1024], t[0], ub[0], 4, 256, 256, 256
    scatter.ub.gm t[0], ub[1024], ub[0], 4, 256, 256, 256
"""
    ev, st = durations(text, dict(t=t, idx=idx), sanitize=False)      # racy on purpose
    assert ev[0][2:] == (0, 16)                               # a new line: 200 + 16, the ids land at 216
    # rows 0 and 10 read lines 0 and 5 first: both come whole from DDR (32 beats) with the
    # distinct beats of rows 0, 1 and 10; row 0 again is an L2 hit (8 beats).
    # The gather reads its ids at its start: same pipe, in order, but it waits for them to land
    assert ev[1][2:] == (216, 32 + 3)                         # 200 + ceil(32 + 8*32/110)
    assert st.stalls["gather.gm.ub waits for its indices to land"] == 216 - 16
    assert ev[2][2:] == (2, 16)                               # 100 + 32 beats at 64 B/cycle
    assert st.cycles == 216 + 35 + 200                        # the gathered rows land
    COST_COVERED.update(["gather.gm.ub", "scatter.ub.gm"])


def test_gather_into_l1_and_gather_of_columns_cost_like_a_gather():
    """gather.gm.l1 is priced like gather.gm.ub; with nseg= every segment of every index pays
    its own beats (a column gather of 2-byte elements moves one beat per element)."""
    t = np.zeros((64, 64), np.float16)                    # rows of 128 B: 4 per 512 B line
    idx = np.array([0, 5, 9, 63], np.int32)
    text = """.param t gm f16
.param idx gm i32
    mov.gm.ub ub[0], idx[0], 1, 16, 0, 0
    gather.gm.l1 l1[0], t[0], ub[0], 4, 128, 128, 128
    gather.gm.ub ub[1024], t[0], ub[0], 4, 2, 2, 2, nseg=8, seg_stride=128, dst_seg_stride=8
"""
    ev, st = durations(text, dict(t=t, idx=idx))
    # rows 0, 5, 9, 63 are in four different lines, each read for the first time: 4 whole lines
    # from DDR at 32 B/cycle (the ids, 16 B in a new line, took 16 and landed at 216)
    assert ev[1][2:] == (216, 4 * 16)
    # 4 columns x 8 rows: 32 one-beat segments, in the lines of rows 0-7 the gather read: warm
    assert ev[2][2:] == (216 + 64, math.ceil(32 * 32 / 110))
    COST_COVERED.update(["gather.gm.l1"])


def test_onchip_and_write_paths():
    y = np.zeros(8192, np.uint8)
    text = """.param y gm u8
    mov.ub.gm y[0], ub[0], 1, 8192, 0, 0
    mov.ub.l1 l1[0], ub[0], 1, 8192, 0, 0
    mov.ub.ub ub[8192], ub[0], 1, 8192, 0, 0
    mov.l1.l0a l0a[0], l1[0], 1, 16384, 0, 0
    mov.l1.l0b l0b[0], l1[0], 1, 16384, 0, 0
    mov.l1.l0b.f16 l0b[0], l1[0], 64, 256, 256, 128, transpose=1
    mov.l0c.gm.f16.f32 y[0], l0c[0], 1, 8192, 0, 0
    mov.l0c.ub.f16.f32 ub[0], l0c[0], 1, 8192, 0, 0
    mov.ub.gm y[16], ub[0], 4, 64, 64, 128
"""
    ev, st = durations(text, dict(y=y), sanitize=False)
    # beats; latencies (pipelined) 100, 20, 0, 20, 20, 20, 100, 0, 100
    assert [e[3] for e in ev] == [128, 128, 32, 32, 64, 64,
                                  16, 16, 6]                  # last: 4 x 3 granules (misaligned)
    # MTE3 runs 128 + 128 + 6 beats back to back, the last store lands 100 later; MTE1 (issued
    # at 3) ends at 3 + 32 + 64 + 64 + 20, FIX (at 6) 6 + 16 + 100, V (at 2) 2 + 32
    assert [e[2] for e in ev] == [0, 128, 2, 3, 35, 99, 6, 22, 256]
    assert st.cycles == 128 + 128 + 6 + 100
    COST_COVERED.update(["mov.ub.gm", "mov.ub.l1", "mov.ub.ub", "mov.l1.l0a", "mov.l1.l0b",
                         "mov.l0c.gm", "mov.l0c.ub"])


def test_mmad_fractals():
    text = """
    mmad.f32.f16 l0c[0], l0a[0], l0b[0], 32, 32, 32
    mmad.f32.bf16 l0c[0], l0a[0], l0b[0], 17, 32, 32
    mmad.f32.f32 l0c[0], l0a[0], l0b[0], 32, 32, 32
    mmad.i32.i8 l0c[0], l0a[0], l0b[0], 32, 64, 32
    mmad.f32.f16 l0c[0], l0a[0], l0b[0], 1, 1, 1, init=0
"""
    ev, st = durations(text)
    assert [e[3] for e in ev] == [8, 8, 16, 8, 1]
    assert st.cube_macs == 32 ** 3 + 17 * 32 * 32 + 32 ** 3 + 32 * 64 * 32 + 1
    COST_COVERED.add("mmad")


def test_every_instruction_has_a_cost_test():
    missing = sorted(set(INSTRUCTIONS) - COST_COVERED)
    assert not missing, f"instructions without a cost test: {missing}"


# ---- timing rules ---------------------------------------------------------------------------
def test_pipes_overlap_and_flags_gate():
    x = np.zeros(16384, np.float32)
    # MTE2 load (2248) and an independent MTE3 store (100 + 65536/64 = 1124; other bytes of x: the
    # same bytes unordered would be a race) overlap; the busy cycles exclude the (pipelined) latencies
    text = ".param x gm f32\n    mov.gm.ub ub[0], x[0], 1, 65536, 0, 0\n    mov.ub.gm x[65536], ub[65536], 1, 65536, 0, 0\n"
    _, st = durations(text, dict(x=np.zeros(32768, np.float32)))
    assert st.cycles == 2248 and st.pipe_busy["mte2"] == 2048 and st.pipe_busy["mte3"] == 1024
    # with a flag the store waits: the set runs on MTE2 at 2048 (after the beats) and fires
    # when the load lands at 2248; wait (1) + 1124
    text = (".param x gm f32\n    mov.gm.ub ub[0], x[0], 1, 65536, 0, 0\n    set_flag MTE2, MTE3, 0\n"
            "    wait_flag MTE2, MTE3, 0\n    mov.ub.gm x[0], ub[0], 1, 65536, 0, 0\n")
    ev, st = durations(text, dict(x=x))
    assert ev[1][1:] == (1, 2048, 1) and ev[2][2] == 2248
    assert st.cycles == 2248 + 1 + 1124
    assert st.stalls["wait_flag MTE2->MTE3"] == 2248 - 2       # the wait was issued at cycle 2
    # a wait on the scalar unit blocks issue: the add after it issues at 2249
    text = (".param x gm f32\n    mov.gm.ub ub[0], x[0], 1, 65536, 0, 0\n    set_flag MTE2, S, 0\n"
            "    wait_flag MTE2, S, 0\n    add s1, s1, 1\n")
    ev, st = durations(text, dict(x=x))
    assert ev[-1][2] == 2249 and st.cycles == 2250


def test_barrier_all_waits_for_every_pipe():
    x = np.zeros(16384, np.float32)
    text = ".param x gm f32\n    mov.gm.ub ub[0], x[0], 1, 65536, 0, 0\n    barrier all\n    vadd.f32 ub[0], ub[0], ub[0], 64\n"
    ev, st = durations(text, dict(x=x))
    assert ev[1][2] == 2248 and ev[2][2] == 2249 and st.cycles == 2250
    assert st.stalls["barrier all"] == 2248 - 1
    # barrier MTE2 waits for MTE2's transfers to land: the second load starts at 2249, not 2048
    text = ".param x gm f32\n    mov.gm.ub ub[0], x[0], 1, 65536, 0, 0\n    barrier MTE2\n    mov.gm.ub ub[0], x[0], 1, 65536, 0, 0\n"
    ev, st = durations(text, dict(x=x))
    assert [e[2:] for e in ev] == [(0, 2048), (2248, 1), (2249, 596)]
    assert st.cycles == 2249 + 596 + 200


def test_launch_takes_the_slowest_core_and_cores_override():
    x = np.zeros(48 * 1024, np.float32)
    text = """.param x gm f32
    block_idx s0
    mul s1, s0, 4096
    mov.gm.ub ub[0], x[s1], 1, 4096, 0, 0
"""
    prog = assemble(text)
    st = prog.run(dict(x=x), grid=(48,))
    # 2 programs per core, one after the other on MTE2: 2 + 128 beats, 128 more beats right
    # after (the latencies overlap), then the last lands 200 later
    assert st.cores_used == 24 and st.core_cycles == [2 + 128 + 128 + 200] * 24 and st.cycles == 458
    st = prog.run(dict(x=x), grid=(48,), cores=4)
    assert st.cores_used == 4 and st.cycles == 2 + 12 * 128 + 200
    st = prog.run(dict(x=x), grid=(5,))
    assert st.cores_used == 5 and st.cycles == 2 + 328
    # roofline: distinct bytes read = 5 * 4096 over 24 cores at 32 B/cycle
    assert st.read_bytes == 5 * 4096 and st.roofline_bound == "mte2 read"
    assert st.roofline_cycles == pytest.approx(5 * 4096 / (24 * 32))
    assert st.efficiency == pytest.approx(st.roofline_cycles / 330)


def test_roofline_counts_distinct_bytes_and_logical_macs():
    x = np.zeros(1024, np.float32)
    text = """.param x gm f32
    mov.gm.ub ub[0], x[0], 1, 4096, 0, 0
    mov.gm.ub ub[0], x[0], 1, 2048, 0, 0
    mov.ub.gm x[0], ub[0], 1, 100, 0, 0
    for s1, 0, 10, 1
      mmad.f32.f16 l0c[0], l0a[0], l0b[0], 100, 60, 40
    endfor
"""
    st = assemble(text).run(dict(x=x), sanitize=False)
    m = MACHINES["ascend910b"]
    macs = 10 * 100 * 60 * 40
    assert st.read_bytes == 4096 and st.write_bytes == 100 and st.cube_macs == macs
    terms = {"mte2 read": 4096 / (24 * 32), "gm write": 100 / (24 * 256),     # FIX: the launch uses the cube
             "cube": macs / (24 * 16 * 16 * 16)}
    assert st.roofline_terms == pytest.approx(terms)
    assert st.roofline_bound == "cube" and m.macs_per_cycle("f16") == 4096
    # without cube work only MTE3 writes GM, at 64 B/cycle
    st = assemble("\n".join(line for line in text.splitlines() if "mmad" not in line)).run(dict(x=x), sanitize=False)
    assert st.roofline_terms["gm write"] == pytest.approx(100 / (24 * 64)) and st.cube_macs == 0


@tritonpu.jit
def _row_sums(x_ptr, out_ptr, D: tl.constexpr, ROWS: tl.constexpr):
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    x = tl.load(x_ptr + r[:, None] * D + tl.arange(0, D)[None, :])
    tl.store(out_ptr + r, tl.sum(x.to(tl.float32), axis=1))


@pytest.mark.parametrize("cores", [1, 2, 24])
def test_no_launch_reads_gm_faster_than_the_roofline_allows(cores):
    # rows of 128 fp16 are 256 B, half a 512 B line each: when the first read of a line was
    # charged only the beats it read at DDR's rate (the rest of the line coming from L2 later),
    # this memory-bound kernel on one core read at ~36 B/cycle, faster than DDR's 32 (29209
    # cycles against a roofline of 32768: efficiency 1.12)
    x = np.random.default_rng(0).standard_normal((4096, 128)).astype(np.float16)
    out = np.zeros(4096, np.float32)
    h = _row_sums[(4096 // 64,)](x, out, D=128, ROWS=64, cores=cores)
    np.testing.assert_allclose(out, x.astype(np.float32).sum(1), rtol=1e-5, atol=1e-3)
    assert h.stats.roofline_bound == "mte2 read"
    assert h.stats.cycles >= h.stats.roofline_cycles, (h.stats.cycles, h.stats.roofline_cycles)
