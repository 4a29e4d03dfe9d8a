"""The translating engine: an assembled program becomes one Python generator function.

The reference engine (``launch._execute``) runs a program by calling, for every instruction, the
closure its family decoded, in a dispatch loop.  This engine emits Python source for the whole
program once: its basic blocks in a ``while`` loop that dispatches on the block's first pc, each
instruction's code in line — the scalar unit's arithmetic, moves, compares, selects and
conversions, the loop and branch instructions, ``set_flag`` / ``wait_flag``, and their timing
(``State.tick``) are written out by the families' translators (``TRANSLATORS``, filled by
``translate_scalar``); every other instruction calls its decoded closure, as the reference does.
The engine keeps the scalar unit's issue time in a local, ahead of it by the cycles of the scalar
instructions written out since (``Emitter.d``), and settles it before anything else reads it.

Guarantee: the same work in the same order as ``launch._execute`` — registers, memories, GM,
flags, clocks, statistics, trace events and errors (with the instruction, core and program) are
identical, and the generator pauses at the same points (before a GM read past the slice; every
16 instructions when the core's time passed it or its turn ended), so the cores of a launch
interleave identically.  ``TRITONPU_NPU_ENGINE=check`` runs every launch on both engines and
compares them (the differential test).
"""
from __future__ import annotations

from .errors import LaunchError, NpuError
from .state import MTE2, S

# family -> translator(inst, emitter) -> (lines, branches) or None (call the decoded closure)
TRANSLATORS: dict = {}


def translator(*families):
    def deco(fn):
        for f in families:
            TRANSLATORS[f] = fn
        return fn
    return deco


def located(code, pc):
    """The instruction at ``pc``, or the nearest one before it that has a kernel source line (a
    loop's jump has none)."""
    return next((code[i] for i in range(pc, -1, -1) if getattr(code[i], "loc", None)), code[pc])


def too_many_steps(code, pc, st, max_steps) -> LaunchError:
    return LaunchError(
        f"program ran more than {max_steps} instructions (an endless loop? a program that "
        "waits for another one -- a flag or lock it sets -- waits forever when that "
        "program runs later on the same core: grid programs beyond the cores run one "
        "after another); raise max_steps if it is meant to").attach(
            located(code, min(pc, len(code) - 1)), st.core, st.gpid)


