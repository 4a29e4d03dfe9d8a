"""Translations of the plain transfers for the translating engine (``translate``).

A transfer's decoded closure (``ops_transfer._xfer``) handles every case: registers that hold no
whole number, empty or out-of-bounds transfers, a ``valid`` extent shorter than the segment (the
pad), conversions (``l0c -> *``), transposes, atomics and the profile's records.  The translation
writes out the common case in line -- a copy of whole segments between GM and chip or on chip, in
a launch without a trace; with the sanitizer, its records and the GM race check are made as the
closure makes them -- with the operands that are constants folded in, and calls the closure for
everything else: it tests, before touching anything, that the case is the common one.
Guarantee: a translated transfer leaves memories, GM, the L2 and roofline maps, the clocks, the
statistics and the sanitizer's state exactly as its closure does (the same functions on the same
values, in the same order), and raises what it raises (by running it).
"""
from __future__ import annotations

import math

import numpy as np

from . import cycles
from .gm_races import PLAIN
from .ops_transfer import MAX_TRANSFER_BYTES, U8, _view
from .state import PIPE_INDEX
from .translate import translator

# the functions generated code calls, by the names it calls them
RUNTIME = {"PLAIN": PLAIN, "l2_read_range": cycles.l2_read_range, "l2_read": cycles.l2_read, "granules": cycles.granules,
           "view": _view, "U8": U8,
           "MAX_TRANSFER_BYTES": MAX_TRANSFER_BYTES, "ceil": math.ceil, "arange": np.arange, "int64": np.int64}

_PLAIN_OPTS = {"valid"}         # options the common case may have (pad only matters when valid < seg)


def _mem(E, space) -> str:
    """The name of the running core's ``space`` (bound per State, as a closure binds it at decoding)."""
    line = f"mem_{space} = st.mem[{space!r}]"
    if line not in E.prelude:
        E.prelude.append(line)
    return f"mem_{space}"


def _closure(E, k) -> list[str]:
    return ["st.ts = ts", f"F[{k}]()", "ts = st.ts"]


