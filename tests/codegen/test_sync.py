"""The sync-insertion pass: golden placement, minimality, control flow, and the simulator's
sanitizer as the judge of soundness (every program also runs, with and without the pass)."""
from __future__ import annotations

import random

import numpy as np
import pytest

from tritonpu.codegen.asmlist import Access, If, Instr, Loop, While, render
from tritonpu.codegen.sync import SyncReport, insert_sync
from tritonpu.npu import assemble
from tritonpu.npu.errors import RaceError

HEAD = ".kernel t\n.param x gm f32\n.param y gm f32\n.param n i32\n"
TILE = 4096                                    # bytes: 1024 f32


def ub(lo, n=TILE):
    return Access("ub", lo, lo + n)


def load(dst, off=0, n=TILE, p="x"):
    return Instr(f"mov.gm.ub ub[{dst}], {p}[{off}], 1, {n}, 0, 0", "MTE2",
                 reads=(Access.gm(p),), writes=(ub(dst, n),))


def vadds(dst, src, n=TILE):
    return Instr(f"vadds.f32 ub[{dst}], ub[{src}], 1.0, {n // 4}", "V",
                 reads=(ub(src, n),), writes=(ub(dst, n),))


def vadd(dst, a, b, n=TILE):
    return Instr(f"vadd.f32 ub[{dst}], ub[{a}], ub[{b}], {n // 4}", "V",
                 reads=(ub(a, n), ub(b, n)), writes=(ub(dst, n),))


def vdup(dst, v=1.0, n=TILE):
    return Instr(f"vdup.f32 ub[{dst}], {v}, {n // 4}", "V", writes=(ub(dst, n),))


def store(src, off=0, n=TILE, p="y"):
    return Instr(f"mov.ub.gm {p}[{off}], ub[{src}], 1, {n}, 0, 0", "MTE3",
                 reads=(ub(src, n),), writes=(Access.gm(p),))


def sld(reg, addr):
    return Instr(f"sld.f32 {reg}, ub[{addr}]", "S", reads=(ub(addr, 4),))


def sst(addr, v):
    return Instr(f"sst.f32 ub[{addr}], {v}", "S", writes=(ub(addr, 4),))


def S(text):
    return Instr(text, "S")


def loop(reg, end, body, start=0):
    return Loop(S(f"for {reg}, {start}, {end}, 1"), body)


def text_of(nodes):
    return HEAD + "\n".join(render(nodes)) + "\n"


def lines_from(nodes, marker):
    """The assembly's lines (stripped) from the first occurrence of ``marker`` on."""
    text = text_of(nodes)
    return [ln.strip() for ln in text[text.index(marker):].splitlines()]


def body_lines(nodes):
    return [ln.strip() for ln in render(nodes)]


def run(nodes, x=None, y=None, n=0):
    x = np.arange(4 * 1024, dtype=np.float32) if x is None else x
    y = np.zeros(4 * 1024, np.float32) if y is None else y
    assemble(text_of(nodes), "t.s").run({"x": x, "y": y, "n": n}, grid=(1,), sanitize=True)
    return x, y


def synced(nodes, **kw):
    rep = insert_sync(nodes, **kw)
    assert isinstance(rep, SyncReport)
    return rep


def assert_races(build, **kw):
    """Without the pass the program races (so the test would notice a pass that did nothing)."""
    with pytest.raises(RaceError):
        run(build(), **kw)


def flags(nodes):
    return [ln for ln in body_lines(nodes) if ln.startswith(("set_flag", "wait_flag"))]


# ---- straight line ------------------------------------------------------------------------------

def basic():
    return [load(0), vadds(4096, 0), store(4096)]


def test_load_compute_store_golden_and_runs():
    nodes = basic()
    rep = synced(nodes)
    assert body_lines(nodes) == [
        "mov.gm.ub ub[0], x[0], 1, 4096, 0, 0",
        "set_flag MTE2, V, 0",
        "wait_flag MTE2, V, 0",
        "vadds.f32 ub[4096], ub[0], 1.0, 1024",
        "set_flag V, MTE3, 0",
        "wait_flag V, MTE3, 0",
        "mov.ub.gm y[0], ub[4096], 1, 4096, 0, 0",
    ]
    assert rep.pairs == 2 and rep.events_used == {("MTE2", "V"): 1, ("V", "MTE3"): 1}
    x, y = run(nodes)
    np.testing.assert_array_equal(y[:1024], x[:1024] + 1)


def test_without_pass_the_sanitizer_reports_a_race():
    assert_races(basic)


def _grouped(ins, group):
    ins.group = group
    return ins


@pytest.mark.parametrize("group", [None, 7])
def test_a_prefetch_groups_loads_share_one_flag_when_the_reader_has_other_work_first(group):
    """One trip's loads issued ahead (``Instr.group``): the first reader, queued behind other V
    work, waits once for the group's last load, and the second reader needs no flag of its own."""
    nodes = [_grouped(load(0, off=0), group), _grouped(load(4096, off=4096), group),
             vdup(16384), vadds(20480, 0), vadds(24576, 4096), store(20480), store(24576, off=4096)]
    rep = synced(nodes)
    if group is None:       # a flag right after each load, each reader waiting for its own
        assert body_lines(nodes)[:4] == ["mov.gm.ub ub[0], x[0], 1, 4096, 0, 0", "set_flag MTE2, V, 0",
                                         "mov.gm.ub ub[4096], x[4096], 1, 4096, 0, 0", "set_flag MTE2, V, 1"]
        assert rep.events_used[("MTE2", "V")] == 2
    else:
        assert body_lines(nodes)[:4] == ["mov.gm.ub ub[0], x[0], 1, 4096, 0, 0",
                                         "mov.gm.ub ub[4096], x[4096], 1, 4096, 0, 0", "set_flag MTE2, V, 0",
                                         "vdup.f32 ub[16384], 1.0, 1024"]
        assert flags(nodes).count("wait_flag MTE2, V, 0") == 1 and rep.events_used[("MTE2", "V")] == 1
    x, y = run(nodes)
    np.testing.assert_array_equal(y[:2048], x[:2048] + 1)


def test_a_reader_right_behind_its_group_keeps_its_own_flag():
    """No other V work before the first reader: it may start before the group's later loads land."""
    nodes = [_grouped(load(0, off=0), 3), _grouped(load(4096, off=4096), 3),
             vadds(20480, 0), vadds(24576, 4096), store(20480), store(24576, off=4096)]
    rep = synced(nodes)
    assert rep.events_used[("MTE2", "V")] == 2
    assert body_lines(nodes)[1] == "set_flag MTE2, V, 0"
    x, y = run(nodes)
    np.testing.assert_array_equal(y[:2048], x[:2048] + 1)


def test_two_reads_of_one_load_need_one_pair():
    nodes = [load(0), vadds(4096, 0), vadds(8192, 0), store(4096), store(8192, off=4096)]
    rep = synced(nodes)
    assert flags(nodes).count("wait_flag MTE2, V, 0") == 1
    # MTE2->V once; each store waits only for its own vadds (sets placed after the producers)
    assert rep.pairs == 3 and rep.events_used == {("MTE2", "V"): 1, ("V", "MTE3"): 2}
    run(nodes)


def test_transitive_chain_needs_no_direct_pair():
    # in place: the store to x is a WAR against the load of x (MTE2 -> MTE3), covered via V
    nodes = [load(0), vadds(0, 0), store(0, p="x")]
    rep = synced(nodes)
    assert rep.pairs == 2 and ("MTE2", "MTE3") not in rep.events_used
    run(nodes)


def test_set_placed_after_its_producer_and_concurrent_ids_differ():
    nodes = [load(0), load(4096, off=4096), vadds(8192, 0), vadds(12288, 4096)]
    rep = synced(nodes)
    assert body_lines(nodes) == [
        "mov.gm.ub ub[0], x[0], 1, 4096, 0, 0",
        "set_flag MTE2, V, 0",
        "mov.gm.ub ub[4096], x[4096], 1, 4096, 0, 0",
        "set_flag MTE2, V, 1",
        "wait_flag MTE2, V, 0",
        "vadds.f32 ub[8192], ub[0], 1.0, 1024",
        "wait_flag MTE2, V, 1",
        "vadds.f32 ub[12288], ub[4096], 1.0, 1024",
    ]
    assert rep.events_used == {("MTE2", "V"): 2}
    run(nodes)


