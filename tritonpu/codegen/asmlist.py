"""The NPU program between ISA emission and text: a structured list of instructions.

ISA emission produces a list of nodes; the sync pass inserts ``set_flag``/``wait_flag`` into it;
``render`` prints it as assembly the assembler reads.  Structure is kept (loops and branches are
nodes, not labels) so passes over the list can reason about control flow.

Every :class:`Instr` states the pipe it runs on and the memory it reads and writes, as byte
ranges :class:`Access` ``(space, lo, hi)``.  Spaces are ``ub``, ``l1``, ``l0a``, ``l0b``, ``l0c``
(static addresses from buffer planning) and ``gm:NAME`` for a GM parameter (the whole parameter:
GM addresses are runtime values).  Registers never need sync: the scalar unit issues every
instruction in program order and operands are read at issue.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

GM_WHOLE = (0, 1 << 62)
# An L1 panel's fills and the reads of its tiles (passes/panel_reuse.py) are ordered like loads and
# their readers: a fill (a Guarded on MTE2) writes, and a read of its tile reads, the *panel event*
# of its trip (the trip's buffer number: the trip modulo the loop's buffers), a space of its own
# (``panel_access``), so the sync pass sets the flag after the fill -- with the trip's other loads,
# one flag -- and waits for it before the read.  Only the fence before a program's first fill keeps
# an id of its own: MTE1 -> MTE2 ``PANEL_FENCE_EVENT`` (the fill waits for the previous programs'
# reads of the slots it reuses); the branch that holds a panel's loop reserves it (If), or the
# whole program when no branch does.
PANEL_FENCE_EVENT = 7


def panel_access(event: int) -> "Access":
    return Access("panel", event, event + 1)


def panel_reserved(events) -> dict:
    """The ids (``If.reserved``) code with panel fills on ``events`` uses (none without fills)."""
    return {("MTE1", "MTE2"): {PANEL_FENCE_EVENT}} if events else {}


@dataclass(frozen=True)
class Access:
    space: str
    lo: int
    hi: int

    def overlaps(self, other: "Access") -> bool:
        return self.space == other.space and self.lo < other.hi and other.lo < self.hi

    @staticmethod
    def gm(param: str) -> "Access":
        return Access("gm:" + param, *GM_WHOLE)


@dataclass
class Instr:
    """One instruction: ``text`` is its assembly without the location."""
    text: str
    pipe: str                                   # S, MTE2, MTE1, M, FIX, V, MTE3
    reads: tuple[Access, ...] = ()
    writes: tuple[Access, ...] = ()
    loc: object = None                          # tritonpu.ir.Loc or None
    comment: str = ""
    # the loads of one trip a pipelined loop issues ahead (their ops' ``prefetch`` attribute):
    # the sync pass may order them for their readers with one flag
    group: object = None

    def render(self) -> str:
        s = self.text
        if self.loc is not None and getattr(self.loc, "line", 0):
            s += f' loc("{self.loc.file}":{self.loc.line}:{self.loc.col})'
        if self.comment:
            s += "  // " + self.comment
        return s


@dataclass
class Fence(Instr):
    """A point in the queue of pipe ``pipe`` with accesses of its own and no work: the sync pass
    places the waits it needs right before it, like any instruction's; it renders as nothing."""


@dataclass
class Guarded(Instr):
    """``body`` (instructions, or Guarded) runs only when the scalar test ``text`` (``br.eq s5, 0``:
    the branch that jumps past the body) falls through.  To the sync pass it is one scalar
    instruction with no accesses: only for code that orders its own accesses with its own flags (an
    L1 panel's loads and reads, see ``passes/panel_reuse.py``), so that it does not end the
    straight-line run the flags of the code around it are placed in."""
    body: list = field(default_factory=list)

    def lines(self, label) -> list[str]:
        end = label("skip")
        out = [Instr(f"{self.text}, {end}", "S", loc=self.loc).render()]
        for n in self.body:
            out += n.lines(label) if isinstance(n, Guarded) else [n.render()]
        return out + [f"{end}:"]


@dataclass
class Loop:
    """``for reg, start, end, step`` ... ``endfor``; ``head`` is the ``for`` instruction."""
    head: Instr
    body: list = field(default_factory=list)
    # flags may be set in one trip for the next (set before the loop, drained after it); off for
    # a loop that is not rendered as one (the programs a core runs in turn)
    carry_flags: bool = True
    # the persistent loop over the programs a core runs (passes/persistent.py)
    programs: bool = False
    # it runs once at most (passes/one_program.py; a persistent kernel's whole program): its body
    # starts from the state before the loop alone -- nothing reaches it over the back edge -- and
    # carries no flags
    one_trip: bool = False
    # its trips use alternate halves of L0C (codegen/l0c_ring.py): what the cube is not yet
    # ordered after among a trip's other L0C accesses is not carried to the next trip
    l0c_ring: bool = False


