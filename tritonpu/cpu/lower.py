"""The driver of the llvmlite lowering: one IR function -> one LLVM module running the whole grid.

Guarantees:

* ``lower(fn)`` returns the LLVM IR text of a module defining
  ``i32 @tpu_kernel(<per pointer arg: ptr data, i64 bytes>, <scalars by value>, i32 gx, i32 gy,
  i32 gz, ptr err, i64 token)``. It loops over the grid (z outer, x inner, as the reference) and
  runs the kernel body for each program id inside the compiled code. It returns 0, or 1 after
  filling ``err`` (i64 x 7: code, op index in ``fn.walk()`` order, pid x/y/z, argument, byte
  offset).
* Every op the frontend can emit (``tritonpu.ir.ops.FRONTEND_OPS``) has an entry in ``LOWER`` (tests check it).
* Materialisation policy: an elementwise ``Expr`` is computed into a buffer at its definition
  when it is used more than once (a use inside a nested loop counts twice) unless it is cheap
  integer/index arithmetic, or when it grows past ``MAX_COST`` ops. Everything else is fused into
  its consumers' loops.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from tritonpu.cpu import control, elementwise, memory, reduce
from tritonpu.cpu.codegen import I8, I32, I64, PTR, Ctx, Expr, Scalar, const, reg_type
from tritonpu.ir.ops import FRONTEND_OPS

LOWER = {**elementwise.LOWER, **memory.LOWER, **reduce.LOWER, **control.LOWER}
TERMINATORS = ("yield", "condition", "return")
MAX_COST = 48


@dataclass
class PtrArg:
    param: object      # the ptr parameter
    size: object       # i64 bytes
    base: object       # i64 address (ptrtoint)
    name: str
    elem: int          # pointee size in bytes


@dataclass
class Lowered:
    text: str                 # LLVM IR (unoptimised)
    ptr_names: list           # argument names of the pointer arguments, in order
    ops: list                 # ops in fn.walk() order (error records index this list)
    prints: dict              # op index -> [(global name, IR type)] of print operands


def missing_lowerings() -> list[str]:
    return sorted(set(FRONTEND_OPS) - set(LOWER) - set(TERMINATORS))


def _use_counts(fn) -> dict:
    """id(value) -> weighted number of uses (a use inside a loop nested below the definition: 2)."""
    counts: dict[int, int] = {}
    def_depth: dict[int, int] = {}

    def region(r, depth):
        for a in r.args:
            def_depth[id(a)] = depth
        for op in r.ops:
            for o in op.operands:
                w = 2 if depth > def_depth.get(id(o), 0) else 1
                counts[id(o)] = counts.get(id(o), 0) + w
            for sub in op.regions:
                region(sub, depth + (1 if op.name in ("for", "while") else 0))
            for res in op.results:
                def_depth[id(res)] = depth
    for a in fn.args:
        def_depth[id(a)] = 0
    region(fn.body, 0)
    return counts


class KernelCtx(Ctx):
    def __init__(self, fn, module, func):
        super().__init__(module, func)
        self.fn = fn
        self.uses = _use_counts(fn)
        self.prov = memory.provenance(fn)
        self.op_list = list(fn.walk())
        self.op_ids = {id(op): i for i, op in enumerate(self.op_list)}
        self.prints: dict = {}
        self.ptr_bitcasts = any(op.name == "bitcast" and op.results[0].type.is_ptr for op in self.op_list)

    def settle(self, value, lowered):
        if not isinstance(lowered, Expr):
            return lowered
        n = self.uses.get(id(value), 0)
        if lowered.cost > MAX_COST or (n > 1 and not (lowered.cheap and lowered.cost <= elementwise.CHEAP_LIMIT)):
            return self.materialize(lowered)
        return lowered

    def lower_region(self, region, args):
        for a, v in zip(region.args, args):
            self.env[id(a)] = v
        for op in region.ops:
            if op.name in TERMINATORS:
                return [self.env[id(o)] for o in op.operands]
            ins = [self.env[id(o)] for o in op.operands]
            try:
                rule = LOWER[op.name]
            except KeyError:
                raise NotImplementedError(f"the cpu backend cannot lower '{op.name}'") from None
            outs = rule(self, op, ins)
            for r, v in zip(op.results, outs):
                self.env[id(r)] = self.settle(r, v)
        return []


def _grid_loop(ctx, n, body):
    """``for i in range(n)`` over an i32 runtime bound known to be >= 1."""
    b = ctx.b
    pre = b.block
    hdr = ctx.block("grid")
    b.branch(hdr)
    b.position_at_end(hdr)
    i = b.phi(I32)
    i.add_incoming(const(I32, 0), pre)
    body(i)
    nxt = b.add(i, const(I32, 1))
    i.add_incoming(nxt, b.block)
    exit_ = ctx.block("gridx")
    b.cbranch(b.icmp_signed("<", nxt, n), hdr, exit_)
    b.position_at_end(exit_)


def lower(fn) -> Lowered:
    module = ir.Module(name=f"tritonpu.{fn.name}")
    params, names = [], []
    for a in fn.args:
        if a.type.is_ptr:
            params += [PTR, I64]
        else:
            s = a.type
            params.append(I8 if (not s.is_ptr and s.is_bool) else reg_type(s))
    params += [I32, I32, I32, PTR, I64]
    func = ir.Function(module, ir.FunctionType(I32, params), name="tpu_kernel")
    ctx = KernelCtx(fn, module, func)
    b = ctx.b
    it = iter(func.args)
    ctx.ptr_args = []
    for a in fn.args:
        p = next(it)
        if a.type.is_ptr:
            size = next(it)
            base = b.ptrtoint(p, I64)
            ctx.ptr_args.append(PtrArg(p, size, base, a.name or f"arg{len(names)}", a.type.pointee.kind.bytes))
            names.append(a.name or f"arg{len(names)}")
            ctx.env[id(a)] = Scalar(base, a.type)
        else:
            v = p
            if a.type.is_bool:
                v = b.icmp_unsigned("!=", p, const(I8, 0))
            ctx.env[id(a)] = Scalar(v, a.type)
    gx, gy, gz, err, token = (next(it) for _ in range(5))
    for p, nm in ((gx, "gx"), (gy, "gy"), (gz, "gz"), (err, "err"), (token, "token")):
        p.name = nm
    ctx.err, ctx.token, ctx.grid = err, token, (gx, gy, gz)
    ctx.fail_block = ctx.block("fail")
    ir.IRBuilder(ctx.fail_block).ret(const(I32, 1))
    pid = [None, None, None]

    def z_body(z):
        pid[2] = z
        _grid_loop(ctx, gy, y_body)

    def y_body(y):
        pid[1] = y
        _grid_loop(ctx, gx, x_body)

    def x_body(x):
        pid[0] = x
        ctx.pid = tuple(pid)
        ctx.lower_region(fn.body, [])
    _grid_loop(ctx, gz, z_body)
    b.ret(const(I32, 0))
    return Lowered(str(module), names, ctx.op_list, ctx.prints)
