"""``tl.math``: the math builtins under Triton's math namespace."""
from tritonpu.language.functions import (abs, cdiv, ceil, cos, div_rn, erf, exp, exp2, fdiv, floor, fma, log, log2,
                                         rsqrt, sin, sqrt, sqrt_rn, umulhi, sigmoid, maximum, minimum, clamp)

__all__ = ["abs", "cdiv", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma", "log", "log2",
           "rsqrt", "sin", "sqrt", "sqrt_rn", "umulhi", "sigmoid", "maximum", "minimum", "clamp"]
