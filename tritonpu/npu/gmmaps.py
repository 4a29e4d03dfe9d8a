"""Which GM bytes a launch read and wrote (the roofline counts each distinct byte once).

One uint8 per 8-byte word, a bit per byte: exact, and an eighth of the arguments' size (a launch
keeps two such maps per GM argument, so the simulator's memory stays within 1.25x of the
arguments' bytes — the arguments themselves are never copied).  A launch marks them through
:class:`ByteMap`, which keeps the contiguous spans of its transfers as a list and marks them, merged,
when the bytes are counted.
"""
from __future__ import annotations

import numpy as np

WORD = 8
_POP = np.array([bin(i).count("1") for i in range(256)], np.uint8)
_HEAD = np.array([(0xFF << b) & 0xFF for b in range(WORD)], np.uint8)       # bytes b.. of a word
_TAIL = np.array([(1 << b) - 1 for b in range(WORD + 1)], np.uint8)          # bytes ..b-1 of a word


def new(nbytes: int) -> np.ndarray:
    return np.zeros((nbytes + WORD - 1) // WORD, np.uint8)


_BITWISE_COUNT = getattr(np, "bitwise_count", None)       # numpy >= 2.0


def count(m: np.ndarray) -> int:
    """Distinct bytes marked."""
    # (a launch counts every GM argument's two maps: small ones are mostly all-zero -- an input is
    # never written -- and the per-call overhead of the table lookup dominates them)
    if not np.count_nonzero(m):
        return 0
    if m.size <= 4096:
        return int(np.count_nonzero(np.unpackbits(m)))
    if _BITWISE_COUNT is not None:
        return int(_BITWISE_COUNT(m).sum(dtype=np.int64))
    return int(_POP[m].sum(dtype=np.int64))


def mark_range(m: np.ndarray, lo: int, hi: int) -> None:
    """Mark bytes [lo, hi)."""
    if hi <= lo:
        return
    w0, w1 = lo // WORD, (hi - 1) // WORD
    if w0 == w1:
        m[w0] |= _HEAD[lo % WORD] & _TAIL[hi - w1 * WORD]
        return
    m[w0] |= _HEAD[lo % WORD]
    m[w0 + 1:w1] = 0xFF
    m[w1] |= _TAIL[hi - w1 * WORD]


def mark_rows(m: np.ndarray, starts, length: int) -> None:
    """Mark ``length`` bytes from each of ``starts`` (an int array of byte offsets)."""
    if length <= 0 or len(starts) == 0:
        return
    starts = np.asarray(starts, np.int64)
    if length % WORD == 0 and not (starts % WORD).any():
        words = starts[:, None] // WORD + np.arange(length // WORD)
        m[words] = 0xFF
        return
    idx = (starts[:, None] + np.arange(length)).ravel()
    np.bitwise_or.at(m, idx // WORD, (1 << (idx % WORD)).astype(np.uint8))


def mark_segments(m: np.ndarray, start: int, nseg: int, length: int, stride: int) -> None:
    """Mark ``nseg`` segments of ``length`` bytes, ``stride`` bytes apart, from ``start``."""
    if nseg == 1:
        mark_range(m, start, start + length)
    else:
        mark_rows(m, start + np.arange(nseg, dtype=np.int64) * stride, length)


def mark_spans(m: np.ndarray, lo, hi) -> None:
    """Mark every ``[lo[i], hi[i])`` (int arrays) -- merged first: overlapping and touching spans
    (the programs of a launch reading one block after another) become one range each."""
    lo, hi = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    if not lo.size:
        return
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    reach = np.maximum.accumulate(hi)
    first = np.flatnonzero(np.concatenate(([True], lo[1:] > reach[:-1])))
    for a, b in zip(lo[first].tolist(), np.maximum.reduceat(hi, first).tolist()):
        mark_range(m, a, b)


FLUSH_AT = 1 << 16      # spans or segment groups a ByteMap keeps before it marks them
FEW = 8                 # ... and how many it marks one by one (a 1-program launch's few transfers)


class ByteMap:
    """The bytes of one GM argument a launch read (or wrote): ``bits``, a bit per byte, and the
    transfers marked since, kept as they came -- ``(lo, hi)`` spans and ``(start, nseg, length,
    stride)`` groups of segments -- and marked all at once (merged: a launch's transfers mostly
    touch one another) when counted or when FLUSH_AT of them have gathered.  Keeping a transfer
    costs a list append; marking each as it came cost ~1.4 us per transfer."""
    __slots__ = ("bits", "spans", "segs", "marked")

    def __init__(self, nbytes: int):
        self.bits = new(nbytes)
        self.spans = []
        self.segs = []
        self.marked = False     # whether ``bits`` holds anything yet

    def add(self, lo: int, hi: int) -> None:
        """Mark bytes ``[lo, hi)``."""
        spans = self.spans
        spans.append((lo, hi))
        if len(spans) >= FLUSH_AT:
            self.flush()

    def add_segments(self, start: int, nseg: int, length: int, stride: int) -> None:
        """Mark ``nseg`` segments of ``length`` bytes, ``stride`` bytes apart, from ``start``."""
        segs = self.segs
        segs.append((start, nseg, length, stride))
        if len(segs) >= FLUSH_AT:
            self.flush()

    def add_rows(self, starts, length: int) -> None:
        """Mark ``length`` bytes from each of ``starts``."""
        self.marked = True
        mark_rows(self.bits, starts, length)

    def flush(self) -> None:
        self.marked = True
        if len(self.spans) + len(self.segs) <= FEW:     # (merging costs more than marking a few)
            for lo, hi in self.spans:
                mark_range(self.bits, lo, hi)
            for g in self.segs:
                mark_segments(self.bits, *g)
            self.spans, self.segs = [], []
            return
        lo, hi = [], []
        if self.spans:
            a = np.array(self.spans, np.int64)
            lo.append(a[:, 0])
            hi.append(a[:, 1])
            self.spans = []
        if self.segs:
            g = np.array(self.segs, np.int64)
            self.segs = []
            n = g[:, 1]
            which = np.repeat(np.arange(len(g)), n)
            k = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
            starts = g[which, 0] + k * g[which, 3]
            lo.append(starts)
            hi.append(starts + g[which, 2])
        if lo:
            mark_spans(self.bits, np.concatenate(lo), np.concatenate(hi))

    def count(self) -> int:
        """Distinct bytes marked."""
        if not self.marked and not self.segs and len(self.spans) <= FEW:
            return union_length(self.spans)     # (a few spans, nothing marked: no map to look at)
        if self.spans or self.segs:
            self.flush()
        return count(self.bits)


def union_length(spans) -> int:
    """Bytes in the union of the ``(lo, hi)`` spans."""
    total, reach = 0, None
    for lo, hi in sorted(spans):
        if reach is None or lo > reach:
            if hi > lo:
                total += hi - lo
                reach = hi
        elif hi > reach:
            total += hi - reach
            reach = hi
    return total
