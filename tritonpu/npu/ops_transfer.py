"""Transfer families (strided multi-segment copies, gather/scatter) and the cube (``mmad``).

A transfer moves ``nseg`` segments of ``seg_bytes``; segment i starts at ``src + i*src_stride``
and lands at ``dst + i*dst_stride``.  GM sides are numpy views over the caller's arrays (no
copies; writes go through).  Every GM byte read or written is marked in a per-parameter byte map
(the roofline's distinct bytes); GM reads price their beats with the L2 first-touch model.
"""
from __future__ import annotations

import numpy as np

from tritonpu.dtypes import BITS_ORDERED, bits_atomic, bits_atomic_at

from . import cycles
from .errors import LaunchError, MisalignedError
from .gm_races import ATOMIC, PLAIN
from .ops_scalar import np_scalar
from .registry import family
from .sanitizer import GM
from .state import M, PIPE_INDEX, check_whole, getter, npdt, vec_operand

U8 = np.dtype(np.uint8)
BOOL = np.dtype(np.bool_)
F32 = np.dtype(np.float32)
I32 = np.dtype(np.int32)
F64 = np.dtype(np.float64)
I64 = np.dtype(np.int64)
_ATOMIC = {"add": np.add, "max": np.maximum, "min": np.minimum}
MAX_TRANSFER_BYTES = 1 << 30        # what one transfer may move (bounds its work before it runs)
_ATOMIC_AT = {"add": np.add.at, "max": np.maximum.at, "min": np.minimum.at}


def _combine(atomic, dst, src):
    """``dst`` combined with ``src`` in place by the DMA's atomic mode ``atomic``."""
    if atomic != "add" and dst.dtype in BITS_ORDERED:
        dst[...] = bits_atomic(atomic, dst, np.broadcast_to(src, dst.shape))
    else:
        _ATOMIC[atomic](dst, src, out=dst)


def _combine_at(atomic, flat, idx, src):
    """``_combine`` at ``flat[idx]`` (indices may repeat: every one accumulates)."""
    if atomic != "add" and flat.dtype in BITS_ORDERED:
        bits_atomic_at(atomic, flat, idx, src)
    else:
        _ATOMIC_AT[atomic](flat, idx, src)