def test_event_ids_stay_below_max_events():
    k = 6
    nodes = [load(i * 1024, off=i * 1024, n=1024) for i in range(k)]
    nodes += [vadds(32768 + i * 1024, i * 1024, n=1024) for i in range(k)]
    rep = synced(nodes, max_events=2)
    assert rep.events_used[("MTE2", "V")] <= 2
    ids = {ln.split(",")[-1].strip() for ln in flags(nodes)}
    assert ids <= {"0", "1"}
    run(nodes)                                 # the simulator raises on a double set
    nodes = [load(i * 1024, off=i * 1024, n=1024) for i in range(k)]
    nodes += [vadds(32768 + i * 1024, i * 1024, n=1024) for i in range(k)]
    assert synced(nodes).events_used[("MTE2", "V")] == k
    run(nodes)


def test_same_pipe_and_no_access_need_nothing():
    nodes = [S("mov s1, 3"), vdup(0), vadds(0, 0), vadd(4096, 0, 0), S("add s1, s1, 1")]
    rep = synced(nodes)
    assert rep.pairs == 0 and not flags(nodes)
    run(nodes)


def test_scalar_read_after_vector_write_waits_v_to_s_and_orders_later_pipes():
    nodes = [vdup(0, 2.0), sld("s1", 0), store(0)]
    rep = synced(nodes)
    # the wait on S orders everything S issues later, so the store needs no V->MTE3 pair
    assert body_lines(nodes) == [
        "vdup.f32 ub[0], 2.0, 1024",
        "set_flag V, S, 0",
        "wait_flag V, S, 0",
        "sld.f32 s1, ub[0]",
        "mov.ub.gm y[0], ub[0], 1, 4096, 0, 0",
    ]
    assert rep.events_used == {("V", "S"): 1}
    _, y = run(nodes)
    assert y[0] == 2.0
    assert_races(lambda: [vdup(0, 2.0), sld("s1", 0), store(0)])


def test_earlier_scalar_access_needs_nothing():
    nodes = [sst(0, 5.0), vadds(4096, 0, n=64), sst(8, 1.0)]
    # the later sst writes ub[8] that V read: V -> S (WAR); the first sst needs nothing
    rep = synced(nodes)
    assert flags(nodes) == ["set_flag V, S, 0", "wait_flag V, S, 0"]
    assert rep.pairs == 1
    run(nodes)


def test_existing_sync_text_is_treated_as_no_access():
    nodes = [load(0), S("barrier all"), vadds(4096, 0)]
    assert synced(nodes).pairs == 0
    run(nodes)


# ---- loops --------------------------------------------------------------------------------------

def tiled(trips=4):
    return [loop("s0", trips, [S("mul s1, s0, 4096"), load(0, off="s1"), vadds(4096, 0),
                               store(4096, off="s1")])]


def test_loop_carried_war_is_synced_golden():
    nodes = tiled()
    synced(nodes)
    # back-edge hazards get loop-carried pairs: set right after the producer for the next trip,
    # pre-set before the loop for the first trip, drained after it (ids from the top, 7)
    assert body_lines(nodes) == [
        "set_flag MTE3, V, 7",
        "set_flag V, MTE2, 7",
        "for s0, 0, 4, 1",
        "mul s1, s0, 4096",
        "wait_flag V, MTE2, 7",             # the previous trip's vadds has read ub[0]
        "mov.gm.ub ub[0], x[s1], 1, 4096, 0, 0",
        "set_flag MTE2, V, 0",
        "wait_flag MTE2, V, 0",
        "wait_flag MTE3, V, 7",             # the previous trip's store has read ub[4096]
        "vadds.f32 ub[4096], ub[0], 1.0, 1024",
        "set_flag V, MTE3, 0",
        "set_flag V, MTE2, 7",
        "wait_flag V, MTE3, 0",
        "mov.ub.gm y[s1], ub[4096], 1, 4096, 0, 0",
        "set_flag MTE3, V, 7",
        "endfor",
        "wait_flag MTE3, V, 7",
        "wait_flag V, MTE2, 7",
    ]
    x, y = run(nodes)
    np.testing.assert_array_equal(y, x + 1)


def test_a_loop_of_one_trip_at_most_has_no_back_edge():
    """The tiled loop marked ``one_trip`` (passes/one_program.py: a program loop that gives no
    core a second trip; emitted without carried flags): its body starts from the state before it
    -- the load waits for no previous trip's vadds, the vadds for no previous trip's store (as
    the same loop without ``one_trip`` does: two pairs more in the body) -- and it is left after
    none or one trip: the load and the vadds after it wait for the body's vadds and store.  Runs
    right for 0 and 1 trips with the sanitizer on."""
    def build(trips, once=True):
        return [Loop(S(f"for s0, 0, {trips}, 1"), tiled()[0].body, carry_flags=False, one_trip=once),
                load(0, off=8192), vadds(4096, 0), store(4096, off=8192)]
    nodes = build(1)
    synced(nodes)
    assert body_lines(nodes) == [
        "for s0, 0, 1, 1",
        "mul s1, s0, 4096",
        "mov.gm.ub ub[0], x[s1], 1, 4096, 0, 0",
        "set_flag MTE2, V, 0",
        "wait_flag MTE2, V, 0",
        "vadds.f32 ub[4096], ub[0], 1.0, 1024",
        "set_flag V, MTE3, 0",
        "wait_flag V, MTE3, 0",
        "mov.ub.gm y[s1], ub[4096], 1, 4096, 0, 0",
        "endfor",
        "set_flag V, MTE2, 0",
        "wait_flag V, MTE2, 0",
        "mov.gm.ub ub[0], x[8192], 1, 4096, 0, 0",
        "set_flag MTE2, V, 0",
        "wait_flag MTE2, V, 0",
        "set_flag MTE3, V, 0",
        "wait_flag MTE3, V, 0",
        "vadds.f32 ub[4096], ub[0], 1.0, 1024",
        "set_flag V, MTE3, 0",
        "wait_flag V, MTE3, 0",
        "mov.ub.gm y[8192], ub[4096], 1, 4096, 0, 0",
    ]
    twice = build(1, once=False)
    synced(twice)
    assert len(flags(twice)) == len(flags(nodes)) + 4
    for trips in (0, 1):
        nodes = build(trips)
        synced(nodes)
        x, y = run(nodes)
        np.testing.assert_array_equal(y[2048:3072], x[2048:3072] + 1)
        np.testing.assert_array_equal(y[:1024], (x[:1024] + 1) if trips else 0)


def test_a_drain_after_a_loop_orders_its_pipe_for_the_code_after_it():
    """After the loop, MTE2's drain (``wait_flag V, MTE2, 7``: the last trip's vadds had read
    ub[0], or, with no trip, the set before the loop) already orders MTE2 after V's reads: the
    load into ub[0] after the loop needs no pair of its own.  Each drain is waited for where its
    pipe first needs it (V's, which nothing after the loop needs, at the end)."""
    nodes = tiled() + [load(0, off=0), vadds(8192, 0), store(8192, off=0)]
    synced(nodes)
    lines = body_lines(nodes)
    after = lines[lines.index("endfor") + 1:]
    assert after[:2] == ["wait_flag V, MTE2, 7", "mov.gm.ub ub[0], x[0], 1, 4096, 0, 0"], lines
    assert after[-1] == "wait_flag MTE3, V, 7", lines
    x, y = run(nodes)
    np.testing.assert_array_equal(y, x + 1)


def test_a_drain_orders_only_what_precedes_its_set_in_the_last_trip():
    """The drain of V -> MTE2 (set after the vadds that read ub[0]) does not order MTE2 after the
    vadds the last trip issues after that set: the load into ub[8192] after the loop waits for it."""
    def build():
        return [vdup(8192), loop("s0", 4, [S("mul s1, s0, 4096"), load(0, off="s1"), vadds(4096, 0),
                                           vadds(12288, 8192), store(4096, off="s1")]),
                load(8192, off=0), vadds(4096, 8192), store(4096, off=0)]
    assert_races(build)
    nodes = build()
    synced(nodes)
    lines = body_lines(nodes)
    after = lines[lines.index("endfor") + 1:]
    assert after[after.index("mov.gm.ub ub[8192], x[0], 1, 4096, 0, 0") - 2:][:2] == \
        ["set_flag V, MTE2, 0", "wait_flag V, MTE2, 0"], lines
    x, y = run(nodes)
    np.testing.assert_array_equal(y, x + 1)


