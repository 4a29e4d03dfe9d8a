"""The maps of GM bytes read/written (roofline): exact against a byte-per-byte reference, and a
launch allocates no copy of its arguments (peak memory well within 1.5x of their bytes)."""
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