class Emitter:
    """What a family's translator writes with: operand expressions, named constants, the scalar
    pipe's tick."""

    def __init__(self, st):
        self.st = st
        self.names = {}          # name -> object bound in the generated module
        self._ids = {}
        self.prelude = []        # lines the factory runs once per State: its loop cells
        self.d = self.n = self.b = 0

    def const(self, obj, hint="k") -> str:
        """A name for ``obj`` in the generated code (ints print as themselves)."""
        if type(obj) is int:
            return repr(obj) if obj >= 0 else f"({obj})"
        key = (type(obj).__name__, id(obj))
        name = self._ids.get(key)
        if name is None:
            name = self._ids[key] = f"{hint}{len(self.names)}"
            self.names[name] = obj
        return name

    def loop_cell(self, index) -> str:
        """The name of the State's [end, step] cell of the ``for`` at ``index`` (the cell its
        decoded closure holds: the factory runs right after decoding)."""
        name = f"loop{index}"
        line = f"{name} = st.loops.setdefault({index}, [0, 1])"
        if line not in self.prelude:
            self.prelude.append(line)
        return name

    def val(self, v) -> str:
        """The expression ``state.getter(v, R)`` returns the value of."""
        if v.reg is None:
            return self.const(v.value())
        k = v.const + v.symval
        if k == 0:
            return f"R[{v.reg}]"
        return f"(R[{v.reg}] + {self.const(k)})"

    # The scalar unit's issue time: ``ts`` plus ``self.d`` cycles of scalar instructions emitted
    # since the code last updated it (their counts and busy cycles: ``self.n``, ``self.b``).
    def now(self) -> str:
        """The expression of the current issue time."""
        return f"(ts + {self.d})" if self.d else "ts"

    def settle(self) -> list[str]:
        """Lines that bring ``ts`` up to date (before code that reads or writes it)."""
        d, self.d = self.d, 0
        return [f"ts += {d}"] if d else []

    def settle_counts(self) -> list[str]:
        """Lines that add the scalar instructions' counts and busy cycles emitted so far."""
        n, b, self.n, self.b = self.n, self.b, 0, 0
        return [f"n0 += {n}; b0 += {b}"] if n else []

    def tick_s(self, cost, inst) -> list[str]:
        """``State.tick(S, cost, inst)``."""
        lines = []
        if self.st.trace is not None:
            lines.append(f"TR.append((st.core, {S}, {self.now()}, {cost}, {inst.index}, st.gpid))")
        if self.st.race is not None:
            lines.append(f"RVC[{S}][{S}] += 1")          # (race.issue(S), in line)
        self.d += cost
        self.n += 1
        self.b += cost
        return lines

    def tick(self, p, cost, inst) -> list[str]:
        """``t = State.tick(p, cost, inst)`` for a pipe other than S, without a latency."""
        assert p != S
        lines = self.settle() + [f"t = ts; cnt[{p}] += 1"]
        if self.st.race is not None:                     # race.issue(p), in line
            lines += [f"RVC[{p}][{p}] += 1", f"if RSEEN[{p}] != race.s_version: race.follow_scalar({p})"]
        lines += ["ts = t + 1; b0 += 1", f"c = clk[{p}]", "if c > t:", f"    queued[{p}] += c - t", "    t = c",
                  f"clk[{p}] = t + {cost}; busy[{p}] += {cost}"]
        if self.st.trace is not None:
            lines.append(f"TR.append((st.core, {p}, t, {cost}, {inst.index}, st.gpid))")
        return lines

    def check_steps(self, nxt: str) -> list[str]:
        """Count the instruction; every 16th, pause when the core's time passed the slice or its
        turn ended (``due``), and stop a program that ran more than ``max_steps``."""
        now = self.now()
        return ["steps += 1",
                "if not steps & 15:",
                f"    if due(steps, {now}): st.ts = {now}; yield",
                f"    if steps > max_steps: pc = {nxt}; raise too_many_steps(code, pc, st, max_steps)"]


# Families whose translations cannot raise: no need to record their pc for an error's location.
PURE = {"smov", "sint", "sfloat", "scmp", "ssel", "sgrid", "sconv", "ctrl"}


def _instruction(k, inst, E, reads) -> tuple[list[str], bool]:
    """(lines, ends_block) for the instruction at ``k``."""
    lines = []
    if reads[k]:
        now = E.now()
        lines += [f"if RD and ({now} if {now} > clk[{MTE2}] else clk[{MTE2}]) > H[0]:",
                  f"    st.ts = {now}",
                  "    yield"]
    tr = TRANSLATORS.get(inst.spec.impl)
    body = tr(inst, E) if tr is not None else None      # (None: before emitting anything)
    if body is None:
        lines += [f"pc = {k}"] + E.settle() + ["st.ts = ts", f"r = F[{k}]()", "ts = st.ts"]
        if inst.spec.impl == "ctrl":
            lines += ["if r is None:", f"    pc = {k + 1}", "else:", "    pc = r"]
            return lines + E.check_steps("pc"), True
        return lines + E.check_steps(str(k + 1)), False
    body_lines, branches = body
    if inst.spec.impl not in PURE:
        lines.append(f"pc = {k}")
    lines += body_lines
    if branches:           # the body set pc
        return lines + E.check_steps("pc"), True
    return lines + E.check_steps(str(k + 1)), False


def _leaders(code) -> list[int]:
    """The pcs blocks start at: 0, where a control instruction may go, and after it."""
    lead = {0}
    for k, inst in enumerate(code):
        if inst.spec.impl != "ctrl":
            continue
        lead.add(k + 1)
        op = inst.spec.op
        if op in ("for", "endfor"):
            lead.add(inst.target + 1)          # past the loop / into its body
        elif op not in ("exit", "nop"):
            lead.add(inst.target)
    return sorted(x for x in lead if x < len(code))