@dataclass
class If:
    """``test`` (instructions ending in a ``br.* ..., ELSE`` whose target is filled in by render)
    then ``then`` and, if any, ``orelse``.  ``test``'s last instruction text holds ``{else}``."""
    test: list
    then: list = field(default_factory=list)
    orelse: list = field(default_factory=list)
    # (src, dst) -> event ids ``then`` / ``orelse`` use for flags of their own (Guarded code): the
    # sync pass takes none of them there
    reserved: dict = field(default_factory=dict)
    reserved_else: dict = field(default_factory=dict)


@dataclass
class While:
    """``before`` runs first each trip; ``test`` (ending in ``br.* ..., {exit}``) leaves the loop;
    ``after`` runs and jumps back to ``before``."""
    before: list
    test: list
    after: list = field(default_factory=list)


def walk(nodes):
    """Every Instr in program order (loop bodies and both branches once)."""
    for n in nodes:
        if isinstance(n, Instr):
            yield n
        elif isinstance(n, Loop):
            yield n.head
            yield from walk(n.body)
        elif isinstance(n, If):
            yield from walk(n.test)
            yield from walk(n.then)
            yield from walk(n.orelse)
        elif isinstance(n, While):
            yield from walk(n.before)
            yield from walk(n.test)
            yield from walk(n.after)


def instrs(nodes, heads=False) -> list:
    """The instructions in ``nodes`` (with ``heads``: loop heads, branch tests and guards too)."""
    out = []
    for n in nodes:
        if isinstance(n, Guarded):
            out += ([n] if heads else []) + instrs(n.body, heads)
        elif isinstance(n, Instr):
            out.append(n)
        elif isinstance(n, Loop):
            out += ([n.head] if heads else []) + instrs(n.body, heads)
        elif isinstance(n, If):
            out += (n.test if heads else []) + instrs(n.then, heads) + instrs(n.orelse, heads)
        elif isinstance(n, While):
            out += instrs(n.before, heads) + (n.test if heads else []) + instrs(n.after, heads)
    return out


REGISTERS = 64          # s0 .. s63
_REG = re.compile(r"\bs(\d+)\b")


def free_registers(nodes) -> list[str]:
    """The scalar registers no instruction of ``nodes`` names (loop heads, tests and guards
    included), lowest first."""
    used = {int(m.group(1)) for i in instrs(nodes, heads=True) for m in _REG.finditer(i.text)}
    return [f"s{r}" for r in range(REGISTERS) if r not in used]


def render(nodes, indent: str = "    ") -> list[str]:
    """Assembly lines for ``nodes`` (labels numbered in order of appearance)."""
    out: list[str] = []
    counter = [0]

    def label(kind):
        counter[0] += 1
        return f"{kind}{counter[0]}"

    def emit(ns, depth):
        pad = indent * depth
        for n in ns:
            if isinstance(n, Fence):
                continue
            if isinstance(n, Guarded):
                out.extend(line if line.endswith(":") else pad + line for line in n.lines(label))
            elif isinstance(n, Instr):
                out.append(pad + n.render())
            elif isinstance(n, Loop):
                out.append(pad + n.head.render())
                emit(n.body, depth + 1)
                out.append(pad + "endfor")
            elif isinstance(n, If):
                l_else, l_end = label("else"), label("endif")
                target = l_else if n.orelse else l_end
                for i in n.test[:-1]:
                    out.append(pad + i.render())
                last = n.test[-1]
                out.append(pad + Instr(last.text.format(target=target), last.pipe, loc=last.loc).render())
                emit(n.then, depth + 1)
                if n.orelse:
                    out.append(pad + f"jmp {l_end}")
                    out.append(f"{l_else}:")
                    emit(n.orelse, depth + 1)
                out.append(f"{l_end}:")
            elif isinstance(n, While):
                l_head, l_exit = label("while"), label("endwhile")
                out.append(f"{l_head}:")
                emit(n.before, depth + 1)
                for i in n.test[:-1]:
                    out.append(pad + indent + i.render())
                last = n.test[-1]
                out.append(pad + indent + Instr(last.text.format(target=l_exit), last.pipe, loc=last.loc).render())
                emit(n.after, depth + 1)
                out.append(pad + indent + f"jmp {l_head}")
                out.append(f"{l_exit}:")

    emit(nodes, 0)
    return out