def test_the_first_trips_flags_are_set_right_after_the_loads_before_the_loop():
    """A loop-carried pair whose first-trip producer is in the run right before the loop (a
    pipelined loop's prologue) sets its flag right after that producer, not before the loop: the
    first trip's reader of ub[0] does not wait for the load into ub[4096] issued after it."""
    def build():
        return [load(0, off=0), load(4096, off=4096),
                loop("s0", 4, [S("mul s1, s0, 4096"), vadds(8192, 0), vadds(12288, 4096), store(8192, off="s1"),
                               load(0, off="s1"), load(4096, off="s1")])]
    nodes = build()
    synced(nodes)
    lines = body_lines(nodes)
    assert lines[:lines.index("for s0, 0, 4, 1")] == [
        "mov.gm.ub ub[0], x[0], 1, 4096, 0, 0",
        "set_flag MTE2, V, 7",
        "mov.gm.ub ub[4096], x[4096], 1, 4096, 0, 0",
        "set_flag MTE2, V, 6",
        "set_flag MTE3, V, 7",
    ], lines
    assert lines[-3:] == ["wait_flag MTE2, V, 6", "wait_flag MTE2, V, 7", "wait_flag MTE3, V, 7"]
    x, y = run(nodes)
    # trip k adds 1 to what the trip before loaded (the prologue: x[0:1024]) from x[(k-1)*1024:]
    np.testing.assert_array_equal(y[:1024], x[:1024] + 1)
    np.testing.assert_array_equal(y[1024:4096], x[:3072] + 1)
    assert_races(build)


def test_a_drain_pending_over_the_back_edge_is_waited_for_after_its_pipes_last_work():
    """An inner loop's drain V -> MTE2 stays pending over the outer loop's back edge; in the next
    trip it is waited for right after MTE2's last work in the run before the inner loop (the same
    point in MTE2's queue as right before the loop), so the inner loop's first set of that flag
    can go before V's work there."""
    def build():
        return [loop("s0", 3, [S("mul s2, s0, 1024"), load(8192, off="s2"), vadds(8192, 8192),
                               loop("s1", 2, [S("mul s1, s1, 4096"), load(0, off="s1"), vadds(12288, 0)]),
                               store(12288, off="s2"), store(8192, off="s2")])]
    nodes = build()
    synced(nodes)
    lines = body_lines(nodes)
    assert lines[lines.index("mov.gm.ub ub[8192], x[s2], 1, 4096, 0, 0"):lines.index("for s1, 0, 2, 1")] == [
        "mov.gm.ub ub[8192], x[s2], 1, 4096, 0, 0",
        "set_flag MTE2, V, 0",
        "wait_flag V, MTE2, 7",
        "set_flag V, MTE2, 7",
        "wait_flag MTE2, V, 0",
        "vadds.f32 ub[8192], ub[8192], 1.0, 1024",
        # (the next trip's first load overwrites what this vadds read: a pair of its own, set
        # right after it -- sync_branches.plan right in a loop's body)
        "set_flag V, MTE2, 6",
    ], lines
    # (and what the previous trip's last store read: a pair set right after it)
    at = lines.index("mov.gm.ub ub[8192], x[s2], 1, 4096, 0, 0")
    assert lines[at - 2:at] == ["wait_flag V, MTE2, 6", "wait_flag MTE3, MTE2, 7"], lines
    assert lines[lines.index("mov.ub.gm y[s2], ub[8192], 1, 4096, 0, 0") + 1] == "set_flag MTE3, MTE2, 7", lines
    x, y = run(nodes)
    np.testing.assert_array_equal(y[:1536], x[:1536] + 1)      # each trip's second store wins
    assert_races(build)


def test_each_drain_is_waited_for_in_the_branch_that_first_needs_it():
    """A pipelined loop's last trips run after it, each in a branch (if it exists): the drain of
    the flag that orders ub[0] is waited for right before the first branch's reader (and at the end
    of its other branch, so both leave no flag pending), the one for ub[4096] in the second branch
    -- the first trip after the loop does not wait for the second one's tile."""
    def build():
        body = [S("mul s1, s0, 4096"), vadds(8192, 0), vadds(12288, 4096), store(8192, off="s1"),
                load(0, off="s1"), load(4096, off="s1")]
        return [load(0, off=0), load(4096, off=4096), loop("s0", 3, body),
                If([S("mov s8, n"), S("br.eq s8, 0, {target}")], [vadds(16384, 0), store(16384, off=0)]),
                If([S("mov s8, n"), S("br.eq s8, 1, {target}")], [vadds(20480, 4096), store(20480, off=4096)])]
    nodes = build()
    synced(nodes)
    after = lines_from(nodes, "endfor")
    assert after == [
        "endfor", "mov s8, n", "br.eq s8, 0, else1",
        "wait_flag MTE2, V, 7", "vadds.f32 ub[16384], ub[0], 1.0, 1024", "set_flag V, MTE3, 0",
        "wait_flag V, MTE3, 0", "mov.ub.gm y[0], ub[16384], 1, 4096, 0, 0", "jmp endif2",
        "else1:", "wait_flag MTE2, V, 7", "endif2:",
        "mov s8, n", "br.eq s8, 1, else3",
        "wait_flag MTE2, V, 6", "vadds.f32 ub[20480], ub[4096], 1.0, 1024", "set_flag V, MTE3, 0",
        "wait_flag V, MTE3, 0", "mov.ub.gm y[4096], ub[20480], 1, 4096, 0, 0", "jmp endif4",
        "else3:", "wait_flag MTE2, V, 6", "endif4:",
        "wait_flag MTE3, V, 7"], after
    for n in (0, 1, 2):
        x, y = run(nodes, n=n)      # the last trip (s0 = 2) loaded both tiles from x[2048:3072]
        if n != 0:
            np.testing.assert_array_equal(y[:1024], x[2048:3072] + 1)
        if n != 1:
            np.testing.assert_array_equal(y[1024:2048], x[2048:3072] + 1)
    assert_races(build)


def test_a_vector_drain_one_branch_waits_for_is_set_again_there():
    """The loop's V -> MTE2 drain (the next load into ub[0] after V's last read of it) is waited
    for in the branch that loads into ub[0], and set again right after that wait: the path without
    the branch does not wait for it at the branch's end, only where it needs it, after the if (a
    persistent matmul's MTE1 waited for the cube's last product there before letting the next
    program's first loads go).  The new set claims none of the branch's own work: the load after
    the if still waits for the branch's read of ub[0] with a pair of its own.  (A drain from a
    transfer pipe is not set again -- its set would wait for every transfer issued since: see the
    test above.)"""
    def build():
        body = [S("mul s1, s0, 4096"), load(0, off="s1"), vadds(4096, 0), store(4096, off="s1")]
        return [loop("s0", 3, body),
                If([S("mov s8, n"), S("br.eq s8, 0, {target}")], [load(0, off=0), vadds(8192, 0), store(8192, off=0)]),
                load(0, off=1024), vadds(12288, 0), store(12288, off=2048)]
    nodes = build()
    synced(nodes)
    after = lines_from(nodes, "endfor")
    assert after[:7] == ["endfor", "mov s8, n", "br.eq s8, 0, endif2", "wait_flag V, MTE2, 7", "set_flag V, MTE2, 7",
                         "mov.gm.ub ub[0], x[0], 1, 4096, 0, 0", "set_flag MTE2, V, 0"], after
    end = after.index("endif2:")
    assert after[end:end + 5] == ["endif2:", "wait_flag V, MTE2, 7", "set_flag V, MTE2, 0", "wait_flag V, MTE2, 0",
                                  "mov.gm.ub ub[0], x[1024], 1, 4096, 0, 0"], after
    for n in (0, 1):
        x, y = run(nodes, n=n)
        np.testing.assert_array_equal(y[512:1536], x[256:1280] + 1)     # (byte offsets 1024 and 2048)
    assert_races(build)


