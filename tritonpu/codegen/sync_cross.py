"""A loop's first set from the enclosing loop's previous trip, for the sync pass (see
:mod:`tritonpu.codegen.sync`).

The persistent program loop's body runs a K loop whose last trips are straight-line code after it
(the epilogue the pipelining passes peel).  The K loop's first trip overwrites the L0 tiles the
previous program's epilogue read; its loop-carried pair ``M -> MTE1``'s first ``set_flag`` went in
the run before the K loop, in the next program -- behind the previous program's *last* products
in the cube's queue, although only the earlier ones read that tile: at 2048^3 with 128x256x64
blocks the cube idled ~180 cycles at every change of program waiting for MTE1.

A *cross* pair moves that first set into the previous trip of the program loop ``O``, right after
the last instruction on ``src`` (on every path through ``O``'s body) that the first trip's
consumers need -- the pair's *producers*: the flag is pending at every trip's start (set before
``O``, drained after it), the K loop consumes it (its first trip's wait, or after no trip the
drain after it), the drain after the K loop is waited for in the straight-line run that follows
it (where dst first needs it, else right before the run's last producer, else at the run's end),
and ``sync_branches.place_sets`` sets it again after the last producer on each path.

Guarantee of the decision (:func:`claim`, with :func:`check` at the end of each analysis round of
``O``'s body): a pair ``F = (src, dst, ev)`` of a loop ``K`` is a cross pair of ``O`` only when
``src`` is the cube or the vector unit (a transfer pipe's set waits for every transfer in flight);
``O`` is the innermost loop around ``K``, carries flags, and reaches ``K`` through ``If`` branches
only; ``ev`` is taken by no pair of ``O`` or of the loops around it and by no code of its own in
``O``'s body; every loop in ``O``'s body that carries ``F`` is such a ``K``, no path through the
body runs two of them, and each of their consumers' records on ``src`` from before the loop is
either from before ``O`` or of an instruction in ``O``'s body that the consumer's path does not
run in the trip before the loop; and only while no pipe pair of theirs runs out of event ids in
``O``'s body (a cross pair holds its id all through it).  The first trip's wait then orders
exactly those records (and every access of their instructions): the set it consumes came after
their latest instances, in ``src``'s queue.  Otherwise the first set goes where
:mod:`tritonpu.codegen.sync_runs` puts it: a pair refused before it was in force for good, the
round run again; one refused once in force by starting the whole pass again without it (what
its id held back may have shaped choices the pass keeps).  A pair is taken only when some
consumer needs a record from before the loop (else a first set before the loop waits for
nothing more).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .asmlist import If, Loop, While
from .sync_branches import if_reserved, through_ifs
from .sync_model import Restart

# (as for sync._REARMED_FROM: a set on MTE2 or MTE3 fires only once every transfer issued before
# it has landed, so moving it earlier in the queue gains little and may wait for prefetches)
CROSS_FROM = ("M", "V")


@dataclass
class Cross:
    """The cross pair ``F`` of loop ``O``: what a refusal names (``O``'s head, src, dst), its
    loops (id -> their path: id(If) -> in its then branch), the ids of its producers, and whether
    it was refused."""
    name: tuple
    loops: dict = field(default_factory=dict)
    producers: set = field(default_factory=set)
    refused: bool = False


def claim(p, k_loop, src: str, dst: str, ev: int, need: set, st):
    """The records of ``src`` from before loop ``k_loop`` that its first trip's wait for ``(src,
    dst, ev)`` orders when that pair is a cross pair -- None when it is not one (``p``: the sync
    pass, placing a consumer in ``k_loop``'s body; ``need``: the consumer's conflicts)."""
    if src not in CROSS_FROM or dst == "S":
        return None
    levels, path, outer = through_ifs(p, p.frames[:-1])       # (frames[-1]: k_loop's body)
    if outer is None:
        return None
    key = (id(outer), src, dst, ev)
    rec = p.cross.get(key)
    if rec is None:
        rec = p.cross[key] = Cross((id(outer.head), src, dst))
        if rec.name in p.refused:
            rec.refused = True
    if not rec.refused and ev in _taken_around(p, outer, src, dst):
        refuse(p, rec)
    if rec.refused:
        return None
    body = p.body_ids(k_loop)
    first = {k for k in need if st.recs[k].pipe == src and k[0] not in body}
    if not rec.loops and not first:
        return None             # (undecided: a first set before the loop waits for nothing more)
    # (none issued on the consumer's path in this trip before the loop: its set is in the last)
    if any(pos.get(k[0], j) < j for k in first for pos, j in levels):
        refuse(p, rec)
        return None
    if id(k_loop) not in rec.loops:
        if any(not any(i in theirs and theirs[i] != b for i, b in path.items()) for theirs in rec.loops.values()):
            refuse(p, rec)          # two loops of the pair on one path
            return None
        if not rec.loops:
            p.decisions += 1    # (consumers placed before in this round took the first set before the loop)
        rec.loops[id(k_loop)] = path
    p.cross_of[id(k_loop)] = id(outer)
    mine = {k[0] for k in first if k[0] in p.body_ids(outer)}
    rec.producers |= mine
    return first | {k for k in st.unord[dst] if k[0] in mine and st.recs[k].pipe == src}


def refuse(p, rec: Cross) -> None:
    """For good: the analysis runs the loop's body again (sync._Pass._fixpoint) -- or, when the
    pair was in force, the whole pass (:class:`Restart`)."""
    if not rec.refused:
        if rec.loops:
            raise Restart(rec.name)
        rec.refused = True
        p.decisions += 1


def check(p, outer: Loop) -> None:
    """After a round of ``outer``'s body: refuse every cross pair some loop in the body carries
    without being one of its loops, and those on a pipe pair that ran out of event ids in the body
    (a cross pair holds its id all through it: a pipelined K loop's straight-line last trips then
    set their flags right before their waits -- measured, tutorial 1024^3 128x32x32: 20241 ->
    22749 cycles)."""
    loops = list(_loops(outer.body))
    starved = p.starved.get(id(outer), ())
    for (oid, src, dst, ev), rec in p.cross.items():
        if oid == id(outer) and rec.loops and not rec.refused:
            if (src, dst) in starved or \
                    any((src, dst, ev) in p.carried.get(id(x), ()) and id(x) not in rec.loops for x in loops):
                refuse(p, rec)


def accepted(p, outer_id: int) -> list:
    """The cross pairs ``(src, dst, ev)`` of loop ``outer_id`` in force, and their records."""
    return sorted(((k[1:], rec) for k, rec in p.cross.items()
                   if k[0] == outer_id and not rec.refused and rec.loops), key=lambda x: x[0])


def is_cross(p, k_loop, flag) -> bool:
    """Whether the pair ``flag`` of loop ``k_loop`` is a cross pair in force."""
    oid = p.cross_of.get(id(k_loop))
    rec = p.cross.get((oid,) + tuple(flag)) if oid is not None else None
    return rec is not None and not rec.refused and id(k_loop) in rec.loops


def held(p, src: str, dst: str, loop_id=None) -> set:
    """Event ids of ``(src, dst)`` the cross pairs of the loops around the code being placed keep
    pending -- not for the loops inside them, whose own pairs are the cross pairs."""
    out = set()
    for (oid, a, b, e), rec in p.cross.items():
        if (a, b) == (src, dst) and not rec.refused and rec.loops and oid in p.active and \
                not (loop_id is not None and oid in p.outer.get(loop_id, ())):
            out.add(e)
    return out


def _taken_around(p, outer: Loop, src: str, dst: str) -> set:
    """Ids of ``(src, dst)`` that pairs of ``outer`` and of the loops around it hold, or that code
    of its own in its body uses."""
    around = {id(outer), *p.outer.get(id(outer), ())}
    return {e for (lid, _), e in p.reserved.get((src, dst), {}).items() if lid in around} | \
        {e for t in p.taken for e in t.get((src, dst), ())} | if_reserved(outer.body, src, dst)


def _loops(nodes):
    for n in nodes:
        if isinstance(n, Loop):
            yield n
            yield from _loops(n.body)
        elif isinstance(n, If):
            yield from _loops(n.then)
            yield from _loops(n.orelse)
        elif isinstance(n, While):
            yield from _loops(n.before + n.after)
