"""Launches from many threads at once: each launch's results and statistics are as if it ran alone
(the NPU decodings kept for relaunches are checked out by one launch at a time; a kernel's stage
texts are replaced, never edited in place)."""
import threading
from collections import defaultdict

import numpy as np

import tritonpu
import tritonpu.language as tl


@tritonpu.jit
def _axpy(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2 + tl.load(y_ptr + offs, mask=m), mask=m)


def test_concurrent_launches_on_every_backend_are_independent():
    problems, cycles = [], defaultdict(set)
    lock = threading.Lock()

    def work(t):
        rng = np.random.default_rng(t)
        for i in range(6):
            n = 1000 + 37 * (t % 4)             # threads share specializations (and decodings)
            x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
            o = np.zeros(n, np.float32)
            backend = ("npu", "cpu", "ref")[(t + i) % 3]
            try:
                h = _axpy[(tritonpu.cdiv(n, 256),)](x, y, o, n, BLOCK=256, backend=backend)
                ok = np.array_equal(o, x * 2 + y)
                with lock:
                    if not ok:
                        problems.append((t, i, backend, "wrong result"))
                    if backend == "npu":
                        cycles[n].add(h.stats.cycles)
            except Exception as e:       # noqa: BLE001  (any error is the finding)
                with lock:
                    problems.append((t, i, backend, repr(e)))

    for _ in range(3):
        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    assert not problems, problems
    assert cycles and all(len(c) == 1 for c in cycles.values()), dict(cycles)     # deterministic