def test_a_vector_drain_one_branch_leaves_pending_is_set_at_the_other_branch_s_end():
    """The loop in the branch leaves its V -> MTE2 drain pending; the path without the loop sets
    the flag at its end, so after the if MTE2 loads ub[8192] (which V never read) and waits for
    the drain only before its load into ub[0], the loop's buffer -- not at the branch's end.  On
    the path without the loop the drain orders the loop's reads of ub[0] vacuously (never
    issued there), so the load into ub[0] needs no pair of its own.  The MTE3 -> V drain (a
    transfer pipe's: its set would wait for every transfer issued before it) is still waited
    for at the branch's end."""
    def build():
        inner = loop("s1", 2, [S("mul s2, s1, 4096"), load(0, off="s2"), vadds(4096, 0), store(4096, off="s2")])
        return [If([S("mov s8, n"), S("br.eq s8, 0, {target}")], [inner]),
                load(8192, off=8192), vadds(12288, 8192), store(12288, off=8192),
                load(0, off=12288), vadds(16384, 0), store(16384, off=12288)]
    nodes = build()
    synced(nodes)
    tail = lines_from(nodes, "endfor")
    assert tail[:6] == ["endfor", "wait_flag MTE3, V, 7", "jmp endif2", "else1:", "set_flag V, MTE2, 7",
                        "endif2:"], tail
    assert tail[6] == "mov.gm.ub ub[8192], x[8192], 1, 4096, 0, 0", tail
    at = tail.index("mov.gm.ub ub[0], x[12288], 1, 4096, 0, 0")
    assert tail[at - 2:at] == ["mov.ub.gm y[8192], ub[12288], 1, 4096, 0, 0", "wait_flag V, MTE2, 7"], tail
    for n in (0, 1):
        x, y = run(nodes, n=n)
        np.testing.assert_array_equal(y[2048:4096], x[2048:4096] + 1)     # (byte offsets 8192, 12288)
        if n:
            np.testing.assert_array_equal(y[:2048], x[:2048] + 1)
    assert_races(build)


def test_a_pair_set_before_a_drain_is_waited_for_takes_another_id():
    """After a loop with two carried pairs MTE2 -> V (ids 2 and 1 of 3), the first reader after it
    reads the loop's last tile and so waits for drain 2 there; the loads after the loop are read
    later, each by a pair set right after its load -- before that drain's wait, so not id 2 (it
    took id 2 once the drain's wait was placed: the flag was set twice, a FlagError at run time)."""
    def build():
        body = [vadds(16384, 0), vadds(20480, 4096), store(16384), store(20480, off=4096),
                S("mul s1, s0, 4096"), load(0, off="s1"), load(4096, off="s1")]
        return [load(0), load(4096, off=4096), loop("s0", "n", body),
                load(8192, off=0), load(12288, off=4096),
                vadds(24576, 0), vadds(28672, 8192), vadds(32768, 12288),
                store(24576), store(28672, off=4096), store(32768, off=8192)]
    assert_races(build)
    nodes = build()
    rep = synced(nodes, max_events=3)
    assert rep.events_used[("MTE2", "V")] <= 3
    after = lines_from(nodes, "endfor")
    pending = set()
    for ln in after:                    # no flag set again while it is pending
        if ln.startswith(("set_flag", "wait_flag")):
            flag = ln.split(None, 1)[1]
            if ln.startswith("set_flag"):
                assert flag not in pending, (ln, after)
                pending.add(flag)
            else:
                pending.discard(flag)
    for n in (0, 1, 3):                 # (offsets in bytes: a tile is 1024 floats)
        x, y = run(nodes, n=n)
        last = max(n - 1, 0) * 1024     # the tile the loop's last trip loaded into ub[0]
        np.testing.assert_array_equal(y[:1024], x[last:last + 1024] + 1)
        np.testing.assert_array_equal(y[1024:2048], x[:1024] + 1)
        np.testing.assert_array_equal(y[2048:3072], x[1024:2048] + 1)


def test_a_drain_does_not_order_what_is_issued_again_after_its_loop():
    """The drain of the inner loop's V -> MTE2 pair orders MTE2 after what V had done at its last
    set -- including the previous outer trip's vadds into ub[8192], but not the vadds this trip
    issues again after the inner loop: the load into ub[8192] still waits for that one (found by
    the sanitizer on layernorm when drains were first placed lazily)."""
    def build():
        inner = loop("s1", 3, [S("mul s2, s1, 4096"), load(0, off="s2"), vadds(4096, 0)])
        return [loop("s0", 2, [inner, vadds(8192, 4096), load(8192, off=0), vadds(12288, 8192),
                               S("mul s3, s0, 4096"), store(12288, off="s3")])]
    nodes = build()
    synced(nodes)
    x, y = run(nodes)
    np.testing.assert_array_equal(y[:2048], np.concatenate([x[:1024] + 1] * 2))
    assert_races(build)


def test_loops_one_after_another_share_their_carried_event_ids():
    # a loop-carried pair is pending from before its loop to after it: the next loop may use the
    # same id, so a kernel with many loops (versions of one K loop) does not run out of ids and
    # fall back to a set_flag right before its wait (which made MTE1 wait for MTE2's next loads)
    nodes = [loop(f"s{2 * k}", 4, [S(f"mul s{2 * k + 1}, s{2 * k}, 4096"), load(0, off=f"s{2 * k + 1}"),
                                   vadds(4096, 0), store(4096, off=f"s{2 * k + 1}")]) for k in range(3)]
    synced(nodes, max_events=3)
    lines = body_lines(nodes)
    pre = [lines[i - 2:i] for i, ln in enumerate(lines) if ln.startswith("for ")]
    assert pre == [["set_flag MTE3, V, 2", "set_flag V, MTE2, 2"]] * 3, lines
    x, y = run(nodes)
    np.testing.assert_array_equal(y, x + 1)


def test_loop_without_pass_races_on_the_back_edge():
    def build():
        nodes = tiled()
        body = nodes[0].body
        body[2:2] = [S("set_flag MTE2, V, 0"), S("wait_flag MTE2, V, 0")]    # in-trip RAW only
        body[5:5] = [S("set_flag V, MTE3, 0"), S("wait_flag V, MTE3, 0")]
        return nodes
    with pytest.raises(RaceError, match="write-after-read"):
        run(build())


def test_loop_may_run_zero_times_post_loop_access_synced_against_pre_loop():
    def build():
        return [vdup(0, 3.0),
                loop("s0", "n", [vdup(8192, 1.0), store(8192, off=4096)]),
                store(0)]
    nodes = build()
    synced(nodes)
    lines = body_lines(nodes)
    assert lines.index("endfor") < lines.index("wait_flag V, MTE3, 0", lines.index("endfor"))
    for n in (0, 1, 3):
        _, y = run(nodes, n=n)
        assert y[0] == 3.0
    assert_races(build)


def test_pre_loop_producer_synced_into_loop():
    nodes = [load(0), loop("s0", 3, [vadds(4096, 0), store(4096)])]
    synced(nodes)
    run(nodes)
    assert_races(lambda: [load(0), loop("s0", 3, [vadds(4096, 0), store(4096)])])


def test_nested_loops():
    def build():
        inner = loop("s2", 2, [S("mul s3, s2, 1024"), S("add s3, s3, s1"),
                               load(0, off="s3", n=1024), vadds(4096, 0, n=1024),
                               store(4096, off="s3", n=1024)])
        return [loop("s0", 3, [S("mul s1, s0, 2048"), inner, vdup(0, 0.0, n=1024)])]
    nodes = build()
    synced(nodes)
    run(nodes)
    assert_races(build)


# ---- branches and while -------------------------------------------------------------------------

def branchy(orelse):
    test = [S("mov s1, n"), S("br.eq s1, 0, {target}")]
    then = [load(0), vadds(0, 0)]
    other = [vdup(0, 7.0)] if orelse else []
    return [vdup(4096, 1.0), If(test, then, other), store(0)]


@pytest.mark.parametrize("orelse", [False, True])
def test_if_branches_joined(orelse):
    nodes = branchy(orelse)
    synced(nodes)
    for n in (0, 1):
        x, y = run(nodes, n=n)
        if n:
            assert y[0] == x[0] + 1
        elif orelse:
            assert y[0] == 7.0
    assert_races(lambda: branchy(orelse), n=1)


def test_if_test_instruction_stays_last_and_reads_are_synced():
    nodes = [vdup(0, 1.0), If([sld("s1", 0), S("fcmp.eq s2, s1, 1.0"), S("br.eq s2, 0, {target}")],
                              [vdup(0, 2.0)]), store(0)]
    synced(nodes)
    lines = body_lines(nodes)
    assert lines[lines.index("sld.f32 s1, ub[0]") - 1] == "wait_flag V, S, 0"
    assert lines[lines.index("br.eq s2, 0, endif2") - 1] == "fcmp.eq s2, s1, 1.0"
    _, y = run(nodes)
    assert y[0] == 2.0


