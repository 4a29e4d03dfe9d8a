"""Translations of the scalar unit's families for the translating engine (``translate``).

Each translator writes out what the family's decoded closure (``ops_scalar``) does — the same
functions on the same values, then ``State.tick`` on pipe S — as Python source; a family or op
without one runs its closure.  Guarantee: a translated instruction leaves registers, the issue
time and the statistics exactly as its closure does.
"""
from __future__ import annotations

from . import cycles
from .errors import DeadlockError, FlagError
from .ops_scalar import CMP_OPS, FLOAT_OPS, INT64_MAX, INT64_MIN, INT_OPS, as_int, to_type, w64
from .state import PIPE_INDEX, S, npdt
from .translate import translator

# the functions generated code calls, by the names it calls them
RUNTIME = {"as_int": as_int, "w64": w64, "to_type": to_type, "FlagError": FlagError,
           "DeadlockError": DeadlockError}
for _op, _fn in INT_OPS.items():
    RUNTIME[f"int_{_op}"] = _fn
for _op, _fn in FLOAT_OPS.items():
    RUNTIME[f"float_{_op}"] = _fn

_PY = {"add": "+", "sub": "-", "mul": "*"}
_CMP_PY = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
assert set(_CMP_PY) == set(CMP_OPS)


def _ints(E, args, names=("a", "b")) -> list[str]:
    """Lines binding ``a``, ``b`` to the operands as ``ops_scalar.as_int`` makes them."""
    out = []
    for name, v in zip(names, args):
        out.append(f"{name} = {E.val(v)}")
        if not (v.reg is None and type(v.value()) is int):
            out.append(f"if type({name}) is not int: {name} = as_int({name})")
    return out


def _simple(inst, E, lines):
    return lines + E.tick_s(cycles.scalar(E.st.m), inst), False


@translator("smov")
def _smov(inst, E):
    return _simple(inst, E, [f"R[{inst.args[0].reg}] = {E.val(inst.args[1])}"])


def _to_type(E, d, a, dt) -> str:
    """The line ``R[d] = to_type(a, dt)`` (``a`` an expression), in range without the call."""
    if dt.kind in "iu":     # ``to_type``: wrap to the type's range (in range: as it is)
        bits = dt.itemsize * 8
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dt.kind == "i" else (0, (1 << bits) - 1)
        return f"R[{d}] = {a} if type({a}) is int and {lo} <= {a} <= {hi} else to_type({a}, {E.const(dt, 'dt')})"
    return f"R[{d}] = to_type({a}, {E.const(dt, 'dt')})"


@translator("sint")
def _sint(inst, E):
    op, d = inst.spec.op, inst.args[0].reg
    typed = inst.types and inst.types[0] not in ("i64", None)   # add.i32: the op, then cvt.i32
    out = "x" if typed else f"R[{d}]"
    lines = _ints(E, inst.args[1:3])
    if op in _PY:
        lines += [f"x = a {_PY[op]} b"] + ([] if typed else
                                           [f"R[{d}] = x if {INT64_MIN} <= x <= {INT64_MAX} else w64(x)"])
    elif op in ("and", "or", "xor"):
        lines.append(f"{out} = a {dict(zip(('and', 'or', 'xor'), '&|^'))[op]} b")
    else:
        lines.append(f"{out} = int_{op}(a, b)")
    if typed:       # a 64-bit wrap first is the identity once wrapped to a narrower type
        lines.append(_to_type(E, d, "x", npdt(inst.types[0])))
    return _simple(inst, E, lines)


@translator("sfloat")
def _sfloat(inst, E):
    op, d = inst.spec.op, inst.args[0].reg
    a, b = (f"float({E.val(v)})" for v in inst.args[1:3])
    if op in _PY:
        return _simple(inst, E, [f"R[{d}] = {a} {_PY[op]} {b}"])
    return _simple(inst, E, [f"R[{d}] = float_{op}({a}, {b})"])


@translator("sconv")
def _sconv(inst, E):
    op, d = inst.spec.op, inst.args[0].reg
    lines = _ints(E, inst.args[1:2]) if op in ("itof", "ftoi") else [f"a = {E.val(inst.args[1])}"]
    if op == "itof":
        lines.append(f"R[{d}] = float(a)")
    elif op == "ftoi":
        lines.append(f"R[{d}] = a")
    else:
        lines.append(_to_type(E, d, "a", npdt(inst.types[0])))
    return _simple(inst, E, lines)


