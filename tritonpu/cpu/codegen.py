"""The llvmlite lowering's building blocks: element types, lowered values, loops and buffers.

Guarantees:

* Every IR scalar type has one *register* representation (``reg_type``: i1, iN, half, float,
  double; bf16 as its i16 bit pattern; pointers as i64 byte addresses) and one *memory*
  representation (``mem_type``: the same, except i1 is a byte, as numpy stores bools).
* A lowered value is one of three things:
  ``Scalar`` (an LLVM value, for rank-0 IR values), ``Buf`` (a block materialised in memory: a
  pointer, a shape and element strides, so broadcast / expand_dims / permute are free views),
  or ``Expr`` (a block not yet computed: a function that emits the code of one element from the
  loop indices). Elementwise chains stay ``Expr`` and are computed inside the loop of whichever
  op consumes them (a store, a reduction, a materialisation), so a chain of elementwise ops is
  one loop LLVM can vectorise.
* Block buffers are internal LLVM globals (one per materialised IR value, 64-byte aligned):
  distinct objects for alias analysis, no stack limit. They make a compiled kernel
  non-reentrant; the engine serialises launches of one compiled kernel with a lock.
"""
from __future__ import annotations

from llvmlite import ir

from tritonpu.ir import types as T

I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
PTR = ir.PointerType()

_INT_BITS = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}


def reg_type(s) -> ir.Type:
    """LLVM type of one element of IR scalar/pointer type ``s`` in registers."""
    if s.is_ptr:
        return I64
    name = s.kind.name
    if name in _INT_BITS:
        return ir.IntType(_INT_BITS[name])
    return {"f16": F16, "bf16": I16, "f32": F32, "f64": F64}[name]


def mem_type(s) -> ir.Type:
    """LLVM type of one element in memory (i1 is stored as a byte)."""
    return I8 if (not s.is_ptr and s.is_bool) else reg_type(s)


def elem_bytes(s) -> int:
    return 8 if s.is_ptr else s.kind.bytes


def is_low_float(s) -> bool:
    return not s.is_ptr and s.is_float and s.bits == 16


def is_bf16(s) -> bool:
    return not s.is_ptr and s.kind.name == "bf16"


def compute_type(s) -> ir.Type:
    """The type arithmetic on ``s`` is done in: f32 for f16/bf16, else the register type."""
    return F32 if is_low_float(s) else reg_type(s)


def signed(s) -> bool:
    return not s.is_ptr and s.is_signed


# -- lowered values ---------------------------------------------------------------------------
class Scalar:
    __slots__ = ("value", "s")

    def __init__(self, value, s):
        self.value, self.s = value, s

    shape = ()


class Buf:
    """A block in memory: element ``idx`` is at ``ptr + sum(idx[d] * strides[d])`` (elements)."""
    __slots__ = ("ptr", "shape", "strides", "s")

    def __init__(self, ptr, shape, strides, s):
        self.ptr, self.shape, self.strides, self.s = ptr, tuple(shape), tuple(strides), s

    @property
    def contiguous(self) -> bool:
        return self.strides == row_major(self.shape) or all(d == 1 for d in self.shape)


class Expr:
    """A block computed on demand: ``fn(ctx, idx)`` emits element ``idx`` (a list of i64 indices).

    ``cost`` counts the ops in the expression; ``cheap`` marks integer / index arithmetic, which is
    recomputed rather than stored when used several times.
    """
    __slots__ = ("shape", "s", "fn", "cost", "cheap")

    def __init__(self, shape, s, fn, cost=1, cheap=True):
        self.shape, self.s, self.fn, self.cost, self.cheap = tuple(shape), s, fn, cost, cheap


def row_major(shape) -> tuple:
    strides, n = [], 1
    for d in reversed(shape):
        strides.append(n)
        n *= d
    return tuple(reversed(strides))


def numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def const(ty: ir.Type, value):
    return ir.Constant(ty, value)


def zero_of(s):
    """The register-type zero of IR scalar type ``s``."""
    t = reg_type(s)
    return ir.Constant(t, 0.0 if isinstance(t, (ir.HalfType, ir.FloatType, ir.DoubleType)) else 0)


