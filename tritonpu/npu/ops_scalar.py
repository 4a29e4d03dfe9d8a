"""Scalar-unit, control-flow and synchronisation families.

Registers hold Python ints (wrapping as int64 on int instructions) or floats (float64).  Scalar
memory accesses read and write one naturally aligned element of UB or of a GM parameter.
Flags: ``set_flag`` records the cycle it fires (and, when sanitizing, the source pipe's vector
clock); ``wait_flag`` consumes it — a wait with no earlier set is a deadlock error, a second
set before the wait is a flag error.
"""
from __future__ import annotations

import math
import sys

import numpy as np

from tritonpu.dtypes import BITS_ORDERED, bits_atomic, fma
from tritonpu.isa import PIPES

from . import cycles
from .errors import AssertError, DeadlockError, FlagError, LaunchError, MisalignedError
from .gm_races import ATOMIC, PLAIN, SYNC
from .registry import family
from .sanitizer import GM
from .state import PIPE_INDEX, S, check_whole, getter, npdt, opt_getter

_M64 = (1 << 64) - 1
_BF16 = npdt("bf16")
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def w64(x):
    if INT64_MIN <= x <= INT64_MAX:
        return x
    return ((x + (1 << 63)) & _M64) - (1 << 63)


def as_int(x):
    if type(x) is int:
        return x
    if isinstance(x, float):
        if x != x:
            return 0
        if math.isinf(x):
            return INT64_MAX if x > 0 else INT64_MIN
    return int(x)


def cdiv(a, b):
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return w64(q if (a < 0) == (b < 0) else -q)


def crem(a, b):
    if b == 0:
        return 0
    return w64(a - b * cdiv(a, b))


INT_OPS = {
    "add": lambda a, b: w64(a + b), "sub": lambda a, b: w64(a - b), "mul": lambda a, b: w64(a * b),
    "div": cdiv, "rem": crem, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b, "shl": lambda a, b: w64(a << b) if 0 <= b < 64 else 0,
    "shr": lambda a, b: a >> b if 0 <= b < 64 else (-1 if a < 0 else 0),
    "min": min, "max": max,
}
_f64 = np.float64
FLOAT_OPS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: float(_f64(a) / _f64(b)), "min": lambda a, b: float(np.fmin(a, b)),
    "max": lambda a, b: float(np.fmax(a, b)),
}
_FUNARY = {"neg": lambda a: -a, "abs": abs, "sqrt": np.sqrt, "exp": np.exp, "log": np.log,
           "floor": np.floor, "ceil": np.ceil}
CMP_OPS = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
        "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


def to_type(v, dt):
    """A Python value as an element of numpy dtype ``dt`` would hold it, back as int/float."""
    if dt.kind == "b":
        return int(bool(v))
    if dt.kind in "iu":
        bits = dt.itemsize * 8
        x = as_int(v) & ((1 << bits) - 1)
        if dt.kind == "i" and x >= 1 << (bits - 1):
            x -= 1 << bits
        return x
    return float(_float_elem(v, dt))


def _float_elem(v, dt):
    """Float ``v`` rounded to float dtype ``dt``; a NaN keeps its sign and payload (truncated to
    the type's mantissa, as a conversion from f32 does), also for bf16, where ml_dtypes would
    make every NaN the canonical one."""
    if v != v and dt == _BF16:
        bits = np.asarray(np.float32(v)).view(np.uint32) >> np.uint32(16)
        return bits.astype(np.uint16).view(dt)[()]
    if isinstance(v, int) and dt.itemsize < 8 and -(1 << 63) <= v < 1 << 64:
        # an integer rounded once (through a Python float, 64-bit ones would be rounded twice)
        return np.array(v, np.int64 if v < 1 << 63 else np.uint64).astype(dt)[()]
    return dt.type(v)


def np_scalar(v, dt):
    """``v`` as a numpy scalar of ``dt`` (ints wrap), for ufuncs under NEP 50."""
    if dt.kind in "biu":
        return dt.type(to_type(v, dt))
    return _float_elem(float(v), dt)


