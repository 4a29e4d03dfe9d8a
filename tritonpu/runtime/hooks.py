"""What happens each time a kernel is compiled: CLI dumps (``--emit-ir`` ...) and
``TRITONPU_DUMP_DIR`` files. The CLI registers printers here; the runtime calls ``compiled``,
and ``launched`` after each launch (backends fill ``kernel.asm`` stages such as ``llvm`` while
running, so printers of those stages listen to launches)."""
from __future__ import annotations

import os
from pathlib import Path

_listeners: list = []


def add_listener(fn) -> None:
    """``fn(jitfn, kernel)`` is called once per compiled (or cache-loaded) specialization."""
    _listeners.append(fn)


def remove_listener(fn) -> None:
    if fn in _listeners:
        _listeners.remove(fn)


def compiled(jitfn, kernel) -> None:
    _dump(kernel)
    for fn in list(_listeners):
        fn(jitfn, kernel)


def _dump(kernel) -> None:
    """``TRITONPU_DUMP_DIR``: every stage the kernel has so far, one file each (the frontend's at
    compile time; the backend's -- each NPU pass, the assembly, LLVM IR -- after a launch made them)."""
    dump = os.environ.get("TRITONPU_DUMP_DIR")
    if not dump or kernel is None:
        return
    d = Path(dump)
    d.mkdir(parents=True, exist_ok=True)
    for stage, text in list(kernel.asm.items()):
        ext = {"ir": "ir", "isa": "s", "llvm": "ll"}.get(stage, "txt")
        (d / f"{kernel.name}.{kernel.key[:8]}.{stage}.{ext}").write_text(text)


_launch_listeners: list = []


def add_launch_listener(fn) -> None:
    """``fn(jitfn, handle)`` is called after every launch (the backend has run)."""
    _launch_listeners.append(fn)


def remove_launch_listener(fn) -> None:
    if fn in _launch_listeners:
        _launch_listeners.remove(fn)


def launched(jitfn, handle, options) -> None:
    """After a launch: attach the precision-check report (``check=True``) as ``handle.check``
    (None when no check ran) and notify the launch listeners."""
    handle.check = options.pop("_check_report", None)
    _dump(getattr(handle, "kernel", None))
    for fn in list(_launch_listeners):
        fn(jitfn, handle)


_tune_listeners: list = []


def add_tune_listener(fn) -> None:
    """``fn(autotuner, key, result, cached)`` is called after each autotune sweep (``result``: a
    :class:`tritonpu.runtime.tuner.Result`) or when a key's choice came from the disk
    (``result`` None, ``cached`` the stored entry)."""
    _tune_listeners.append(fn)


def remove_tune_listener(fn) -> None:
    if fn in _tune_listeners:
        _tune_listeners.remove(fn)


def tuned(autotuner, key, result, cached=None) -> None:
    for fn in list(_tune_listeners):
        fn(autotuner, key, result, cached)
