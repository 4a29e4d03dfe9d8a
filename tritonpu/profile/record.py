"""Per-instruction records of a traced launch: what the simulator only keeps as launch totals.

The virtual NPU counts bytes per path and stall cycles per reason for the whole launch, and with
``trace=True`` records every instruction's core, pipe, start and duration.  The source-line
profile and the bottleneck report need more, per instruction: the bytes a transfer moved, how many
of its 32 B beats came from DDR (first touch) or from L2, and the cycles a ``wait_flag`` (or a
``barrier``, or a gather waiting for its indices) stalled.  This module notes them while a traced
launch runs, by wrapping four hooks the decoded instructions call at run time:

* ``State.add_bytes`` and ``State.stall`` — a transfer or a wait calls them immediately before
  its own ``tick`` (no other instruction in between), so ``len(state.trace)`` at that moment is the
  index of the trace entry the instruction is about to append: the record points at it;
* ``cycles.l2_read`` / ``cycles.l2_read_range`` — a GM read asks the L2 model for its (DDR, L2)
  beats just before ``add_bytes``; the split is attached to that read's record;
* ``State.check_onchip`` — every on-chip access checks its range: the highest byte each space
  reaches is kept per program (the UB/L1/L0 occupancy of the report);
* ``State.new_launch`` — a relaunch of a decoded program cleared the trace list the previous
  launch's ``Stats`` still holds (its timeline then showed the new launch): the relaunch gets a
  fresh list instead.

Untraced launches only pay a ``trace is None`` test per transfer, wait and relaunch.  (These records belong
in the simulator itself; they live here so the profile needs no change to ``tritonpu/npu``.)

Guarantees: installed once, on import of :mod:`tritonpu.profile`; summed over a launch, the
recorded bytes per path equal ``stats.bytes_by_path`` and the recorded stalls per reason equal
``stats.stalls`` (tests check both); records of a trace list that a later launch reused (a
relaunch of the same decoded program clears it in place) are dropped, never mixed.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from tritonpu.npu import cycles
from tritonpu.npu.state import State

_KEEP = 16                       # traces whose records are kept (most recent)
_LOCK = threading.Lock()
_REG: OrderedDict = OrderedDict()   # id(trace list) -> _Entry
_HIGH: OrderedDict = OrderedDict()  # id(program code list) -> (code, {space: highest byte + 1})
_LOCAL = threading.local()


class _Entry:
    __slots__ = ("trace", "head", "last_len", "bytes", "stalls")

    def __init__(self, trace):
        self.trace = trace
        self.reset()

    def reset(self):
        self.head = None
        self.last_len = 0
        self.bytes = []          # (trace index, path, bytes, ddr beats, l2 beats)
        self.stalls = []         # (trace index, reason, cycles)

    def sync(self, n):
        """Drop the records of an earlier launch whose trace list this one cleared and reuses."""
        tr = self.trace
        if n < self.last_len or (self.head is not None and n and tr[0] is not self.head):
            self.reset()
        if self.head is None and n:
            self.head = tr[0]
        self.last_len = n


def _entry(trace) -> _Entry:
    e = _REG.get(id(trace))
    if e is None or e.trace is not trace:
        with _LOCK:
            e = _REG[id(trace)] = _Entry(trace)
            while len(_REG) > _KEEP:
                _REG.popitem(last=False)
    e.sync(len(trace))
    return e


def records(trace):
    """The records of the launch that filled ``trace`` (None when none were made: an untraced
    launch, or one older than the last ``_KEEP`` traced launches)."""
    if trace is None:
        return None
    e = _REG.get(id(trace))
    if e is None or e.trace is not trace:
        return None
    n = len(trace)
    if n < e.last_len or (e.head is not None and n and trace[0] is not e.head):
        return None
    return e


def high_water(code) -> dict:
    """space -> the highest on-chip byte (exclusive) any instruction of ``code`` touched so far."""
    hit = _HIGH.get(id(code))
    return dict(hit[1]) if hit is not None and hit[0] is code else {}


# ---- the wrappers ----------------------------------------------------------------------------
_SWAPPED: OrderedDict = OrderedDict()   # id(old trace list) -> (old, the list replacing it)
_orig_new_launch = State.new_launch
_orig_add_bytes = State.add_bytes
_orig_stall = State.stall
_orig_check_onchip = State.check_onchip
_orig_l2_read = cycles.l2_read
_orig_l2_read_range = cycles.l2_read_range


def _new_launch(self):
    """A relaunch of a decoded program would clear its trace list in place — the list the previous
    launch's ``Stats`` holds: give the new launch a fresh list instead (the same one for every core
    state that shared the old one), so an earlier ``h.stats`` keeps its own timeline."""
    tr = self.trace
    if tr:
        with _LOCK:
            hit = _SWAPPED.get(id(tr))
            if hit is None or hit[0] is not tr:
                hit = _SWAPPED[id(tr)] = (tr, [])
                while len(_SWAPPED) > 4:
                    _SWAPPED.popitem(last=False)
        self.trace = hit[1]
    _orig_new_launch(self)


def _add_bytes(self, path, n):
    _orig_add_bytes(self, path, n)
    split = getattr(_LOCAL, "l2", None)
    if split is not None:
        _LOCAL.l2 = None
    tr = self.trace
    if tr is not None:
        cold, warm = split if split is not None else (0, 0)
        _entry(tr).bytes.append((len(tr), path, n, cold, warm))


def _stall(self, reason, cycles_):
    _orig_stall(self, reason, cycles_)
    tr = self.trace
    if tr is not None and cycles_ > 0:
        _entry(tr).stalls.append((len(tr), reason, cycles_))


def _check_onchip(self, space, lo, hi, inst, what="access"):
    _orig_check_onchip(self, space, lo, hi, inst, what)
    code = self.prog.code
    hit = _HIGH.get(id(code))
    if hit is None or hit[0] is not code:
        with _LOCK:
            hit = _HIGH[id(code)] = (code, {})
            while len(_HIGH) > 64:
                _HIGH.popitem(last=False)
    spaces = hit[1]
    if hi > spaces.get(space, 0):
        spaces[space] = hi


def _l2_read(*args, **kw):
    r = _orig_l2_read(*args, **kw)
    _LOCAL.l2 = r
    return r


def _l2_read_range(*args, **kw):
    r = _orig_l2_read_range(*args, **kw)
    _LOCAL.l2 = r
    return r


def install() -> None:
    """Install the wrappers (idempotent)."""
    if getattr(State, "_tritonpu_profile", False):
        return
    State.new_launch = _new_launch
    State.add_bytes = _add_bytes
    State.stall = _stall
    State.check_onchip = _check_onchip
    cycles.l2_read = _l2_read
    cycles.l2_read_range = _l2_read_range
    State._tritonpu_profile = True
