"""Machine state of a launch and the decode-time helpers the instruction families share.

A State holds one core's on-chip memories (the spaces its program touches), registers, pipe
clocks and flags; the GM arrays, the L2 and roofline maps and the launch-wide accumulators are
shared by the States of a launch's cores (see ``launch``: they advance together in slices of
simulated time, or — for programs with atomics or device prints — one core after another on a
single State reset per core).  Each instruction is decoded once per launch and core into a closure; operand views are numpy arrays over the
memories (``np.ndarray(buffer=...)``), built once when addresses are static and cached per
address otherwise.  ``tick`` is the timing model: the scalar unit issues in program order, one
cycle each; an instruction on pipe P starts at max(issue, P's clock) and holds P for its cost.
"""
from __future__ import annotations

import sys

import numpy as np

from tritonpu.dtypes import SCALARS
from tritonpu.isa import PIPES, SPACES

from .errors import FlagError, MisalignedError, NpuError, OutOfBoundsError
from .sanitizer import GM, RaceTracker

NP = len(PIPES)
PIPE_INDEX = {p: i for i, p in enumerate(PIPES)}
S, MTE2, MTE1, M, FIX, V, MTE3 = (PIPE_INDEX[p] for p in PIPES)


def npdt(name):
    return SCALARS[name].np


class Records:
    """What a traced launch keeps per instruction beyond its timeline, for the profile
    (``tritonpu.profile``): each transfer's bytes and its (DDR, L2) beats, each wait's stall
    cycles — both keyed by the index of the trace entry the instruction appends next — and the
    highest byte each on-chip space reached."""

    __slots__ = ("bytes", "stalls", "high")

    def __init__(self):
        self.bytes = []         # (trace index, path, bytes, ddr beats, l2 beats)
        self.stalls = []        # (trace index, reason, cycles)
        self.high = {}          # space -> highest byte touched + 1


