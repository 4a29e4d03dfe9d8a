"""``tritonpu.language.extra``: as ``triton.language.extra`` — ``libdevice``, also under the vendor
packages kernels import it from: ``tl.extra.cuda.libdevice`` (Triton, FlagGems:
``from tritonpu.language.extra.cuda.libdevice import tanh``), ``tl.extra.ascend.libdevice`` and
``tl.extra.cann.libdevice`` (triton-ascend before and after 3.2).  All are the one module."""
import sys

from tritonpu.language.extra import libdevice


def vendor(package: str):
    """Make ``package.libdevice`` importable as a module (``import ...libdevice as ld``, ``from
    ...libdevice import f``): the same module object as ``tritonpu.language.extra.libdevice``."""
    sys.modules[f"{package}.libdevice"] = libdevice
    return libdevice


from tritonpu.language.extra import ascend, cann, cuda  # noqa: E402  (they call vendor())

__all__ = ["ascend", "cann", "cuda", "libdevice"]