def _dispatch(blocks, indent) -> list[str]:
    """if-tree over the blocks' first pcs (a binary split, linear below 5 blocks)."""
    pad = " " * indent
    if not blocks:                      # an empty program
        return [f"{pad}break"]
    if len(blocks) <= 4:
        out = []
        for i, (start, body) in enumerate(blocks):
            out.append(f"{pad}{'if' if i == 0 else 'elif'} pc == {start}:")
            out += [f"{pad}    {ln}" for ln in body]
        out += [f"{pad}else:", f"{pad}    raise RuntimeError('no block starts at pc %d' % pc)"]
        return out
    mid = len(blocks) // 2
    return ([f"{pad}if pc < {blocks[mid][0]}:"] + _dispatch(blocks[:mid], indent + 4)
            + [f"{pad}else:"] + _dispatch(blocks[mid:], indent + 4))


def source(prog, st, reads) -> tuple[str, dict]:
    """The generated module's source and the objects it names, for ``prog`` run on ``st``'s kind
    of State (sanitized or not, traced or not)."""
    from . import translate_scalar, translate_transfer  # noqa: F401  (register the families' translators)
    code = prog.code
    E = Emitter(st)
    leaders = _leaders(code)
    blocks = []
    for i, start in enumerate(leaders):
        end = leaders[i + 1] if i + 1 < len(leaders) else len(code)
        body = []
        for k in range(start, end):
            lines, ends = _instruction(k, code[k], E, reads)
            body += lines
            if ends:
                break
        else:
            body.append(f"pc = {end}")
        body += E.settle() + E.settle_counts() + ["continue"]
        blocks.append((start, body))
    head = ["def factory(st, F, code):",
            "    R = st.R"]
    head += [f"    {ln}" for ln in E.prelude]
    head += ["    def run(max_steps, H):",
             "        clk, cnt, busy, queued, done = st.clk, st.cnt, st.busy, st.queued, st.done",
             "        flags = st.flags",
             "        GM, SEEN, READ, WRITTEN = st.gm, st.gm_seen, st.gm_read, st.gm_written",
             "        GMR = st.gm_races",
             "        TR = st.trace",
             "        race = st.race",
             "        RVC, RSEEN = (race.vc, race.seen_s) if race is not None else (None, None)",
             "        RD = H is not None and H[1] is not None",
             "        quantum = H[2] if H is not None else 0",
             "        turn_ends = quantum",
             "        def due(steps, now):",
             "            nonlocal turn_ends",
             "            if H is not None and (now > H[0] or (quantum and steps >= turn_ends)):",
             "                turn_ends = steps + quantum",
             "                return True",
             "            return False",
             "        ts = st.ts",
             "        n0 = b0 = 0",
             "        if False:",
             "            yield           # a generator even when nothing in the program pauses",
             "        pc = steps = 0",
             "        try:",
             f"            while pc < {len(code)}:"]
    last = len(code) - 1
    tail = ["        except NpuError as e:",
            f"            raise e.attach(code[min(pc, {last})], st.core, st.gpid)",
            "        except Exception as e:",
            "            raise LaunchError(f'{type(e).__name__}: {e}').attach(",
            f"                code[min(pc, {last})], st.core, st.gpid) from e",
            "        finally:",
            "            st.ts = ts",
            f"            st.cnt[{S}] += n0",
            f"            st.busy[{S}] += b0",
            "    return run"]
    src = "\n".join(head + _dispatch(blocks, 16) + tail) + "\n"
    return src, E.names


def runner(prog, st, fns, reads):
    """A function ``run(max_steps, horizon)`` -> generator that runs one program of ``prog`` on
    ``st`` as ``launch._execute(fns, prog.code, st, max_steps, horizon)`` does.  Call it right
    after decoding ``fns`` for ``st``.  (The translation is made once per program and kind of
    State: machine, sanitized or not, traced or not.)"""
    key = (st.m.name, st.race is not None, st.trace is not None)
    made = prog.__dict__.setdefault("_translated", {})
    factory = made.get(key)
    if factory is None:
        src, names = source(prog, st, reads)
        ns = dict(names)
        ns.update(too_many_steps=too_many_steps, LaunchError=LaunchError, NpuError=NpuError)
        from . import translate_scalar, translate_transfer
        ns.update(translate_scalar.RUNTIME)
        ns.update(translate_transfer.RUNTIME)
        exec(compile(src, f"<tritonpu npu translation of {prog.name}>", "exec"), ns)
        factory = made[key] = ns["factory"]
    return factory(st, fns, prog.code)
