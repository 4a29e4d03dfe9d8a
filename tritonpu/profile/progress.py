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