@translator("scmp")
def _scmp(inst, E):
    d, rel = inst.args[0].reg, _CMP_PY[inst.spec.op]
    if inst.spec.name.startswith("f"):
        a, b = (f"float({E.val(v)})" for v in inst.args[1:3])
        return _simple(inst, E, [f"R[{d}] = 1 if {a} {rel} {b} else 0"])
    return _simple(inst, E, _ints(E, inst.args[1:3]) + [f"R[{d}] = 1 if a {rel} b else 0"])


@translator("ssel")
def _ssel(inst, E):
    d = inst.args[0].reg
    c, a, b = (E.val(v) for v in inst.args[1:4])
    return _simple(inst, E, [f"R[{d}] = {a} if {c} else {b}"])


@translator("sgrid")
def _sgrid(inst, E):
    d = inst.args[0].reg
    idx = inst.spec.op == "idx"
    if inst.args[1] is None:
        value = "st.pid" if idx else "st.nprog"
    else:
        ax = inst.args[1].value()
        value = f"st.block[{ax}]" if idx else f"st.grid[{ax}]"
    return _simple(inst, E, [f"R[{d}] = {value}"])


@translator("ctrl")
def _ctrl(inst, E):
    op, k = inst.spec.op, inst.index
    if op == "for":
        return None         # its closure (it checks the bounds)
    tick = E.tick_s(cycles.control(E.st.m), inst)
    if op == "nop":
        return tick, False
    if op == "jmp":
        return tick + [f"pc = {inst.target}"], True
    if op == "exit":
        return tick + [f"pc = {len(E.st.prog.code)}"], True
    if op in _CMP_PY:
        a, b = E.val(inst.args[0]), E.val(inst.args[1])
        return tick + [f"pc = {inst.target} if {a} {_CMP_PY[op]} {b} else {k + 1}"], True
    if op == "endfor":
        f = E.st.prog.code[inst.target]
        c = E.loop_cell(f.index)
        i = f.args[0].reg
        return tick + [f"end, step = {c}",
                       f"v = R[{i}] = w64(R[{i}] + step)",
                       f"pc = {f.index + 1} if (v < end if step > 0 else v > end) else {k + 1}"], True
    raise AssertionError(f"no translation of {op}")


@translator("sync")
def _sync(inst, E):
    """set_flag / wait_flag (a barrier runs its closure)."""
    op = inst.spec.op
    if op == "barrier":
        return None
    src, dst, ev = inst.args[0], inst.args[1], inst.args[2].value()
    sp, dp = PIPE_INDEX[src], PIPE_INDEX[dst]
    cost = cycles.sync(E.st.m)
    key = f"({sp}, {dp}, {ev})"
    race = E.st.race is not None
    inst_name = E.const(inst, "inst")
    lines = E.settle()
    if op == "set":
        lines += [f"if {key} in flags:",
                 f"    raise FlagError(f'event ({src}, {dst}, {ev}) set twice without a wait_flag in between "
                 f"(first set at line {{flags[{key}][2].line}})', inst={inst_name})"]
        if sp == S:
            lines += ["t = ts"] + E.tick_s(cost, inst)
        else:
            lines += E.tick(sp, cost, inst)
        lines += [f"fire = t + {cost}", f"if done[{sp}] > fire: fire = done[{sp}]",
                  f"flags[{key}] = (fire, {f'race.snapshot({sp})' if race else 'None'}, {inst_name})"]
        return lines, False
    name = E.const(f"wait_flag {src}->{dst}", "why")
    lines += [f"f = flags.pop({key}, None)",
             "if f is None:",
             f"    raise DeadlockError('wait_flag {src}, {dst}, {ev} waits for an event that no earlier "
             f"set_flag {src}, {dst}, {ev} on this core sets: pipe {dst} would wait forever', inst={inst_name})",
             "fire = f[0]"]
    if dp == S:
        lines += ["if fire > ts:", f"    st.stall({name}, fire - ts)", "    ts = fire"]
        lines += E.tick_s(cost, inst)
    else:
        lines += [f"ready = ts if ts > clk[{dp}] else clk[{dp}]", "if fire > ready:",
                  f"    st.stall({name}, fire - ready)", f"    clk[{dp}] = fire"]
        lines += E.tick(dp, cost, inst)
    if race:
        lines.append(f"race.merge({dp}, f[1])")
    return lines, False