def _accumulate(atomic, dbuf, dt, dst, src, da, ds):
    """``dst`` (nseg x n elements of ``dt`` at byte ``da``, segments ``ds`` bytes apart) combined
    with ``src`` element by element.  Segments that overlap in GM (a stride shorter than a segment,
    0 when every segment lands on the same elements) accumulate every element, as the DMA's atomic
    mode does — none is lost to another."""
    nseg, n = dst.shape
    if nseg <= 1 or ds >= n * dt.itemsize:
        _combine(atomic, dst, src)
        return
    eb = dt.itemsize
    if da % eb or ds % eb:
        raise MisalignedError(f"overlapping atomic segments must be whole aligned {dt} elements "
                              f"(address {da:#x}, stride {ds})")
    flat = dbuf[: dbuf.size // eb * eb].view(dt)
    idx = (da + np.arange(nseg, dtype=np.int64)[:, None] * ds) // eb + np.arange(n, dtype=np.int64)
    _combine_at(atomic, flat, idx.ravel(), np.asarray(src).reshape(-1))


def _bounded(total, src_bytes, dst_bytes, inst, what):
    """A transfer's work is bounded before it runs: at most MAX_TRANSFER_BYTES, and at most what
    its source and destination memories hold together (a transfer that moves more only repeats
    itself: zero strides on both sides)."""
    if total > MAX_TRANSFER_BYTES or total > src_bytes + dst_bytes:
        raise LaunchError(f"{what} ({total} bytes), more than its source and destination memories hold "
                          f"together ({src_bytes} + {dst_bytes} bytes)" if total <= MAX_TRANSFER_BYTES else
                          f"{what} ({total} bytes), more than one transfer may ({MAX_TRANSFER_BYTES})",
                          inst=inst)


def _side(st, mem):
    """(buffer getter, is_gm, name) of one side of a transfer (GM arrays are looked up at run time:
    a relaunch with other arrays of the same sizes reuses the decoded program)."""
    if mem.space == "gm":
        gm, name = st.gm, mem.param
        return (lambda: gm[name]), True, mem.param
    buf = st.mem[mem.space]
    return (lambda: buf), False, mem.space


def _view(buf, dt, shape, offset, strides):
    return np.ndarray(shape, dt, buffer=buf, offset=offset, strides=strides)


@family("xfer", ["gm->ub", "gm->l1", "l1->l0a", "l1->l0b", "l0c->gm", "l0c->ub", "ub->gm",
                 "ub->l1", "ub->ub"])
def _xfer(st, inst, prog):
    R, tick, m = st.R, st.tick, st.m
    path = inst.spec.op
    pipe = PIPE_INDEX[inst.spec.pipe]
    dmem, smem = inst.args[0], inst.args[1]
    dbuf_g, dgm, dname = _side(st, dmem)
    sbuf_g, sgm, sname = _side(st, smem)
    gd, gs = getter(dmem.addr, R), getter(smem.addr, R)
    g_nseg, g_seg, g_ss, g_ds = (getter(a, R) for a in inst.args[2:6])
    o = inst.opts
    conv = path.startswith("l0c")
    if conv:
        du, dt = npdt(inst.types[0]), npdt(inst.types[1])
    else:
        dt = du = npdt(inst.types[0]) if inst.types else None
    transpose = "transpose" in o and o["transpose"].value() == 1
    atomic = o.get("atomic")
    g_scale = getter(o["scale"], R) if "scale" in o else None
    g_valid = getter(o["valid"], R) if "valid" in o else None
    pad = np_scalar(o["pad"].value(), dt) if "pad" in o and o["pad"].static else None
    g_pad = getter(o["pad"], R) if "pad" in o and not o["pad"].static else None
    race = st.race
    lpl = m.l2_line_bytes // m.beat_bytes
    beat = m.beat_bytes
    # the L2 and roofline maps are looked up per run: a decoding kept for relaunches serves
    # arrays of any size (the launch makes the maps)
    gm_seen, gm_read, gm_written = st.gm_seen, st.gm_read, st.gm_written
    lat = m.paths[path].latency

    def run():
        nseg, seg, ss, ds = g_nseg(), g_seg(), g_ss(), g_ds()
        sa, da = gs(), gd()
        sbuf, dbuf = sbuf_g(), dbuf_g()
        if not (type(nseg) is int and type(seg) is int and type(ss) is int and type(ds) is int
                and type(sa) is int and type(da) is int):           # (the common case, without a call)
            check_whole(inst, nseg=nseg, seg_bytes=seg, src_stride=ss, dst_stride=ds, source_address=sa,
                        destination_address=da)
        if nseg <= 0 or seg <= 0:
            tick(pipe, 1, inst)     # nothing moves: nothing lands later
            return
        if nseg * seg > min(MAX_TRANSFER_BYTES, sbuf.size + dbuf.size):     # (the message only when raised)
            _bounded(nseg * seg, sbuf.size, dbuf.size, inst, f"the transfer moves {nseg} segments of {seg} bytes")
        rl = seg
        if g_valid is not None:
            rl = min(max(g_valid(), 0), seg)
            check_whole(inst, valid=rl)
        if conv:
            if seg % dt.itemsize:
                raise MisalignedError(f"seg_bytes {seg} is not a whole number of {inst.types[1]}",
                                      inst=inst)
            nel = seg // dt.itemsize
            dl = nel * du.itemsize
        else:
            dl = seg
        if transpose:
            eb = dt.itemsize
            nel = seg // eb
            s_hi = sa + (nseg - 1) * ss + seg
            d_hi = da + (nel - 1) * ds + nseg * eb
        else:
            s_hi = sa + (nseg - 1) * ss + rl
            d_hi = da + (nseg - 1) * ds + dl
        if ss < 0 or ds < 0:
            raise LaunchError("negative transfer stride", inst=inst)
        # ---- checks ----
        if sgm:
            if rl > 0:                              # reading nothing touches no address
                st.check_gm(sname, sa, s_hi, inst, "read")
        else:
            st.check_onchip(sname, sa, s_hi, inst, "read")
            st.check_align(sname, sa, inst, "source address")
        if dgm:
            if dl > 0:
                st.check_gm(dname, da, d_hi, inst, "write")
        else:
            st.check_onchip(dname, da, d_hi, inst, "write")
            st.check_align(dname, da, inst, "destination address")
        if race is not None:
            if not sgm:
                race.access(pipe, sname, sa, s_hi, False, inst)
            elif rl > 0:
                race.access(pipe, GM + sname, sa, s_hi, False, inst)
            if not dgm:
                race.access(pipe, dname, da, d_hi, True, inst)
            elif dl > 0:
                race.access(pipe, GM + dname, da, d_hi, True, inst)
        # ---- data ----
        if transpose:
            src = _view(sbuf, dt, (nseg, nel), sa, (ss, eb))
            _view(dbuf, dt, (nel, nseg), da, (ds, eb))[...] = src.T
        elif conv:
            src = _view(sbuf, dt, (nseg, nel), sa, (ss, dt.itemsize))
            if g_scale is not None:
                src = src * np_scalar(g_scale(), dt)
            src = src.astype(du)
            dst = _view(dbuf, du, (nseg, nel), da, (ds, du.itemsize))
            if atomic:
                _accumulate(atomic, dbuf, du, dst, src, da, ds)
            else:
                dst[...] = src
        elif atomic:
            eb = dt.itemsize
            src = _view(sbuf, dt, (nseg, seg // eb), sa, (ss, eb))
            dst = _view(dbuf, dt, (nseg, seg // eb), da, (ds, eb))
            _accumulate(atomic, dbuf, dt, dst, src, da, ds)
        else:
            if nseg == 1:
                dbuf[da:da + rl] = sbuf[sa:sa + rl]
            elif rl > 0:
                _view(dbuf, U8, (nseg, rl), da, (ds, 1))[...] = _view(sbuf, U8, (nseg, rl), sa, (ss, 1))
            if rl < seg:
                eb = dt.itemsize
                if rl % eb or seg % eb:
                    raise MisalignedError(f"valid={rl} / seg_bytes={seg} are not whole "
                                          f"{inst.types[0]} elements", inst=inst)
                pv = pad if g_pad is None else np_scalar(g_pad(), dt)
                _view(dbuf, dt, (nseg, (seg - rl) // eb), da + rl, (ds, eb))[...] = pv
        # ---- cost ----
        late = lat
        if sgm:
            if rl <= 0:
                cold = warm = 0
            elif nseg == 1:
                cold, warm = cycles.l2_read_range(gm_seen[sname], sa, sa + rl, beat, lpl)
                gm_read[sname].add(sa, sa + rl)
                if st.gm_races is not None:
                    st.gm_races.access(st, sname, False, PLAIN, inst, sa, sa + rl)
            else:
                starts = sa + np.arange(nseg, dtype=np.int64) * ss
                gran, _ = cycles.granules(starts, rl, beat)
                cold, warm = cycles.l2_read(gm_seen[sname], gran, lpl)
                gm_read[sname].add_segments(sa, nseg, rl, ss)
                if st.gm_races is not None:
                    st.gm_races.access(st, sname, False, PLAIN, inst, sa, length=rl, nseg=nseg, stride=ss)
            cost = cycles.read_transfer(m, path, cold, warm)
            st.add_bytes(path, nseg * rl, (cold, warm))
            if rl <= 0:                 # no GM byte read: the pad is written on chip, no GM latency
                cost, late = 1, 0
        elif dgm:
            if nseg == 1:
                beats = (da + dl - 1) // beat - da // beat + 1
                gm_written[dname].add(da, da + dl)
                if st.gm_races is not None:
                    st.gm_races.access(st, dname, True, ATOMIC if atomic else PLAIN, inst, da, da + dl)
            else:
                starts = da + np.arange(nseg, dtype=np.int64) * ds
                _, beats = cycles.granules(starts, dl, beat)
                gm_written[dname].add_segments(da, nseg, dl, ds)
                if st.gm_races is not None:
                    st.gm_races.access(st, dname, True, ATOMIC if atomic else PLAIN, inst, da, length=dl, nseg=nseg,
                                       stride=ds)
            cost = cycles.write_transfer(m, path, beats)
            st.add_bytes(path, nseg * dl)
        else:
            cost = cycles.onchip_transfer(m, path, nseg, dl)
            st.add_bytes(path, nseg * dl)
        start = tick(pipe, cost, inst, late)
        if late and not dgm:
            st.landed(pipe, start, dname, da, d_hi, start + cost)
    return run


@family("gather", ["gather", "scatter"])
def _gather(st, inst, prog):
    R, tick, m = st.R, st.tick, st.m
    scatter = inst.spec.op == "scatter"
    path = "ub->gm" if scatter else ("gm->" + inst.args[0].space)
    pipe = PIPE_INDEX[inst.spec.pipe]
    gmem, umem = (inst.args[0], inst.args[1]) if scatter else (inst.args[1], inst.args[0])
    gname = gmem.param
    gm = st.gm
    ubuf = st.mem[umem.space]
    g_g, g_u = getter(gmem.addr, R), getter(umem.addr, R)
    g_n, g_rb, g_rs, g_us = (getter(a, R) for a in inst.args[3:7])
    o = inst.opts
    idt = np.dtype(np.int64) if o.get("idx") == "i64" else I32
    gidx = vec_operand(st, inst, inst.args[2], idt, pipe, False)
    gmask = vec_operand(st, inst, o["mask"], U8, pipe, False) if "mask" in o else None
    imem = inst.args[2]
    g_ia = getter(imem.addr, R)
    g_ma = getter(o["mask"].addr, R) if "mask" in o else None
    wait_what = f"{inst.spec.name} waits for its indices to land"
    et = npdt(inst.types[0]) if inst.types else None
    atomic = o.get("atomic")
    pad = getter(o["pad"], R) if "pad" in o else None
    g_valid = getter(o["valid"], R) if "valid" in o else None
    if "nseg" in o:
        g_nseg = getter(o["nseg"], R)
        g_sst = getter(o["seg_stride"], R) if "seg_stride" in o else (lambda: 0)
        g_dss = getter(o["dst_seg_stride"], R) if "dst_seg_stride" in o else (lambda: 0)
        return _gather_segments(st, inst, gname, umem, g_g, g_u, g_n, g_rb, g_rs, g_us, gidx, gmask, g_ia, g_ma,
                                idt, et, pad, g_valid, g_nseg, g_sst, g_dss, path, pipe, wait_what)
    race = st.race
    lpl = m.l2_line_bytes // m.beat_bytes
    gm_seen, bmaps = st.gm_seen, (st.gm_written if scatter else st.gm_read)

    def run():
        n, rb, rs, us = g_n(), g_rb(), g_rs(), g_us()
        gb, ua = g_g(), g_u()
        gbuf = gm[gname]
        if not (type(n) is int and type(rb) is int and type(rs) is int and type(us) is int and type(gb) is int
                and type(ua) is int):
            check_whole(inst, nrows=n, row_bytes=rb, row_stride=rs, dst_stride=us, gm_address=gb, address=ua)
        if n > 0 and rb > 0:
            if n * rb > min(MAX_TRANSFER_BYTES, gbuf.size + ubuf.size):
                _bounded(n * rb, gbuf.size, ubuf.size, inst, f"the gather moves {n} rows of {rb} bytes")
        if n <= 0 or rb <= 0:
            tick(pipe, 1, inst)     # nothing moves: nothing lands later
            return
        if st.inflight[pipe]:                   # indices/mask written by this pipe still in flight?
            ia = g_ia()
            st.wait_landed(pipe, imem.space, ia, ia + n * idt.itemsize, wait_what)
            if gmask is not None:
                ma = g_ma()
                st.wait_landed(pipe, o["mask"].space, ma, ma + n, wait_what)
        idx = gidx(1, n)[0].astype(np.int64)
        rows = np.arange(n)
        sel = None
        if gmask is not None:
            sel = gmask(1, n)[0] != 0
            rows, idx = rows[sel], idx[sel]
        full = rb
        if g_valid is not None:         # read the first `valid` bytes of each row, pad the rest
            rb = min(max(g_valid(), 0), full)
            check_whole(inst, valid=rb)
        starts = gb + idx * rs
        u_hi = ua + (n - 1) * us + full
        st.check_onchip(umem.space, ua, u_hi, inst, "write" if not scatter else "read")
        st.check_align(umem.space, ua, inst)
        if starts.size and rb > 0:              # reading nothing touches no address
            lo, hi = int(starts.min()), int(starts.max()) + rb
            st.check_gm(gname, lo, hi, inst, "scatter to" if scatter else "gather from")
            if race is not None:
                race.access(pipe, GM + gname, lo, hi, scatter, inst)
        if race is not None:
            race.access(pipe, umem.space, ua, u_hi, not scatter, inst)
        uview = _view(ubuf, U8, (n, rb), ua, (us, 1))
        bidx = starts[:, None] + np.arange(rb)
        if rb < full and not scatter:
            eb = et.itemsize
            if rb % eb or full % eb:
                raise MisalignedError(f"valid={rb} / row_bytes={full} are not whole {inst.types[0]} elements",
                                      inst=inst)
            _view(ubuf, et, (n, (full - rb) // eb), ua + rb, (us, eb))[...] = np_scalar(pad(), et)
        if scatter:
            if atomic:
                eb = et.itemsize
                if rb % eb or (starts % eb).any():
                    raise MisalignedError(f"atomic scatter rows must be whole aligned {inst.types[0]}",
                                          inst=inst)
                tview = _view(ubuf, et, (n, rb // eb), ua, (us, eb))[rows]
                gt = gbuf[: gbuf.size // eb * eb].view(et)
                eidx = starts[:, None] // eb + np.arange(rb // eb)
                _combine_at(atomic, gt, eidx, tview)
            else:
                gbuf[bidx] = uview[rows]
        else:
            uview[rows] = gbuf[bidx]
            if pad is not None and sel is not None and not sel.all():
                eb = et.itemsize
                tv = _view(ubuf, et, (n, full // eb), ua, (us, eb))
                tv[~sel] = np_scalar(pad(), et)
        bmaps[gname].add_rows(starts, rb)
        if st.gm_races is not None:
            st.gm_races.access(st, gname, scatter, ATOMIC if atomic else PLAIN, inst, starts=starts, length=rb)
        if rb == 0:                             # nothing read (valid=0): the fill costs nothing
            cost = cycles.read_transfer(m, path, 0, 0)
            tick(pipe, cost, inst, m.paths[path].latency)
            return
        gran, beats = cycles.granules(starts, rb, m.beat_bytes)
        if scatter:
            cost = cycles.write_transfer(m, path, beats)
        else:
            cold, warm = cycles.l2_read(gm_seen[gname], gran, lpl)
            cost = cycles.read_transfer(m, path, cold, warm)
        st.add_bytes(path, int(starts.size) * rb, (0, 0) if scatter else (cold, warm))
        tick(pipe, cost, inst, m.paths[path].latency)
    return run


def _gather_segments(st, inst, gname, umem, g_g, g_u, g_n, g_rb, g_rs, g_us, gidx, gmask, g_ia, g_ma, idt, et,
                     pad, g_valid, g_nseg, g_sst, g_dss, path, pipe, wait_what):
    """A gather with ``nseg=``: row i moves nseg segments of row_bytes, segment r from
    ``base + idx[i]*row_stride + r*seg_stride`` to ``dst + i*dst_stride + r*dst_seg_stride`` (a
    gather of columns: the index picks the columns, the segments are the rows)."""
    tick, m = st.tick, st.m
    ubuf, gm, o = st.mem[umem.space], st.gm, inst.opts
    race, lpl = st.race, m.l2_line_bytes // m.beat_bytes
    gm_seen, gm_read = st.gm_seen, st.gm_read

    def run():
        n, rb, rs, us = g_n(), g_rb(), g_rs(), g_us()
        nseg, sst, dss = g_nseg(), g_sst(), g_dss()
        gb, ua = g_g(), g_u()
        gbuf = gm[gname]
        check_whole(inst, nrows=n, row_bytes=rb, row_stride=rs, dst_stride=us, nseg=nseg, seg_stride=sst,
                    dst_seg_stride=dss, gm_address=gb, address=ua)
        if n > 0 and rb > 0 and nseg > 0:
            if n * nseg * rb > min(MAX_TRANSFER_BYTES, gbuf.size + ubuf.size):
                _bounded(n * nseg * rb, gbuf.size, ubuf.size, inst,
                         f"the gather moves {n} x {nseg} segments of {rb} bytes")
        if n <= 0 or rb <= 0 or nseg <= 0:
            tick(pipe, 1, inst)     # nothing moves: nothing lands later
            return
        if sst < 0 or dss < 0:
            raise LaunchError("negative gather segment stride", inst=inst)
        if st.inflight[pipe]:
            ia = g_ia()
            st.wait_landed(pipe, inst.args[2].space, ia, ia + n * idt.itemsize, wait_what)
            if gmask is not None:
                ma = g_ma()
                st.wait_landed(pipe, o["mask"].space, ma, ma + n, wait_what)
        idx = gidx(1, n)[0].astype(np.int64)
        keep = np.ones(n, bool) if gmask is None else gmask(1, n)[0] != 0
        full = rb
        if g_valid is not None:
            rb = min(max(g_valid(), 0), full)
            check_whole(inst, valid=rb)
        u_hi = ua + (n - 1) * us + (nseg - 1) * dss + full
        st.check_onchip(umem.space, ua, u_hi, inst, "write")
        st.check_align(umem.space, ua, inst)
        rows = np.nonzero(keep)[0]
        r = np.arange(nseg, dtype=np.int64)
        starts = (gb + idx[rows] * rs)[:, None] + r * sst          # (rows kept, nseg)
        if starts.size and rb > 0:
            st.check_gm(gname, int(starts.min()), int(starts.max()) + rb, inst, "gather from")
            if race is not None:
                race.access(pipe, GM + gname, int(starts.min()), int(starts.max()) + rb, False, inst)
        if race is not None:
            race.access(pipe, umem.space, ua, u_hi, True, inst)
        dpos = (ua + np.arange(n, dtype=np.int64) * us)[:, None] + r * dss     # (n, nseg)
        if rb > 0 and rows.size:
            b = np.arange(rb)
            ubuf[(dpos[rows][..., None] + b).ravel()] = gbuf[(starts[..., None] + b).ravel()]
        if pad is not None and (rb < full or not keep.all()):
            eb = et.itemsize
            if rb % eb or full % eb:
                raise MisalignedError(f"valid={rb} / row_bytes={full} are not whole {inst.types[0]} elements",
                                      inst=inst)
            pv = np.array([np_scalar(pad(), et)], et).view(U8)
            tail = (dpos[..., None] + np.arange(rb, full)).ravel() if rb < full else np.zeros(0, np.int64)
            dropped = (dpos[~keep][..., None] + np.arange(full)).ravel()
            for at in (tail, dropped):
                if at.size:
                    ubuf[at] = np.resize(pv, at.size)
        flat = starts.ravel()
        gm_read[gname].add_rows(flat, rb)
        if st.gm_races is not None:
            st.gm_races.access(st, gname, False, PLAIN, inst, starts=flat, length=rb)
        if rb == 0 or flat.size == 0:
            tick(pipe, 1, inst)     # nothing moves: nothing lands later
            return
        gran, beats = cycles.granules(flat, rb, m.beat_bytes)
        cold, warm = cycles.l2_read(gm_seen[gname], gran, lpl)
        st.add_bytes(path, int(flat.size) * rb, (cold, warm))
        tick(pipe, cycles.read_transfer(m, path, cold, warm), inst, m.paths[path].latency)
    return run


def _cube_sum(c, a, b, k0: int):
    """``c + a @ b`` as the cube computes it (``c`` None: from zero): K in chunks of ``k0`` (the MAC
    array's depth: one cycle's step), each chunk's sum exact (float64: every fp16/bf16/fp32
    product and, for operands of like magnitude, their sum) and added to the float32 accumulator
    with one rounding, chunk after chunk.  An element depends only on its operands and K -- not on
    BLOCK_M, BLOCK_N, BLOCK_K (multiples of ``k0``) or how a dot is split across ``mmad``s."""
    mm, k = a.shape
    n = b.shape[1]
    chunks = -(-k // k0)
    out = np.zeros((mm, n), F32) if c is None else c
    if chunks == 0:
        return out
    pad = chunks * k0 - k       # (zeros: a chunk of them adds nothing)
    aw = np.pad(a.astype(F64), ((0, 0), (0, pad))) if pad else a.astype(F64)
    bw = np.pad(b.astype(F64), ((0, pad), (0, 0))) if pad else b.astype(F64)
    sums = np.matmul(aw.reshape(mm, chunks, k0).transpose(1, 0, 2), bw.reshape(chunks, k0, n))
    for part in sums:
        out = (out + part).astype(F32)
    return out


@family("mmad", ["mmad"])
def _mmad(st, inst, prog):
    R, tick, m = st.R, st.tick, st.m
    du, dt = npdt(inst.types[0]), npdt(inst.types[1])
    tname = inst.types[1]
    k0 = m.cube_k0[tname]
    acc = I32 if du == I32 else F32
    ga = vec_operand(st, inst, inst.args[1], dt, M, False, default_rs=lambda r, c: -(-c // k0) * k0)
    gb = vec_operand(st, inst, inst.args[2], dt, M, False, default_rs=lambda r, c: -(-c // 16) * 16)
    gc = vec_operand(st, inst, inst.args[0], du, M, True, default_rs=lambda r, c: -(-c // 16) * 16)
    g_m, g_k, g_n = (getter(a, R) for a in inst.args[3:6])
    g_init = getter(inst.opts["init"], R) if "init" in inst.opts else (lambda: 1)
    macs = st.macs

    def run():
        mm, k, n = g_m(), g_k(), g_n()
        a, b, c = ga(mm, k), gb(k, n), gc(mm, n)
        if mm > 0 and n > 0:
            if acc is I32:      # exact in int64, wrapping to int32 as it is written
                prod = np.matmul(a.astype(I64), b.astype(I64))
                c[...] = prod if g_init() else c + prod
            else:
                c[...] = _cube_sum(None if g_init() else c, a, b, k0)
            macs[tname] = macs.get(tname, 0) + mm * k * n
        tick(M, cycles.mmad(m, tname, mm, k, n), inst)
    return run