def whiley():
    return [S("mov s0, 0"),
            While(before=[S("mul s1, s0, 4096")], test=[S("br.ge s0, 3, {target}")],
                  after=[load(0, off="s1"), vadds(4096, 0), store(4096, off="s1"),
                         S("add s0, s0, 1")]),
            vdup(0, 0.0)]


def test_while_loop_back_edge_and_exit():
    nodes = whiley()
    rep = synced(nodes)
    assert ("V", "MTE2") in rep.events_used and ("MTE3", "V") in rep.events_used
    lines = body_lines(nodes)
    assert lines[lines.index("jmp while1") - 1] == "add s0, s0, 1"
    x, y = run(nodes)
    np.testing.assert_array_equal(y[:3072], x[:3072] + 1)
    assert_races(whiley)


def operands_to_l0(kb=1024):
    """Two 16x16 f32 tiles from x (A at 0, B right after) into L1, then L0A / L0B."""
    return [Instr("mov.gm.l1 l1[0], x[0], 1, 1024, 0, 0", "MTE2", (Access.gm("x"),), (Access("l1", 0, kb),)),
            Instr("mov.gm.l1 l1[1024], x[1024], 1, 1024, 0, 0", "MTE2", (Access.gm("x"),),
                  (Access("l1", kb, 2 * kb),)),
            Instr("mov.l1.l0a l0a[0], l1[0], 1, 1024, 0, 0", "MTE1", (Access("l1", 0, kb),),
                  (Access("l0a", 0, kb),)),
            Instr("mov.l1.l0b l0b[0], l1[1024], 1, 1024, 0, 0", "MTE1", (Access("l1", kb, 2 * kb),),
                  (Access("l0b", 0, kb),))]


def cube_chain():
    kb = 1024                                   # a 16x16 f32 tile
    return [loop("s0", 2, [
        *operands_to_l0(kb),
        Instr("mmad.f32.f32 l0c[0], l0a[0], l0b[0], 16, 16, 16", "M",
              (Access("l0a", 0, kb), Access("l0b", 0, kb)), (Access("l0c", 0, kb),)),
        Instr("mov.l0c.ub.f32.f32 ub[0], l0c[0], 1, 1024, 0, 0", "FIX", (Access("l0c", 0, kb),),
              (ub(0, kb),)),
        vadds(4096, 0, n=kb),
        store(4096, n=kb)])]


def test_cube_pipeline_in_a_loop():
    nodes = cube_chain()
    rep = synced(nodes)
    for pair in [("MTE2", "MTE1"), ("MTE1", "M"), ("M", "FIX"), ("FIX", "V"), ("V", "MTE3"),
                 ("MTE1", "MTE2"), ("M", "MTE1"), ("FIX", "M"), ("V", "FIX"), ("MTE3", "V")]:
        assert pair in rep.events_used, pair
    # forward chain MTE2->MTE1->M->FIX->V->MTE3 and each back-edge WAR, no shortcut pairs; the
    # two L1 loads each get their own MTE2->MTE1 set (placed after each load, ids 0 and 1), and
    # each L1 buffer's back-edge WAR its own loop-carried MTE1->MTE2 pair (ids 7 and 6), set
    # right after the MTE1 copy that last read it
    assert rep.pairs == 12 and rep.events_used[("MTE2", "MTE1")] == 2
    lines = body_lines(nodes)
    assert lines.index("set_flag MTE1, MTE2, 7") < lines.index("mov.l1.l0b l0b[0], l1[1024], 1, 1024, 0, 0")
    x, y = run(nodes)
    a, b = x[:256].reshape(16, 16), x[256:512].reshape(16, 16)
    np.testing.assert_allclose(y[:256].reshape(16, 16), a @ b + 1, rtol=1e-5)
    assert_races(cube_chain)


# ---- soundness on random programs ---------------------------------------------------------------

def random_block(rng, depth, regs):
    out = []
    for _ in range(rng.randint(1, 5)):
        r = rng.random()
        a, b = (rng.randrange(4) * 1024 for _ in range(2))
        if r < 0.2:
            out.append(load(a, off=rng.randrange(4) * 1024, n=1024))
        elif r < 0.45:
            out.append(vadds(a, b, n=1024))
        elif r < 0.6:
            out.append(store(a, off=rng.randrange(4) * 1024, n=1024))
        elif r < 0.7:
            out.append(sld("s9", a) if rng.random() < 0.5 else sst(a, 1.0))
        elif r < 0.85 and depth < 2 and regs:
            reg = regs[0]
            out.append(loop(reg, rng.randint(0, 3), random_block(rng, depth + 1, regs[1:])))
        elif r < 0.92 and depth < 2 and regs:
            reg = regs[0]
            out.append(S(f"mov {reg}, 0"))
            out.append(While([S("add s10, s10, 0")] + random_block(rng, depth + 1, regs[1:]),
                             [S(f"br.ge {reg}, {rng.randint(0, 2)}, {{target}}")],
                             random_block(rng, depth + 1, regs[1:]) + [S(f"add {reg}, {reg}, 1")]))
        elif depth < 2:
            t = [S("mov s8, n"), S(f"br.eq s8, {rng.randint(0, 1)}, {{target}}")]
            out.append(If(t, random_block(rng, depth + 1, regs),
                          random_block(rng, depth + 1, regs) if rng.random() < 0.5 else []))
    return out


@pytest.mark.parametrize("seed", range(500))
def test_random_programs_pass_the_sanitizer(seed):
    rng = random.Random(seed)
    nodes = random_block(rng, 0, ["s0", "s1", "s2"])
    rep = synced(nodes, max_events=3)
    assert all(v <= 3 for v in rep.events_used.values())
    for n in (0, 1):
        run(nodes, n=n)


def test_a_drain_orders_only_what_its_early_set_saw_not_what_src_waited_for_after_it():
    """The first set of MTE2 -> MTE3 goes right after the load before the loop; MTE2 then waits
    for V (its next load overwrites V's ub[4096]), so later in that run it is ordered after V's
    write of ub[8192] too, which V issued before that set -- but the early set is not.  After a loop that runs no trip, the store
    of ub[8192] must wait for V itself: the drain of MTE2 -> MTE3 does not order it (a probe found
    this as races in attention-like kernels with an extra tile loaded per trip)."""
    def build():
        return [vdup(8192), load(0, off=0), vdup(4096), load(4096, off=4096),
                Loop(S("for s0, 0, n, 1"), [S("mul s1, s0, 4096"), store(0, off="s1"), load(0, off="s1")]),
                store(8192, off=0), store(4096, off=4096)]
    assert_races(build)
    nodes = build()
    synced(nodes)
    lines = body_lines(nodes)
    assert lines[2] == "set_flag MTE2, MTE3, 7", lines          # the early set
    after = lines[lines.index("endfor") + 1:]
    assert any(ln.startswith("wait_flag V, MTE3") for ln in after[:after.index("mov.ub.gm y[0], ub[8192], 1, 4096, 0, 0")]), lines
    for n in (0, 3):
        x, y = run(nodes, n=n)
        np.testing.assert_array_equal(y[:1024], np.ones(1024, np.float32))      # vdup's ones, not a race


