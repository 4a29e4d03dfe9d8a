"""``tl.extra.cann``: where kernels written for triton-ascend find ``libdevice`` and ``extension``."""
from tritonpu.language.extra import vendor

libdevice = vendor(__name__)

from tritonpu.language.extra.cann import extension  # noqa: E402

__all__ = ["extension", "libdevice"]
