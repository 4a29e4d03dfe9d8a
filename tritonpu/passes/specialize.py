"""Specializing on the launch's scalar arguments, as Triton does: conditions decided at compile time.

When the compiler knows the launch's scalar arguments (a launch compiles inside
:func:`launch_values`), a pass may ask :func:`decide` about a condition computed from them alone
(pure scalar ops over scalar arguments and constants): the answer is taken now and recorded as a
:class:`Guard`; a later launch whose arguments answer it differently compiles again (see
``NpuKernel.accepts``).  Without them (``tritonpu opt`` on IR text) ``decide`` answers None and the
pass keeps both possibilities in the code.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

from tritonpu.ir import Function, Op, Value
from tritonpu.ir import types as T
from tritonpu.passes.rewrite import clone_op
from tritonpu.ref.evaluator import EVAL

_LAUNCH: ContextVar = ContextVar("tritonpu_launch_values", default=None)


@dataclass
class Guard:
    """A condition on the launch's scalar arguments that a compiled kernel assumed."""
    ops: list                  # pure scalar ops computing ``value``, in order
    args: dict                 # id(argument Value) -> its name
    value: Value
    expected: bool

    def holds(self, scalars: dict) -> bool:
        if any(name not in scalars for name in self.args.values()):
            return False                # (a compile asked about without the launch's grid)
        env = {k: scalars[name] for k, name in self.args.items()}
        return bool(_evaluate(self.ops, self.value, env)) == self.expected


@contextmanager
def launch_values(scalars: dict):
    """Compile for a launch with these scalar arguments (name -> value); yields the guards taken."""
    guards: list = []
    token = _LAUNCH.set((scalars, guards))
    try:
        yield guards
    finally:
        _LAUNCH.reset(token)


def launch_scalars():
    """The scalar values of the launch being compiled for (its arguments, grid and core count; see
    codegen/pipeline.launch_npu), or None."""
    launch = _LAUNCH.get()
    return None if launch is None else launch[0]


def for_a_launch() -> bool:
    """Whether the compile is for a launch whose scalar arguments are known (see launch_values)."""
    return _LAUNCH.get() is not None


def _run(ops, env: dict) -> dict:
    """Evaluate ``ops`` in order over ``env`` (id(Value) -> value or array), in place."""
    for op in ops:
        if op.name == "constant":
            env[id(op.result)] = op.attrs["value"]
            continue
        ins = [np.asarray(env[id(v)], dtype=v.type.scalar.np) for v in op.operands]
        with np.errstate(all="ignore"):
            env[id(op.result)] = EVAL[op.name](op, *ins)
    return env


def _evaluate(ops, value, env: dict):
    return np.asarray(_run(ops, env)[id(value)]).item()


def _slice(fn: Function, extra: list, v: Value):
    """(the scalars, ops computing ``v`` in order, id(argument) -> name) when the launch's scalar
    arguments determine ``v``, else None."""
    launch = _LAUNCH.get()
    if launch is None:
        return None
    scalars = launch[0]
    defs = {id(r): o for o in fn.body.ops for r in o.results}
    defs.update({id(r): o for o in extra for r in o.results})
    names = {id(a): a.name for a in fn.args}
    order, seen, need_args = [], set(), {}

    def visit(v) -> bool:
        if id(v) in seen:
            return True
        seen.add(id(v))
        if id(v) in names:
            if names[id(v)] not in scalars or v.type.is_block or v.type.is_ptr:
                return False
            need_args[id(v)] = names[id(v)]
            return True
        o = defs.get(id(v))
        if o is None or o.regions or o.opdef.effects or o.results[0].type.is_block or \
                o.name in ("program_id", "num_programs") or \
                (o.name != "constant" and o.name not in EVAL):
            return False
        if not all(visit(x) for x in o.operands):
            return False
        order.append(o)
        return True

    return (scalars, order, need_args) if visit(v) else None


def launch_value(fn: Function, extra: list, v: Value):
    """The value of the scalar ``v`` at this launch when its arguments determine it, else None.
    Nothing is recorded: a compile that relies on it must also :func:`decide` a condition that
    makes the choice safe for other arguments (``v`` is computed as in :func:`decide`)."""
    sl = _slice(fn, extra, v)
    if sl is None:
        return None
    scalars, order, need_args = sl
    return _evaluate(order, v, {k: scalars[n] for k, n in need_args.items()})


def slice_of(fn: Function, v: Value):
    """(the ops computing the scalar ``v`` from the launch's scalar arguments and constants, in
    order; id(argument) -> its name) when this launch's arguments determine ``v``, else None."""
    sl = _slice(fn, [], v)
    return None if sl is None else (sl[1], sl[2])


def lanes(ops: list, env: dict, n: int) -> dict:
    """Pure scalar ``ops`` evaluated in order over ``n`` lanes at once: ``env`` maps id(Value) to a
    value or an array of n; the results are added to it (arrays of n).  A pure scalar ``if``: both
    branches evaluated, each lane's results selected by its condition."""
    for op in ops:
        if op.name == "constant":
            env[id(op.result)] = op.attrs["value"]
            continue
        if op.name == "if":
            cond = np.broadcast_to(np.asarray(env[id(op.operands[0])], dtype=bool), (n,))
            outs = []
            for r in op.regions:
                lanes(r.ops[:-1], env, n)
                outs.append([np.broadcast_to(np.asarray(env[id(v)], dtype=v.type.scalar.np), (n,))
                             for v in r.ops[-1].operands])
            for res, a, b in zip(op.results, *outs):
                env[id(res)] = np.where(cond, a, b)
            continue
        # (the evaluator shapes a result as its type says: an op of n lanes)
        wide = Op(op.name, list(op.operands), [T.block(op.results[0].type, (n,))], dict(op.attrs))
        ins = [np.broadcast_to(np.asarray(env[id(x)], dtype=x.type.scalar.np), (n,)) for x in op.operands]
        with np.errstate(all="ignore"):
            env[id(op.result)] = EVAL[op.name](wide, *ins)
    return env


def record(guard) -> None:
    """Record ``guard`` (an object with ``args``: id -> scalar name, and ``holds(scalars)``) for
    this launch's compile: a later launch it does not hold for compiles again."""
    launch = _LAUNCH.get()
    if launch is not None:
        launch[1].append(guard)


def decide(fn: Function, extra: list, cond: Value):
    """True/False when the launch's arguments decide ``cond`` (a guard is recorded), else None.
    ``cond`` may be computed by ops of the function's top level and by ``extra`` (ops not in the
    function yet), from scalar arguments and constants."""
    sl = _slice(fn, extra, cond)
    if sl is None:
        return None
    scalars, order, need_args = sl
    # (copies: later passes change the function's ops -- CSE gives an operand another, equal
    # value -- and the guard is asked again at other launches)
    mapping: dict = {}
    order = [clone_op(o, mapping) for o in order]
    guard = Guard(order, need_args, mapping.get(id(cond), cond), False)
    guard.expected = bool(_evaluate(order, guard.value, {k: scalars[n] for k, n in need_args.items()}))
    _LAUNCH.get()[1].append(guard)
    return guard.expected
