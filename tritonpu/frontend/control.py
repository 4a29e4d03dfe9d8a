"""The frontend's control flow: ``if`` (constexpr-folded or a structured ``if`` op), early
``return`` under runtime conditions, ``for`` over ``range``/``tl.range``/``tl.static_range`` and
``while``, with the variables a body reassigns carried as region arguments and results.

A mixin of :class:`tritonpu.frontend.codegen.CodeGenerator` (it uses the generator's ``visit``,
``error``, ``builder`` and ``scope``).
"""
from __future__ import annotations

import ast
import builtins

from tritonpu.ir import Builder, Region, Value
from tritonpu.language import core as tl
from tritonpu.language import block_ptr as BP
from tritonpu.language import semantic as S
from tritonpu.language.core import tensor
from tritonpu.language.scalars import is_typed
from tritonpu.frontend.reroll import reroll

_MISSING = object()


def _is_number(v) -> bool:
    return isinstance(v, (int, float, bool)) and not isinstance(v, tensor)


def _structured(v) -> bool:
    """A block pointer or a tuple: a value made of several tensors or numbers."""
    return isinstance(v, (BP.block_ptr, tuple))


def _carriable(v) -> bool:
    """What a loop may carry and a runtime ``if`` may merge: tensors, numbers, block pointers and
    tuples of them (nested too)."""
    if isinstance(v, (tensor, BP.block_ptr)) or _is_number(v):
        return True
    return isinstance(v, tuple) and all(_carriable(x) for x in v)


def _flat(v) -> list:
    """The tensors and numbers a carriable value is made of, in order."""
    if isinstance(v, BP.block_ptr):
        return list(v.leaves())
    if isinstance(v, tuple):
        return [leaf for x in v for leaf in _flat(x)]
    return [v]


def _same_structure(a, b) -> bool:
    """Whether ``b`` is made like ``a``: the same tuple lengths, block pointers of one block shape,
    a tensor or number where ``a`` has one."""
    if isinstance(a, BP.block_ptr):
        return isinstance(b, BP.block_ptr) and a.block_shape == b.block_shape and \
            len(a.leaves()) == len(b.leaves())
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(_same_structure(x, y) for x, y in zip(a, b))
    return isinstance(b, tensor) or _is_number(b)


def _rebuild(template, leaves):
    """A value made like ``template`` from the tensors the iterator ``leaves`` gives."""
    if isinstance(template, BP.block_ptr):
        return template.from_leaves([next(leaves) for _ in template.leaves()])
    if isinstance(template, tuple):
        items = [_rebuild(x, leaves) for x in template]
        return type(template)(*items) if hasattr(template, "_fields") else tuple(items)
    return next(leaves)


def _same_value(a, b) -> bool:
    """Whether two values a loop or branch cannot carry are the same (never compares tensors)."""
    if a is b:
        return True
    if type(a) is not type(b) or isinstance(a, (tensor, tuple, BP.block_ptr)):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


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


def _names_read(blocks, skip=None) -> set[str]:
    """Names the statements of ``blocks`` (lists of statements) read, ``x`` of ``x += 1`` too, not
    looking inside the node ``skip`` (a loop whose trips assign its names before they read them)."""
    out = set()
    stack = [s for stmts in blocks for s in stmts]
    while stack:
        n = stack.pop()
        if n is skip:
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
        stack.extend(ast.iter_child_nodes(n))
    return out


SLICE_UNROLL_TRIPS = 16     # a loop whose variable places slices is unrolled up to this many trips
_SLICES = ("extract_slice", "insert_slice")


def _slices_at(stmts, name: str) -> bool:
    """Whether ``stmts`` call ``extract_slice``/``insert_slice`` with offsets that read ``name`` or a
    name assigned from it (``offset = i * (BLOCK_M // 4)``)."""
    nodes = [n for st in stmts for n in ast.walk(st)]
    derived, grew = {name}, True

    def reads(tree) -> bool:
        return any(isinstance(x, ast.Name) and x.id in derived for x in ast.walk(tree))

    while grew:
        grew = False
        for n in nodes:
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None and reads(n.value):
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                    for x in ast.walk(t):
                        if isinstance(x, ast.Name) and x.id not in derived:
                            derived.add(x.id)
                            grew = True
    for n in nodes:
        fn = getattr(n.func, "attr", getattr(n.func, "id", None)) if isinstance(n, ast.Call) else None
        if fn in _SLICES:
            at = _SLICES.index(fn) + 1              # (ful, offsets, ...) / (ful, part, offsets, ...)
            offsets = [k.value for k in n.keywords if k.arg == "offsets"] + n.args[at:at + 1]
            if any(reads(a) for a in offsets):
                return True
    return False


