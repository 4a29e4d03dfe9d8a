"""``tritonpu.language`` — import as ``tl``; the same names as ``triton.language``."""
from tritonpu.language import extra, math
from tritonpu.language.descriptor import tensor_descriptor
from tritonpu.language.core import (ALL_DTYPES, SemanticError, block_type, bfloat16, bool_, builtin, constexpr, dtype,
                                    float16, float32, float64, float8e4b8, float8e4b15, float8e4nv, float8e5,
                                    float8e5b16, int1, int8, int16, int32, int64, pointer_type,
                                    range, static_range, tensor, uint8, uint16, uint32, uint64)
from tritonpu.language.functions import (abs, arange, argmax, argmin, atomic_add, atomic_and, atomic_cas, atomic_max,
                                         atomic_min, atomic_or, atomic_xchg, atomic_xor, broadcast, broadcast_to,
                                         associative_scan, cast, cat, cdiv, ceil, clamp, cos, cumprod, cumsum,
                                         extract_slice, flip, gather, histogram, insert_slice, interleave, join, reduce,
                                         sort, split, debug_barrier,
                                         device_assert,
                                         device_print, div_rn, dot, erf, exp, exp2, expand_dims, fdiv, floor, fma,
                                         full, load, log, log2, max, max_constancy, max_contiguous, maximum, min,
                                         minimum, multiple_of, num_programs, permute, program_id, ravel, reshape,
                                         rsqrt, sigmoid, sin, softmax, sqrt, sqrt_rn, static_assert, static_print,
                                         store, sum, to_tensor, topk, trans, umulhi, view, where, zeros, zeros_like, make_block_ptr,
                                         advance, make_tensor_descriptor, load_tensor_descriptor,
                                         store_tensor_descriptor)


pi32_t = pointer_type(int32)        # Triton's name for a pointer to int32


class PropagateNan:
    NONE = "NONE"
    ALL = "ALL"


def _not_supported(name):
    def fn(*args, **kwargs):
        raise SemanticError(f"tl.{name} is not supported by tritonpu yet")
    fn.__name__ = name
    return builtin(fn)


TRITON_MAX_TENSOR_NUMEL = 1048576     # Triton's limit on a block's elements


@builtin
def assume(cond):
    """A hint that ``cond`` holds (Triton >= 3.2); tritonpu's compiler does not use it."""
    return None




def __getattr__(name):
    """``tl.rand`` & co. (``random.py``), ``tl.swizzle2d`` and ``tl.xor_sum`` (``standard.py``) are
    @jit functions, imported on first use (the jit runtime imports this package)."""
    if name in ("rand", "rand4x", "randn", "randn4x", "randint", "randint4x", "philox", "pair_uniform_to_normal",
                "uint_to_uniform_float", "random"):
        import importlib
        _random = importlib.import_module("tritonpu.language.random")
        return _random if name == "random" else getattr(_random, name)
    if name in ("swizzle2d", "xor_sum"):
        import importlib
        return getattr(importlib.import_module("tritonpu.language.standard"), name)
    raise AttributeError(f"module 'tritonpu.language' has no attribute {name!r}")
