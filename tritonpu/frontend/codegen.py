"""The frontend: an allow-list AST visitor that turns a kernel's Python source into dataflow IR.

Guarantees:
* constexpr values (annotated arguments, literals, globals that are constants) stay Python values
  and are folded; constexpr ``if`` branches are folded away and ``tl.static_range`` loops are
  unrolled;
* runtime ``if``/``for``/``while`` become structured ``if``/``for``/``while`` ops whose carried
  values are the variables the body reassigns (types must stay the same, as in Triton);
  ``if cond: return`` at kernel level becomes an ``if`` whose else-region holds the rest;
* calls to other ``@jit`` functions are inlined;
* any construct it does not know raises :class:`CompilationError` at the node's own source line.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import operator
import textwrap
import types as pytypes

from tritonpu.errors import CompilationError
from tritonpu.ir import Builder, Function, Loc, Region, Value
from tritonpu.ir import types as T
from tritonpu.language import core as tl
from tritonpu.language import semantic as S
from tritonpu.language.core import SemanticError, tensor

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
    ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.Pow: operator.pow,
}
_CMPOPS = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Eq: operator.eq,
    ast.NotEq: operator.ne, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
_PY_BUILTINS = {
    "range": tl.range, "len": len, "min": builtins.min, "max": builtins.max, "int": int, "float": float,
    "bool": bool, "abs": builtins.abs, "isinstance": isinstance, "tuple": tuple, "list": list, "zip": zip,
    "enumerate": enumerate, "any": any, "all": all, "print": print, "getattr": getattr, "hasattr": hasattr,
    "str": str, "round": round, "divmod": divmod, "reversed": reversed, "sum": builtins.sum,
    "True": True, "False": False, "None": None, "float('inf')": float("inf"),
}
_MISSING = object()


class SourceInfo:
    """Where a function's source lives, to map AST positions back to the file."""

    def __init__(self, fn):
        self.file = inspect.getsourcefile(fn) or "<unknown>"
        lines, first = inspect.getsourcelines(fn)
        raw = "".join(lines)
        self.src = textwrap.dedent(raw)
        self.indent = len(lines[0]) - len(lines[0].lstrip())
        self.first_line = first

    def loc(self, node) -> Loc:
        return Loc(self.file, self.first_line + node.lineno - 1, node.col_offset + self.indent)


def is_jit(obj) -> bool:
    return getattr(obj, "__tritonpu_jit__", False)


def _is_number(v) -> bool:
    return isinstance(v, (int, float, bool)) and not isinstance(v, tensor)


def _assigned_names(stmts) -> list[str]:
    """Names a list of statements (re)binds, in first-assignment order, not entering nested defs."""
    out: list[str] = []

    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in out:
            out.append(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child)

    for s in stmts:
        visit(s)
    return out


def _fits(v, dt) -> bool:
    """Whether the Python number ``v`` converts to dtype ``dt`` without changing its value."""
    if dt.is_floating():
        return True
    if isinstance(v, bool) or not isinstance(v, int):
        return dt.is_bool() and isinstance(v, bool)
    lo, hi = S._int_range(dt)
    return not dt.is_bool() and lo <= v <= hi


def _contains_return(stmts) -> bool:
    return any(isinstance(n, ast.Return) for s in stmts for n in ast.walk(s))


class _Return(Exception):
    """Internal: unwinds the visitor when a `return` is reached."""


