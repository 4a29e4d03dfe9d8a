"""The language's objects: dtypes, ``constexpr``, ``tensor`` and the builtin machinery.

Names and behaviour follow ``triton.language``: ``tl.float32`` prints as ``fp32``, a tensor has
``.dtype`` (its element type), ``.shape`` (a list of ints) and ``.type``; operators on tensors
follow Triton's promotion and broadcasting rules (implemented in :mod:`.semantic`).

Builtins (``tl.load``, ``tl.arange``, ...) only work while the frontend is building a kernel:
the frontend installs an IR builder in ``_state`` and every builtin appends ops to it.
"""
from __future__ import annotations

import builtins
import functools
import threading

from tritonpu import dtypes as _dt
from tritonpu.ir import types as T


class _State(threading.local):
    builder = None      # tritonpu.ir.Builder while a kernel is being built
    debug = True        # device_assert is checked (the compilation's debug mode)


_state = _State()
_builtin_range = builtins.range   # `range` below is tl.range


class SemanticError(Exception):
    """A user mistake found while building a kernel; the frontend adds the source location."""


def builtin(fn):
    """Mark a function as a language builtin: callable only inside a @jit function."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _state.builder is None:
            raise RuntimeError(f"tl.{fn.__name__} can only be called inside a @tritonpu.jit function")
        args = [_unwrap(a) for a in args]
        kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
        return fn(*args, **kwargs)

    wrapper.__tritonpu_builtin__ = True
    return wrapper


def is_builtin(fn) -> bool:
    return getattr(fn, "__tritonpu_builtin__", False)


def _unwrap(v):
    return v.value if isinstance(v, constexpr) else v


# --------------------------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------------------------
class dtype:
    """A scalar element type (``tl.float32`` ...)."""

    def __init__(self, name: str):
        self.name = name                      # Triton's name: fp32, int32, int1 ...
        self._kind = _dt.BY_TRITON[name]

    # identity -------------------------------------------------------------------------------
    def __eq__(self, other):
        other = _unwrap(other)
        return isinstance(other, dtype) and type(other) is type(self) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def _key(self):
        return (self.name,)

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"triton.language.{_REPR_NAMES.get(self.name, self.name)}"

    # queries as in Triton ---------------------------------------------------------------------
    @property
    def ir(self) -> T.Type:
        return T.scalar(self._kind.name)

    @property
    def scalar(self):
        return self

    @property
    def primitive_bitwidth(self) -> int:
        return self._kind.bits

    @property
    def int_bitwidth(self) -> int:
        return self._kind.bits

    @property
    def fp_mantissa_width(self) -> int:
        return {"fp16": 10, "bf16": 7, "fp32": 23, "fp64": 52}.get(self.name, 0)

    @property
    def itemsize(self) -> int:
        return self._kind.bytes

    def is_floating(self):
        return self._kind.is_float

    def is_int(self):
        return self._kind.is_int

    def is_int_signed(self):
        return self._kind.kind == "int"

    def is_int_unsigned(self):
        return self._kind.kind in ("uint", "bool")

    def is_bool(self):
        return self._kind.is_bool

    is_int1 = is_bool

    def is_fp16(self):
        return self.name == "fp16"

    def is_bf16(self):
        return self.name == "bf16"

    def is_fp32(self):
        return self.name == "fp32"

    def is_fp64(self):
        return self.name == "fp64"

    def is_ptr(self):
        return False

    def is_block(self):
        return False

    def is_standard_floating(self):
        return self.name in ("fp16", "bf16", "fp32", "fp64")

    def is_fp8(self):                   # tritonpu has no fp8 types: every fp8 query is False
        return False

    is_fp8e4nv = is_fp8e4b8 = is_fp8e4b15 = is_fp8e5 = is_fp8e5b16 = is_fp8

    def is_int8(self):
        return self.name == "int8"

    def is_int16(self):
        return self.name == "int16"

    def is_int32(self):
        return self.name == "int32"

    def is_int64(self):
        return self.name == "int64"

    def is_uint8(self):
        return self.name == "uint8"

    def is_uint16(self):
        return self.name == "uint16"

    def is_uint32(self):
        return self.name == "uint32"

    def is_uint64(self):
        return self.name == "uint64"

    def is_const(self):
        return False

    def kind_rank(self) -> int:
        """Triton's KIND order: bool < integral < floating."""
        return 0 if self.is_bool() else (2 if self.is_floating() else 1)

    def to(self, *_a, **_k):
        raise SemanticError(f"{self!r} is a dtype, not a tensor; did you mean x.to({self!r})?")


_REPR_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64"}


