"""``tl.extra.cuda``: where kernels written for Triton's CUDA backend find ``libdevice``."""
from tritonpu.language.extra import vendor

libdevice = vendor(__name__)

__all__ = ["libdevice"]
