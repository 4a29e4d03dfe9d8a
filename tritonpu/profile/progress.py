"""Progress bars for long work (the ``progress`` extra: tqdm).

``bar(iterable, total=, desc=)`` wraps an iterable in a tqdm bar when tqdm is installed and
stdout is a terminal (the bar itself goes to stderr, as tqdm draws it); otherwise it returns the iterable unchanged — no
output, no error.  ``TRITONPU_PROGRESS=0`` turns bars off, ``=1`` forces them on (tests).
"""
from __future__ import annotations

import os
import sys


def enabled() -> bool:
    flag = os.environ.get("TRITONPU_PROGRESS")
    if flag is not None and flag.strip() not in ("", "auto"):
        return flag.strip() not in ("0", "false", "no")
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def bar(iterable, total=None, desc=None, **kw):
    if not enabled():
        return iterable
    try:
        from tqdm import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, total=total, desc=desc, leave=False, **kw)


class Deferred:
    """A bar for work of unknown length that shows only once it has run ``after`` seconds (a launch
    that simulates long): ``update(done)`` is cheap to call often; ``close()`` removes the bar."""

    def __init__(self, total, desc, after=2.0):
        import time
        self._clock = time.perf_counter
        self._t0 = self._clock()
        self.total, self.desc, self.after = total, desc, after
        self._bar = None
        self._off = None        # whether bars are off: found when one would first show (a launch
                                # of a small kernel never asks)

    def update(self, done, **postfix) -> None:
        if self._off:
            return
        if self._bar is None:
            if self._clock() - self._t0 < self.after:
                return
            if self._off is None:
                self._off = not enabled()
                if self._off:
                    return
            try:
                from tqdm import tqdm
            except ImportError:
                self._off = True
                return
            self._bar = tqdm(total=self.total, desc=self.desc, leave=False)
        self._bar.n = done
        if postfix:
            self._bar.set_postfix(postfix, refresh=False)
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