class pointer_type(dtype):
    def __init__(self, element_ty: dtype, address_space: int = 1, const: bool = False):
        element_ty = _unwrap(element_ty)
        if not isinstance(element_ty, dtype) or isinstance(element_ty, pointer_type):
            raise SemanticError(f"pointer_type needs a scalar element dtype, got {element_ty!r}")
        self.element_ty = element_ty
        self.name = f"pointer<{element_ty.name}>"
        self.address_space = address_space

    def _key(self):
        return ("ptr", self.element_ty.name)

    def __repr__(self):
        return f"pointer<{self.element_ty.name}>"

    @property
    def ir(self) -> T.Type:
        return T.PointerType(self.element_ty.ir)

    @property
    def primitive_bitwidth(self):
        return 64

    def is_ptr(self):
        return True

    def is_floating(self):
        return False

    def is_int(self):
        return False

    def is_int_signed(self):
        return False

    def is_int_unsigned(self):
        return False

    def is_bool(self):
        return False

    def kind_rank(self):
        return 1


class block_type(dtype):
    def __init__(self, element_ty: dtype, shape):
        self.element_ty = element_ty
        self.shape = [int(_unwrap(d)) for d in shape]
        self.name = f"<{self.shape}, {element_ty.name}>"

    def _key(self):
        return ("block", self.element_ty._key(), tuple(self.shape))

    def __repr__(self):
        return self.name

    @property
    def scalar(self):
        return self.element_ty

    @property
    def ir(self) -> T.Type:
        return T.block(self.element_ty.ir, self.shape)

    def is_block(self):
        return True

    @property
    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n


class _named_dtype(dtype):
    """A dtype Triton has and tritonpu names, so that a kernel may compare against it (``V.dtype ==
    tl.float8e5``), but cannot compute with: fp8 (a value of it is a SemanticError)."""

    def __init__(self, name: str):
        self.name = name

    @property
    def _kind(self):
        raise SemanticError(f"{self.name} is not supported by tritonpu: it has no fp8 types (compute in fp16, "
                            "bf16 or fp32)")

    def is_fp8(self):
        return True

    is_fp8e4nv = is_fp8e4b8 = is_fp8e4b15 = is_fp8e5 = is_fp8e5b16 = is_fp8

    def is_floating(self):
        return True

    def is_int(self):
        return False


float8e4nv, float8e5, float8e4b15, float8e4b8, float8e5b16 = (
    _named_dtype(n) for n in ("fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16"))

int1 = dtype("int1")
int8, int16, int32, int64 = dtype("int8"), dtype("int16"), dtype("int32"), dtype("int64")
uint8, uint16, uint32, uint64 = dtype("uint8"), dtype("uint16"), dtype("uint32"), dtype("uint64")
float16, bfloat16, float32, float64 = dtype("fp16"), dtype("bf16"), dtype("fp32"), dtype("fp64")
bool_ = int1
ALL_DTYPES = [int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32, float64]
_BY_IR = {d.ir: d for d in ALL_DTYPES}


def dtype_of(ty: T.Type) -> dtype:
    """The language dtype for an IR type (blocks give their element dtype)."""
    ty = ty.scalar
    if isinstance(ty, T.PointerType):
        return pointer_type(_BY_IR[ty.pointee])
    return _BY_IR[ty]


def lang_type_of(ty: T.Type) -> dtype:
    """The language type (scalar dtype, pointer_type or block_type) for an IR type."""
    if ty.is_block:
        return block_type(dtype_of(ty.scalar), ty.shape)
    return dtype_of(ty)


# --------------------------------------------------------------------------------------------
# constexpr
# --------------------------------------------------------------------------------------------
class constexpr:
    """A compile-time value. As an annotation (``BLOCK: tl.constexpr``) it marks an argument
    whose value is baked into the compiled kernel; inside kernels constexpr values are plain
    Python values."""

    def __init__(self, value):
        self.value = _unwrap(value)

    def __repr__(self):
        return f"constexpr[{self.value!r}]"

    def __index__(self):
        return self.value

    def __int__(self):
        return int(self.value)

    def __bool__(self):
        return bool(self.value)

    def __eq__(self, other):
        return self.value == _unwrap(other)

    def __hash__(self):
        return hash(self.value)

    def __call__(self, *args, **kwargs):
        return self.value(*args, **kwargs)

    # arithmetic on the host, as Triton's constexpr offers it: the result is a constexpr
    def __getattr__(self, name):
        if name.startswith("__") or name == "value":
            raise AttributeError(name)
        return getattr(self.value, name)


def _constexpr_op(op, swap=False):
    def method(self, other=None):
        if other is None and op.__name__ in ("neg", "pos", "invert", "not_", "abs"):
            return constexpr(op(self.value))
        a, b = (_unwrap(other), self.value) if swap else (self.value, _unwrap(other))
        return constexpr(op(a, b))
    method.__name__ = op.__name__
    return method


def _install_constexpr_ops():
    import operator as o
    binary = {"add": o.add, "sub": o.sub, "mul": o.mul, "truediv": o.truediv, "floordiv": o.floordiv,
              "mod": o.mod, "pow": o.pow, "and": o.and_, "or": o.or_, "xor": o.xor, "lshift": o.lshift,
              "rshift": o.rshift}
    for name, op in binary.items():
        setattr(constexpr, f"__{name}__", _constexpr_op(op))
        setattr(constexpr, f"__r{name}__", _constexpr_op(op, swap=True))
    for name, op in {"lt": o.lt, "le": o.le, "gt": o.gt, "ge": o.ge, "ne": o.ne}.items():
        setattr(constexpr, f"__{name}__", _constexpr_op(op))
    for name, op in {"neg": o.neg, "pos": o.pos, "invert": o.invert, "abs": abs}.items():
        setattr(constexpr, f"__{name}__", _constexpr_op(op))