class CodeGenerator(ast.NodeVisitor):
    def __init__(self, fn, src: SourceInfo, builder: Builder, scope: dict, globals_: dict, call_stack: tuple):
        self.fn = fn
        self.src = src
        self.builder = builder
        self.scope = scope
        self.globals = globals_
        self.call_stack = call_stack
        self.ret = None
        self.ret_node = None
        self.returned = False

    # -- plumbing ------------------------------------------------------------------------------
    def error(self, node, message: str) -> CompilationError:
        loc = self.src.loc(node)
        return CompilationError(message, loc.file, loc.line, loc.col)

    def visit(self, node):
        if node is None:
            return None
        saved = self.builder.loc
        if hasattr(node, "lineno"):
            self.builder.loc = self.src.loc(node)
        try:
            return super().visit(node)
        except (CompilationError, _Return):
            raise
        except (SemanticError, TypeError, ValueError, IndexError, KeyError, AttributeError, ZeroDivisionError,
                OverflowError, AssertionError, NameError) as e:
            raise self.error(node, str(e) or type(e).__name__) from None
        except RecursionError:
            raise self.error(node, "recursion too deep (recursive @jit calls are not supported)") from None
        finally:
            self.builder.loc = saved

    def generic_visit(self, node):
        raise self.error(node, f"unsupported Python construct in a kernel: {type(node).__name__}")

    def visit_block(self, stmts: list) -> None:
        for i, stmt in enumerate(stmts):
            if self.returned:
                return
            if isinstance(stmt, ast.If) and _contains_return(stmt.body):
                cond = self.visit(stmt.test)
                if isinstance(cond, tensor):
                    self._early_exit_if(stmt, cond, stmts[i + 1:])
                    return
                self._static_if(stmt, cond)
                continue
            self.visit(stmt)

    def _in_region(self, region: Region, scope: dict, stmts) -> dict:
        saved_region, saved_scope, saved_returned = self.builder.region, self.scope, self.returned
        self.builder.region, self.scope = region, scope
        try:
            self.visit_block(stmts)
            return self.scope
        finally:
            self.builder.region, self.scope, self.returned = saved_region, saved_scope, saved_returned

    # -- statements ----------------------------------------------------------------------------
    def visit_FunctionDef(self, node):
        self.visit_block(node.body)

    def visit_Pass(self, node):
        pass

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.visit(node.value)

    def visit_Return(self, node):
        self.ret = self.visit(node.value) if node.value is not None else None
        self.ret_node = node
        self.returned = True

    def _bind(self, target, value, node):
        if isinstance(target, ast.Name):
            if isinstance(value, tensor) and value.handle.name is None and value.handle.owner is not None:
                value.handle.name = target.id
            self.scope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, tensor) or not hasattr(value, "__len__"):
                raise self.error(node, "cannot unpack a non-tuple value")
            if len(value) != len(target.elts):
                raise self.error(node, f"cannot unpack {len(value)} values into {len(target.elts)} names")
            for t, v in zip(target.elts, value):
                self._bind(t, v, node)
        else:
            raise self.error(node, "only assignments to names are supported (no x[i] = ... or x.a = ...); "
                                   "use tl.store to write memory")

    def visit_Assign(self, node):
        value = self.visit(node.value)
        for target in node.targets:
            self._bind(target, value, node)

    def visit_AnnAssign(self, node):
        if node.value is None:
            return
        value = self.visit(node.value)
        self._bind(node.target, value, node)

    def visit_AugAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "augmented assignment needs a simple name")
        lhs = self.visit(ast.Name(node.target.id, ast.Load(), lineno=node.lineno, col_offset=node.col_offset))
        value = self._binop(node.op, lhs, self.visit(node.value), node)
        self._bind(node.target, value, node)

    def visit_Assert(self, node):
        cond = self.visit(node.test)
        msg = self.visit(node.msg) if node.msg is not None else ""
        if isinstance(cond, tensor):
            from tritonpu.language.functions import device_assert
            device_assert(cond, str(msg))
        elif not cond:
            raise self.error(node, f"assertion failed: {msg}" if msg else "assertion failed")

    def visit_Break(self, node):
        raise self.error(node, "`break` is not supported in kernels (as in Triton); use a while loop with a flag")

    def visit_Continue(self, node):
        raise self.error(node, "`continue` is not supported in kernels (as in Triton); use an if around the rest")

    # -- if ------------------------------------------------------------------------------------
    def visit_If(self, node):
        cond = self.visit(node.test)
        if isinstance(cond, tensor):
            self._runtime_if(node, cond)
        else:
            self._static_if(node, cond)

    def _static_if(self, node, cond):
        self.visit_block(node.body if cond else node.orelse)

    def _cond_scalar(self, node, cond: tensor) -> tensor:
        if cond.ty.is_block:
            raise self.error(node, f"`if` needs a scalar condition, got a block of shape {cond.shape}; "
                                   "use tl.where for elementwise choices")
        return S._as_bool(cond)

    def _runtime_if(self, node, cond: tensor):
        cond = self._cond_scalar(node.test, cond)
        if _contains_return(node.orelse):
            raise self.error(node, "`return` in the else-branch of a runtime if is not supported; "
                                   "invert the condition so the early return is in the if-branch")
        before = dict(self.scope)
        then_r, else_r = Region(), Region()
        then_s = self._in_region(then_r, dict(before), node.body)
        else_s = self._in_region(else_r, dict(before), node.orelse)
        names, results = [], []
        for name in list(dict.fromkeys(list(then_s) + list(else_s))):
            t, e = then_s.get(name, _MISSING), else_s.get(name, _MISSING)
            if t is e or t is _MISSING or e is _MISSING:
                continue
            if not (_is_number(t) or isinstance(t, tensor)) or not (_is_number(e) or isinstance(e, tensor)):
                if t != e:
                    raise self.error(node, f"`{name}` is set to different non-tensor values in the branches of "
                                           "a runtime if")
                continue
            names.append(name)
            results.append((t, e))
        yields_t, yields_e = [], []
        for name, (t, e) in zip(names, results):
            tt = self._materialize(then_r, t, e)
            ee = self._materialize(else_r, e, tt)
            if tt.ty != ee.ty:
                raise self.error(node, f"mismatched type for `{name}` between the then-block ({tt.ty}) and the "
                                       f"else-block ({ee.ty})")
            yields_t.append(tt)
            yields_e.append(ee)
        Builder(then_r, self.builder.loc).create("yield", [v.handle for v in yields_t])
        Builder(else_r, self.builder.loc).create("yield", [v.handle for v in yields_e])
        op = self.builder.create("if", [cond.handle], [v.ty for v in yields_t], regions=[then_r, else_r])
        for name, res in zip(names, op.results):
            res.name = name
            self.scope[name] = tensor(res, res.type)

    def _materialize(self, region: Region, v, like) -> tensor:
        """``v`` as a tensor created inside ``region``. A number takes the other side's dtype when that
        loses nothing (an int for an int type it fits, any number for a float type); otherwise it
        keeps its own type (i32 / f32 ...), so a mismatch is reported as in Triton instead of
        silently converting 2.5 to 2."""
        if isinstance(v, tensor):
            return v
        saved = self.builder.region
        self.builder.region = region
        try:
            if isinstance(like, tensor) and not like.ty.is_block and _fits(v, like.dtype):
                return S.scalar_constant(v, like.dtype)
            return S.to_tensor(v)
        finally:
            self.builder.region = saved

    def _early_exit_if(self, node, cond: tensor, rest):
        if self.call_stack[1:] and self.ret is not None:
            raise self.error(node, "early return from an inlined function is not supported")
        cond = self._cond_scalar(node.test, cond)
        then_r, else_r = Region(), Region()
        body = [s for s in node.body]
        then_s = self._in_region(then_r, dict(self.scope), body)
        else_s = self._in_region(else_r, dict(self.scope), list(node.orelse) + list(rest))
        del then_s, else_s
        for r in (then_r, else_r):
            Builder(r, self.builder.loc).create("yield", [])
        self.builder.create("if", [cond.handle], [], regions=[then_r, else_r])
        if self.ret is not None:
            raise self.error(node, "a function that returns a value cannot also return early under a runtime "
                                   "condition")
        self.returned = True

    # -- loops ---------------------------------------------------------------------------------
    def visit_For(self, node):
        it = self.visit(node.iter)
        if not isinstance(it, (tl.range, tl.static_range)):
            raise self.error(node.iter, "a kernel's for loop must iterate over range(...), tl.range(...) or "
                                        "tl.static_range(...)")
        if node.orelse:
            raise self.error(node, "for/else is not supported in kernels")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a simple name")
        start, end, step = (tl._unwrap(x) for x in (it.start, it.end, it.step))
        if isinstance(it, tl.static_range):
            for name, v in (("start", start), ("end", end), ("step", step)):
                if not isinstance(v, int):
                    raise self.error(node.iter, f"tl.static_range needs constexpr bounds; {name} is a runtime value")
            for i in builtins.range(start, end, step):
                self.scope[node.target.id] = i
                self.visit_block(node.body)
                if self.returned:
                    raise self.error(node, "return inside a loop is not supported")
            return
        if isinstance(step, int) and step == 0:
            raise self.error(node.iter, "range() step must not be zero")
        bounds = [S.to_tensor(x) for x in (start, end, step)]
        for b in bounds:
            if b.ty.is_block or not b.dtype.is_int():
                raise self.error(node.iter, f"loop bounds must be integer scalars, got {b.ty}")
        iv_dt = tl.int64 if any(b.dtype.int_bitwidth == 64 for b in bounds) else tl.int32
        bounds = [S.cast(b, iv_dt) for b in bounds]
        carried = self._carried(node.body)
        inits = [self._to_carried(name) for name in carried]
        iv = Value(iv_dt.ir, node.target.id)
        region = Region([iv] + [Value(v.ty, name) for name, v in zip(carried, inits)])
        scope = dict(self.scope)
        scope[node.target.id] = tensor(iv, iv.type)
        for name, arg in zip(carried, region.args[1:]):
            scope[name] = tensor(arg, arg.type)
        body_scope = self._in_region(region, scope, node.body)
        if _contains_return(node.body):
            raise self.error(node, "return inside a loop is not supported")
        yields = self._loop_yields(node, region, carried, inits, body_scope)
        Builder(region, self.builder.loc).create("yield", [v.handle for v in yields])
        op = self.builder.create("for", [b.handle for b in bounds] + [v.handle for v in inits],
                                 [v.ty for v in inits], regions=[region])
        self._bind_results(op, carried)

    def visit_While(self, node):
        if node.orelse:
            raise self.error(node, "while/else is not supported in kernels")
        carried = self._carried(node.body)
        inits = [self._to_carried(name) for name in carried]
        before = Region([Value(v.ty, name) for name, v in zip(carried, inits)])
        after = Region([Value(v.ty, name) for name, v in zip(carried, inits)])
        scope = dict(self.scope)
        for name, arg in zip(carried, before.args):
            scope[name] = tensor(arg, arg.type)
        saved_region, saved_scope = self.builder.region, self.scope
        self.builder.region, self.scope = before, scope
        try:
            cond = self.visit(node.test)
            if not isinstance(cond, tensor):
                raise self.error(node.test, "a while loop needs a runtime condition (a constant one never ends "
                                            "without break, which kernels do not support)")
            cond = self._cond_scalar(node.test, cond)
            self.builder.create("condition", [cond.handle] + list(before.args))
        finally:
            self.builder.region, self.scope = saved_region, saved_scope
        scope = dict(self.scope)
        for name, arg in zip(carried, after.args):
            scope[name] = tensor(arg, arg.type)
        body_scope = self._in_region(after, scope, node.body)
        if _contains_return(node.body):
            raise self.error(node, "return inside a loop is not supported")
        yields = self._loop_yields(node, after, carried, inits, body_scope)
        Builder(after, self.builder.loc).create("yield", [v.handle for v in yields])
        op = self.builder.create("while", [v.handle for v in inits], [v.ty for v in inits], regions=[before, after])
        self._bind_results(op, carried)

    def _carried(self, body) -> list[str]:
        out = []
        for name in _assigned_names(body):
            v = self.scope.get(name, _MISSING)
            if isinstance(v, tensor) or _is_number(v):
                out.append(name)
        return out

    def _to_carried(self, name) -> tensor:
        v = self.scope[name]
        return v if isinstance(v, tensor) else S.to_tensor(v)

    def _loop_yields(self, node, region, carried, inits, body_scope) -> list[tensor]:
        yields = []
        for name, init in zip(carried, inits):
            v = body_scope.get(name)
            if not isinstance(v, tensor):
                if _is_number(v):
                    v = self._materialize(region, v, init)
                else:
                    raise self.error(node, f"loop-carried variable `{name}` is re-assigned to a non-tensor value")
            if v.ty != init.ty:
                raise self.error(node, f"loop-carried variable `{name}` has initial type {init.ty} but is "
                                       f"re-assigned to {v.ty} in the loop; make sure the type stays consistent "
                                       f"(e.g. initialise it with tl.zeros(..., dtype=...) or cast with .to())")
            yields.append(v)
        return yields

    def _bind_results(self, op, carried):
        for name, res in zip(carried, op.results):
            res.name = name
            self.scope[name] = tensor(res, res.type)

    # -- expressions ---------------------------------------------------------------------------
    def visit_Constant(self, node):
        return node.value

    def visit_Name(self, node):
        name = node.id
        if name in self.scope:
            return self.scope[name]
        if name in self.globals:
            return self._global(node, self.globals[name])
        if name in _PY_BUILTINS:
            return _PY_BUILTINS[name]
        raise self.error(node, f"name `{name}` is not defined")

    def _global(self, node, v):
        if isinstance(v, tl.constexpr):
            return v.value
        if isinstance(v, (int, float, bool, str, type(None), tl.dtype, pytypes.ModuleType)) or is_jit(v) \
                or tl.is_builtin(v) or isinstance(v, type) and issubclass(v, tl._RangeBase):
            return v
        if isinstance(v, tuple) and all(isinstance(x, (int, float, bool, str)) for x in v):
            return v
        if callable(v) and getattr(v, "__module__", "").startswith(("tritonpu", "triton")):
            return v
        if isinstance(v, (pytypes.FunctionType, pytypes.BuiltinFunctionType)):
            return v          # calling it is rejected by `call`, with a hint to use @jit
        raise self.error(node, f"cannot use global `{node.id}` of type {type(v).__name__} inside a kernel; "
                               "only constexpr values (annotate with tl.constexpr), dtypes, modules and @jit "
                               "functions can be used")

    def visit_Attribute(self, node):
        base = self.visit(node.value)
        if isinstance(base, tensor) and node.attr == "type":
            return base.type
        try:
            return getattr(base, node.attr)
        except AttributeError:
            what = "tensor" if isinstance(base, tensor) else type(base).__name__
            if isinstance(base, pytypes.ModuleType):
                what = f"module {base.__name__}"
            raise self.error(node, f"{what} has no attribute `{node.attr}`") from None

    def visit_Tuple(self, node):
        return tuple(self.visit(e) for e in node.elts)

    def visit_List(self, node):
        return [self.visit(e) for e in node.elts]

    def visit_Slice(self, node):
        return slice(self.visit(node.lower), self.visit(node.upper), self.visit(node.step))

    def visit_Subscript(self, node):
        base = self.visit(node.value)
        index = self.visit(node.slice)
        if isinstance(base, tensor):
            return S.subscript(base, index)
        if isinstance(index, tensor):
            raise self.error(node, "cannot index a Python value with a runtime tensor")
        return base[index]

    def visit_JoinedStr(self, node):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            else:
                val = self.visit(v.value)
                if isinstance(val, tensor):
                    raise self.error(v, "f-strings can only format constexpr values")
                parts.append(format(val, self.visit(v.format_spec) if v.format_spec else ""))
        return "".join(parts)

    def visit_FormattedValue(self, node):
        return self.visit(node.value)

    def _binop(self, op, a, b, node):
        fn = _BINOPS.get(type(op))
        if fn is None:
            raise self.error(node, f"unsupported operator {type(op).__name__}")
        if isinstance(op, ast.Pow) and (isinstance(a, tensor) or isinstance(b, tensor)):
            raise self.error(node, "`**` is not supported on tensors; multiply, or use tl.exp2/tl.log2")
        return fn(a, b)

    def visit_BinOp(self, node):
        return self._binop(node.op, self.visit(node.left), self.visit(node.right), node)

    def visit_UnaryOp(self, node):
        v = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return S.not_(v) if isinstance(v, tensor) else not v
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return +v
        if isinstance(node.op, ast.Invert):
            return ~v
        raise self.error(node, f"unsupported unary operator {type(node.op).__name__}")

    def visit_Compare(self, node):
        left = self.visit(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.visit(right_node)
            fn = _CMPOPS[type(op)]
            if isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) and (isinstance(left, tensor) or
                                                                             isinstance(right, tensor)):
                raise self.error(node, f"`{type(op).__name__.lower()}` only works on constexpr values")
            r = fn(left, right)
            result = r if result is None else self._logical(node, "and", result, r)
            left = right
        return result

    def _logical(self, node, kind, a, b):
        if not isinstance(a, tensor) and not isinstance(b, tensor):
            return (a and b) if kind == "and" else (a or b)
        for v in (a, b):
            if isinstance(v, tensor) and v.ty.is_block:
                raise self.error(node, f"`{kind}` does not work on blocks; use `&` / `|` for elementwise logic")
        return S.logical_and(a, b) if kind == "and" else S.logical_or(a, b)

    def visit_BoolOp(self, node):
        kind = "and" if isinstance(node.op, ast.And) else "or"
        result = self.visit(node.values[0])
        for v in node.values[1:]:
            if not isinstance(result, tensor):       # Python short-circuit on constexprs
                if (kind == "and" and not result) or (kind == "or" and result):
                    return result
            result = self._logical(node, kind, result, self.visit(v))
        return result

    def visit_IfExp(self, node):
        cond = self.visit(node.test)
        if isinstance(cond, tensor):
            return S.where(cond, self.visit(node.body), self.visit(node.orelse))
        return self.visit(node.body) if cond else self.visit(node.orelse)

    def visit_Call(self, node):
        fn = self.visit(node.func)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.visit(a.value))
            else:
                args.append(self.visit(a))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self.visit(kw.value))
            else:
                kwargs[kw.arg] = self.visit(kw.value)
        return self.call(node, fn, args, kwargs)

    def call(self, node, fn, args, kwargs):
        if is_jit(fn):
            return self.inline(node, fn, args, kwargs)
        if tl.is_builtin(fn) or (hasattr(fn, "func") and tl.is_builtin(fn.func)):
            return fn(*args, **kwargs)
        if isinstance(fn, type) and issubclass(fn, tl._RangeBase):
            return fn(*args, **kwargs)
        if fn is tl.constexpr:
            return args[0]
        if isinstance(fn, pytypes.MethodType) and isinstance(fn.__self__, tensor):
            return fn(*args, **kwargs)
        if fn in _PY_BUILTINS.values() or isinstance(fn, tl.dtype) or (
                isinstance(fn, (pytypes.BuiltinMethodType, pytypes.MethodWrapperType))
                and isinstance(getattr(fn, "__self__", None), (str, tuple, list, dict, int, float))):
            has_tensor = any(isinstance(a, tensor) for a in list(args) + list(kwargs.values()))
            if has_tensor and fn in (builtins.min, builtins.max) and len(args) >= 2 and not kwargs:
                # As in Triton, min/max of runtime values are tl.minimum/tl.maximum.
                combine = S.minimum if fn is builtins.min else S.maximum
                result = args[0]
                for a in args[1:]:
                    result = combine(result, a)
                return result
            if has_tensor and fn is print:
                from tritonpu.language.functions import device_print
                return device_print(" ".join(str(a) for a in args if not isinstance(a, tensor)) + " ",
                                    *[a for a in args if isinstance(a, tensor)])
            if has_tensor:
                name = getattr(fn, "__name__", str(fn))
                hint = {"min": "tl.minimum", "max": "tl.maximum", "abs": "tl.abs"}.get(name)
                raise self.error(node, f"Python's {name}() cannot take runtime tensors"
                                       + (f"; use {hint}" if hint else ""))
            return fn(*args, **kwargs)
        name = getattr(fn, "__name__", repr(fn))
        raise self.error(node, f"cannot call `{name}` inside a kernel: only tl.* builtins and @tritonpu.jit "
                               "functions can be called (decorate helpers with @tritonpu.jit)")

    def inline(self, node, jitfn, args, kwargs):
        if jitfn in self.call_stack:
            raise self.error(node, f"recursive call of @jit function `{jitfn.__name__}` is not supported")
        sig = inspect.signature(jitfn.fn)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(node, f"bad call of `{jitfn.__name__}`: {e}") from None
        bound.apply_defaults()
        scope = {}
        for name, value in bound.arguments.items():
            if name in jitfn.constexpr_names and isinstance(value, tensor):
                raise self.error(node, f"argument `{name}` of `{jitfn.__name__}` is tl.constexpr but got a "
                                       "runtime value")
            scope[name] = tl._unwrap(value)
        return generate_body(jitfn, self.builder, scope, self.call_stack + (jitfn,))