@translator("xfer")
def _xfer(inst, E):
    st = E.st
    path = inst.spec.op
    o = inst.opts
    if st.trace is not None or path.startswith("l0c") or \
            set(o) - _PLAIN_OPTS - {"pad", "transpose"} or \
            ("transpose" in o and not (o["transpose"].static and o["transpose"].value() == 0)):
        return None
    dmem, smem = inst.args[0], inst.args[1]
    sgm, dgm = smem.space == "gm", dmem.space == "gm"
    m = st.m
    pipe = PIPE_INDEX[inst.spec.pipe]
    p = m.paths[path]
    lat, beat, lpl = p.latency, m.beat_bytes, m.l2_line_bytes // m.beat_bytes
    k = inst.index
    names = ("nseg", "seg", "ss", "ds", "sa", "da")
    vals = [E.val(a) for a in inst.args[2:6]] + [E.val(smem.addr), E.val(dmem.addr)]
    lines = E.settle()
    lines += [f"{n} = {v}" for n, v in zip(names, vals)]
    ints = [n for n, a in zip(names, list(inst.args[2:6]) + [smem.addr, dmem.addr]) if a.reg is not None]
    sbuf = f"GM[{E.const(smem.param, 'name')}]" if sgm else _mem(E, smem.space)
    dbuf = f"GM[{E.const(dmem.param, 'name')}]" if dgm else _mem(E, dmem.space)
    lines += [f"sbuf = {sbuf}", f"dbuf = {dbuf}"]
    cond = [f"type({n}) is int" for n in ints]
    if "valid" in o:
        # the closure pads when fewer than seg bytes are valid: only a full segment is plain
        lines.append(f"rl = {E.val(o['valid'])}")
        if o["valid"].reg is not None:
            cond.append("type(rl) is int")
        cond.append("rl >= seg")
    cond += ["nseg > 0", "seg > 0", "ss >= 0", "ds >= 0",
             "nseg * seg <= (MAX_TRANSFER_BYTES if MAX_TRANSFER_BYTES < sbuf.size + dbuf.size "
             "else sbuf.size + dbuf.size)"]
    race = st.race is not None
    inst_c = E.const(inst, "inst")
    # bounds: what the closure checks, on the bytes it moves (and with the sanitizer, alignment)
    cond += ["sa >= 0", "sa + (nseg - 1) * ss + seg <= sbuf.size",
             "da >= 0", "da + (nseg - 1) * ds + seg <= dbuf.size"]
    if not sgm:
        cond[-4:-2] = ["sa >= 0", f"sa + (nseg - 1) * ss + seg <= {m.capacity[smem.space]}"]
    if not dgm:
        cond[-2:] = ["da >= 0", f"da + (nseg - 1) * ds + seg <= {m.capacity[dmem.space]}"]
    for side, mem in (("sa", smem), ("da", dmem)):
        if race and mem.space != "gm":
            cond.append(f"{side} % {m.align[mem.space]} == 0")
    body = []
    if race:        # the sanitizer's record of each side, as the closure makes it (before the data)
        for side, mem, stride, write in (("sa", smem, "ss", False), ("da", dmem, "ds", True)):
            space = E.const("gm:" + mem.param if mem.space == "gm" else mem.space, "space")
            body.append(f"race.access({pipe}, {space}, {side}, {side} + (nseg - 1) * {stride} + seg, {write}, {inst_c})")
    gmr = (lambda *a: [f"if GMR is not None: GMR.access(st, {', '.join(a)})"])
    body += ["if nseg == 1:", "    dbuf[da:da + seg] = sbuf[sa:sa + seg]",
            "else:", "    view(dbuf, U8, (nseg, seg), da, (ds, 1))[...] = view(sbuf, U8, (nseg, seg), sa, (ss, 1))"]
    path_c = E.const(path, "path")
    def gm_side(param, side, stride, write, one, many, cost):
        """The GM side's beats and maps (one segment / several), its race check, then ``cost``."""
        name = E.const(param, "name")
        args = (name, str(write), "PLAIN", inst_c, side)
        return (["if nseg == 1:"] + ["    " + x for x in one(name) + gmr(*args, f"{side} + seg")] +
                ["else:"] + ["    " + x for x in many(name) + gmr(*args, "length=seg", "nseg=nseg", f"stride={stride}")] +
                [cost])

    if sgm:
        # (cycles.read_transfer's expression, term for term: the same float)
        rate = f"cold * {beat} / {m.ddr_bytes_per_cycle!r} + warm * {beat} / {m.l2_bytes_per_cycle!r}"
        body += gm_side(smem.param, "sa", "ss", False,
                        lambda n: [f"cold, warm = l2_read_range(SEEN[{n}], sa, sa + seg, {beat}, {lpl})",
                                   f"READ[{n}].add(sa, sa + seg)"],
                        lambda n: [f"gran, _ = granules(sa + arange(nseg, dtype=int64) * ss, seg, {beat})",
                                   f"cold, warm = l2_read(SEEN[{n}], gran, {lpl})",
                                   f"READ[{n}].add_segments(sa, nseg, seg, ss)"],
                        f"cost = {lat} + ceil({rate} - 1e-9)")
    elif dgm:
        body += gm_side(dmem.param, "da", "ds", True,
                        lambda n: [f"beats = (da + seg - 1) // {beat} - da // {beat} + 1",
                                   f"WRITTEN[{n}].add(da, da + seg)"],
                        lambda n: [f"_, beats = granules(da + arange(nseg, dtype=int64) * ds, seg, {beat})",
                                   f"WRITTEN[{n}].add_segments(da, nseg, seg, ds)"],
                        f"cost = {lat} + ceil(beats * {beat} / {p.bytes_per_cycle!r} - 1e-9)")
    else:
        body += [f"cost = {lat} + ceil((nseg * -(-seg // {beat})) * {beat} / {p.bytes_per_cycle!r} - 1e-9)"]
    body += ["bbp = st.bytes_by_path", f"bbp[{path_c}] = bbp.get({path_c}, 0) + nseg * seg"]
    # State.tick(pipe, cost, inst, lat), then State.landed for an on-chip destination
    body += ["t = ts", f"cnt[{pipe}] += 1"] + \
        ([f"RVC[{pipe}][{pipe}] += 1", f"if RSEEN[{pipe}] != race.s_version: race.follow_scalar({pipe})"]
         if race else []) + \
        ["ts = t + 1", "b0 += 1", f"c = clk[{pipe}]", "if c > t:", f"    queued[{pipe}] += c - t", "    t = c"]
    if lat:
        body += [f"if t + cost > done[{pipe}]: done[{pipe}] = t + cost",
                 f"busy_c = cost - {lat} if cost - {lat} > 1 else 1"]
    else:
        body += ["busy_c = cost"]
    body += [f"clk[{pipe}] = t + busy_c", f"busy[{pipe}] += busy_c"]
    if lat and not dgm:
        dname = E.const(dmem.space, "space")
        body += [f"st.landed({pipe}, t, {dname}, da, da + (nseg - 1) * ds + seg, t + cost)"]
    lines += ["if " + " and ".join(cond) + ":"] + ["    " + x for x in body]
    lines += ["else:"] + ["    " + x for x in _closure(E, k)]
    return lines, False