class Ctx:
    """Lowering state of one kernel: the module, the function, the builder and the value map."""

    def __init__(self, module: ir.Module, func: ir.Function):
        self.module = module
        self.func = func
        self.entry = func.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)
        self.alloca_builder = ir.IRBuilder(self.entry)
        self.env: dict[int, object] = {}
        self._nglobals = 0
        self._decls: dict[str, ir.Function] = {}

    # -- declarations ----------------------------------------------------------------------
    def intrinsic(self, name: str, ret: ir.Type, args: list) -> ir.Function:
        fn = self._decls.get(name)
        if fn is None:
            fn = self.module.globals.get(name)
            if fn is None:
                fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
            self._decls[name] = fn
        return fn

    def call(self, name: str, ret: ir.Type, args: list):
        return self.b.call(self.intrinsic(name, ret, [a.type for a in args]), args)

    # -- storage ---------------------------------------------------------------------------
    def buffer(self, n: int, ty: ir.Type, tag: str = "buf") -> ir.GlobalVariable:
        """A fresh internal global of ``n`` elements of ``ty``."""
        self._nglobals += 1
        g = ir.GlobalVariable(self.module, ir.ArrayType(ty, max(n, 1)), name=f"{tag}{self._nglobals}")
        g.linkage = "internal"
        g.initializer = ir.Constant(g.value_type, None)
        g.align = 64
        g.type = PTR            # opaque pointer (llvmlite types globals' pointers by default)
        return g

    def var(self, ty: ir.Type, init=None):
        """A scalar variable (an entry-block alloca, promoted to SSA by LLVM); stores ``init`` here."""
        self.alloca_builder.position_at_start(self.entry)
        p = self.alloca_builder.alloca(ty)
        if init is not None:
            self.b.store(init, p)
        return p

    def block(self, name: str = "") -> ir.Block:
        return self.func.append_basic_block(name)

    # -- loops -----------------------------------------------------------------------------
    def loop(self, n: int, body, start: int = 0, name: str = "L") -> None:
        """``for i in range(start, n): body(i)`` with i an i64; nothing when the range is empty."""
        if n <= start:
            return
        b = self.b
        pre = b.block
        hdr = self.block(name)
        b.branch(hdr)
        b.position_at_end(hdr)
        i = b.phi(I64)
        i.add_incoming(const(I64, start), pre)
        body(i)
        nxt = b.add(i, const(I64, 1), flags=("nuw", "nsw"))
        i.add_incoming(nxt, b.block)
        exit_ = self.block(name + "x")
        b.cbranch(b.icmp_unsigned("<", nxt, const(I64, n)), hdr, exit_)
        b.position_at_end(exit_)

    def nest(self, shape, body, order=None) -> None:
        """Loops over every index of ``shape`` (row-major; ``order`` lists dims outer to inner)."""
        shape = tuple(shape)
        order = list(order) if order is not None else list(range(len(shape)))
        idx: list = [None] * len(shape)

        def level(k):
            if k == len(order):
                body(list(idx))
                return
            d = order[k]
            if shape[d] == 1:
                idx[d] = const(I64, 0)
                level(k + 1)
                return

            def inner(i):
                idx[d] = i
                level(k + 1)
            self.loop(shape[d], inner)
        if numel(shape) > 0:
            level(0)

    # -- element access --------------------------------------------------------------------
    def offset(self, idx, strides):
        b = self.b
        off = None
        for i, st in zip(idx, strides):
            if st == 0:
                continue
            t = i if st == 1 else b.mul(i, const(I64, st), flags=("nuw", "nsw"))
            off = t if off is None else b.add(off, t, flags=("nuw", "nsw"))
        return off if off is not None else const(I64, 0)

    def elem_ptr(self, buf: Buf, idx):
        return self.b.gep(buf.ptr, [self.offset(idx, buf.strides)], source_etype=mem_type(buf.s))

    def get(self, v, idx):
        """Element ``idx`` of a lowered value, in its register type."""
        if isinstance(v, Scalar):
            return v.value
        if isinstance(v, Expr):
            return v.fn(self, idx)
        x = self.b.load(self.elem_ptr(v, idx), typ=mem_type(v.s))
        if not v.s.is_ptr and v.s.is_bool:
            x = self.b.icmp_unsigned("!=", x, const(I8, 0))
        return x

    def put(self, ptr, value, s, flat):
        """Store a register value as element ``flat`` of a contiguous buffer at ``ptr``."""
        if not s.is_ptr and s.is_bool:
            value = self.b.zext(value, I8)
        self.b.store(value, self.b.gep(ptr, [flat], source_etype=mem_type(s)))

    def write(self, ptr, v, shape, s) -> None:
        """Write every element of ``v`` to the contiguous buffer at ``ptr`` (one loop nest)."""
        strides = row_major(shape)
        self.nest(shape, lambda idx: self.put(ptr, self.get(v, idx), s, self.offset(idx, strides)))

    def materialize(self, v, shape=None, s=None, tag="buf") -> Buf:
        """``v`` as a contiguous ``Buf`` (itself when it already is one)."""
        if isinstance(v, Buf) and v.contiguous:
            return v
        shape = tuple(shape if shape is not None else v.shape)
        s = s if s is not None else v.s
        g = self.buffer(numel(shape), mem_type(s), tag)
        if isinstance(v, Scalar):
            self.put(g, v.value, s, const(I64, 0))
        else:
            self.write(g, v, shape, s)
        return Buf(g, shape, row_major(shape), s)


# -- views (shape ops) --------------------------------------------------------------------------
def view_broadcast(v, shape):
    shape = tuple(shape)
    if isinstance(v, Buf):
        return Buf(v.ptr, shape, tuple(0 if a != r else st for a, r, st in zip(v.shape, shape, v.strides)), v.s)
    src = v.shape
    fn = v.fn
    keep = [a == r for a, r in zip(src, shape)]
    zero = const(I64, 0)
    return Expr(shape, v.s, lambda ctx, idx: fn(ctx, [i if k else zero for i, k in zip(idx, keep)]), v.cost, v.cheap)


def view_expand(v, axis, shape):
    if isinstance(v, Buf):
        st = list(v.strides)
        st.insert(axis, 0)
        return Buf(v.ptr, shape, st, v.s)
    fn = v.fn
    return Expr(shape, v.s, lambda ctx, idx: fn(ctx, idx[:axis] + idx[axis + 1:]), v.cost, v.cheap)


def view_permute(v, order, shape):
    if isinstance(v, Buf):
        return Buf(v.ptr, shape, [v.strides[o] for o in order], v.s)
    fn = v.fn
    n = len(order)

    def get(ctx, idx):
        old = [None] * n
        for i, o in enumerate(order):
            old[o] = idx[i]
        return fn(ctx, old)
    return Expr(shape, v.s, get, v.cost, v.cheap)


def splat(value, s, shape) -> Expr:
    return Expr(shape, s, lambda ctx, idx: value, 1, True)


def ir_scalar(ty: T.Type):
    return ty.scalar