def test_a_consumer_with_no_need_from_before_the_loop_claims_only_what_the_early_set_covers():
    """fp32 attention at head dim 128 without double buffering (a probe): the score dot's K is cut
    into two L0A slots, and the prologue the stagger pass peels reads both before the loop.  The
    pair M -> MTE1's first set goes right after the first slot's mmad; the wait for this trip's
    first slot, in a fixpoint round where it needed nothing from before the loop, claimed the
    prologue's later read of the second slot as covered, so the second slot's refill raced with
    it.  Sanitizer on: no race, and right."""
    import tritonpu
    import tritonpu.language as tl

    @tritonpu.jit
    def attention(q_ptr, k_ptr, v_ptr, o_ptr, N_CTX, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
        offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
        offs_n = tl.arange(0, BN)
        offs_d = tl.arange(0, D)
        q = tl.load(q_ptr + offs_m[:, None] * D + offs_d[None, :])
        m_i = tl.zeros((BM,), dtype=tl.float32) - float("inf")
        l_i = tl.zeros((BM,), dtype=tl.float32)
        acc = tl.zeros((BM, D), dtype=tl.float32)
        for start_n in range(0, N_CTX, BN):
            kt = tl.load(k_ptr + offs_d[:, None] + (start_n + offs_n)[None, :] * D)
            qk = tl.dot(q, kt)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            p = tl.exp(qk - m_ij[:, None])
            alpha = tl.exp(m_i - m_ij)
            l_i = l_i * alpha + tl.sum(p, 1)
            v = tl.load(v_ptr + (start_n + offs_n)[:, None] * D + offs_d[None, :])
            acc = tl.dot(p, v, acc * alpha[:, None])
            m_i = m_ij
        tl.store(o_ptr + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None])

    n, d = 128, 128
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((n, d)).astype(np.float32) * 0.3 for _ in range(3))
    s = q.astype(np.float64) @ k.T
    p = np.exp(s - s.max(1, keepdims=True))
    ref = (p / p.sum(1, keepdims=True)) @ v
    o = np.zeros((n, d), np.float32)
    attention[(1,)](q, k, v, o, n, BM=128, BN=64, D=d, double_buffer=False, sanitize=True)
    np.testing.assert_allclose(o, ref, rtol=1e-4, atol=1e-5)


def persistent_k_loop_with_a_straight_line_last_trip():
    """A core's programs (outer loop): an accumulator zeroed by a product over k = 0 (it waits for
    FIX to drain the previous program's), a K loop of n trips, its last trip after it as
    straight-line code, FIX storing the accumulator."""
    kb = 1024

    def trip():
        return [*operands_to_l0(kb),
                Instr("mmad.f32.f32 l0c[0], l0a[0], l0b[0], 16, 16, 16, init=0", "M",
                      (Access("l0a", 0, kb), Access("l0b", 0, kb), Access("l0c", 0, kb)), (Access("l0c", 0, kb),))]
    return [loop("s0", 2, [
        Instr("mmad.f32.f32 l0c[0], l0a[0], l0b[0], 16, 0, 16, init=1", "M", (), (Access("l0c", 0, kb),)),
        Loop(S("for s1, 0, n, 1"), trip()),
        *trip(),
        Instr("mov.l0c.gm.f32.f32 y[0], l0c[0], 16, 64, 64, 64", "FIX", (Access("l0c", 0, kb),), (Access.gm("y"),))])]


def test_a_k_loops_first_set_is_set_in_the_previous_program_after_the_last_product_reading_its_tile():
    """The K loop's first trip overwrites the L0 tiles the previous program's last product read:
    its first set of M -> MTE1 is that product's, in the previous trip of the program loop (a
    cross pair, sync_cross.py) -- not one in the run before the K loop, behind whatever the cube
    queued after that product (measured: 2048^3 128x256x64 waited ~180 cycles for the cube's last
    products at each change of program).  One set before the program loop for its first trip,
    one drain after it; the drain of the K loop's last trip is waited for before the product.
    Sanitizer on: no race, and right for 0, 1 and 3 trips."""
    assert_races(persistent_k_loop_with_a_straight_line_last_trip)
    nodes = persistent_k_loop_with_a_straight_line_last_trip()
    synced(nodes)
    lines = body_lines(nodes)
    assert "set_flag M, MTE1, 7" in lines[:lines.index("for s0, 0, 2, 1")] and \
        "wait_flag M, MTE1, 7" in lines[len(lines) - lines[::-1].index("endfor"):], lines
    entry = lines[lines.index("for s0, 0, 2, 1"):lines.index("for s1, 0, n, 1")]
    assert not [ln for ln in entry if ln.startswith("set_flag M, MTE1")], entry
    last = len(lines) - 1 - lines[::-1].index("mmad.f32.f32 l0c[0], l0a[0], l0b[0], 16, 16, 16, init=0")
    assert lines[last + 1] == "set_flag M, MTE1, 7", lines
    after = lines[lines.index("endfor"):last]
    assert after.count("wait_flag M, MTE1, 7") == 1, after
    for n in (0, 1, 3):
        x, y = run(nodes, n=n)
        a, b = x[:256].reshape(16, 16), x[256:512].reshape(16, 16)
        np.testing.assert_allclose(y[:256].reshape(16, 16), (n + 1) * (a @ b), rtol=1e-5)


def test_the_first_product_waits_for_the_previous_programs_drain_of_its_half_only():
    """A program's accumulator zeroing (the first half of L0C) conflicts with the previous
    program's FIX drain of that half, which comes after the K loop in the loop's body, not in the
    zeroing's straight-line run: its pair is set right after that drain in the previous trip
    (sync_branches.plan), so it does not wait for the drain of the second half queued behind
    (before: a set right before the wait -- at 2048^3 128x256x64 the cube idled ~356 cycles at
    each change of program).  Sanitizer on: no race, right for 0, 1 and 3 trips."""
    kb = 1024

    def product(half):
        return Instr(f"mmad.f32.f32 l0c[{half * kb}], l0a[0], l0b[0], 16, 16, 16, init=0", "M",
                     (Access("l0a", 0, kb), Access("l0b", 0, kb), Access("l0c", half * kb, (half + 1) * kb)),
                     (Access("l0c", half * kb, (half + 1) * kb),))

    def drain(half):
        return Instr(f"mov.l0c.gm.f32.f32 y[{half * kb}], l0c[{half * kb}], 16, 64, 64, 64", "FIX",
                     (Access("l0c", half * kb, (half + 1) * kb),), (Access.gm("y"),))

    def build():
        return [loop("s0", 2, [
            Instr("mmad.f32.f32 l0c[0], l0a[0], l0b[0], 16, 0, 16, init=1", "M", (), (Access("l0c", 0, kb),)),
            Instr("mmad.f32.f32 l0c[1024], l0a[0], l0b[0], 16, 0, 16, init=1", "M", (),
                  (Access("l0c", kb, 2 * kb),)),
            Loop(S("for s1, 0, n, 1"), [*operands_to_l0(kb), product(0), product(1)]),
            drain(0), drain(1)])]
    assert_races(build)
    nodes = build()
    synced(nodes)
    lines = body_lines(nodes)
    first = lines.index("mov.l0c.gm.f32.f32 y[0], l0c[0], 16, 64, 64, 64")
    assert lines[first + 1].startswith("set_flag FIX, M, "), lines
    ev = lines[first + 1].split()[-1]
    zero = lines.index("mmad.f32.f32 l0c[0], l0a[0], l0b[0], 16, 0, 16, init=1")
    head = lines[lines.index("for s0, 0, 2, 1") + 1:zero]
    assert head[-1] == f"wait_flag FIX, M, {ev}" and not [ln for ln in head if ln.startswith("set_flag FIX")], lines
    assert lines[lines.index("mov.l0c.gm.f32.f32 y[1024], l0c[1024], 16, 64, 64, 64") + 1].startswith(
        "set_flag FIX, M, "), lines
    for n in (0, 1, 3):
        x, y = run(nodes, n=n)
        a, b = x[:256].reshape(16, 16), x[256:512].reshape(16, 16)
        for half in (0, 1):
            np.testing.assert_allclose(y[half * 256:(half + 1) * 256].reshape(16, 16), n * (a @ b), rtol=1e-5)


def persistent_k_loop_with_first_tiles_before_it():
    """A core's programs: the first tiles (A, B) into L1 slot 0 before the K loop, the loop's
    trips through slot 1, its last trip after it reading slot 0 again (as the pipelining passes
    peel it), FIX storing the accumulator."""
    kb = 1024

    def gm_to_l1(dst, src):
        return Instr(f"mov.gm.l1 l1[{dst}], x[{src}], 1, 1024, 0, 0", "MTE2", (Access.gm("x"),),
                     (Access("l1", dst, dst + kb),))

    def to_l0(space, src):
        return Instr(f"mov.l1.{space} {space}[0], l1[{src}], 1, 1024, 0, 0", "MTE1", (Access("l1", src, src + kb),),
                     (Access(space, 0, kb),))

    def product():
        return Instr("mmad.f32.f32 l0c[0], l0a[0], l0b[0], 16, 16, 16, init=0", "M",
                     (Access("l0a", 0, kb), Access("l0b", 0, kb), Access("l0c", 0, kb)), (Access("l0c", 0, kb),))
    return [loop("s0", 2, [
        Instr("mmad.f32.f32 l0c[0], l0a[0], l0b[0], 16, 0, 16, init=1", "M", (), (Access("l0c", 0, kb),)),
        gm_to_l1(0, 0), gm_to_l1(kb, 1024),
        Loop(S("for s1, 0, n, 1"), [gm_to_l1(2 * kb, 0), gm_to_l1(3 * kb, 1024), to_l0("l0a", 2 * kb),
                                    to_l0("l0b", 3 * kb), product()]),
        to_l0("l0a", 0), to_l0("l0b", kb), product(),
        Instr("mov.l0c.gm.f32.f32 y[0], l0c[0], 16, 64, 64, 64", "FIX", (Access("l0c", 0, kb),), (Access.gm("y"),))])]


