"""The sync pass's model (see :mod:`tritonpu.codegen.sync`): a *record* is one access of one static
instruction (its latest dynamic instance); a :class:`State` holds, per pipe, the records that
pipe is not yet ordered after, and what an instruction must wait for is :func:`conflicts`."""
from __future__ import annotations

from dataclasses import dataclass

from tritonpu.isa import PIPES

from .asmlist import Access, Instr

SYNC_PREFIXES = ("set_flag", "wait_flag", "barrier")


class Restart(Exception):
    """A pair in force refused -- a cross pair (:mod:`.sync_cross`), or pairs right in a loop's
    body on a pipe pair that ran out of ids there (:func:`.sync_branches.check_top`): what it held
    back (event ids, in the loops' rounds so far) may have shaped other choices the pass keeps, so
    ``insert_sync`` starts again with ``name`` refused."""

    def __init__(self, name):
        super().__init__(name)
        self.name = name


@dataclass(frozen=True)
class Rec:
    pipe: str
    acc: Access
    write: bool


class State:
    """``recs``: key -> Rec for every record issued so far; ``unord``: pipe -> keys not ordered
    before that pipe's next instruction."""

    def __init__(self, recs=None, unord=None, index=None):
        self.recs = dict(recs or {})
        self.unord = {p: set((unord or {}).get(p, ())) for p in PIPES}
        # space -> keys of the records in that space, of every state of one insert_sync (a key's
        # space never changes; a state holds a subset): conflicts are looked for among these
        self.index = {} if index is None else index

    def copy(self):
        return State(self.recs, self.unord, self.index)

    def join(self, other):
        out = self.copy()
        out.recs.update(other.recs)
        for p in PIPES:
            out.unord[p] |= other.unord[p]
        return out

    def __eq__(self, other):
        return self.recs.keys() == other.recs.keys() and self.unord == other.unord

    def known(self, pipe):
        """Records an instruction placed now on ``pipe`` is ordered after (its own included)."""
        return set(self.recs) - self.unord[pipe]

    def cover(self, dst, keys):
        """A wait on ``dst`` for a flag carrying ``keys``; waits on S order every later issue."""
        for p in (PIPES if dst == "S" else (dst,)):
            self.unord[p] -= keys

    def issue(self, ins, keys):
        if not keys:
            return
        for key, rec in keys:
            self.recs[key] = rec
            self.index.setdefault(rec.acc.space, set()).add(key)
        new = [key for key, _ in keys]
        for p, unord in self.unord.items():
            if p != ins.pipe:
                unord.update(new)


def flag_of(ins: Instr) -> tuple:
    """(src, dst, event) of a ``set_flag`` / ``wait_flag``."""
    src, dst, ev = (x.strip() for x in ins.text.split(None, 1)[1].split(","))
    return src, dst, int(ev)


def is_sync(ins: Instr) -> bool:
    t = ins.text
    return t.startswith(SYNC_PREFIXES) or (t[:1].isspace() and t.lstrip().startswith(SYNC_PREFIXES))


def records(ins: Instr):
    """(key, Rec) for each access of ``ins``; S accesses complete at issue and are not recorded."""
    if ins.pipe == "S" or is_sync(ins):
        return []
    out = [((id(ins), "w", k), Rec(ins.pipe, a, True)) for k, a in enumerate(ins.writes)]
    out += [((id(ins), "r", k), Rec(ins.pipe, a, False)) for k, a in enumerate(ins.reads)]
    return out


def conflicts(st: State, ins: Instr):
    """Keys of records ``ins`` (on its pipe) must be ordered after but is not yet."""
    writes, reads = ins.writes, ins.reads
    if not (reads or writes) or is_sync(ins):
        return set()
    # (by space first: most records are in a space ``ins`` does not touch)
    recs, pipe, unord, index = st.recs, ins.pipe, st.unord[ins.pipe], st.index
    out = set()
    for sp in {a.space for a in writes} | {a.space for a in reads}:
        keys = index.get(sp)
        if not keys:
            continue
        # (every record of ``keys`` is in space ``sp``: an overlap is one of byte ranges)
        ws = [(a.lo, a.hi) for a in writes if a.space == sp]
        wrs = ws + [(a.lo, a.hi) for a in reads if a.space == sp]
        for key in unord & keys:
            rec = recs[key]
            if rec.pipe == pipe:
                continue
            lo, hi = rec.acc.lo, rec.acc.hi
            for a_lo, a_hi in (wrs if rec.write else ws):
                if lo < a_hi and a_lo < hi:
                    out.add(key)
                    break
    return out