def _simple(st, inst, compute, nargs):
    R, tick, cost = st.R, st.tick, cycles.scalar(st.m)
    d = inst.args[0].reg
    gs = [getter(a, R) for a in inst.args[1:1 + nargs]]
    if nargs == 1:
        (ga,) = gs

        def run():
            R[d] = compute(ga())
            tick(S, cost, inst)
    elif nargs == 2:
        ga, gb = gs

        def run():
            R[d] = compute(ga(), gb())
            tick(S, cost, inst)
    else:
        ga, gb, gc = gs

        def run():
            R[d] = compute(ga(), gb(), gc())
            tick(S, cost, inst)
    return run


@family("smov", ["mov"])
def _smov(st, inst, prog):
    return _simple(st, inst, lambda a: a, 1)


@family("sint", list(INT_OPS))
def _sint(st, inst, prog):
    f = INT_OPS[inst.spec.op]
    if inst.types and inst.types[0] not in ("i64", None):     # add.i32: the op, then cvt.i32
        dt = npdt(inst.types[0])
        return _simple(st, inst, lambda a, b: to_type(f(as_int(a), as_int(b)), dt), 2)
    return _simple(st, inst, lambda a, b: f(as_int(a), as_int(b)), 2)


@family("sfloat", list(FLOAT_OPS))
def _sfloat(st, inst, prog):
    f = FLOAT_OPS[inst.spec.op]
    return _simple(st, inst, lambda a, b: f(float(a), float(b)), 2)


@family("sfma", ["fma"])
def _sfma(st, inst, prog):
    dt = npdt(inst.types[0])
    return _simple(st, inst, lambda a, b, c: float(fma(_f64(a), _f64(b), _f64(c), dt)), 3)


@family("sfunary", list(_FUNARY))
def _sfunary(st, inst, prog):
    f = _FUNARY[inst.spec.op]
    return _simple(st, inst, lambda a: float(f(_f64(a))), 1)


@family("sconv", ["itof", "ftoi", "cvt"])
def _sconv(st, inst, prog):
    op = inst.spec.op
    if op == "itof":
        return _simple(st, inst, lambda a: float(as_int(a)), 1)
    if op == "ftoi":
        return _simple(st, inst, as_int, 1)
    dt = npdt(inst.types[0])
    return _simple(st, inst, lambda a: to_type(a, dt), 1)


@family("scmp", list(CMP_OPS))
def _scmp(st, inst, prog):
    f = CMP_OPS[inst.spec.op]
    if inst.spec.name.startswith("f"):
        return _simple(st, inst, lambda a, b: int(f(float(a), float(b))), 2)
    return _simple(st, inst, lambda a, b: int(f(as_int(a), as_int(b))), 2)


@family("ssel", ["sel"])
def _ssel(st, inst, prog):
    return _simple(st, inst, lambda c, a, b: a if c else b, 3)


@family("sgrid", ["idx", "num"])
def _sgrid(st, inst, prog):
    R, tick, cost = st.R, st.tick, cycles.scalar(st.m)
    d = inst.args[0].reg
    ax = inst.args[1].value() if inst.args[1] is not None else None
    idx = inst.spec.op == "idx"

    def run():
        if ax is None:
            R[d] = st.pid if idx else st.nprog
        else:
            R[d] = st.block[ax] if idx else st.grid[ax]
        tick(S, cost, inst)
    return run


@family("sprog", ["set"])
def _sprog(st, inst, prog):
    tick, cost = st.tick, cycles.scalar(st.m)
    ga = getter(inst.args[0], st.R)

    def run():
        st.gpid = int(ga())
        tick(S, cost, inst)
    return run


_WHOLE = (int, np.integer)