@pytest.mark.parametrize("max_events", [8, 3])
def test_first_loads_wait_for_the_last_reads_of_their_slot_unless_the_k_loop_runs_short_of_ids(max_events):
    """The next program's first loads into L1 slot 0 conflict with the previous program's last
    reads of it, after the K loop: with ids to spare each waits for a pair of its own, set right
    after that read (sync_branches.plan right in the loop's body), not for every transfer MTE1
    queued.  With 3 ids those pairs would leave the K loop short of MTE1 -> MTE2 ids: the pass
    starts again without them (sync_branches.check_top), the loads wait for a set right before
    them, and the K loop keeps its loop-carried pairs.  Sanitizer on: right for 0, 1 and 3 trips."""
    nodes = persistent_k_loop_with_first_tiles_before_it()
    synced(nodes, max_events=max_events)
    lines = body_lines(nodes)
    head = lines[lines.index("mmad.f32.f32 l0c[0], l0a[0], l0b[0], 16, 0, 16, init=1") + 1:
                 lines.index("mov.gm.l1 l1[1024], x[1024], 1, 1024, 0, 0")]
    k_loop = lines[lines.index("for s1, 0, n, 1"):lines.index("endfor")]
    assert not [ln for ln in k_loop if ln.startswith("set_flag MTE1, MTE2") and
                k_loop[k_loop.index(ln) + 1].startswith("wait_flag MTE1, MTE2")], k_loop
    if max_events == 8:
        a, b = head[0].split()[-1], head[-1].split()[-1]
        assert head == [f"wait_flag MTE1, MTE2, {a}", "mov.gm.l1 l1[0], x[0], 1, 1024, 0, 0",
                        f"wait_flag MTE1, MTE2, {b}"] and a != b, lines
        for read, ev in (("mov.l1.l0a l0a[0], l1[0], 1, 1024, 0, 0", a), ("mov.l1.l0b l0b[0], l1[1024], 1, 1024, 0, 0", b)):
            assert lines[lines.index(read) + 1] == f"set_flag MTE1, MTE2, {ev}", lines
    else:
        assert head == ["set_flag MTE1, MTE2, 0", "wait_flag MTE1, MTE2, 0",
                        "mov.gm.l1 l1[0], x[0], 1, 1024, 0, 0"], lines
    for n in (0, 1, 3):
        x, y = run(nodes, n=n)
        a, b = x[:256].reshape(16, 16), x[256:512].reshape(16, 16)
        np.testing.assert_allclose(y[:256].reshape(16, 16), (n + 1) * (a @ b), rtol=1e-5)


def slot_operands(slot, kb=1024):
    """A and B (16x16 f32 from x) into L1 and L0 slot ``slot`` (each slot its own L1 buffers),
    then their product into l0c[0]."""
    a1, b1, l0 = 2 * slot * kb, (2 * slot + 1) * kb, slot * kb
    return [Instr(f"mov.gm.l1 l1[{a1}], x[0], 1, 1024, 0, 0", "MTE2", (Access.gm("x"),), (Access("l1", a1, a1 + kb),)),
            Instr(f"mov.gm.l1 l1[{b1}], x[1024], 1, 1024, 0, 0", "MTE2", (Access.gm("x"),),
                  (Access("l1", b1, b1 + kb),)),
            Instr(f"mov.l1.l0a l0a[{l0}], l1[{a1}], 1, 1024, 0, 0", "MTE1", (Access("l1", a1, a1 + kb),),
                  (Access("l0a", l0, l0 + kb),)),
            Instr(f"mov.l1.l0b l0b[{l0}], l1[{b1}], 1, 1024, 0, 0", "MTE1", (Access("l1", b1, b1 + kb),),
                  (Access("l0b", l0, l0 + kb),)),
            Instr(f"mmad.f32.f32 l0c[0], l0a[{l0}], l0b[{l0}], 16, 16, 16, init=0", "M",
                  (Access("l0a", l0, l0 + kb), Access("l0b", l0, l0 + kb), Access("l0c", 0, kb)),
                  (Access("l0c", 0, kb),))]


def persistent_k_loop_over_two_l0_slots():
    """As above, with each K trip (and the straight-line last trips) reading L0 slot 0, then 1."""
    kb = 1024
    return [loop("s0", 2, [
        Instr("mmad.f32.f32 l0c[0], l0a[0], l0b[0], 16, 0, 16, init=1", "M", (), (Access("l0c", 0, kb),)),
        Loop(S("for s1, 0, n, 1"), slot_operands(0) + slot_operands(1)),
        *slot_operands(0), *slot_operands(1),
        Instr("mov.l0c.gm.f32.f32 y[0], l0c[0], 16, 64, 64, 64", "FIX", (Access("l0c", 0, kb),), (Access.gm("y"),))])]


def test_the_next_programs_first_slot_waits_only_for_the_last_product_reading_that_slot():
    """Slot 0's pair is set right after the last trip's product of slot 0, before slot 1's loads
    and product: the next program's first tiles into slot 0 do not wait for the product of slot 1."""
    assert_races(persistent_k_loop_over_two_l0_slots)
    nodes = persistent_k_loop_over_two_l0_slots()
    synced(nodes)
    lines = body_lines(nodes)
    tail = lines[lines.index("endfor"):]
    at = tail.index("mmad.f32.f32 l0c[0], l0a[0], l0b[0], 16, 16, 16, init=0")
    assert tail[at + 1] == "set_flag M, MTE1, 7", tail
    assert at < tail.index("mov.l1.l0a l0a[1024], l1[2048], 1, 1024, 0, 0"), tail
    last = tail.index("mmad.f32.f32 l0c[0], l0a[1024], l0b[1024], 16, 16, 16, init=0")
    assert tail[last + 1] == "set_flag M, MTE1, 6", tail
    assert {"wait_flag M, MTE1, 6", "wait_flag M, MTE1, 7"} <= set(tail[tail.index("endfor", 1):]), tail
    for n in (0, 1, 3):
        x, y = run(nodes, n=n)
        a, b = x[:256].reshape(16, 16), x[256:512].reshape(16, 16)
        np.testing.assert_allclose(y[:256].reshape(16, 16), (2 * n + 2) * (a @ b), rtol=1e-5)


def test_no_cross_pair_when_the_k_loops_first_trip_needs_a_product_of_the_same_program():
    """A product reading slot 0 before the K loop in the same program: the first trip's set must
    follow it, so it stays in the run before the loop (after that product)."""
    kb = 1024
    def build():
        return [loop("s0", 2, [*slot_operands(0), Loop(S("for s1, 0, n, 1"), slot_operands(0)),
                               Instr("mov.l0c.gm.f32.f32 y[0], l0c[0], 16, 64, 64, 64", "FIX",
                                     (Access("l0c", 0, kb),), (Access.gm("y"),))])]
    nodes = build()
    synced(nodes)
    lines = body_lines(nodes)
    entry = lines[lines.index("for s0, 0, 2, 1"):lines.index("for s1, 0, n, 1")]
    at = entry.index("mmad.f32.f32 l0c[0], l0a[0], l0b[0], 16, 16, 16, init=0")
    assert "set_flag M, MTE1, 7" in entry[at + 1:], entry
    for n in (0, 1, 3):
        run(nodes, n=n)


# ---- loop-carried pairs through branches (sync_branches.py) ---------------------------------------

