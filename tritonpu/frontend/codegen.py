"""The frontend: an allow-list AST visitor that turns a kernel's Python source into dataflow IR.

Guarantees:
* constexpr values (annotated arguments, literals, globals that are constants) stay Python values
  and are folded; constexpr ``if`` branches are folded away and ``tl.static_range`` loops are
  unrolled (and rolled up again into a ``for`` op when their trips that load memory are copies of
  one another, see :mod:`tritonpu.frontend.reroll`);
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
from tritonpu.language import core as tl
from tritonpu.language.descriptor import host_descriptor_param
from tritonpu.language import semantic as S
from tritonpu.language.core import SemanticError, tensor
from tritonpu.language.scalars import is_typed, typed
from tritonpu.frontend import combine as combine_op
from tritonpu.frontend.control import ControlFlow, _contains_return, _is_number  # noqa: F401
from tritonpu.language.functions import associative_scan as _tl_scan, reduce as _tl_reduce

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


class _Return(Exception):
    """Internal: unwinds the visitor when a `return` is reached."""


class CodeGenerator(ControlFlow, ast.NodeVisitor):
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
        self.after = []          # (statements, index): the statements that run after the current one

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
            if isinstance(stmt, ast.If) and _contains_return(stmt.body + stmt.orelse):
                # the statements after this `if` run only on the paths that do not return: they are
                # generated into the branches (a constexpr `if` just picks its branch)
                cond = self.visit(stmt.test)
                rest = list(stmts[i + 1:])
                if isinstance(cond, tensor):
                    self._early_exit_if(stmt, cond, rest)
                else:
                    self.visit_block(list(stmt.body if cond else stmt.orelse) + rest)
                return
            self.after.append((stmts, i + 1))
            try:
                self.visit(stmt)
            finally:
                self.after.pop()

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
        # as Triton's visit_Assign: an assigned number is a scalar tensor of its type (see scalars)
        value = typed(self.visit(node.value))
        for target in node.targets:
            self._bind(target, value, node)

    def visit_AnnAssign(self, node):
        if node.value is None:
            return
        value = self.visit(node.value)
        if self.visit(node.annotation) is not tl.constexpr:     # `x: tl.constexpr = 4` stays a number
            value = typed(value)
        self._bind(node.target, value, node)

    def visit_AugAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "augmented assignment needs a simple name")
        lhs = self.visit(ast.Name(node.target.id, ast.Load(), lineno=node.lineno, col_offset=node.col_offset))
        value = typed(self._binop(node.op, lhs, self.visit(node.value), node))
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
            # `is` / `is not` are decided at compile time, as in Triton: a tensor is never None
            if isinstance(op, (ast.In, ast.NotIn)) and (isinstance(left, tensor) or isinstance(right, tensor)):
                raise self.error(node, f"`{type(op).__name__.lower()}` only works on constexpr values")
            r = fn(left, right)
            result = r if result is None else self._logical(node, "and", result, r)
            left = right
        return result

    def _logical(self, node, kind, a, b):
        if not isinstance(a, tensor) and not isinstance(b, tensor):
            return (a and b) if kind == "and" else (a or b)
        # on runtime values, Triton's `and` / `or` are tensor.logical_and / logical_or: elementwise
        # on blocks, both sides evaluated
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
        if fn is _tl_reduce:
            return combine_op.reduce(lambda f, a: self._combine_call(node, f, a), *args, **kwargs)
        if fn is _tl_scan:
            return combine_op.associative_scan(lambda f, a: self._combine_call(node, f, a), *args, **kwargs)
        if tl.is_builtin(fn) or (hasattr(fn, "func") and tl.is_builtin(fn.func)):
            return fn(*args, **kwargs)
        if isinstance(fn, type) and issubclass(fn, tl._RangeBase):
            return fn(*args, **kwargs)
        if fn is tl.constexpr:
            return args[0]
        if getattr(fn, "__tritonpu_constexpr_function__", False):
            # triton.cdiv, triton.next_power_of_2, @triton.constexpr_function: Python on constexprs
            if any(isinstance(a, tensor) for a in list(args) + list(kwargs.values())):
                raise self.error(node, f"`{getattr(fn, '__name__', fn)}` is a constexpr function: its arguments "
                                       "must be constexpr values, not runtime tensors (use tl.cdiv for those)")
            return fn(*args, **kwargs)
        if isinstance(fn, pytypes.MethodType) and (isinstance(fn.__self__, (tensor, tl.dtype)) or is_typed(fn.__self__)):
            return fn(*args, **kwargs)          # x.to(...), x.dtype.is_floating(), ...
        if isinstance(fn, type) and issubclass(fn, tl.dtype):
            return fn(*args, **kwargs)          # tl.pointer_type(tl.int32), tl.block_type(...)
        if fn in _PY_BUILTINS.values() or isinstance(fn, tl.dtype) or (
                isinstance(fn, (pytypes.BuiltinMethodType, pytypes.MethodWrapperType))
                and isinstance(getattr(fn, "__self__", None), (str, tuple, list, dict, int, float))):
            # isinstance() asks for the class of the frontend's value, which a runtime tensor has
            # too (Triton's tutorial 06: `isinstance(desc_or_ptr, tl.tensor_descriptor)`)
            has_tensor = fn is not isinstance and any(isinstance(a, tensor) for a in list(args) + list(kwargs.values()))
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

    def _combine_call(self, node, fn, args):
        if not is_jit(fn):
            raise self.error(node, "the combine function of tl.reduce must be a @tritonpu.jit function")
        return self.inline(node, fn, args, {})

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
        # As in Triton, a callee's tl.constexpr annotations bind nothing: what the caller passes is
        # a constant or a runtime value by itself (the fused-attention tutorial passes tl.arange
        # blocks to `offs_m: tl.constexpr`); a use that needs a constant says so where it is.
        for name, value in bound.arguments.items():
            scope[name] = tl._unwrap(value)
        return generate_body(jitfn, self.builder, scope, self.call_stack + (jitfn,))


def parse_function_ast(jitfn) -> ast.FunctionDef:
    tree = ast.parse(jitfn.src.src)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            return node
    raise CompilationError(f"could not find the source of {jitfn.__name__}", jitfn.src.file, jitfn.src.first_line)


def generate_body(jitfn, builder: Builder, scope: dict, call_stack: tuple):
    gen = CodeGenerator(jitfn, jitfn.src, builder, scope, jitfn.scope, call_stack)
    gen.visit(jitfn.ast)
    if len(call_stack) == 1 and gen.ret is not None:
        raise gen.error(gen.ret_node, f"a kernel cannot return a value (`{jitfn.__name__}` returns one); "
                                      "write results with tl.store")
    return gen.ret


def generate(jitfn, params: list[tuple[str, object]], attrs: dict, debug: bool = True) -> Function:
    """Build the IR of a kernel. ``params``: (name, T.Type) for runtime arguments, (name,
    tl.constexpr(value)) for constexpr ones, in signature order; ``debug``: device asserts are
    checked (else they compile to nothing, as in Triton without TRITON_DEBUG)."""
    args, scope, descriptors = [], {}, []
    for name, p in params:
        if isinstance(p, tl.constexpr):
            scope[name] = p.value
        elif isinstance(p, host_descriptor_param):     # its parts are arguments; built below
            parts = [Value(t, n) for n, t in zip(p.arg_names(name), p.arg_types())]
            args.extend(parts)
            descriptors.append((name, p, [tensor(v, v.type) for v in parts]))
        else:
            v = Value(p, name)
            args.append(v)
            scope[name] = tensor(v, p)
    fn = Function(jitfn.__name__, args, attrs=attrs)
    builder = Builder(fn.body, Loc(jitfn.src.file, jitfn.src.first_line, 0))
    saved, saved_debug = tl._state.builder, tl._state.debug
    tl._state.builder, tl._state.debug = builder, debug
    try:
        for name, p, parts in descriptors:
            scope[name] = p.build(parts)
        ret = generate_body(jitfn, builder, scope, (jitfn,))
    finally:
        tl._state.builder, tl._state.debug = saved, saved_debug
    if ret is not None:
        raise CompilationError(f"a kernel cannot return a value (`{jitfn.__name__}` returns one); "
                               "write results with tl.store", jitfn.src.file, jitfn.src.first_line)
    last = fn.body.ops[-1].loc if fn.body.ops else builder.loc
    builder.create("return", [], [], loc=last)
    return fn