_install_constexpr_ops()


# --------------------------------------------------------------------------------------------
# tensor
# --------------------------------------------------------------------------------------------
def _binary(name, swap=False):
    def method(self, other):
        from tritonpu.language import semantic
        a, b = (other, self) if swap else (self, other)
        return getattr(semantic, name)(_unwrap(a), _unwrap(b))
    method.__name__ = name
    return method


def _compare(pred, swap=False):
    def method(self, other):
        from tritonpu.language import semantic
        a, b = (other, self) if swap else (self, other)
        return semantic.compare(_unwrap(a), _unwrap(b), pred)
    return method


class tensor:
    """A value inside a kernel: a scalar (shape ``[]``) or a block."""

    def __init__(self, handle, ty: T.Type):
        self.handle = handle          # tritonpu.ir.Value
        self.ty = ty                  # IR type

    @property
    def dtype(self) -> dtype:
        return dtype_of(self.ty)

    @property
    def type(self) -> dtype:
        return lang_type_of(self.ty)

    @property
    def shape(self) -> list[int]:
        return list(self.ty.shape)

    @property
    def numel(self) -> int:
        return self.ty.numel

    def __repr__(self):
        return f"tensor<{self.ty}>"

    def __bool__(self):
        raise SemanticError("a runtime tensor has no Python truth value here; use it in `if` on a "
                            "scalar, or tl.where for blocks")

    def __index__(self):
        raise SemanticError("a runtime tensor cannot be used where a constexpr int is needed")

    def __iter__(self):
        raise SemanticError("cannot iterate over a tensor")

    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("sub"), _binary("sub", True)
    __mul__, __rmul__ = _binary("mul"), _binary("mul", True)
    __truediv__, __rtruediv__ = _binary("truediv"), _binary("truediv", True)
    __floordiv__, __rfloordiv__ = _binary("floordiv"), _binary("floordiv", True)
    __mod__, __rmod__ = _binary("mod"), _binary("mod", True)
    __and__, __rand__ = _binary("and_"), _binary("and_", True)
    __or__, __ror__ = _binary("or_"), _binary("or_", True)
    __xor__, __rxor__ = _binary("xor_"), _binary("xor_", True)
    __lshift__, __rlshift__ = _binary("shl"), _binary("shl", True)
    __rshift__, __rrshift__ = _binary("shr"), _binary("shr", True)
    __lt__, __le__ = _compare("lt"), _compare("le")
    __gt__, __ge__ = _compare("gt"), _compare("ge")
    __eq__, __ne__ = _compare("eq"), _compare("ne")
    __hash__ = object.__hash__

    def __pow__(self, other):
        raise SemanticError("`**` is not supported on tensors; use multiplication or tl.exp2/tl.log2")

    def __neg__(self):
        from tritonpu.language import semantic
        return semantic.minus(self)

    def __pos__(self):
        return self

    def __invert__(self):
        from tritonpu.language import semantic
        return semantic.invert(self)

    def __getitem__(self, slices):
        from tritonpu.language import semantic
        return semantic.subscript(self, slices)

    # method forms of builtins, as on Triton tensors ------------------------------------------
    def to(self, dtype, fp_downcast_rounding=None, bitcast=False, overflow_mode=None):
        from tritonpu.language import semantic
        return semantic.cast(self, _unwrap(dtype), bitcast=bool(_unwrap(bitcast)),
                             fp_downcast_rounding=fp_downcast_rounding, overflow_mode=overflow_mode)

    @property
    def T(self):
        from tritonpu.language import semantic
        return semantic.permute(self, list(reversed(_builtin_range(len(self.shape)))))

    def __getattr__(self, name):
        # x.sum(), x.exp(), x.reshape(...) ...: the builtin of that name with x first.
        from tritonpu.language import functions
        fn = functions.TENSOR_METHODS.get(name)
        if fn is None:
            raise AttributeError(f"tensor has no attribute {name!r}")
        return functools.partial(fn, self)


# --------------------------------------------------------------------------------------------
# loop iterators (recognised by the frontend's `for` statement)
# --------------------------------------------------------------------------------------------
class _RangeBase:
    def __init__(self, arg1, arg2=None, step=None, **options):
        if arg2 is None:
            self.start, self.end = 0, arg1
        else:
            self.start, self.end = arg1, arg2
        self.step = 1 if step is None else step
        self.options = options

    def __iter__(self):
        raise RuntimeError(f"{type(self).__name__} can only be used in a for loop inside a @tritonpu.jit function")


class static_range(_RangeBase):
    """A loop the frontend unrolls at compile time (bounds must be constexprs)."""


class range(_RangeBase):
    """A runtime loop, like Python's range inside a kernel. Options Triton accepts (num_stages,
    loop_unroll_factor, disallow_acc_multi_buffer, flatten, warp_specialize) are accepted."""