def _contains_return(stmts) -> bool:
    return any(isinstance(n, ast.Return) for s in stmts for n in ast.walk(s))


class ControlFlow:
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
        before = dict(self.scope)
        then_r, else_r = Region(), Region()
        then_s = self._in_region(then_r, dict(before), node.body)
        else_s = self._in_region(else_r, dict(before), node.orelse)
        names, results, same = [], [], {}
        for name in list(dict.fromkeys(list(then_s) + list(else_s))):
            t, e = then_s.get(name, _MISSING), else_s.get(name, _MISSING)
            if t is _MISSING or e is _MISSING:
                continue
            if t is e:
                # both branches give the same value, made before the if (a branch's own values are
                # its own): it is the name's value after the if, even when that is not the value
                # it had before (`a, b = b, a` in both branches)
                same[name] = t
                continue
            if _structured(t) or _structured(e):
                # block pointers and tuples: merged leaf by leaf when both branches make them alike
                if not (_carriable(t) and _carriable(e) and _same_structure(t, e)):
                    raise self.error(node, f"`{name}` is set to differently made values in the branches of a "
                                           "runtime if (a block pointer or tuple must keep its block shape and "
                                           "number of elements)")
            elif not (_is_number(t) or isinstance(t, tensor)) or not (_is_number(e) or isinstance(e, tensor)):
                if not _same_value(t, e):
                    raise self.error(node, f"`{name}` is set to different non-tensor values in the branches of "
                                           "a runtime if")
                same[name] = t
                continue
            names.append(name)
            results.append((t, e))
        yields_t, yields_e = [], []
        for name, (t, e) in zip(names, results):
            for lt, le in zip(_flat(t), _flat(e)):
                tt = self._materialize(then_r, lt, le)
                ee = self._materialize(else_r, le, tt)
                if tt.ty != ee.ty:
                    raise self.error(node, f"mismatched type for `{name}` between the then-block ({tt.ty}) and "
                                           f"the else-block ({ee.ty})")
                yields_t.append(tt)
                yields_e.append(ee)
        Builder(then_r, self.builder.loc).create("yield", [v.handle for v in yields_t])
        Builder(else_r, self.builder.loc).create("yield", [v.handle for v in yields_e])
        op = self.builder.create("if", [cond.handle], [v.ty for v in yields_t], regions=[then_r, else_r])
        leaves = (tensor(r, r.type) for r in op.results)
        for name, (t, _) in zip(names, results):
            self.scope[name] = _rebuild(t, leaves)
            if not _structured(t):
                self.scope[name].handle.name = name
        self.scope.update(same)

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
        """``if cond: ... return [v]`` followed by ``rest``: an ``if`` op whose then-region holds the
        body then ``rest`` and whose else-region holds the else-branch then ``rest`` (code after a
        return is not generated). In an inlined function the returned values become the if's results."""
        cond = self._cond_scalar(node.test, cond)
        then_r, else_r = Region(), Region()
        ret = self._branch(then_r, list(node.body) + rest)
        else_ret = self._branch(else_r, list(node.orelse) + rest)
        t_vals = list(ret) if isinstance(ret, tuple) else ([] if ret is None else [ret])
        e_vals = list(else_ret) if isinstance(else_ret, tuple) else ([] if else_ret is None else [else_ret])
        if len(t_vals) != len(e_vals) or isinstance(ret, tuple) != isinstance(else_ret, tuple):
            raise self.error(node, "every return of a function must return the same number of values (a "
                                   "function that returns a value must return one on every path)")
        if (t_vals or e_vals) and len(self.call_stack) == 1:
            raise self.error(node, f"a kernel cannot return a value (`{self.fn.__name__}` returns one); "
                                   "write results with tl.store")
        yields_t, yields_e = [], []
        for t, e in zip(t_vals, e_vals):
            for v in (t, e):
                if not (_is_number(v) or isinstance(v, tensor)):
                    raise self.error(node, "a function returning under a runtime condition must return tensors "
                                           f"or numbers, got {type(v).__name__}")
            tt = self._materialize(then_r, t, e)
            ee = self._materialize(else_r, e, tt)
            if tt.ty != ee.ty:
                raise self.error(node, f"the function returns {tt.ty} in one branch and {ee.ty} in the other; "
                                       "cast so both returns have one type")
            yields_t.append(tt)
            yields_e.append(ee)
        Builder(then_r, self.builder.loc).create("yield", [v.handle for v in yields_t])
        Builder(else_r, self.builder.loc).create("yield", [v.handle for v in yields_e])
        op = self.builder.create("if", [cond.handle], [v.ty for v in yields_t], regions=[then_r, else_r])
        results = [tensor(r, r.type) for r in op.results]
        if results:
            self.ret = tuple(results) if isinstance(ret, tuple) else results[0]
        self.returned = True

    def _branch(self, region: Region, stmts):
        """Generate ``stmts`` into ``region``; the value they return (None if none)."""
        saved_ret, saved_node = self.ret, self.ret_node
        self.ret = None
        saved_region, saved_scope, saved_returned = self.builder.region, self.scope, self.returned
        self.builder.region, self.scope, self.returned = region, dict(self.scope), False
        try:
            self.visit_block(stmts)
            return self.ret
        finally:
            self.builder.region, self.scope, self.returned = saved_region, saved_scope, saved_returned
            node = self.ret_node
            self.ret, self.ret_node = saved_ret, node or saved_node

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
            region, before, marks = self._unrolled(node, builtins.range(start, end, step), lambda i: i)
            if region is self.builder.region and not (isinstance(step, bool) or isinstance(start, bool)):
                self._reroll(node, region, marks, before, start, end, step)
            return
        if all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end, step)) and step != 0 and \
                0 < len(builtins.range(int(start), int(end), int(step))) <= SLICE_UNROLL_TRIPS and \
                _slices_at(node.body, node.target.id):
            # a few trips whose variable places an extract_slice / insert_slice (triton-ascend's
            # matmul tutorial: ``for s in parallel(0, 2)``, half the accumulator each): unrolled, the
            # variable an int32 (int64) constant in each trip -- typed as the loop's variable, so
            # every value computes as it did -- and the slices' offsets known, so they are views
            dts = [v.dtype if is_typed(v) else S.python_scalar_dtype(v) for v in (start, end, step)]
            iv_dt = tl.int64 if any(d.int_bitwidth == 64 for d in dts) else tl.int32
            self._unrolled(node, builtins.range(int(start), int(end), int(step)),
                           lambda i: S.scalar_constant(i, iv_dt))
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
        inits = self._carried_inits(carried)
        iv = Value(iv_dt.ir, node.target.id)
        region = Region([iv] + [Value(v.ty, name) for name, v in inits])
        scope = dict(self.scope)
        scope[node.target.id] = tensor(iv, iv.type)
        self._bind_carried(scope, carried, region.args[1:])
        body_scope = self._in_region(region, scope, node.body)
        if _contains_return(node.body):
            raise self.error(node, "return inside a loop is not supported")
        yields = self._loop_yields(node, region, carried, inits, body_scope)
        Builder(region, self.builder.loc).create("yield", [v.handle for v in yields])
        op = self.builder.create("for", [b.handle for b in bounds] + [v.handle for _, v in inits],
                                 [v.ty for _, v in inits], regions=[region])
        self._bind_results(op, carried)

    def _unrolled(self, node, trips, value):
        """The body generated once per trip, the loop variable ``value(i)``: (region, the scope
        before, the index of each trip's first op in the region and the end)."""
        region, before, marks = self.builder.region, dict(self.scope), []
        self.after.append((node.body, 0))   # a trip's names are read by the next trip's statements
        try:
            for i in trips:
                marks.append(len(region.ops))
                self.scope[node.target.id] = value(i)
                self.visit_block(node.body)
                if self.returned:
                    raise self.error(node, "return inside a loop is not supported")
        finally:
            self.after.pop()
        marks.append(len(region.ops))
        return region, before, marks

    def _reroll(self, node, region, marks, before, start, end, step):
        """The unrolled trips of a ``tl.static_range`` loop made one ``for`` op when they are copies
        of one another (:mod:`tritonpu.frontend.reroll`), the names they set bound to its results."""
        trips = [region.ops[a:b] for a, b in zip(marks, marks[1:])]
        made = {r for trip in trips for op in trip for r in op.results}
        later = _names_read((stmts[i:] for stmts, i in self.after), skip=node)
        keep, drop = {}, []             # name -> its leaves made by the trips; names to forget
        for name, v in self.scope.items():
            if name in before and v is before[name]:
                continue
            if isinstance(v, (list, dict, set)):
                return                  # may hold tensors of the trips, which a loop cannot give
            leaves = [x for x in _flat(v) if isinstance(x, tensor) and x.handle in made] if _carriable(v) else []
            if not leaves:
                continue
            if name in before or name in later:
                keep[name] = leaves
            else:
                drop.append(name)
        iv_dt = tl.int32 if all(-2**31 <= x < 2**31 for x in (start, end, step)) else tl.int64
        iv = Value(iv_dt.ir, node.target.id)
        live = [x.handle for leaves in keep.values() for x in leaves]
        rolled = reroll(trips, start, step, iv, live)
        if rolled is None:
            return
        del region.ops[marks[0]:]
        bounds = [S.cast(S.to_tensor(x), iv_dt) for x in (start, end, step)]
        op = self.builder.create("for", [b.handle for b in bounds] + rolled.inits,
                                 [v.type for v in rolled.inits], regions=[rolled.body])
        for name in drop:
            del self.scope[name]
        for name in keep:
            results = iter(tensor(op.results[rolled.results[x.handle]], x.handle.type)
                           if isinstance(x, tensor) and x.handle in made else x for x in _flat(self.scope[name]))
            v = _rebuild(self.scope[name], results) if _structured(self.scope[name]) else next(results)
            if not _structured(v):
                v.handle.name = name
            self.scope[name] = v

    def visit_While(self, node):
        if node.orelse:
            raise self.error(node, "while/else is not supported in kernels")
        carried = self._carried(node.body)
        inits = self._carried_inits(carried)
        before = Region([Value(v.ty, name) for name, v in inits])
        after = Region([Value(v.ty, name) for name, v in inits])
        scope = dict(self.scope)
        self._bind_carried(scope, carried, before.args)
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
        self._bind_carried(scope, carried, after.args)
        body_scope = self._in_region(after, scope, node.body)
        if _contains_return(node.body):
            raise self.error(node, "return inside a loop is not supported")
        yields = self._loop_yields(node, after, carried, inits, body_scope)
        Builder(after, self.builder.loc).create("yield", [v.handle for v in yields])
        op = self.builder.create("while", [v.handle for _, v in inits], [v.ty for _, v in inits],
                                 regions=[before, after])
        self._bind_results(op, carried)

    def _carried(self, body) -> list[str]:
        return [name for name in _assigned_names(body) if _carriable(self.scope.get(name, _MISSING))]

    def _carried_inits(self, carried) -> list:
        """[(name, tensor)] of every carried leaf, in order."""
        return [(name, leaf if isinstance(leaf, tensor) else S.to_tensor(leaf))
                for name in carried for leaf in _flat(self.scope[name])]

    def _bind_carried(self, scope, carried, args) -> None:
        """Bind each carried name to its region arguments (rebuilding block pointers and tuples)."""
        leaves = (tensor(a, a.type) for a in args)
        for name in carried:
            scope[name] = _rebuild(self.scope[name], leaves)

    def _loop_yields(self, node, region, carried, inits, body_scope) -> list[tensor]:
        for name in _assigned_names(node.body):
            if name in carried or name not in self.scope or name not in body_scope:
                continue
            if not _same_value(self.scope[name], body_scope[name]):
                raise self.error(node, f"`{name}` is re-assigned in the loop to a {type(body_scope[name]).__name__} "
                                       "value, which a loop cannot carry (it carries tensors, numbers, block "
                                       "pointers and tuples of them); compute it before the loop")
        yields = []
        init_iter = iter(inits)
        for name in carried:
            v = body_scope.get(name)
            start = self.scope[name]
            if isinstance(start, BP.block_ptr) and not _same_structure(start, v):
                raise self.error(node, f"loop-carried block pointer `{name}` must stay a block pointer of "
                                       f"block shape {start.block_shape}")
            if isinstance(start, tuple) and not _same_structure(start, v):
                raise self.error(node, f"loop-carried tuple `{name}` must keep its structure (the same number "
                                       "of elements, each a tensor or number where it had one)")
            for v in _flat(v) if _structured(start) else [v]:
                _, init = next(init_iter)
                if not isinstance(v, tensor):
                    if _is_number(v):
                        v = self._materialize(region, v, init)
                    else:
                        raise self.error(node, f"loop-carried variable `{name}` is re-assigned to a non-tensor "
                                               "value")
                if v.ty != init.ty:
                    raise self.error(node, f"loop-carried variable `{name}` has initial type {init.ty} but is "
                                           f"re-assigned to {v.ty} in the loop; make sure the type stays "
                                           "consistent (e.g. initialise it with tl.zeros(..., dtype=...) or cast "
                                           "with .to())")
                yields.append(v)
        return yields

    def _bind_results(self, op, carried):
        leaves = (tensor(r, r.type) for r in op.results)
        for name in carried:
            start = self.scope[name]
            self.scope[name] = _rebuild(start, leaves)
            if not _structured(start):
                self.scope[name].handle.name = name
