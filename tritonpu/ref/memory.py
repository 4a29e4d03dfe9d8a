"""Flat byte-addressed memory over the caller's arrays, for the reference evaluator.

Each array argument is given a region: pointer values are int64 byte addresses
``(2 * region + 1) << 40 | offset``; the unmapped window below each region catches negative
offsets, so they are reported against the array they came from. Loads and stores translate addresses back to element indices of
the caller's array (no copies; stores write through), checking every active lane: an address
outside every argument, past an array's end or not aligned to the element size raises
:class:`MemoryFault`.
"""
from __future__ import annotations

import numpy as np

REGION_SHIFT = 40


class MemoryFault(Exception):
    pass


class Memory:
    def __init__(self, arrays: list[np.ndarray], names: list[str]):
        self.arrays = arrays
        self.names = names
        self.bytes = [a.reshape(-1).view(np.uint8) for a in arrays]
        self._views: dict[tuple[int, object], np.ndarray] = {}

    @staticmethod
    def base(k: int) -> int:
        return (2 * k + 1) << REGION_SHIFT

    @staticmethod
    def region_of(addrs):
        """The argument an address belongs to (or, just below it, underflowed from)."""
        return addrs >> (REGION_SHIFT + 1)

    def _typed(self, k: int, dtype) -> np.ndarray:
        key = (k, dtype)
        v = self._views.get(key)
        if v is None:
            raw = self.bytes[k]
            n = raw.size - raw.size % dtype.itemsize
            v = raw[:n].view(dtype)
            self._views[key] = v
        return v

    def _locate(self, addrs: np.ndarray) -> list:
        """(region, addresses, positions) groups of the (already masked) addresses."""
        regions = self.region_of(addrs)
        if regions.size == 0:
            return []
        k = int(regions[0])
        if np.all(regions == k):
            return [(k, addrs, np.arange(addrs.size))]
        out = []
        for kk in np.unique(regions):
            sel = np.nonzero(regions == kk)[0]
            out.append((int(kk), addrs[sel], sel))
        return out

    def _indices(self, k: int, addrs: np.ndarray, dtype, what: str) -> np.ndarray:
        if not 0 <= k < len(self.arrays):
            bad = int(addrs[0])
            raise MemoryFault(f"{what}: address {bad:#x} does not point into any argument")
        off = addrs - self.base(k)
        size = self.bytes[k].size
        item = dtype.itemsize
        bad = (off < 0) | (off + item > size)
        if bad.any():
            i = int(np.argmax(bad))
            raise MemoryFault(f"{what}: out-of-bounds access to `{self.names[k]}` at element offset "
                              f"{int(off[i]) // item} (byte {int(off[i])}); it has {size // item} elements of "
                              f"{item} bytes")
        if item > 1 and (off % item).any():
            i = int(np.argmax(off % item != 0))
            raise MemoryFault(f"{what}: misaligned {item}-byte access to `{self.names[k]}` at byte {int(off[i])}")
        return off // item

    def load(self, addrs: np.ndarray, mask: np.ndarray | None, dtype, what: str) -> np.ndarray:
        flat = addrs.reshape(-1)
        out = np.zeros(flat.size, dtype)
        sel = np.arange(flat.size) if mask is None else np.nonzero(np.broadcast_to(mask, addrs.shape).reshape(-1))[0]
        for k, a, pos in self._locate(flat[sel]):
            idx = self._indices(k, a, dtype, what)
            out[sel[pos]] = self._typed(k, dtype)[idx]
        return out.reshape(addrs.shape)

    def store(self, addrs: np.ndarray, values: np.ndarray, mask: np.ndarray | None, what: str) -> None:
        flat = addrs.reshape(-1)
        vals = np.broadcast_to(values, addrs.shape).reshape(-1)
        sel = np.arange(flat.size) if mask is None else np.nonzero(np.broadcast_to(mask, addrs.shape).reshape(-1))[0]
        for k, a, pos in self._locate(flat[sel]):
            idx = self._indices(k, a, vals.dtype, what)
            self._typed(k, vals.dtype)[idx] = vals[sel[pos]]

    def element_refs(self, addrs: np.ndarray, mask: np.ndarray | None, dtype, what: str):
        """(typed view, index) per active lane in row-major order, for atomics."""
        flat = addrs.reshape(-1)
        active = np.ones(flat.size, bool) if mask is None else np.broadcast_to(mask, addrs.shape).reshape(-1)
        refs = []
        for lane in range(flat.size):
            if not active[lane]:
                refs.append(None)
                continue
            a = flat[lane:lane + 1]
            k = int(self.region_of(a[0]))
            idx = self._indices(k, a, dtype, what)
            refs.append((self._typed(k, dtype), int(idx[0])))
        return refs