def _scalar_mem(st, inst, mem, dt):
    """(typed array, element getter/checker) for a scalar access to ``mem`` of dtype ``dt``."""
    eb = dt.itemsize
    addr_g = getter(mem.addr, st.R)
    if mem.space == "gm":
        gm, name = st.gm, mem.param

        class _GmView:      # the array is looked up at run time (relaunches with other arrays)
            def __getitem__(self, i):
                u8 = gm[name]
                return u8[i * eb:(i + 1) * eb].view(dt)[0]

            def __setitem__(self, i, v):
                gm[name][i * eb:(i + 1) * eb].view(dt)[0] = v
        arr = _GmView()

        def index(write):
            a = addr_g()
            if not isinstance(a, _WHOLE):
                check_whole(inst, address=a)
            if st.sanitize and a % eb:
                raise MisalignedError(f"scalar {dt} access {mem.param}[{a:#x}] is not {eb}-byte "
                                      "aligned", inst=inst, addrs={mem.param: a})
            st.check_gm(mem.param, a, a + eb, inst)
            if st.race is not None:
                st.race.access(S, GM + name, a, a + eb, write, inst)
            if st.gm_races is not None:
                st.gm_races.access(st, name, write, kind, inst, a, a + eb)
            return a // eb
        kind = ATOMIC | SYNC if inst.spec.impl == "satomic" else PLAIN
        return arr, index, True
    buf = st.mem[mem.space]
    arr = buf.view(dt)
    race = st.race

    def index(write):
        a = addr_g()
        if not isinstance(a, _WHOLE):
            check_whole(inst, address=a)
        if st.sanitize and a % eb:
            raise MisalignedError(f"scalar {dt} access {mem.space}[{a:#x}] is not {eb}-byte "
                                  "aligned", inst=inst, addrs={mem.space: a})
        st.check_onchip(mem.space, a, a + eb, inst)
        if race is not None:
            race.access(S, mem.space, a, a + eb, write, inst)
        return a // eb
    return arr, index, False


def _py(x, dt):
    return float(x) if dt.kind == "f" or dt.kind == "V" else int(x)


@family("smem", ["ld", "st"])
def _smem(st, inst, prog):
    R, tick = st.R, st.tick
    dt = npdt(inst.types[0])
    isf = dt.kind not in "iub"
    if inst.spec.op == "ld":
        d = inst.args[0].reg
        arr, index, gm = _scalar_mem(st, inst, inst.args[1], dt)
        cost = cycles.scalar_mem(st.m, gm)

        def run():
            x = arr[index(False)]
            R[d] = float(x) if isf else int(x)
            tick(S, cost, inst)
        return run
    arr, index, gm = _scalar_mem(st, inst, inst.args[0], dt)
    g = getter(inst.args[1], R)
    cost = cycles.scalar_mem(st.m, gm)

    def run():
        arr[index(True)] = np_scalar(g(), dt)
        tick(S, cost, inst)
    return run


_ATOM = {"add": np.add, "max": np.maximum, "min": np.minimum}


@family("satomic", ["add", "max", "min", "xchg", "cas"])
def _satomic(st, inst, prog):
    R, tick, op = st.R, st.tick, inst.spec.op
    dt = npdt(inst.types[0])
    isf = dt.kind not in "iub"
    d = inst.args[0].reg
    arr, index, _ = _scalar_mem(st, inst, inst.args[1], dt)
    gv = getter(inst.args[-1], R)
    gc = getter(inst.args[2], R) if op == "cas" else None
    cost = cycles.scalar_mem(st.m, True)
    lockable = inst.args[1].space == "gm"
    lock_param = inst.args[1].param if lockable else None

    def run():
        i = index(True)
        old = arr[i]
        v = np_scalar(gv(), dt)
        if op == "xchg":
            arr[i] = v
            if lockable:
                st.locks.discard((lock_param, i))        # a lock released (Triton's atomic_xchg(lock, 0))
        elif op == "cas":
            if old == np_scalar(gc(), dt):
                arr[i] = v
                if lockable:
                    st.locks.add((lock_param, i))        # a lock taken (atomic_cas(lock, 0, 1) succeeded)
        else:
            arr[i] = bits_atomic(op, old, v)[()] if op != "add" and dt in BITS_ORDERED else _ATOM[op](old, v)
        R[d] = float(old) if isf else int(old)
        tick(S, cost, inst)
    return run