class State:
    def __init__(self, prog, machine, sanitize, trace):
        self.prog = prog
        self.m = machine
        self.sanitize = sanitize
        touched = accessors(prog)       # spaces no instruction touches get no memory
        self.mem = {s: np.zeros(machine.capacity[s] if touched[s] else 0, np.uint8) for s in SPACES}
        self.gm = {}            # param -> 1-D uint8 view of the caller's array
        self.gm_seen = {}       # param -> bool per 512 B line read so far (L2 model)
        self.gm_read = {}       # param -> bytes read, a bit per byte (gmmaps; the roofline)
        self.gm_written = {}
        self.R = [0] * prog.nslots
        self._zero_regs = (0,) * prog.nslots
        self.scalar_args = {}
        self.trace = [] if trace else None
        self.records = Records() if trace else None
        self.race = RaceTracker(touched) if sanitize else None
        self.gm_races = None    # gm_races.GmRaces of the launch (bound with the GM arguments)
        self.locks = set()      # (GM argument, element) locks the running program holds
        # launch-wide accumulators
        self.bytes_by_path = {}
        self.macs = {}
        self.stalls = {}
        self.queue_wait = {}
        self.core_cycles = []
        self.busy_by_core = []
        self.count_by_core = []
        self.grid = (1, 1, 1)
        self.block = (0, 0, 0)
        self.pid = 0
        self.gpid = 0
        self.nprog = 1
        self.loops = {}         # for-instruction index -> [end, step]
        self.operand_caches = []    # the decoded vector operands' per-address views (vec_operand)
        self.core = 0
        self.flags = {}         # (src, dst, event) -> pending set_flag; the decoded syncs hold it
        self.reset_core(0)

    def new_launch(self):
        """Start another launch with the same decoded program: clear the launch-wide accumulators
        and the on-chip memories in place (the decoded closures hold references to them); the
        launch binds its GM arrays and makes their L2 and roofline maps afresh."""
        for space in self.mem.values():
            space.fill(0)
        for acc in (self.bytes_by_path, self.macs, self.stalls, self.queue_wait,
                    self.core_cycles, self.busy_by_core, self.count_by_core):
            acc.clear()             # in place: decoded closures hold some of them (macs)
        if self.trace is not None:      # fresh lists: the previous launch's Stats keep theirs
            self.trace, self.records = [], Records()     # (the launch shares them between cores again)
        for cell in self.loops.values():     # in place: the decoded loops (both engines) hold them
            cell[:] = [0, 1]
        if self.records is not None:        # a traced relaunch checks its operands' addresses
            for cache in self.operand_caches:   # again, which records the on-chip high-water marks
                cache.clear()
        self.reset_core(0)              # (the launch orders the cores by their clocks before they start)

    # ---- per core / per program ----------------------------------------------------------------
    def reset_core(self, core):
        self.core = core
        self.ts = 0
        self.clk = [0] * NP
        self.busy = [0] * NP
        self.cnt = [0] * NP
        self.queued = [0] * NP  # cycles instructions waited after issue for their busy pipe
        self.done = [0] * NP    # when the pipe's last transfer has landed (latency is pipelined)
        self.inflight = [[] for _ in range(NP)]  # per pipe: (space, lo, hi, lands) of on-chip writes
        self.flags.clear()      # in place: the decoded sync instructions hold this dict
        self.locks = set()
        self.print_line = None  # the line dbg.print/dbg.prints are appending to (None: empty)
        if self.race is not None:
            self.race.reset()

    def finish_core(self):
        if self.sanitize and self.flags:
            (src, dst, ev), (_, _, inst) = next(iter(self.flags.items()))
            raise FlagError(f"event ({PIPES[src]}, {PIPES[dst]}, {ev}) set at assembly line {inst.line} is still "
                            f"pending when core {self.core} finishes: no wait_flag consumed it (the next kernel on "
                            "this core would see it set)", inst=inst)
        for p, q in enumerate(self.queued):
            if q:
                self.queue_wait[PIPES[p]] = self.queue_wait.get(PIPES[p], 0) + q
        end = max([self.ts] + self.clk + self.done)
        self.core_cycles.append(end)
        self.busy_by_core.append(list(self.busy))
        self.count_by_core.append(list(self.cnt))

    def start_program(self, pid, block):
        self.pid, self.block = pid, block
        self.gpid = pid             # the grid program it runs (set_program changes it in a persistent loop)
        R = self.R
        R[:] = self._zero_regs          # (in place: the decoded instructions hold R)
        for slot, v in self.scalar_args.items():
            R[slot] = v

    def end_program(self):
        """Print what is left of an unfinished print line (a dbg.print with last=0 at the end)."""
        if self.print_line is not None:
            line, self.print_line = self.print_line, None
            print(line, file=sys.stdout, flush=True)

    # ---- timing ---------------------------------------------------------------------------------
    def tick(self, p, cost, inst, latency=0):
        """Issue ``inst`` (1 scalar cycle) into pipe ``p`` for ``cost`` cycles; return its start.

        A transfer's fixed ``latency`` (part of ``cost``) is pipelined: the pipe is busy for the
        rest (its beats) and takes its next instruction then, while the data lands ``latency``
        cycles later — recorded in ``done[p]``, which flags and barriers wait for."""
        t = self.ts
        self.cnt[p] += 1
        if self.race is not None:
            self.race.issue(p)
        if p == 0:
            self.ts = t + cost
            self.busy[0] += cost
            if self.trace is not None:
                self.trace.append((self.core, 0, t, cost, inst.index, self.gpid))
            return t
        self.ts = t + 1
        self.busy[0] += 1
        c = self.clk[p]
        if c > t:
            self.queued[p] += c - t
            t = c
        if latency:                             # busy for the beats; the data lands at t + cost
            done = self.done
            if t + cost > done[p]:
                done[p] = t + cost
            cost = max(cost - latency, 1)
        self.clk[p] = t + cost
        self.busy[p] += cost
        if self.trace is not None:
            self.trace.append((self.core, p, t, cost, inst.index, self.gpid))
        return t

    def landed(self, p, start, space, lo, hi, lands):
        """Record an on-chip write of a transfer on pipe ``p`` (started at ``start``) that lands at
        ``lands``, for a later instruction of the same pipe that reads it (a gather's indices)."""
        fl = self.inflight[p]
        if fl and fl[0][3] <= start:
            fl[:] = [f for f in fl if f[3] > start]
        if lands > start:
            fl.append((space, lo, hi, lands))

    def wait_landed(self, p, space, lo, hi, what):
        """Hold pipe ``p`` until the in-flight writes of its own earlier transfers to
        ``space[lo, hi)`` have landed (same pipe, in order, but the data comes ``latency`` later)."""
        t = max(self.ts, self.clk[p])
        top = max([f[3] for f in self.inflight[p] if f[0] == space and f[1] < hi and lo < f[2]],
                  default=0)
        if top > t:
            self.stall(what, top - t)
            self.clk[p] = top

    def stall(self, reason, cycles):
        if cycles > 0:
            self.stalls[reason] = self.stalls.get(reason, 0) + cycles
            if self.records is not None:
                self.records.stalls.append((len(self.trace), reason, cycles))

    def add_bytes(self, path, n, beats=(0, 0)):
        """``n`` bytes moved on ``path`` (a GM read: ``beats`` = its (DDR, L2) beats)."""
        self.bytes_by_path[path] = self.bytes_by_path.get(path, 0) + n
        if self.records is not None:
            self.records.bytes.append((len(self.trace), path, n, beats[0], beats[1]))

    # ---- checks ---------------------------------------------------------------------------------
    def check_onchip(self, space, lo, hi, inst, what="access"):
        cap = self.m.capacity[space]
        if lo < 0 or hi > cap:
            raise OutOfBoundsError(f"{what} {space}[{lo:#x}, {hi:#x}) outside {space.upper()} "
                                   f"(capacity {cap:#x} bytes)", inst=inst,
                                   addrs={space: (lo, hi)})
        if self.records is not None and hi > self.records.high.get(space, 0):
            self.records.high[space] = hi

    def check_align(self, space, addr, inst, what="address"):
        a = self.m.align[space]
        if self.sanitize and addr % a:
            raise MisalignedError(f"{what} {space}[{addr:#x}] is not {a}-byte aligned "
                                  f"({space.upper()} needs {a} B)", inst=inst, addrs={space: addr})

    def check_gm(self, param, lo, hi, inst, what="access"):
        n = self.gm[param].size
        if lo < 0 or hi > n:
            raise OutOfBoundsError(f"{what} {param}[{lo:#x}, {hi:#x}) outside GM parameter "
                                   f"{param!r} ({n:#x} bytes)", inst=inst,
                                   addrs={param: (lo, hi)})


