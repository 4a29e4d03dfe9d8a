"""``tritonpu.language.extra``: as ``triton.language.extra`` — ``libdevice`` (``from
tritonpu.language.extra import libdevice``; also ``tl.extra.cuda.libdevice``)."""
from tritonpu.language.extra import cuda, libdevice

__all__ = ["cuda", "libdevice"]