def versions():
    """A persistent loop's body as the compiler emits it: two versions (an If on the trip's
    parity), each loading its tiles first and reading them last -- each trip's first load reuses
    the buffer the previous trip's (either version's) vadds read."""
    def version(dst):
        return [load(0, off="s1"), load(4096, off="s1"), vadds(dst, 0), vadds(dst + 4096, 4096),
                store(dst, off="s1"), store(dst + 4096, off="s1")]
    return [loop("s0", 4, [S("mul s1, s0, 1024"), If([S("and s8, s0, 1"), S("br.eq s8, 0, {target}")],
                                                        version(8192), version(16384))])]


def test_a_consumer_in_a_branch_waits_for_the_previous_trips_producer_not_for_its_whole_queue():
    """Each version's first load waits for the vadds that read ub[0] in the previous trip (set right
    after it, in both versions), the second load for the one that read ub[4096] -- not, as a pair
    set right before the wait would, for everything V queued before (the second vadds too)."""
    nodes = versions()
    synced(nodes)
    lines = body_lines(nodes)
    then = lines[lines.index("br.eq s8, 0, else1"):lines.index("else1:")]
    assert then[:4] == ["br.eq s8, 0, else1", "wait_flag V, MTE2, 7",
                        "mov.gm.ub ub[0], x[s1], 1, 4096, 0, 0", "set_flag MTE2, V, 0"], then
    first = then.index("vadds.f32 ub[8192], ub[0], 1.0, 1024")
    assert then[first + 1] == "set_flag V, MTE2, 7", then          # right after its read of ub[0]
    head = lines.index("for s0, 0, 4, 1")
    assert lines[head - 2:head] == ["set_flag V, MTE2, 6", "set_flag V, MTE2, 7"]     # for the first trip
    assert lines[-2:] == ["wait_flag V, MTE2, 6", "wait_flag V, MTE2, 7"]          # drained after it
    x, y = run(nodes)       # trip t stores x[256t:256t+1024] + 1 at y[256t:]: the last wins
    np.testing.assert_array_equal(y[:1792], x[:1792] + 1)
    assert_races(versions)


def test_pairs_through_branches_go_through_an_idle_pipe_when_their_pipes_have_no_id_left():
    """With two event ids per pipe pair, V -> MTE2 has one for the pairs through branches (0 is
    left for pairs inside a run); the second goes through MTE1, which has no work in the loop: V
    sets V -> MTE1, MTE1 waits for it and sets MTE1 -> MTE2, which the consumer waits for."""
    nodes = versions()
    synced(nodes, max_events=2)
    lines = body_lines(nodes)
    relay = ["set_flag V, MTE1, 1", "wait_flag V, MTE1, 1", "set_flag MTE1, MTE2, 1"]
    at = lines.index("vadds.f32 ub[12288], ub[4096], 1.0, 1024")
    assert lines[at + 1:at + 4] == relay, lines
    assert "wait_flag MTE1, MTE2, 1" in lines[:lines.index("mov.gm.ub ub[4096], x[s1], 1, 4096, 0, 0")]
    x, y = run(nodes)
    np.testing.assert_array_equal(y[:1792], x[:1792] + 1)


def random_versions(rng, depth):
    """Random code whose If conditions depend on the trip (``s0``): consecutive trips take
    different paths through the body."""
    out = []
    for _ in range(rng.randint(1, 5)):
        r = rng.random()
        a, b = (rng.randrange(4) * 1024 for _ in range(2))
        if r < 0.25:
            out.append(load(a, off=rng.randrange(4) * 1024, n=1024))
        elif r < 0.55:
            out.append(vadds(a, b, n=1024))
        elif r < 0.7:
            out.append(store(a, off=rng.randrange(4) * 1024, n=1024))
        elif r < 0.8 and depth < 2:
            out.append(loop(f"s{2 + depth}", rng.randint(0, 2), random_versions(rng, depth + 1)))
        elif depth < 3:
            t = [S(f"rem s8, s0, {rng.randint(2, 3)}"), S(f"br.eq s8, {rng.randint(0, 1)}, {{target}}")]
            out.append(If(t, random_versions(rng, depth + 1),
                          random_versions(rng, depth + 1) if rng.random() < 0.7 else []))
    return out


def producer_before_an_if():
    """Even trips write ub[0] with V, and again on every third trip; odd trips store it (MTE3)."""
    inner = If([S("rem s8, s0, 3"), S("br.ne s8, 0, {target}")], [vadds(0, 2048, n=1024)])
    return [loop("s0", "n", [If([S("rem s8, s0, 2"), S("br.ne s8, 0, {target}")],
                                [vadds(0, 2048, n=1024), inner],
                                [store(0, off=0, n=1024)])])]


def test_a_path_with_a_producer_before_an_if_sets_the_flag_in_the_branch_without_one():
    """The store waits for a pair set after the last write of ub[0] on each path: on trip 2 that is
    the first vadds, before an If whose other branch holds the second -- the branch without it
    sets the flag too (found by a probe: it did not, and trip 3's store raced with trip 2's vadds)."""
    nodes = producer_before_an_if()
    synced(nodes)
    lines = body_lines(nodes)
    other = lines[lines.index("else3:"):lines.index("endif4:")]
    assert other == ["else3:", "wait_flag V, MTE3, 7", "set_flag V, MTE3, 7"], lines
    for n in (1, 2, 4, 6):
        run(nodes, n=n)


# (seeds a probe of 4000 found racing: a branch without a producer after one on its path -- the
# test above -- and a pair through a relay pipe set before its loop without the relay, so it did
# not order src's work before the loop)
PROBED = [1175, 1237, 1356, 1383, 1405, 1471, 1705, 1883, 2326, 2397, 2445, 2458, 2499, 2543, 2730,
          2793, 2927, 2990, 3012, 3054, 3294, 3433, 3740, 3952]


@pytest.mark.parametrize("seed", list(range(300)) + PROBED)
def test_random_programs_with_paths_that_change_from_trip_to_trip_pass_the_sanitizer(seed):
    rng = random.Random(seed)
    nodes = [loop("s0", "n", random_versions(rng, 0))]
    rep = synced(nodes, max_events=rng.choice([2, 3, 8]))
    assert all(v <= 8 for v in rep.events_used.values())
    for n in (0, 1, 2, 5):
        run(nodes, n=n)


def random_ops(rng, k):
    out = []
    for _ in range(k):
        r, a, b = rng.random(), rng.randrange(4) * 1024, rng.randrange(4) * 1024
        out.append(load(a, off=rng.randrange(4) * 1024, n=1024) if r < 0.35 else vadds(a, b, n=1024)
                   if r < 0.8 else store(a, off=rng.randrange(4) * 1024, n=1024))
    return out


def random_version(rng, depth):
    """Work, an inner loop, work after it (its last trips), and maybe versions of that again."""
    body = random_ops(rng, rng.randint(0, 3))
    body.append(loop(f"s{2 + depth}", rng.randint(0, 3), random_ops(rng, rng.randint(1, 4))))
    body += random_ops(rng, rng.randint(0, 4))
    if depth < 1 and rng.random() < 0.4:
        test = [S(f"rem s8, s0, {rng.randint(2, 3)}"), S(f"br.eq s8, {rng.randint(0, 1)}, {{target}}")]
        body.append(If(test, random_version(rng, depth + 1),
                       random_version(rng, depth + 1) if rng.random() < 0.6 else []))
    return body


def random_persistent_versions(rng):
    """A persistent loop whose trips take versions (by the trip number) that each run an inner
    loop between work before and after it: the shape cross pairs (sync_cross.py) are made for."""
    test = [S(f"rem s8, s0, {rng.randint(2, 3)}"), S(f"br.eq s8, {rng.randint(0, 1)}, {{target}}")]
    before = random_ops(rng, rng.randint(0, 2))
    versions = If(test, random_version(rng, 0), random_version(rng, 0) if rng.random() < 0.8 else [])
    return [loop("s0", "n", before + [versions] + random_ops(rng, rng.randint(0, 2)))]


# (seeds that raced before the fixes of place_sets and relays)
PROBED_PERSISTENT = [153, 232, 305, 367, 496, 743, 745, 763, 813, 917, 948]


@pytest.mark.parametrize("seed", list(range(150)) + PROBED_PERSISTENT)
def test_random_persistent_loops_with_inner_loops_in_versions_pass_the_sanitizer(seed):
    rng = random.Random(seed)
    nodes = random_persistent_versions(rng)
    insert_sync(nodes, max_events=rng.choice([2, 3, 8]))
    for n in (0, 1, 2, 5):
        run(nodes, n=n)
