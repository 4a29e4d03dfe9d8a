"""Which GM bytes a launch read and wrote (the roofline counts each distinct byte once).

One uint8 per 8-byte word, a bit per byte: exact, and an eighth of the arguments' size (a launch
keeps two such maps per GM argument, so the simulator's memory stays within 1.25x of the
arguments' bytes — the arguments themselves are never copied).
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
