"""``libdevice``: the device math library Triton kernels call as ``libdevice.tanh(x)`` & co.

The functions tritonpu computes exactly as the language's own ops (fp32/fp64 inputs, as Triton's
math functions take): the ``tl`` math builtins under their libdevice names, ``tanh``, ``pow``,
``asin``/``acos``/``atan``/``tan``/``sinh``/``cosh``/``log1p``/``expm1``/``log10``/``rint``
(``nearbyint``) — ops of their own on every backend — and ``trunc``/``isnan``/``isinf`` made of
exact ops.  Any other libdevice function is a compilation
error naming it (not an approximation that would differ from the hardware's).
"""
from tritonpu.language import functions as _f
from tritonpu.language import semantic as _S
from tritonpu.language.core import builtin as _builtin

exp, exp2, log, log2 = _f.exp, _f.exp2, _f.log, _f.log2
sqrt, rsqrt, sin, cos = _f.sqrt, _f.rsqrt, _f.sin, _f.cos
floor, ceil, erf, tanh, fma = _f.floor, _f.ceil, _f.erf, _f.tanh, _f.fma
asin, acos, atan, tan, sinh, cosh = _f.asin, _f.acos, _f.atan, _f.tan, _f.sinh, _f.cosh
log1p, expm1, log10, rint = _f.log1p, _f.expm1, _f.log10, _f.rint
nearbyint = rint
abs = fabs = _f.abs
fmax, fmin = _f.maximum, _f.minimum
div_rn, sqrt_rn = _f.div_rn, _f.sqrt_rn


@_builtin
def pow(x, y):
    """x ** y (fp32/fp64, as libdevice's powf/pow)."""
    return _S.pow_(x, y)


@_builtin
def trunc(x):
    """Round toward zero."""
    return _f.where(x < 0, _f.ceil(x), _f.floor(x))


@_builtin
def isnan(x):
    return x != x


@_builtin
def isinf(x):
    return _f.abs(x) == float("inf")


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"libdevice.{name} is not supported by tritonpu yet (supported: "
                         f"{', '.join(sorted(n for n in globals() if not n.startswith('_')))})")
