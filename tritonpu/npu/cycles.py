"""The cost model: one function per cost rule of the instruction table (``COST_RULES``).

Guarantees: every key of ``tritonpu.isa.COST_RULES`` has an entry in :data:`COSTS`; the numbers
come only from the machine preset.  Transfers count 32 B beats per segment on the GM side (the
32 B granules a segment touches, so misaligned or small segments waste bandwidth) or, between
on-chip buffers, ``ceil(bytes/32)`` per segment on the destination; a GM read's beats in 512 B
lines read before in the launch come at the L2 rate, and each line it is the first to read comes
whole from DDR (the line's 16 beats at the DDR rate, whatever part of it the read wants).
"""
from __future__ import annotations

import math

import numpy as np


def _repeats(m, eb, rows, cols):
    return rows * -(-(cols * eb) // m.vector_repeat_bytes)


def vector(m, eb, rows, cols):
    return max(1, _repeats(m, eb, rows, cols))


def vector_slow(m, eb, rows, cols):
    return max(1, _repeats(m, eb, rows, cols) * m.vector_slow_cycles)


def log2_steps(n):
    return math.ceil(math.log2(n)) if n > 1 else 0


def vector_reduce(m, eb, rows, cols, n):
    return max(1, _repeats(m, eb, rows, cols) + log2_steps(n))


def mmad(m, in_dtype, mm, k, n):
    if mm <= 0 or k <= 0 or n <= 0:
        return 1
    return (-(-mm // m.cube_m0)) * (-(-n // m.cube_n0)) * (-(-k // m.cube_k0[in_dtype]))


def scalar(m):
    return m.scalar_cycles


def scalar_mem(m, gm: bool):
    return m.scalar_cycles + (m.scalar_gm_latency if gm else 0)


def control(m):
    return m.scalar_cycles


def sync(m):
    return m.sync_cycles


def onchip_transfer(m, path, nseg, nbytes):
    """Cycles of ``nseg`` segments of ``nbytes`` between on-chip buffers, or from chip to GM
    when the caller already counted beats (see :func:`beats_of`)."""
    p = m.paths[path]
    beats = nseg * -(-nbytes // m.beat_bytes)
    return p.latency + math.ceil(beats * m.beat_bytes / p.bytes_per_cycle - 1e-9)


def write_transfer(m, path, beats):
    p = m.paths[path]
    return p.latency + math.ceil(beats * m.beat_bytes / p.bytes_per_cycle - 1e-9)


def read_transfer(m, path, cold_beats, warm_beats):
    p = m.paths[path]
    t = cold_beats * m.beat_bytes / m.ddr_bytes_per_cycle + warm_beats * m.beat_bytes / m.l2_bytes_per_cycle
    return p.latency + math.ceil(t - 1e-9)


def transfer(m, path, **kw):      # the table's "transfer" rule, dispatching on the path
    if "cold_beats" in kw:
        return read_transfer(m, path, kw["cold_beats"], kw["warm_beats"])
    if "beats" in kw:
        return write_transfer(m, path, kw["beats"])
    return onchip_transfer(m, path, kw["nseg"], kw["nbytes"])


gather = transfer

COSTS = {
    "scalar": scalar, "scalar_mem": scalar_mem, "control": control, "sync": sync,
    "vector": vector, "vector_slow": vector_slow, "vector_reduce": vector_reduce,
    "transfer": transfer, "gather": gather, "mmad": mmad,
}


# ---- GM side: beats per segment and the L2 first-touch model --------------------------------
def granules(starts, length, beat=32):
    """The ``beat``-byte granules touched by segments ``[s, s+length)`` in order, and their number
    (the beats: granules counted per segment)."""
    starts = np.asarray(starts, dtype=np.int64)
    if length <= 0 or starts.size == 0:
        return np.zeros(0, np.int64), 0
    g0 = starts // beat
    g1 = (starts + length - 1) // beat
    cnt = g1 - g0 + 1
    if starts.size == 1:
        return np.arange(g0[0], g1[0] + 1), int(cnt[0])
    k = int(cnt[0])
    if (cnt == k).all():
        return (g0[:, None] + np.arange(k)).ravel(), k * starts.size
    total = int(cnt.sum())
    offs = np.repeat(np.cumsum(cnt) - cnt, cnt)
    return np.arange(total) - offs + np.repeat(g0, cnt), total


def l2_read(seen: np.ndarray, gran: np.ndarray, granules_per_line: int):
    """(cold, warm) beats of a read of the beats ``gran``, and mark their lines as read.

    A 512 B line read for the first time in the launch comes from DDR whole: ``cold`` counts the
    beats of the lines this read is the first to touch -- the whole line's, however few of its
    beats the read wants -- whose beats come with it once; ``warm``, the read's other beats (in
    lines read before, or a beat of a new line read again by a later segment), from L2.  So every
    distinct line costs its full size at the DDR rate once per launch, and no core reads GM
    faster than DDR gives it the lines (the roofline's read bound is a lower bound)."""
    if gran.size == 0:
        return 0, 0
    lines = gran // granules_per_line
    new = ~seen[lines]
    if not new.any():
        return 0, int(gran.size)
    fresh = np.sort(gran[new])           # (sorted: distinct granules and lines are counted by steps)
    step = fresh[1:] != fresh[:-1]
    ls = fresh // granules_per_line
    cold = (1 + int(np.count_nonzero(ls[1:] != ls[:-1]))) * granules_per_line
    seen[lines] = True
    return cold, int(gran.size) - 1 - int(np.count_nonzero(step))


def l2_read_range(seen: np.ndarray, lo: int, hi: int, beat: int, granules_per_line: int):
    """``l2_read`` for one contiguous segment ``[lo, hi)`` (the common case), without arrays."""
    g0, g1 = lo // beat, (hi - 1) // beat
    l0, l1 = g0 // granules_per_line, g1 // granules_per_line
    beats = g1 - g0 + 1
    if l0 == l1:
        if seen[l0]:
            return 0, beats
        seen[l0] = True
        return granules_per_line, 0
    sl = seen[l0:l1 + 1]
    unseen = sl.size - int(np.count_nonzero(sl))
    if unseen == 0:
        cold, warm = 0, beats
    elif unseen == sl.size:
        cold, warm = unseen * granules_per_line, 0
    else:
        gran = np.arange(g0, g1 + 1)
        warm = int(np.count_nonzero(seen[gran // granules_per_line]))
        cold = unseen * granules_per_line
    sl[...] = True
    return cold, warm