# ================================ debug ======================================================
def _ub_reader(st, inst, mem, dt):
    """``read(n) -> ndarray`` of the n dense elements of ``dt`` at ``mem`` (a copy), a scalar-unit
    read: bounds and natural alignment checked, reported to the race tracker (never recorded)."""
    space, buf, eb, race = mem.space, st.mem[mem.space], dt.itemsize, st.race
    addr_g = getter(mem.addr, st.R)

    def read(n):
        a = as_int(addr_g())
        if n <= 0:
            return np.zeros(0, dt)
        if st.sanitize and a % eb:
            raise MisalignedError(f"{dt} read {space}[{a:#x}] is not {eb}-byte aligned",
                                  inst=inst, addrs={space: a})
        hi = a + n * eb
        st.check_onchip(space, a, hi, inst, "read")
        if race is not None:
            race.access(S, space, a, hi, False, inst)
        return buf[a:hi].view(dt).copy()
    return read


def _emit(st, text, value, last):
    """Append ``value`` to this core's print line (started by the pid and ``text``); print and
    clear it when ``last``."""
    line = st.print_line
    if line is None:
        x, y, z = st.block
        line = f"pid ({x}, {y}, {z}) {text}{value}"
    else:
        line = f"{line} {value}"
    if last:
        st.print_line = None
        print(line, file=sys.stdout, flush=True)
    else:
        st.print_line = line


@family("dbg", ["print", "prints", "assert", "asserts"])
def _dbg(st, inst, prog):
    R, tick, cost, op = st.R, st.tick, cycles.scalar(st.m), inst.spec.op
    text = prog.strings[inst.args[0]]
    last = bool(inst.opts["last"].value()) if "last" in inst.opts else True
    if op in ("prints", "asserts"):
        g = getter(inst.args[1], R)
        if op == "asserts":
            def run():
                if g() == 0:
                    raise AssertError(f"device_assert failed: {text}", inst=inst)
                tick(S, cost, inst)
            return run
        dt = npdt(inst.types[0])

        def run():
            _emit(st, text, str(np.asarray(np_scalar(g(), dt)).tolist()), last)
            tick(S, cost, inst)
        return run
    g_cols = getter(inst.args[2], R)
    g_rows, _ = opt_getter(inst, "rows", R, 1)
    if op == "assert":
        read = _ub_reader(st, inst, inst.args[1], np.dtype(np.uint8))
        space = inst.args[1].space

        def run():
            rows, cols = max(as_int(g_rows()), 0), max(as_int(g_cols()), 0)
            m = read(rows * cols)
            bad = np.flatnonzero(m == 0)
            if bad.size:
                first = as_int(getter(inst.args[1].addr, R)()) + int(bad[0])
                raise AssertError(f"device_assert failed: {text}", inst=inst,
                                  addrs={f"first failing {space} byte": first})
            tick(S, cost, inst)
        return run
    tname = inst.types[0]
    dt = npdt(tname)
    is_bool = dt.kind == "b"
    read = _ub_reader(st, inst, inst.args[1], np.dtype(np.uint8) if is_bool else dt)
    rank = inst.opts["rank"].value() if "rank" in inst.opts else 1

    def run():
        rows, cols = max(as_int(g_rows()), 0), max(as_int(g_cols()), 0)
        shape = () if rank == 0 else (cols,) if rank == 1 else (rows, cols)
        v = read(int(np.prod(shape, dtype=np.int64)))
        if is_bool:
            v = v != 0
        _emit(st, text, str(np.asarray(v.reshape(shape)).tolist()), last)
        tick(S, cost, inst)
    return run


