"""``tl.extra.cann``: where kernels written for triton-ascend find ``libdevice``."""
from tritonpu.language.extra import vendor

libdevice = vendor(__name__)

__all__ = ["libdevice"]
