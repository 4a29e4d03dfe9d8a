"""``tl.extra.cuda``: where older Triton code finds ``libdevice``."""
from tritonpu.language.extra import libdevice

__all__ = ["libdevice"]
