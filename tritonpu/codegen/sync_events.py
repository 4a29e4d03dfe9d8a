"""Event ids of loop-carried pairs, for the sync pass (see :mod:`tritonpu.codegen.sync`).

Guarantee: an id handed out for a pair ``(src, dst)`` of a loop is none that is pending anywhere
that pair's flag is -- not held by a pair of the loops around the code being placed (a loop's
pairs are pending from before it to after it, so loops one after another share ids), nor of the
loops inside the loop the id is chosen for, nor by a drain still pending, a cross pair in force
(:mod:`tritonpu.codegen.sync_cross`) or code of the kernel's own (``reserved``, an ``If``'s
reservations) -- and below ``max_events``.  A pair that finds none is noted as *starved* for the
loops around it.

:class:`EventIds` is a mixin of the pass: it reads the pass's ``max_events``, ``reserved``,
``carried``, ``active``, ``outer``, ``taken``, ``pending``, ``starved`` and
``_reserved_by_ifs`` (their meaning is documented where ``sync._Pass`` creates them).
"""
from __future__ import annotations

from . import sync_cross
from .asmlist import Loop
from .sync_branches import if_reserved


class EventIds:
    def carried_event(self, loop: Loop, key, src: str, dst: str, avoid=()):
        """The event id of loop ``loop``'s carried pair ``key`` on ``(src, dst)`` (taken from the
        top, once per key: free here, in the loops around it and in those inside it, and not in
        ``avoid``), None when none is free."""
        ids = self.reserved.setdefault((src, dst), {})
        if (id(loop), key) in ids:
            return ids[(id(loop), key)]
        held = self.held(src, dst, id(loop)) | set(avoid)
        for e in range(self.max_events - 1, 0, -1):
            if e not in held:
                ids[(id(loop), key)] = e
                self.carried.setdefault(id(loop), set()).add((src, dst, e))
                return e
        self.starve(src, dst)
        return None

    def starve(self, src: str, dst: str) -> None:
        """A pair on ``(src, dst)`` found no free event id (it is then set right before its wait,
        or through another pipe): noted for the loops around, whose cross pairs on that pipe pair
        are refused (sync_cross.check)."""
        for lid in self.active:
            self.starved.setdefault(lid, set()).add((src, dst))

    def reserved_by_ifs(self, loop: Loop, src: str, dst: str) -> set:
        key = (id(loop), src, dst)
        if key not in self._reserved_by_ifs:
            self._reserved_by_ifs[key] = if_reserved(loop.body, src, dst)
        return self._reserved_by_ifs[key]

    def relay_event(self, loop: Loop, src: str, pipe: str):
        """The event id of ``(src, pipe)`` that the relays of ``loop``'s pairs through ``pipe``
        use (set and waited for at once, so one serves them all), None when none is free."""
        ids = self.reserved.setdefault((src, pipe), {})
        if (id(loop), "relay") not in ids:
            held = self.held(src, pipe, id(loop)) | self.reserved_by_ifs(loop, src, pipe)
            free = [e for e in range(self.max_events - 1, -1, -1) if e not in held]
            if not free:
                return None
            ids[(id(loop), "relay")] = free[0]
        return ids[(id(loop), "relay")]

    def held(self, src: str, dst: str, loop_id=None) -> set:
        """Event ids of (src, dst) that loop-carried pairs keep pending here: those of the loops
        around the code being placed -- a pair of one loop is pending from before it to after it,
        so loops one after another share ids.  With ``loop_id`` (choosing a carried id for that
        loop): also those of the loops inside it."""
        active = set(self.active)
        return {e for (lid, _), e in self.reserved.get((src, dst), {}).items()
                if lid in active or (loop_id is not None and loop_id in self.outer.get(lid, ()))} | \
            {e for t in self.taken for e in t.get((src, dst), ())} | \
            {e for a, b, e, _ in self.pending if (a, b) == (src, dst)} | \
            sync_cross.held(self, src, dst, loop_id)