# ================================ control ====================================================
@family("ctrl", ["jmp", "eq", "ne", "lt", "le", "gt", "ge", "for", "endfor", "exit", "nop"])
def _ctrl(st, inst, prog):
    R, tick, cost, op = st.R, st.tick, cycles.control(st.m), inst.spec.op
    if op == "jmp":
        tgt = inst.target

        def run():
            tick(S, cost, inst)
            return tgt
        return run
    if op in CMP_OPS:
        f, tgt = CMP_OPS[op], inst.target
        ga, gb = getter(inst.args[0], R), getter(inst.args[1], R)

        def run():
            tick(S, cost, inst)
            if f(ga(), gb()):
                return tgt
        return run
    if op == "for":
        cell = st.loops.setdefault(inst.index, [0, 1])
        i = inst.args[0].reg
        g0, g1, g2 = (getter(a, R) for a in inst.args[1:4])
        after = inst.target + 1

        def run():
            tick(S, cost, inst)
            v, end, step = g0(), g1(), g2()
            if not (isinstance(v, _WHOLE) and isinstance(end, _WHOLE) and isinstance(step, _WHOLE)):
                check_whole(inst, start=v, end=end, step=step)
            if step == 0:
                raise LaunchError("for loop with step 0", inst=inst)
            cell[0], cell[1] = end, step
            R[i] = v
            if not (v < end if step > 0 else v > end):
                return after
        return run
    if op == "endfor":
        f = prog.code[inst.target]
        cell = st.loops.setdefault(f.index, [0, 1])
        i = f.args[0].reg
        body = f.index + 1

        def run():
            tick(S, cost, inst)
            end, step = cell
            v = R[i] = w64(R[i] + step)
            if v < end if step > 0 else v > end:
                return body
        return run
    if op == "exit":
        n = len(prog.code)

        def run():
            tick(S, cost, inst)
            return n
        return run

    def run():
        tick(S, cost, inst)
    return run


# ================================ sync =======================================================
@family("sync", ["set", "wait", "barrier"])
def _sync(st, inst, prog):
    tick, cost, op = st.tick, cycles.sync(st.m), inst.spec.op
    race = st.race
    if op == "barrier":
        if inst.args[0] != "all":
            p = PIPE_INDEX[inst.args[0]]

            def run_one():
                if st.done[p] > st.clk[p]:      # a barrier on P also waits for P's transfers to land
                    st.clk[p] = st.done[p]
                tick(p, cost, inst)
            return run_one

        def run():
            t = st.ts
            top = max([t] + st.clk + st.done)
            st.stall("barrier all", top - t)
            st.ts = top
            for i in range(1, len(st.clk)):
                st.clk[i] = top
            tick(S, cost, inst)
            if race is not None:
                race.barrier_all()
        return run
    src, dst, ev = inst.args[0], inst.args[1], inst.args[2].value()
    sp, dp = PIPE_INDEX[src], PIPE_INDEX[dst]
    key = (sp, dp, ev)
    flags = st.flags
    name = f"wait_flag {src}->{dst}"
    if op == "set":
        def run():
            if key in flags:
                other = flags[key][2]
                raise FlagError(f"event ({src}, {dst}, {ev}) set twice without a wait_flag in "
                                f"between (first set at line {other.line})", inst=inst)
            fire = max(tick(sp, cost, inst) + cost, st.done[sp])   # fires once sp's transfers landed
            flags[key] = (fire, race.snapshot(sp) if race is not None else None, inst)
        return run

    def run():
        f = flags.pop(key, None)
        if f is None:
            raise DeadlockError(f"wait_flag {src}, {dst}, {ev} waits for an event that no earlier "
                                f"set_flag {src}, {dst}, {ev} on this core sets: pipe {dst} would "
                                "wait forever", inst=inst)
        fire = f[0]
        t = st.ts
        if dp == S:
            if fire > t:
                st.stall(name, fire - t)
                st.ts = fire
        else:
            ready = max(t, st.clk[dp])
            if fire > ready:
                st.stall(name, fire - ready)
                st.clk[dp] = fire
        tick(dp, cost, inst)
        if race is not None:
            race.merge(dp, f[1])
    return run


assert set(PIPES) == set(PIPE_INDEX)
