"""When a launch does not fit the chip, a block size that does — found by compiling.

A kernel that runs on the reference backend but needs more Unified Buffer / L1 / L0 than the NPU
has fails with a ``CompilationError`` naming the block and its bytes; this module adds the size
that fits: each ``tl.constexpr`` the kernel uses as a block extent (``tl.arange``, ``zeros``,
block pointer shapes, ...; :func:`config_space.analyse`) is halved -- in rounds, block sizes first
(see ``_candidates``) -- and the kernel compiled for the NPU (no launch) until it fits, at most
:data:`MAX_COMPILES` compiles in all; the first that fits is named, else the message says that
halving did not help. Only the error path pays for it.
"""
from __future__ import annotations

import re

from tritonpu.errors import CompilationError, TritonpuError

MAX_COMPILES = 8


def _block_extents(jitfn, bound: dict) -> list:
    """The constexprs the kernel uses as block extents with their values (> 1), largest first."""
    from tritonpu.runtime.config_space import analyse
    constexprs = set(jitfn.constexpr_names)
    scalars = {n for n, v in bound.items() if n not in constexprs and isinstance(v, int) and not isinstance(v, bool)}
    names = analyse(jitfn.ast, constexprs, scalars)
    out = [(n, bound[n]) for n in names if isinstance(bound.get(n), int) and not isinstance(bound[n], bool)
           and bound[n] > 1]
    return sorted(out, key=lambda nv: -nv[1])


def _fits(jitfn, bound: dict, options: dict, scalars: dict) -> bool | None:
    """True when the kernel compiles for the NPU with these arguments, False when it runs out of a
    memory again, None when it fails otherwise (the size is no good for another reason)."""
    from tritonpu.codegen.pipeline import artifact
    from tritonpu.runtime.config_space import is_resource_error
    try:
        params, _ = jitfn.specialize(bound)
        artifact(jitfn.compile(params, options), options, scalars)
        return True
    except CompilationError as e:
        return False if is_resource_error(e.message) else None
    except TritonpuError:
        return None


_KNOB = re.compile(r"^(BLOCK|TILE|B[A-Z]?$)", re.IGNORECASE)     # BLOCK_SIZE_M, BLOCK_N, BM, TILE_K


def _candidates(extents: list):
    """The assignments tried, in order: halvings in rounds -- each extent halved once, then twice,
    ... -- the block sizes (``BLOCK*``, ``TILE*``, ``BM``) before other extents (a sequence length
    or head dimension is the problem's, not a choice), and after the first round the block sizes
    halved together (a 128x128 tile that only fits as 64x64)."""
    knobs = [e for e in extents if _KNOB.match(e[0])]
    order = knobs + [e for e in extents if not _KNOB.match(e[0])]
    r = 1
    while any(v >> r >= 1 for _, v in order):
        for name, v in order:
            if v >> r >= 1:
                yield name, {name: v >> r}
        if r == 1 and len(knobs) > 1:
            yield None, {name: v >> 1 for name, v in knobs}
        r += 1


def size_that_fits(jitfn, bound: dict, options: dict, scalars: dict) -> str:
    """A sentence for the error: the block size that fits, or that halving did not help."""
    tried = 0
    extents = _block_extents(jitfn, bound)
    dead, together = set(), False
    for name, change in _candidates(extents):
        if tried >= MAX_COMPILES:
            break
        if name in dead:
            continue
        tried += 1
        together |= name is None
        ok = _fits(jitfn, {**bound, **change}, options, scalars)
        if ok:
            sizes = ", ".join(f"{n}={v}" for n, v in change.items())
            return (f" — it fits with {sizes} (checked by compiling; the rest of the launch as given; a "
                    f"kernel whose one block must span its data, a whole row, then needs a loop over blocks)")
        if ok is None and name is not None:
            dead.add(name)          # (no good for another reason: smaller is no better)
    if not extents:
        return ""
    names = ", ".join(n for n, _ in extents)
    how = "one at a time and together" if together else "one at a time"
    out = f" — halving {names} {how} ({tried} compile{'' if tried == 1 else 's'}) did not make it fit"
    from tritonpu.tools.tensor_descriptor import TensorDescriptor
    descs = [n for n, v in bound.items() if isinstance(v, TensorDescriptor)]
    if descs:
        out += (f", but the TensorDescriptor argument{'s' if len(descs) > 1 else ''} {', '.join(descs)} kept the "
                "block_shape made on the host: try smaller blocks with descriptors made for them (Triton's "
                "tutorial 06 sets desc.block_shape per config in a pre_hook)")
    return out
