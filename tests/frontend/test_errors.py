"""Golden error messages for user mistakes.

Each case is a kernel with one mistake on the line marked ``# E:<case>``. The test asserts the exact
first line ``FILE:LINE:COL: error: MESSAGE`` (LINE is the marked line, COL the offending node's
column + 1), that the source line and a caret under the column follow, and that no compiler-internal
traceback text leaks into the message.
"""
from __future__ import annotations

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl

THIS_FILE = __file__
GLOBAL_LIST = [1, 2, 3]
GLOBAL_ARRAY = np.zeros(4)


def not_a_jit_function(x):
    return x + 1


@tritonpu.jit
def k_arange(x_ptr):
    offs = tl.arange(8, 4)  # E:arange
    tl.store(x_ptr + offs, 1.0)


@tritonpu.jit
def k_break(x_ptr, n):
    for i in range(n):
        break  # E:break


@tritonpu.jit
def k_continue(x_ptr, n):
    for i in range(n):
        continue  # E:continue


@tritonpu.jit
def k_python_call(x_ptr):
    y = not_a_jit_function(tl.load(x_ptr))  # E:python_call
    tl.store(x_ptr, y)


@tritonpu.jit
def k_unknown_name(x_ptr):
    tl.store(x_ptr, undefined_thing)  # E:unknown_name  # noqa: F821


