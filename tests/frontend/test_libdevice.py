"""``libdevice`` (tritonpu/language/extra): the math library Triton kernels import as
``from triton.language.extra import libdevice`` or reach as ``tl.extra.cuda.libdevice``.

Each function against numpy on every backend (the reference and the NPU compute numpy's float32
functions, bit for bit; the cpu path rounds libm's f64 result once, within 1 ulp); a function
tritonpu does not provide is a compilation error at the kernel's line naming it.
"""
import math

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.errors import CompilationError
from tritonpu.language.extra import libdevice
from tritonpu.language.extra.cuda.libdevice import tanh as cuda_tanh
import tritonpu.language.extra.cann.libdevice as cann_ld


@tritonpu.jit
def _mix(x_ptr, y_ptr, z_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = libdevice.tanh(x) + libdevice.trunc(x * 3) + libdevice.erf(x) + libdevice.fmax(x, 0.5) \
        + libdevice.fabs(libdevice.fmin(x, -0.25)) + libdevice.rsqrt(libdevice.fabs(x) + 1)
    tl.store(y_ptr + offs, y)
    tl.store(z_ptr + offs, (libdevice.isnan(x / x) | libdevice.isinf(1 / x)).to(tl.int32))


@tritonpu.jit
def _tanh_cuda_path(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(y_ptr + offs, tl.extra.cuda.libdevice.tanh(tl.load(x_ptr + offs)))


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_libdevice_functions_match_numpy(backend):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(128) * 3).astype(np.float32)
    x[7] = 0.0                                  # 0/0 is NaN, 1/0 is inf
    y, z = np.empty_like(x), np.empty(128, np.int32)
    _mix[(1,)](x, y, z, N=128, backend=backend)
    ref = np.tanh(x) + np.trunc(x * 3) + np.vectorize(math.erf)(x.astype(np.float64)) + np.maximum(x, 0.5) \
        + np.abs(np.minimum(x, -0.25)) + 1 / np.sqrt(np.abs(x) + 1)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    assert list(np.flatnonzero(z)) == [7]
    t = np.empty_like(x)
    _tanh_cuda_path[(1,)](x, t, N=128, backend=backend)
    if backend == "cpu":
        np.testing.assert_allclose(t, np.tanh(x), rtol=2 ** -23, atol=0)
    else:                                       # the reference's own function: bit for bit
        assert t.tobytes() == np.tanh(x).tobytes()


@tritonpu.jit
def _vendor_imports(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, cuda_tanh(x) + cann_ld.pow(x * x, 0.5) + tl.extra.ascend.libdevice.trunc(x))


def test_libdevice_imports_from_the_vendor_packages_kernels_use():
    # FlagGems: `from triton.language.extra.cuda.libdevice import ...`; triton-ascend: tl.extra.cann /
    # tl.extra.ascend (torch_npu picks one by version) -- all one module
    import tritonpu.language.extra.ascend.libdevice as ascend_ld
    assert cann_ld is ascend_ld is libdevice is tl.extra.cuda.libdevice and cuda_tanh is libdevice.tanh
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    for backend in ("ref", "npu"):
        y = np.empty_like(x)
        _vendor_imports[(1,)](x, y, N=64, backend=backend)
        np.testing.assert_allclose(y, np.tanh(x) + np.abs(x) + np.trunc(x), rtol=1e-6, atol=1e-6)


@tritonpu.jit
def _pow(x_ptr, y_ptr, z_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, libdevice.pow(x, 1.5))                       # a scalar exponent
    tl.store(z_ptr + offs, libdevice.pow(2.0, x) + libdevice.pow(x, x))  # a scalar base, two blocks


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_libdevice_pow(backend):
    x = np.linspace(-3, 3, 64).astype(np.float32)          # negative bases: NaN for 1.5 and x
    y, z = np.empty_like(x), np.empty_like(x)
    with np.errstate(invalid="ignore"):
        want_y = np.power(x, np.float32(1.5))
        want_z = np.power(np.float32(2.0), x) + np.power(x, x)
    _pow[(1,)](x, y, z, N=64, backend=backend)
    ulp = 2 ** -23 if backend == "cpu" else 0                          # cpu: libm pow in f64, rounded
    np.testing.assert_allclose(y, want_y, rtol=ulp, atol=0)
    np.testing.assert_allclose(z, want_z, rtol=2 * ulp, atol=0)
    assert (np.isnan(y) == (x < 0)).all()


@tritonpu.jit
def _unary(x_ptr, y_ptr, N: tl.constexpr, FN: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if FN == "asin":
        y = libdevice.asin(x)
    elif FN == "acos":
        y = libdevice.acos(x)
    elif FN == "atan":
        y = libdevice.atan(x)
    elif FN == "tan":
        y = libdevice.tan(x)
    elif FN == "sinh":
        y = libdevice.sinh(x)
    elif FN == "cosh":
        y = libdevice.cosh(x)
    elif FN == "log1p":
        y = libdevice.log1p(x)
    elif FN == "expm1":
        y = libdevice.expm1(x)
    elif FN == "log10":
        y = libdevice.log10(x)
    else:
        y = libdevice.nearbyint(x)
    tl.store(y_ptr + offs, y)


UNARY = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "tan": np.tan, "sinh": np.sinh,
         "cosh": np.cosh, "log1p": np.log1p, "expm1": np.expm1, "log10": np.log10, "rint": np.rint}


@pytest.mark.parametrize("fn", sorted(UNARY))
@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_libdevice_unary(fn, backend):
    x = np.concatenate([np.linspace(-1, 1, 29), [1e-7, -1e-7, 2.5, -2.5, 0.5, 1.5]]).astype(np.float32)
    x = np.pad(x, (0, 64 - x.size), constant_values=0.25)
    if fn in ("log1p", "log10"):
        x = np.abs(x) + np.float32(fn == "log10")
    y = np.empty_like(x)
    _unary[(1,)](x, y, N=64, FN=fn, backend=backend)
    with np.errstate(invalid="ignore"):
        want = UNARY[fn](x)
    if backend == "cpu":                                    # libm in f64, rounded once
        np.testing.assert_allclose(y, want, rtol=2 ** -23, atol=2 ** -149)
    else:
        assert y.tobytes() == want.tobytes()
    if fn in ("log1p", "expm1"):                            # accurate near 0, not 1 + x - 1
        assert y[29] == pytest.approx(1e-7, rel=1e-6)


@tritonpu.jit
def _cbrt(x_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(x_ptr + offs, libdevice.cbrt(tl.load(x_ptr + offs)))


def test_an_unsupported_libdevice_function_is_a_compilation_error_naming_it():
    with pytest.raises(CompilationError) as e:
        _cbrt[(1,)](np.ones(16, np.float32), N=16)
    msg = str(e.value)
    assert "cbrt" in msg and "libdevice" in msg and "test_libdevice.py" in msg, msg


@tritonpu.jit
def _tl_math_tanh(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.math.tanh(x) + tl.math.pow(tl.abs(x), 1.5))


@pytest.mark.parametrize("backend", ["npu", "ref"])
def test_tl_math_holds_libdevices_functions_as_in_triton_2(backend):
    """vllm-ascend's kernels call ``tl.math.tanh`` (Triton 2.x kept libdevice in tl.math)."""
    x = np.linspace(-3, 3, 32).astype(np.float32)
    y = np.zeros_like(x)
    _tl_math_tanh[(1,)](x, y, N=32, backend=backend)
    np.testing.assert_allclose(y, np.tanh(x) + np.abs(x) ** 1.5, rtol=1e-6, atol=1e-6)
