"""The maps of GM bytes read/written (roofline): exact against a byte-per-byte reference (marked at
once, or kept by a ByteMap and marked merged), and a launch allocates no copy of its arguments
(peak memory well within 1.5x of their bytes)."""
import tracemalloc

import numpy as np
import pytest

from tritonpu.npu import gmmaps


@pytest.mark.parametrize("seed", range(5))
def test_maps_count_exactly_the_distinct_bytes(seed):
    rng = np.random.default_rng(seed)
    n = 997
    ref = np.zeros(n, bool)
    m = gmmaps.new(n)
    for _ in range(60):
        kind = rng.integers(3)
        if kind == 0:
            lo = int(rng.integers(0, n))
            hi = int(rng.integers(lo, n + 1))
            gmmaps.mark_range(m, lo, hi)
            ref[lo:hi] = True
        elif kind == 1:
            length = int(rng.integers(1, 20))
            stride = int(rng.integers(length, 40))
            nseg = int(rng.integers(1, 6))
            start = int(rng.integers(0, n - (nseg - 1) * stride - length + 1))
            gmmaps.mark_segments(m, start, nseg, length, stride)
            for k in range(nseg):
                ref[start + k * stride:start + k * stride + length] = True
        else:
            length = 8 * int(rng.integers(1, 4)) if rng.integers(2) else int(rng.integers(1, 9))
            starts = rng.integers(0, (n - length) // 8, 5) * 8 if length % 8 == 0 else \
                rng.integers(0, n - length, 5)
            gmmaps.mark_rows(m, starts, length)
            for s in starts:
                ref[s:s + length] = True
        assert gmmaps.count(m) == int(ref.sum())


def _random_marks(rng, n, count):
    """(kind, args) of random spans, segment groups and rows within ``n`` bytes, and the bytes each marks."""
    for _ in range(count):
        kind = int(rng.integers(3))
        if kind == 0:
            lo = int(rng.integers(0, n))
            hi = int(rng.integers(lo - 3, n + 1))           # (some empty: hi <= lo)
            yield "add", (lo, hi), [(lo, hi)]
        elif kind == 1:
            length = int(rng.integers(0, 20))
            stride = int(rng.integers(max(length, 1), 40))
            nseg = int(rng.integers(1, 6))
            start = int(rng.integers(0, n - (nseg - 1) * stride - length + 1))
            yield "add_segments", (start, nseg, length, stride), \
                [(start + k * stride, start + k * stride + length) for k in range(nseg)]
        else:
            length = int(rng.integers(1, 9))
            starts = rng.integers(0, n - length, 4)
            yield "add_rows", (starts, length), [(int(x), int(x) + length) for x in starts]


@pytest.mark.parametrize("few", [0, 8])
@pytest.mark.parametrize("flush_at", [1, 3, 1 << 16])
@pytest.mark.parametrize("seed", range(4))
def test_a_byte_map_counts_the_bytes_of_every_transfer_it_kept(monkeypatch, seed, flush_at, few):
    """Touching, overlapping, nested, empty and apart spans; counted now and then (each count
    marks what was kept), flushed every ``flush_at`` transfers of a kind, merged unless there are
    at most ``few``."""
    monkeypatch.setattr(gmmaps, "FLUSH_AT", flush_at)
    monkeypatch.setattr(gmmaps, "FEW", few)
    rng = np.random.default_rng(seed)
    n = 1001
    ref = np.zeros(n, bool)
    m = gmmaps.ByteMap(n)
    for k, (kind, args, spans) in enumerate(_random_marks(rng, n, 200)):
        getattr(m, kind)(*args)
        for lo, hi in spans:
            ref[lo:max(lo, hi)] = True
        if k % 37 == 0 or k == 199:
            assert m.count() == int(ref.sum())
    assert np.array_equal(np.unpackbits(m.bits, bitorder="little")[:n].astype(bool), ref)


def test_a_few_spans_are_counted_without_marking_the_map(monkeypatch):
    """A 1-program launch's few transfers: counted from the spans themselves (touching,
    overlapping, nested, empty), the map untouched; what comes after is counted with them."""
    marked = []
    monkeypatch.setattr(gmmaps, "mark_range", lambda m, lo, hi: marked.append((lo, hi)))
    m = gmmaps.ByteMap(1 << 12)
    for lo, hi in [(100, 200), (200, 300), (150, 160), (500, 400), (1000, 1008), (0, 50), (40, 120)]:
        m.add(lo, hi)
    assert m.count() == 300 + 8 and m.count() == 308 and marked == []
    assert gmmaps.ByteMap(64).count() == 0
    monkeypatch.undo()
    m.add_segments(2000, 2, 10, 100)
    assert m.count() == 308 + 20
    m.add(3000, 3001)
    assert m.count() == 329


def test_adjacent_blocks_merge_into_one_range_before_they_are_marked(monkeypatch):
    marked = []
    monkeypatch.setattr(gmmaps, "mark_range", lambda m, lo, hi: marked.append((lo, hi)))
    monkeypatch.setattr(gmmaps, "FEW", 0)
    m = gmmaps.ByteMap(1 << 20)
    for lo in range(1 << 16, 0, -4096):                  # (out of order)
        m.add(lo - 4096, lo)
    m.add(100, 50)                                       # (empty)
    m.add_segments(1 << 17, 4, 256, 512)
    m.add_segments((1 << 17) + 256, 4, 256, 512)         # the gaps of the group before
    m.count()
    assert marked == [(0, 1 << 16), (1 << 17, (1 << 17) + 2048)]


def test_a_launch_allocates_no_copy_of_its_arguments(monkeypatch):
    monkeypatch.setenv("TRITONPU_NPU_ENGINE", "translate")     # (a checked launch copies them)
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "kernels"))
    import vector_add
    n = 1 << 21                                     # 8 MiB per array, 24 MiB of arguments
    x = np.ones(n, np.float32)
    y = np.ones(n, np.float32)
    vector_add.add(x, y, sanitize=False)            # compile outside the measurement
    tracemalloc.start()
    out, h = vector_add.add(x, y, sanitize=False)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    args = 3 * n * 4                                # x, y and the output the helper allocates
    # beyond the output array: the maps (an eighth of the arguments), decoded programs, and the
    # simulated cores' own state (a fixed overhead per core: its Unified Buffer and its decoded
    # program, under 128 KiB for this kernel)
    per_core = h.stats.machine.capacity["ub"] + (128 << 10)
    assert peak - n * 4 < 0.5 * args + h.stats.cores_used * per_core
    assert h.stats.read_bytes == 2 * n * 4 and h.stats.write_bytes == n * 4


def test_the_compilers_zero_row_is_not_counted_as_bytes_the_kernel_reads():
    """A dot operand whose last K rows are masked pads them in L1 from the compiler's `__zeros` row:
    its bytes were counted in read_bytes (67328 for 67200 of A and B), and in the roofline."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "kernels"))
    import matmul as mm
    rng = np.random.default_rng(0)
    a = rng.standard_normal((200, 100)).astype(np.float16)
    b = rng.standard_normal((100, 136)).astype(np.float16)
    c, h = mm.matmul(a, b)
    assert h.stats.read_bytes == a.nbytes + b.nbytes
    assert h.stats.bytes_by_path["gm->l1"] > a.nbytes + b.nbytes        # the transfers still count it
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), atol=1e-2, rtol=1e-2)
