"""``tl.math``: the math builtins under Triton's math namespace.

Triton 2.x's ``tl.math`` also held the libdevice functions (``tl.math.tanh``, ``tl.math.pow``), and
kernels written then -- vllm-ascend's among them -- still call them so: any other name is looked
up in ``tritonpu.language.extra.libdevice``.
"""
from tritonpu.language.functions import (abs, cdiv, ceil, cos, div_rn, erf, exp, exp2, fdiv, floor, fma, log, log2,
                                         rsqrt, sin, sqrt, sqrt_rn, umulhi, sigmoid, maximum, minimum, clamp)

__all__ = ["abs", "cdiv", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma", "log", "log2",
           "rsqrt", "sin", "sqrt", "sqrt_rn", "umulhi", "sigmoid", "maximum", "minimum", "clamp"]


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    from tritonpu.language.extra import libdevice
    try:
        return getattr(libdevice, name)
    except AttributeError:
        raise AttributeError(f"tl.math.{name} is not supported by tritonpu yet (tl.math has "
                             f"{', '.join(__all__)} and libdevice's functions: "
                             f"{', '.join(sorted(n for n in vars(libdevice) if not n.startswith('_')))})") from None