def parse_function_ast(jitfn) -> ast.FunctionDef:
    tree = ast.parse(jitfn.src.src)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            return node
    raise CompilationError(f"could not find the source of {jitfn.__name__}", jitfn.src.file, jitfn.src.first_line)


def generate_body(jitfn, builder: Builder, scope: dict, call_stack: tuple):
    gen = CodeGenerator(jitfn, jitfn.src, builder, scope, jitfn.fn.__globals__, call_stack)
    gen.visit(jitfn.ast)
    if len(call_stack) == 1 and gen.ret is not None:
        raise gen.error(gen.ret_node, f"a kernel cannot return a value (`{jitfn.__name__}` returns one); "
                                      "write results with tl.store")
    return gen.ret


def generate(jitfn, params: list[tuple[str, object]], attrs: dict) -> Function:
    """Build the IR of a kernel. ``params``: (name, T.Type) for runtime arguments, (name,
    tl.constexpr(value)) for constexpr ones, in signature order."""
    args, scope = [], {}
    for name, p in params:
        if isinstance(p, tl.constexpr):
            scope[name] = p.value
        else:
            v = Value(p, name)
            args.append(v)
            scope[name] = tensor(v, p)
    fn = Function(jitfn.__name__, args, attrs=attrs)
    builder = Builder(fn.body, Loc(jitfn.src.file, jitfn.src.first_line, 0))
    saved = tl._state.builder
    tl._state.builder = builder
    try:
        ret = generate_body(jitfn, builder, scope, (jitfn,))
    finally:
        tl._state.builder = saved
    if ret is not None:
        raise CompilationError(f"a kernel cannot return a value (`{jitfn.__name__}` returns one); "
                               "write results with tl.store", jitfn.src.file, jitfn.src.first_line)
    last = fn.body.ops[-1].loc if fn.body.ops else builder.loc
    builder.create("return", [], [], loc=last)
    return fn