def accessors(prog):
    """space -> pipes (indices) whose instructions touch it (GM arguments as ``gm:<name>``): the race
    tracker's pruning set (once per program)."""
    acc = prog.__dict__.get("_accessors")
    if acc is not None:
        return acc
    acc = prog.__dict__["_accessors"] = {s: set() for s in SPACES}
    for inst in prog.code:
        spec = inst.spec
        if spec.pipe not in PIPE_INDEX:
            continue
        p = PIPE_INDEX[spec.pipe]
        for a in list(inst.args) + list(inst.opts.values()):
            sp = getattr(a, "space", None)
            if sp == "gm":
                acc.setdefault(GM + a.param, set()).add(p)
            elif sp in acc:
                acc[sp].add(p)
    return acc


# ---- decode-time helpers --------------------------------------------------------------------
def check_whole(inst, **values):
    """Raise when an address, size or stride read from a register is not a whole number (a float
    register used where the machine needs an integer)."""
    for name, x in values.items():
        if not isinstance(x, (int, np.integer)):
            raise NpuError(f"{name} is {x!r}: addresses, sizes and strides must be whole numbers", inst=inst)


def getter(v, R):
    """A Val -> zero-argument function returning its current value."""
    if v.reg is None:
        c = v.value()
        return lambda: c
    r = v.reg
    k = v.const + v.symval
    if k == 0:
        return lambda: R[r]
    return lambda: R[r] + k


def opt_getter(inst, name, R, default):
    v = inst.opts.get(name)
    if v is None:
        return (lambda: default), True
    return getter(v, R), v.static


def vec_operand(st, inst, mem, dt, pipe, write, default_rs=None):
    """A vector/cube operand: ``get(rows, cols) -> ndarray view (rows, cols)`` of ``dt`` with the
    operand's row/column strides (elements); checks bounds and alignment once per address and
    reports every access to the race detector."""
    space = mem.space
    buf = st.mem[space]
    eb = dt.itemsize
    R = st.R
    addr_g = getter(mem.addr, R)
    rs_g = getter(mem.strides[0], R) if len(mem.strides) > 0 else None
    cs_g = getter(mem.strides[1], R) if len(mem.strides) > 1 else None
    race = st.race
    cache = {}
    st.operand_caches.append(cache)     # cleared per traced launch: it checks (and records) anew
    cap = st.m.capacity[space]

    def get(rows, cols):
        addr = addr_g()
        rs = rs_g() if rs_g is not None else (default_rs(rows, cols) if default_rs else cols)
        cs = cs_g() if cs_g is not None else 1
        key = (addr, rows, cols, rs, cs)
        hit = cache.get(key)
        if hit is None:
            check_whole(inst, address=addr, rows=rows, cols=cols, row_stride=rs, col_stride=cs)
            if rows <= 0 or cols <= 0:
                hit = (np.zeros((max(rows, 0), max(cols, 0)), dt), addr, addr)
            else:
                if rs < 0 or cs < 0:
                    raise OutOfBoundsError(f"negative stride in {mem}", inst=inst)
                hi = addr + ((rows - 1) * rs + (cols - 1) * cs + 1) * eb
                st.check_onchip(space, addr, hi, inst)
                st.check_align(space, addr, inst)
                if rows * cols * eb > cap:   # more than the memory holds: only zero strides allow it
                    raise OutOfBoundsError(f"{rows} x {cols} elements of {dt} ({rows * cols * eb} bytes) in "
                                           f"{mem}: more than {space.upper()} holds ({cap} bytes)", inst=inst)
                # (a stride along a dimension of one element is never used: 0, numpy refuses huge ones)
                v = np.ndarray((rows, cols), dt, buffer=buf, offset=addr,
                               strides=(rs * eb if rows > 1 else 0, cs * eb if cols > 1 else 0))
                hit = (v, addr, hi)
            if len(cache) > 64:
                cache.clear()
            cache[key] = hit
        if race is not None:
            race.access(pipe, space, hit[1], hit[2], write, inst)
        return hit[0]

    return get
