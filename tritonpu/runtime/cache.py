"""The on-disk kernel cache.

One JSON file per specialization, named by a hash of (kernel source and the sources of the @jit
functions and constexpr globals it uses, argument types, constexpr values, options, compiler
version and :func:`compiler_fingerprint` — so an entry made by other compiler code, an older
checkout or an edited one, is never taken for this one's). Files are written to a temporary name and renamed into place, so a crash never leaves a
half-written entry; an unreadable entry is treated as a miss and rewritten.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path


@functools.lru_cache(maxsize=1)
def compiler_fingerprint() -> str:
    """A hash of the compiler's own sources (the ``tritonpu`` package and ``tritonpu.isa``, which
    lives in isa/: .py and .lark files), read once per process."""
    import tritonpu
    import tritonpu.isa
    h = hashlib.sha256()
    for pkg in (tritonpu, tritonpu.isa):
        root = Path(pkg.__file__).parent
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".lark")):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    env = os.environ.get("TRITONPU_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tritonpu"


def load(key: str) -> dict | None:
    path = cache_dir() / f"{key}.json"
    try:
        with open(path, encoding="utf-8") as f:
            entry = json.load(f)
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) and entry.get("key") == key else None


def store(key: str, entry: dict) -> None:
    d = cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        entry = dict(entry, key=key)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=d)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entry, f)
            os.replace(tmp, d / f"{key}.json")
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        pass  # a read-only or full cache folder only costs recompilation
