"""Long simulations: Ctrl-C stops them promptly with a message saying what was interrupted, and a
progress bar appears on a terminal once a launch has run a while (never in a pipe or a log)."""
import os
import signal
import threading
import time

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.profile.progress import Deferred


@tritonpu.jit
def spin(x_ptr, n):
    acc = 0
    for i in range(n):
        acc += i
    tl.store(x_ptr, acc)


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="needs POSIX signals")
def test_ctrl_c_stops_a_long_simulation_within_a_second():
    x = np.zeros(1, np.int64)
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt, match=r"the launch of spin was interrupted \(Ctrl-C\) after \d+ simulated "
                                                r"cycles of a core"):
        spin[(1,)](x, 10 ** 8)
    timer.join()
    assert time.monotonic() - t0 < 0.5 + 1.0
    spin[(1,)](x, 100)                      # the kernel launches normally afterwards
    assert x[0] == sum(range(100))


def test_deferred_bar_shows_only_after_its_delay_and_only_when_enabled(monkeypatch, capsys):
    pytest.importorskip("tqdm")
    monkeypatch.setenv("TRITONPU_PROGRESS", "1")
    quick = Deferred(4, "quick work", after=60)
    quick.update(2)
    quick.close()
    assert "quick work" not in capsys.readouterr().err
    slow = Deferred(4, "slow work", after=0)
    slow.update(3, cycles=1500)
    slow.close()
    assert "slow work" in capsys.readouterr().err
    monkeypatch.setenv("TRITONPU_PROGRESS", "0")
    off = Deferred(4, "silent work", after=0)
    off.update(1)
    off.close()
    assert "silent work" not in capsys.readouterr().err
