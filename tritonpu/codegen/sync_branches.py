"""Loop-carried pairs through branches, for the sync pass (see :mod:`tritonpu.codegen.sync`).

A consumer in a loop's body whose producers on ``src`` ran in the previous trip, in code that is
not one straight-line run with it -- the persistent program loop's body is a tree of ``If``
versions (panel hit or miss, full or edge tiles), each a K loop between a prologue that loads the
first tiles and an epilogue that reads the last ones -- gets a pair of its own: the consumer waits
for it, and every path through the body sets it right after the last of those producers on that
path, so the next program's first loads wait for the previous program's reads of their slots, not
for every transfer ``src`` has queued (before: a ``set_flag`` right before the wait, after the
whole previous epilogue; the cube idled for the loads' latency at every program change).

Guarantee of :func:`place_sets` (for one pair ``(src, dst, ev)`` of a loop whose body holds the
consumers' waits): every path through the body that holds a consumer or a producer runs exactly
one ``wait_flag`` of the pair (the consumer's, or one added right before the path's set -- late in
dst's queue, where the flag it waits for was set long before) and, after it and after every
producer on the path (after the loop holding one, or the ``If`` whose branches hold one: there,
in each branch), exactly one ``set_flag``; a path with neither runs none (a version that reads
none of the slots leaves the flag as the last trip that did set it, after its producers: the
producers' latest instances are that trip's or older, all before it in src's queue).  With the
set before the loop and the wait after it that the sync pass adds for every loop-carried pair,
one set is pending at every trip's start, each consumer's wait finds it, and nothing sets the
flag twice.
"""
from __future__ import annotations

from .asmlist import If, Instr, Loop, While


def place_sets(body: list, pair: tuple, producers: frozenset, waits: set, relay=None) -> int:
    """Insert the pair's set_flags (and the waits of paths without a consumer) into ``body``;
    ``producers``: ids of the producer instructions, ``waits``: ids of the consumers' waits.
    ``relay``: ``(src, event)`` when the pair ``(R, dst, ev)`` is set by pipe R, which relays the
    producers' pipe ``src``: each set is then ``src``'s set of ``(src, R, event)``, R's wait for it
    and R's set of the pair.  Returns the number of flag pairs added."""
    pipe, dst, ev = pair
    added = [0]
    # the nodes holding a producer or a wait, found in one walk (the flags added change neither)
    holding = {id(producers): _holding(body, producers), id(waits): _holding(body, waits)}

    def has(node, ids) -> bool:
        return id(node) in holding[id(ids)]

    def wait():
        added[0] += 1
        return Instr(f"wait_flag {pipe}, {dst}, {ev}", dst)

    def put():
        added[0] += 1
        out = [Instr(f"set_flag {pipe}, {dst}, {ev}", pipe)]
        if relay is not None:
            src, e = relay
            added[0] += 2
            out[:0] = [Instr(f"set_flag {src}, {pipe}, {e}", src), Instr(f"wait_flag {src}, {pipe}, {e}", pipe)]
        return out

    def complete(nodes: list) -> None:
        """Every path through ``nodes`` (which holds a wait on some path) ends having waited once."""
        if any(isinstance(x, Instr) and id(x) in waits for x in nodes):
            return
        for x in nodes:
            if isinstance(x, If) and has(x, waits):
                for branch in (x.then, x.orelse):
                    if any(has(y, waits) for y in branch):
                        complete(branch)
                    else:
                        branch.append(wait())
                return

    def place(nodes: list, waited: bool) -> None:
        marks = [j for j, x in enumerate(nodes) if has(x, producers) or has(x, waits)]
        if not marks:
            if waited:
                nodes[0:0] = put()
            return
        last = marks[-1]
        for x in nodes[:last]:
            if has(x, waits):
                if isinstance(x, If):
                    complete([x])
                waited = True
        x = nodes[last]
        if isinstance(x, If):
            place(x.then, waited)
            place(x.orelse, waited)
        elif isinstance(x, (Loop, While)):
            nodes[last + 1:last + 1] = ([] if waited else [wait()]) + put()
        else:
            waited = waited or id(x) in waits
            nodes[last + 1:last + 1] = ([] if waited else [wait()]) + put()

    place(body, False)
    return added[0] // 2


def _holding(nodes: list, ids) -> set:
    """id() of every node in ``nodes`` (at any depth) that holds an instruction of ``ids``."""
    out: set = set()

    def visit(n) -> bool:
        if isinstance(n, Instr):
            found = id(n) in ids
        else:
            parts = ([n.head], n.body) if isinstance(n, Loop) else (n.test, n.then, n.orelse) \
                if isinstance(n, If) else (n.before, n.test, n.after)
            found = any([visit(x) for part in parts for x in part])   # (a list: every node is visited)
        if found:
            out.add(id(n))
        return found

    for n in nodes:
        visit(n)
    return out


def if_reserved(nodes, src: str, dst: str) -> set:
    """Event ids of ``(src, dst)`` that the ``If``s in ``nodes`` reserve for code of their own."""
    out = set()
    for n in nodes:
        if isinstance(n, If):
            for r in (n.reserved, n.reserved_else):
                out |= set(r.get((src, dst), ()))
            out |= if_reserved(n.then, src, dst) | if_reserved(n.orelse, src, dst)
        elif isinstance(n, Loop):
            out |= if_reserved(n.body, src, dst)
        elif isinstance(n, While):
            out |= if_reserved(n.before + n.after, src, dst)
    return out
