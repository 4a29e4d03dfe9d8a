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

A consumer right in the loop's body (no ``If`` around it) whose producers ran in the previous trip
after an inner loop -- a persistent matmul's accumulator zeroing, against the previous program's
FIX drain after the K loop; its next program's first loads, against the last trips' L1 reads --
gets such a pair too (the zeroing of L0C's first half then waits for the drain of that half, not
for the second half's queued behind it) while the pipe pair does not run out of event ids in the
body (else the pass starts again without such pairs on it: :func:`check_top`).
"""
from __future__ import annotations

from tritonpu.isa import PIPES

from .asmlist import If, Instr, Loop, While, walk
from .sync_model import Restart, is_sync


def through_ifs(p, frames):
    """Walk ``frames`` (the sync pass ``p``'s open blocks, innermost last) outwards through ``If``
    branches to the first block another construct owns: ``(levels, path, loop)`` -- each block's
    positions (id -> index) with the index being placed at, innermost first, that owner's
    included; the branches taken (id(If) -> in its then branch); that owner when it is a ``Loop``
    carrying flags, else None."""
    levels, path = [], {}
    for nodes, j, owner in reversed(frames):
        levels.append((p.positions(nodes), j))
        if not isinstance(owner, If):
            return levels, path, owner if isinstance(owner, Loop) and owner.carry_flags else None
        path[id(owner)] = nodes is owner.then
    return levels, path, None


def plan(p, consumer: int, src: str, dst: str, need: set, st):
    """A loop-carried pair through branches for the instruction ``consumer`` (its id) on ``dst``,
    which needs ``need`` (``p``: the sync pass): when the innermost enclosing blocks up to a loop
    that carries flags are ``If`` branches -- or there are none (not through a relay, not once
    refused: :func:`check_top`) -- and ``src``'s records in ``need`` are all of the previous
    trip (issued by the body, none on the consumer's path before it) or from before the loop.
    The plan orders those records and every other access of their instructions (with no ``If``
    around the consumer, every access of the instructions between it and the set too:
    :func:`_before_set`).  None otherwise."""
    levels, path, loop = through_ifs(p, p.frames)
    if loop is None or not path and top_name(loop, src, dst) in p.refused:
        return None
    keys = {k for k in need if st.recs[k].pipe == src}
    body = p.body_ids(loop)
    producers = frozenset(k[0] for k in keys if k[0] in body)
    # (none issued on the consumer's path before it, in this trip)
    if not producers or any(pos.get(k[0], j) < j for k in keys for pos, j in levels):
        return None
    # (every access of the producers is ordered: another consumer of theirs on this path
    # needs no pair -- nor the same one again)
    mine = producers if path else _before_set(p, loop, levels[0][1], producers)
    keys |= {k for k in st.unord[dst] if k[0] in mine and st.recs[k].pipe == src}
    # consumers of the same producers share a pair when no path runs two of them (the
    # versions of a program: each waits for its own first loads' slots)
    n = 0
    while True:
        users = p.branch_users.setdefault((id(loop), producers, n), {})
        if consumer in users or all(any(path.get(i, b) != b for i, b in theirs.items())
                                    for theirs in users.values()):
            users[consumer] = path
            break
        n += 1
    key = ("branch", producers, n)
    pipe, relay = src, p.relays.get((id(loop), key))
    ev = None if relay else p.carried_event(loop, key, src, dst, p.reserved_by_ifs(loop, src, dst))
    if ev is None and not path:
        return None
    if ev is None:
        # no id left on (src, dst) -- a pipelined K loop inside takes most: the pair goes
        # through a pipe with no work in the body, which waits for src's flag and sets its own
        idle = p.idle.get(id(loop))
        if idle is None:
            busy = {x.pipe for x in walk(loop.body) if not is_sync(x)}
            idle = p.idle[id(loop)] = [r for r in PIPES if r not in busy and r != "S"]
        for r in [r for r in idle if r not in (src, dst)]:
            ev = p.carried_event(loop, key, r, dst, p.reserved_by_ifs(loop, r, dst))
            e = p.relay_event(loop, src, r)
            if ev is not None and e is not None:
                pipe, relay = r, (src, e)
                p.relays[(id(loop), key)] = relay
                break
            ev = None
        if ev is None:
            return None
    p.branch_pairs.setdefault(id(loop), {})[(pipe, dst, ev)] = (producers, relay)
    if not path:
        p.top_pairs.setdefault(id(loop), set()).add((src, dst))
    if relay is not None and any(k[0] not in body for k in keys):
        # (what src did before the loop is ordered by the set before it: through the relay too)
        p.relayed_before.add((id(loop), (pipe, dst, ev)))
    return pipe, ("branch", id(loop)), ev, keys


def top_name(loop, src: str, dst: str) -> tuple:
    """What names the pairs right in ``loop``'s body on ``(src, dst)`` when they are refused."""
    return ("top", id(loop.head), src, dst)


def check_top(p, loop) -> None:
    """After a round of ``loop``'s body: when a pipe pair that pairs right in the body (no ``If``
    around their consumer) use ran out of event ids there, start the pass again without them
    (:class:`sync_model.Restart`): each such consumer holds an id of its own all through the body
    -- measured: a matmul's first loads of a program took five ids of MTE1 -> MTE2, and its K
    loop, left short of them, set its flags right before their waits (256^3 on 16 programs:
    +0.9%)."""
    starved = p.starved.get(id(loop), ())
    for src, dst in sorted(p.top_pairs.get(id(loop), ())):
        if (src, dst) in starved:
            raise Restart(top_name(loop, src, dst))


def _before_set(p, loop: Loop, j: int, producers: frozenset) -> set:
    """For a consumer at ``loop.body[j]`` (no ``If`` around it; ``p``: the sync pass): the ids of
    the instructions after it that run before its pair's set on every path -- the nodes after
    ``j`` up to the one holding the last producer, that one too unless it is an ``If`` (whose
    branches then hold the set: :func:`place_sets`).  Their latest instances are the previous
    trip's or older: the set of the last trip came after them in src's queue."""
    body = loop.body
    # (one walk per loop and producers: the flags the pass adds hold no producer)
    holding = p.holding.get((id(loop), producers))
    if holding is None:
        holding = p.holding[(id(loop), producers)] = _holding(body, producers)
    last = max(i for i, x in enumerate(body) if id(x) in holding)
    nodes = body[j + 1:last] + ([] if isinstance(body[last], If) else [body[last]])
    return {id(x) for x in walk(nodes)} | producers


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

    def place(nodes: list, waited: bool, produced: bool) -> None:
        """``waited`` / ``produced``: the path to ``nodes`` ran a wait / a producer."""
        marks = [j for j, x in enumerate(nodes) if has(x, producers) or has(x, waits)]
        if not marks:
            # (a branch with neither, after a producer: found by a probe -- a producer before an
            # If whose other branch held the last one was left without a set on this path)
            if waited or produced:
                nodes[0:0] = ([] if waited else [wait()]) + put()
            return
        last = marks[-1]
        for x in nodes[:last]:
            if has(x, waits):
                if isinstance(x, If):
                    complete([x])
                waited = True
            produced = produced or has(x, producers)
        x = nodes[last]
        if isinstance(x, If):
            place(x.then, waited, produced)
            place(x.orelse, waited, produced)
        elif isinstance(x, (Loop, While)):
            nodes[last + 1:last + 1] = ([] if waited else [wait()]) + put()
        else:
            waited = waited or id(x) in waits
            nodes[last + 1:last + 1] = ([] if waited else [wait()]) + put()

    place(body, False, False)
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