@tritonpu.jit
def k_block_if(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    if x > 0:  # E:block_if
        x = x + 1
    tl.store(x_ptr + tl.arange(0, BLOCK), x)


@tritonpu.jit
def k_loop_type(x_ptr, n):
    acc = 0
    for i in range(n):  # E:loop_type
        acc = acc + 1.5
    tl.store(x_ptr, acc)


@tritonpu.jit
def k_if_types(x_ptr, n):
    if n > 0:  # E:if_types
        y = 1
    else:
        y = 2.0
    tl.store(x_ptr, y)


@tritonpu.jit
def k_exp_ptr(x_ptr, BLOCK: tl.constexpr):
    y = tl.exp(x_ptr + tl.arange(0, BLOCK))  # E:exp_ptr
    tl.store(x_ptr + tl.arange(0, BLOCK), y)


@tritonpu.jit
def k_ptr_lt_int(x_ptr, n_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < n_ptr)  # E:ptr_lt_int


@tritonpu.jit
def k_floordiv_float(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    y = x // 2.0  # E:floordiv_float
    tl.store(x_ptr + tl.arange(0, BLOCK), y)


@tritonpu.jit
def k_subscript_assign(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    x[0] = 1  # E:subscript_assign
    tl.store(x_ptr + tl.arange(0, BLOCK), x)


@tritonpu.jit
def k_small_dot(x_ptr):
    r = tl.arange(0, 8)
    a = tl.load(x_ptr + r[:, None] * 8 + r[None, :])
    c = tl.dot(a, a)  # E:small_dot
    tl.store(x_ptr + r[:, None] * 8 + r[None, :], c)


@tritonpu.jit
def k_other_no_mask(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK), other=0.0)  # E:other_no_mask
    tl.store(x_ptr + tl.arange(0, BLOCK), x)


@tritonpu.jit
def k_zeros_shape(x_ptr):
    z = tl.zeros((0, 16), dtype=tl.float32)  # E:zeros_shape
    tl.store(x_ptr, tl.sum(z))


@tritonpu.jit
def k_returns(x_ptr):
    x = tl.load(x_ptr)
    return x  # E:returns


@tritonpu.jit
def k_global_list(x_ptr):
    tl.store(x_ptr, GLOBAL_ARRAY)  # E:global


@tritonpu.jit
def k_static_assert(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of 32")  # E:static_assert
    tl.store(x_ptr, 1.0)


@tritonpu.jit
def k_lambda(x_ptr):
    f = lambda v: v + 1  # E:lambda  # noqa: E731
    tl.store(x_ptr, f(tl.load(x_ptr)))


@tritonpu.jit
def k_with(x_ptr):
    with open("f"):  # E:with
        tl.store(x_ptr, 1.0)


@tritonpu.jit
def k_try(x_ptr):
    try:  # E:try
        tl.store(x_ptr, 1.0)
    except Exception:
        pass


@tritonpu.jit
def k_pow(x_ptr):
    x = tl.load(x_ptr)
    tl.store(x_ptr, x ** 2)  # E:pow


@tritonpu.jit
def k_shapes(x_ptr):
    a = tl.arange(0, 16)
    b = tl.arange(0, 32)
    tl.store(x_ptr + a, (a + b).to(tl.float32))  # E:shapes


@tritonpu.jit
def k_attr(x_ptr):
    x = tl.load(x_ptr)
    tl.store(x_ptr, x.nonexistent)  # E:attr


@tritonpu.jit
def k_store_non_ptr(x_ptr, n):
    tl.store(n, 1.0)  # E:store_non_ptr


@tritonpu.jit
def _needs_constexpr(x, K: tl.constexpr):
    # as in Triton, the annotation does not reject a runtime value: the use that needs a constant does
    return x + tl.arange(0, K)  # E:constexpr_arg


@tritonpu.jit
def k_constexpr_arg(x_ptr, n):
    tl.store(x_ptr + tl.arange(0, 4), _needs_constexpr(1.0, n))


@tritonpu.jit
def k_step_zero(x_ptr, n):
    acc = 0.0
    for i in range(0, n, 0):  # E:step_zero
        acc += 1.0
    tl.store(x_ptr, acc)


@tritonpu.jit
def k_while_true(x_ptr):
    while True:  # E:while_true
        tl.store(x_ptr, 1.0)


@tritonpu.jit
def k_nested_error(x_ptr):
    y = _bad_helper(tl.load(x_ptr))  # noqa: F841


@tritonpu.jit
def _bad_helper(x):
    return tl.sqrt_rn(x.to(tl.float16))  # E:nested


@tritonpu.jit
def k_unsigned_neg(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), x + -1)  # E:unsigned_neg


@tritonpu.jit
def k_mixed_sign_div(x_ptr, y_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    y = tl.load(y_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), x // y)  # E:mixed_sign_div


@tritonpu.jit
def k_bitwise_float(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), x & 1)  # E:bitwise_float


F32 = np.zeros(16, np.float32)
F16 = np.zeros(16, np.float16)
U8 = np.zeros(16, np.uint8)
I8 = np.zeros(16, np.int8)
I32 = np.zeros(64, np.int32)

# case: (kernel, launch args, launch kwargs, expected message)
CASES = {
    "arange": (k_arange, (F32,), {}, "tl.arange's end must be greater than its start; got (8, 4)"),
    "break": (k_break, (F32, 4), {}, "`break` is not supported in kernels (as in Triton); use a while loop with a flag"),
    "continue": (k_continue, (F32, 4), {},
                 "`continue` is not supported in kernels (as in Triton); use an if around the rest"),
    "python_call": (k_python_call, (F32,), {},
                    "cannot call `not_a_jit_function` inside a kernel: only tl.* builtins and @tritonpu.jit "
                    "functions can be called (decorate helpers with @tritonpu.jit)"),
    "unknown_name": (k_unknown_name, (F32,), {}, "name `undefined_thing` is not defined"),
    "block_if": (k_block_if, (F32,), {"BLOCK": 16},
                 "`if` needs a scalar condition, got a block of shape [16]; use tl.where for elementwise choices"),
    "loop_type": (k_loop_type, (F32, 4), {},
                  "loop-carried variable `acc` has initial type i32 but is re-assigned to f32 in the loop; make "
                  "sure the type stays consistent (e.g. initialise it with tl.zeros(..., dtype=...) or cast with "
                  ".to())"),
    "if_types": (k_if_types, (F32, 4), {},
                 "mismatched type for `y` between the then-block (i32) and the else-block (f32)"),
    "exp_ptr": (k_exp_ptr, (F16,), {"BLOCK": 16}, "tl.exp takes floating-point or integer values, got pointer<fp16>"),
    "floordiv_float": (k_floordiv_float, (F32,), {"BLOCK": 16},
                       "`//` needs integer operands, got fp32; use `/` for floating point"),
    "subscript_assign": (k_subscript_assign, (F32,), {"BLOCK": 16},
                         "only assignments to names are supported (no x[i] = ... or x.a = ...); use tl.store to "
                         "write memory"),
    "small_dot": (k_small_dot, (I32,), {}, "tl.dot: every dimension must be >= 16, got [8, 8] @ [8, 8]"),
    "other_no_mask": (k_other_no_mask, (F32,), {"BLOCK": 16}, "tl.load: `other` cannot be given without `mask`"),
    "zeros_shape": (k_zeros_shape, (F32,), {}, "shape dimensions must be positive, got [0, 16]"),
    "returns": (k_returns, (F32,), {},
                "a kernel cannot return a value (`k_returns` returns one); write results with tl.store"),
    "global": (k_global_list, (F32,), {},
               "cannot use global `GLOBAL_ARRAY` of type ndarray inside a kernel; only constexpr values (annotate "
               "with tl.constexpr), dtypes, modules and @jit functions can be used"),
    "static_assert": (k_static_assert, (F32,), {"BLOCK": 16},
                      "static assertion failed: BLOCK must be a multiple of 32"),
    "lambda": (k_lambda, (F32,), {}, "unsupported Python construct in a kernel: Lambda"),
    "with": (k_with, (F32,), {}, "unsupported Python construct in a kernel: With"),
    "try": (k_try, (F32,), {}, "unsupported Python construct in a kernel: Try"),
    "pow": (k_pow, (F32,), {}, "`**` is not supported on tensors; multiply, or use tl.exp2/tl.log2"),
    "shapes": (k_shapes, (F32,), {}, "incompatible shapes [16] and [32]: dimension 0 is 16 vs 32"),
    "attr": (k_attr, (F32,), {}, "tensor has no attribute `nonexistent`"),
    "store_non_ptr": (k_store_non_ptr, (F32, 3), {}, "tl.store needs a pointer or a block of pointers, got int32"),
    "constexpr_arg": (k_constexpr_arg, (F32, 3), {},
                      "tl.arange needs constexpr integer bounds; got int and tensor"),
    "step_zero": (k_step_zero, (F32, 3), {}, "range() step must not be zero"),
    "while_true": (k_while_true, (F32,), {},
                   "a while loop needs a runtime condition (a constant one never ends without break, which kernels "
                   "do not support)"),
    "nested": (k_nested_error, (F32,), {},
               "tl.sqrt expects dtype ['fp32'] but got fp16; cast first, e.g. x.to(tl.float32)"),
    "unsigned_neg": (k_unsigned_neg, (U8,), {"BLOCK": 16},
                     "cannot combine an unsigned tensor with a negative number; cast one of them"),
    "mixed_sign_div": (k_mixed_sign_div, (U8, I8), {"BLOCK": 16},
                       "cannot use /, // or % with uint8 and int8 because they have different signedness; cast "
                       "them to the same signedness"),
    "bitwise_float": (k_bitwise_float, (F32,), {"BLOCK": 16},
                      "bitwise operators need integer operands, got fp32 and fp32"),
    # was an internal error (invalid IR) at the @jit line; a 0-d tensor passed for `n` does this
    "ptr_lt_int": (k_ptr_lt_int, (F32, F32), {"BLOCK": 16},
                   "invalid operands of type triton.language.int32 and pointer<fp32>: a pointer compares only "
                   "with a pointer of its type (to compare positions, compare the offsets you added)"),
}


def _marked_line(case: str) -> tuple[int, str]:
    with open(THIS_FILE) as f:
        for i, line in enumerate(f, 1):
            if line.rstrip().endswith(f"# E:{case}") or f"# E:{case}  " in line:
                return i, line.rstrip("\n")
    raise AssertionError(f"no marker for {case}")


def check_error(err, case: str, message: str, col: int | None = None):
    text = str(err)
    line, src = _marked_line(case)
    first, *rest = text.splitlines()
    assert first.startswith(f"{THIS_FILE}:{line}:"), text
    c = int(first[len(THIS_FILE) + 1:].split(":")[1])
    assert first == f"{THIS_FILE}:{line}:{c}: error: {message}"
    if col is not None:
        assert c == col
    assert rest[0] == "    " + src
    assert rest[1] == "    " + " " * (c - 1) + "^"
    assert len(rest) == 2
    assert src[c - 1] != " "                       # the caret points at code, not indentation
    assert "Traceback" not in text and "tritonpu/frontend" not in text and "site-packages" not in text
    assert err.line == line and err.file == THIS_FILE and err.message == message


@pytest.mark.parametrize("case", list(CASES))
def test_compile_error(case):
    kernel, args, kwargs, message = CASES[case]
    with pytest.raises(tritonpu.CompilationError) as info:
        kernel[(1,)](*args, **kwargs)
    check_error(info.value, case, message)


def test_error_columns():
    """The caret points at the offending expression, not just the statement."""
    with pytest.raises(tritonpu.CompilationError) as info:
        k_exp_ptr[(1,)](F16, BLOCK=16)
    _, src = _marked_line("exp_ptr")
    check_error(info.value, "exp_ptr", CASES["exp_ptr"][3], col=src.index("tl.exp") + 1)
    with pytest.raises(tritonpu.CompilationError) as info:
        k_break[(1,)](F32, 4)
    _, src = _marked_line("break")
    check_error(info.value, "break", CASES["break"][3], col=src.index("break") + 1)


def test_error_has_no_internal_frames():
    with pytest.raises(tritonpu.CompilationError) as info:
        k_unknown_name[(1,)](F32)
    tb = info.traceback
    assert not any("tritonpu/frontend" in str(entry.path) for entry in tb), "compiler frames leak into the traceback"
    assert info.value.__cause__ is None and info.value.__suppress_context__


# ---------------------------------------------------------------------------------------------
# launch errors
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def k_ok(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@pytest.mark.parametrize("args,kwargs,message", [
    ((F32,), {"BLOCK": 16}, "bad launch of `k_ok`: missing a required argument: 'n'"),
    ((F32, 3, 4, 5), {}, "bad launch of `k_ok`: too many positional arguments"),
    ((F32, 3), {"BLOCK": 16, "bogus": 1}, "bad launch of `k_ok`: got an unexpected keyword argument 'bogus'; "
                                          "`bogus` is neither a parameter of the kernel nor a launch option"),
    ((F32, 3), {"BLOCKK": 16}, "bad launch of `k_ok`: missing a required argument: 'BLOCK'; `BLOCKK` (did you "
                               "mean `BLOCK`?) is neither a parameter of the kernel nor a launch option"),
    ((F32, 3), {"BLOCK": 16, "num_warp": 4}, "bad launch of `k_ok`: got an unexpected keyword argument "
                                             "'num_warp'; `num_warp` (did you mean `num_warps`?) is neither a "
                                             "parameter of the kernel nor a launch option"),
    (([1.0, 2.0], 3), {"BLOCK": 16}, "argument `x_ptr` has unsupported type list; pass a numpy array, an int, a "
                                     "float or a bool"),
    ((F32, "3"), {"BLOCK": 16}, "argument `n` has unsupported type str; pass a numpy array, an int, a float or a "
                                "bool"),
    ((np.zeros(4, np.complex64), 3), {"BLOCK": 16}, "argument `x_ptr` has dtype complex64, which tritonpu does not "
                                                    "support"),
    ((np.zeros(16, np.float32)[::-1], 3), {"BLOCK": 16}, "argument `x_ptr` is a view with negative strides (-4,): "
                                                         "its first element is not its lowest address; pass a copy "
                                                         "(np.ascontiguousarray, .contiguous())"),
    ((F32, 2**70), {"BLOCK": 16}, f"argument `n` = {2**70} does not fit in 64 bits"),
    ((F32, 3), {"BLOCK": 16, "backend": "gpu"}, "unknown backend 'gpu'; choose one of ref, cpu, npu"),
    ((F32, 3), {"BLOCK": 16, "disable_passes": ("fusoin",)},      # was ignored: the same cycles as no option
     "disable_passes: 'fusoin' is not a pass that can be left out (did you mean 'fusion'?); choose from "
     "canonicalize, unflatten, memory-analysis, cse, trip-extents, fusion, unswitch, persistent, grid-stride, balance, "
     "one-program, versioning, hoist, stagger, "
     "panel-reuse, double-buffer, l0c-ring, l0c-halves"),
    ((F32, 3), {"BLOCK": 16, "disable_passes": 3}, "disable_passes= takes a pass name or a list of them, got 3"),
])
def test_launch_error(args, kwargs, message):
    with pytest.raises(tritonpu.LaunchError) as info:
        k_ok[(1,)](*args, **kwargs)
    assert str(info.value) == message


@pytest.mark.parametrize("grid,message", [
    ((1, 2, 3, 4), "grid must have 1 to 3 dimensions, got 4"),
    ((-1,), "grid dimensions must be >= 0, got (-1,)"),
    (("a",), "grid must be a tuple of 1 to 3 ints (or a function returning one), got ('a',)"),
    ((100 / 32,), "grid dimension 3.125 is not an integer (a division? use triton.cdiv(n, BLOCK) or //); got grid "
                  "(3.125,)"),                                   # was truncated: 3 programs, 4 elements missed
    ((2, np.float32(2.0)), "grid dimension 2.0 is not an integer (a division? use triton.cdiv(n, BLOCK) or //); "
                           "got grid (2, 2.0)"),
    ((2 ** 31,), "a grid of 2147483648 programs (2147483648, 1, 1) is more than 2147483647 (2**31 - 1: program ids "
                 "are 32-bit)"),                                 # was wrapped around: 0 programs ran
    ((65536, 65536), "a grid of 4294967296 programs (65536, 65536, 1) is more than 2147483647 (2**31 - 1: program "
                     "ids are 32-bit)"),
])
def test_bad_grid(grid, message):
    with pytest.raises(tritonpu.LaunchError) as info:
        k_ok[grid](F32, 3, BLOCK=16)
    assert str(info.value) == message


def test_disable_passes_takes_one_name_or_several_either_spelling():
    x = np.zeros(16, np.float32)
    for dp, left_out in (((), ()), ("double_buffer", ("double-buffer",)), (["fusion", "CSE"], ("fusion", "cse"))):
        stages = k_ok[(1,)](x, 16, BLOCK=16, disable_passes=dp).asm      # a stage per pass that ran
        assert [p for p in ("double-buffer", "fusion", "cse") if p not in stages] == list(left_out), dp


def test_calling_kernel_directly():
    with pytest.raises(RuntimeError, match=r"must be launched as k_ok\[grid\]\(\.\.\.\)"):
        k_ok(F32, 3, BLOCK=16)


# ---------------------------------------------------------------------------------------------
# run-time errors
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def k_oob(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)  # E:oob
    tl.store(y_ptr + offs, x, mask=offs < n)


def test_out_of_bounds_load_is_an_execution_error():
    x = np.zeros(20, np.float32)
    y = np.zeros(20, np.float32)
    with pytest.raises(tritonpu.ExecutionError) as info:
        k_oob[(2,)](x, y, 20, BLOCK=16, backend="ref")
    err = info.value
    line, src = _marked_line("oob")
    text = str(err)
    assert err.file == THIS_FILE and err.line == line
    assert text.splitlines()[1] == "    " + src
    assert "out-of-bounds access to `x_ptr` at element offset 20" in text and "program (1, 0, 0)" in text
    assert "Traceback" not in text and "tritonpu/ref" not in text
    k_oob[(1,)](x, y, 20, BLOCK=16)       # in bounds: fine


def test_out_of_bounds_load_on_the_npu_names_instruction_and_source_line():
    x = np.zeros(20, np.float32)
    y = np.zeros(20, np.float32)
    with pytest.raises(tritonpu.ExecutionError) as info:
        k_oob[(2,)](x, y, 20, BLOCK=16, backend="npu")
    err = info.value
    line, src = _marked_line("oob")
    text = str(err)
    assert err.file == THIS_FILE and err.line == line
    assert text.splitlines()[1] == "    " + src
    first = text.splitlines()[0]
    assert "outside GM parameter 'x_ptr'" in first and "mov.gm.ub" in first and "program (1, 0, 0)" in first
    assert "Traceback" not in text
    with pytest.raises(tritonpu.ExecutionError) as ref:
        k_oob[(2,)](x, y, 20, BLOCK=16, backend="ref")
    assert err.col == ref.value.col and text.splitlines()[2] == str(ref.value).splitlines()[2]   # the caret


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_a_read_only_output_is_a_launch_error_and_a_read_only_input_is_fine(backend):
    x, y = np.arange(20, dtype=np.float32), np.zeros(20, np.float32)
    x.flags.writeable = False
    k_oob[(1,)](x, y, 20, BLOCK=16, backend=backend)       # reads x only
    np.testing.assert_array_equal(y[:16], x[:16])
    y.flags.writeable = False
    with pytest.raises(tritonpu.LaunchError, match="argument `y_ptr` is a read-only array but the kernel stores to it"):
        k_oob[(1,)](x, y, 20, BLOCK=16, backend=backend)
