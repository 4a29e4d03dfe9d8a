"""The NPU compiler, end to end: dataflow IR -> passes -> ISA emission -> sync -> assembly.

``NPU_PIPELINE`` is the pass pipeline in one place.  ``compile_npu`` runs it on a copy of the
frontend IR and returns every stage's text (``asm[stage]``) and the assembled program;
``launch_npu`` runs a compiled kernel on the virtual NPU and turns machine errors into
``ExecutionError``s that name the instruction and the kernel's source line.
"""
from __future__ import annotations

import contextvars
import gc
import os
from dataclasses import dataclass, field

from numpy import may_share_memory

from tritonpu.codegen.asmlist import Instr, Loop, panel_reserved, render
from tritonpu.codegen.emit import Emitter
from tritonpu.codegen.homes import L0C_ACCUMULATORS, REUSE_LOADED, SCALED_IN_L0C
from tritonpu.codegen.l0c_halves import by_halves
from tritonpu.codegen.l0c_ring import ring_l0c
from tritonpu.codegen.sync import insert_sync
from tritonpu.errors import CompilationError, ExecutionError, LaunchError
from tritonpu.isa.machines import machine as get_machine
from tritonpu.ir import parse_function
from tritonpu.passes import PassManager
from tritonpu.passes.buffer_planning import EARLY_STARTS, REUSE_FIRST, TRIAL_AFTER_CLEANUP, UB_HEADROOM
from tritonpu.passes.manager import PassError
from tritonpu.passes.persistent import CORES, GRID_ARGS
from tritonpu.passes.specialize import launch_values

# The passes the NPU path runs, in order (each is a file in tritonpu/passes/).
NPU_PIPELINE = ["canonicalize", "unflatten", "memory-analysis", "cse", "trip-extents", "fusion", "unswitch", "dce", "tiling",
                "epilogue-rows", "element-rows", "persistent", "grid-stride", "balance",
                "one-program", "versioning", "hoist", "stagger", "panel-reuse", "double-buffer", "cleanup", "buffer-planning"]
# The optional stages after ISA emission (each a file in tritonpu/codegen/), before sync insertion.
CODEGEN_PASSES = ("l0c-ring", "l0c-halves")
# A cap on a pipelined loop's buffers per load, while compiling again because the scalar registers
# ran out (see _with_fewer_registers); None: the passes choose.
REGISTER_STAGES = contextvars.ContextVar("register_stages", default=None)
# Passes a user may switch off (results must not change; tests check it).
OPTIONAL_PASSES = ("canonicalize", "unflatten", "memory-analysis", "cse", "trip-extents", "fusion", "unswitch", "persistent", "grid-stride", "balance", "one-program", "versioning", "hoist",
                   "stagger", "panel-reuse", "double-buffer") + CODEGEN_PASSES


@dataclass
class NpuKernel:
    asm: dict = field(default_factory=dict)       # stage -> text
    program: object = None                        # tritonpu.npu.Program
    notes: list = field(default_factory=list)
    sync_pairs: int = 0
    persistent: bool = False
    l0c_ring: bool = False                        # the programs a core runs alternate halves of L0C
    zeros_bytes: int = 0                          # size of the zero row the launch passes
    program_order: object = None                  # the table of programs the launch passes (balance)
    ub_bytes: int = 0                             # Unified Buffer a program uses (tiles + temporaries)
    guards: list = field(default_factory=list)    # conditions on scalar arguments it was compiled for
    _accepts: dict = field(default_factory=dict)  # (argument values the guards read) -> bool

    def accepts(self, scalars: dict) -> bool:
        """Whether a launch with these scalar arguments may run this compilation."""
        if not self.guards:
            return True
        key = tuple(scalars.get(n) for g in self.guards for n in g.args.values())
        ok = self._accepts.get(key)
        if ok is None:
            ok = self._accepts[key] = all(g.holds(scalars) for g in self.guards)
        return ok


def _each_once(notes: list) -> list:
    """The emitter's notes, each once in order, with how many places of the assembly it is about
    (the passes copy code -- a loop's versions, its unrolled trips, an access's chunks of rows --
    so one source line may be emitted several times)."""
    counts: dict = {}
    for n in notes:
        counts[n] = counts.get(n, 0) + 1
    return [n if k == 1 else f"{n} ({k} places in the assembly)" for n, k in counts.items()]


def _skipped(options: dict | None) -> frozenset:
    """The optional stages these options leave out -- everything in the options (and environment)
    that decides which stages run: ``pipeline_for``, ``codegen_passes_for`` and the compilation
    key all read it from here, so they cannot disagree."""
    options = options or {}
    skip = set(options.get("disable_passes") or ())
    if options.get("double_buffer") is False or os.environ.get("TRITONPU_DOUBLE_BUFFER") == "0":
        skip.add("double-buffer")
    return frozenset(skip)


def pipeline_for(options: dict | None = None) -> list[str]:
    skip = _skipped(options)
    return [p for p in NPU_PIPELINE if p not in skip]


def codegen_passes_for(options: dict | None = None) -> list[str]:
    """The optional stages after emission that run (``CODEGEN_PASSES`` less those disabled)."""
    skip = _skipped(options)
    return [p for p in CODEGEN_PASSES if p not in skip]


def compile_npu(ir_text: str, options: dict | None = None, print_after=None) -> NpuKernel:
    """Compile frontend IR text for the virtual NPU."""
    # The passes build and drop many IR objects; with a large heap (decoded programs cached by
    # earlier launches) the cyclic collector's full passes made single compiles 5x slower now and
    # then.  It is paused for the compile; the IR garbage (ops and regions point at each other)
    # is collected after.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _compile_npu(ir_text, options, print_after)
    finally:
        if was_enabled:
            gc.enable()


def _compile_npu(ir_text: str, options, print_after) -> NpuKernel:
    from tritonpu.npu import AsmError, assemble
    fn = parse_function(ir_text)
    if (options or {}).get("may_alias"):
        fn.attrs["may_alias"] = True      # the launch's arrays share memory: see passes/cse.py
    cap = REGISTER_STAGES.get()
    if cap is not None:                    # (a compile again after the scalar registers ran out)
        fn.attrs["pipeline_stages"] = min(fn.attrs.get("pipeline_stages", cap), cap)
    pm = PassManager(pipeline_for(options), print_after=print_after)
    pm.print_after = set(pm.pipeline)          # keep every stage for h.asm
    out = NpuKernel()
    try:
        if (options or {}).get("scalars") is not None:     # the launch's scalar arguments
            with launch_values(options["scalars"]) as out.guards:
                pm.run(fn)
        else:
            pm.run(fn)
    except PassError as e:
        raise CompilationError(f"internal compiler error: {e}") from None
    except CompilationError as e:
        if "L0C" in e.message and SCALED_IN_L0C.get():
            return _without_scaled_in_l0c(ir_text, options, print_after)
        if "L0C" in e.message and L0C_ACCUMULATORS.get() is None:
            return _fewer_l0c_accumulators(ir_text, options, print_after, e)
        if " of L1" in e.message and "panel-reuse" in pm.pipeline and TRIAL_AFTER_CLEANUP.get():
            return _without_panels(ir_text, options, print_after, e)
        # a loop rewrite judged to fit before the cleanup pass, which then changed what is live
        # together: compile again, judging each rewrite on the cleaned-up function
        if " at once but " not in e.message or TRIAL_AFTER_CLEANUP.get() or \
                not any(k in pm.pipeline for k in ("stagger", "panel-reuse", "double-buffer")):
            raise
        token = TRIAL_AFTER_CLEANUP.set(True)
        try:
            return _compile_npu(ir_text, options, print_after)
        finally:
            TRIAL_AFTER_CLEANUP.reset(token)
    for name, text in pm.dumps:
        out.asm[name] = text
    out.persistent = bool(fn.attrs.get("persistent"))
    out.program_order = fn.__dict__.get("program_order")
    em = Emitter(fn)
    em.l0c_halves = "l0c-halves" in codegen_passes_for(options)
    try:
        header, nodes = em.run()
    except CompilationError as e:
        if "L0C" in e.message and SCALED_IN_L0C.get():
            return _without_scaled_in_l0c(ir_text, options, print_after)
        if "L0C" in e.message and L0C_ACCUMULATORS.get() is None:
            return _fewer_l0c_accumulators(ir_text, options, print_after, e)
        if fn.__dict__.get("early_starts") and ("Unified Buffer" in e.message or " of L1" in e.message):
            # the tiles loaded after loops, kept clear of them, left too little room for the
            # temporaries: plan them as they stand
            token = EARLY_STARTS.set(False)
            try:
                return _compile_npu(ir_text, options, print_after)
            finally:
                EARLY_STARTS.reset(token)
        if "Unified Buffer" in e.message and not fn.attrs.get(REUSE_LOADED):
            # the tiles fit, with the temporaries they did not: elementwise work written over the
            # loaded tiles it reads (``beta * c`` over ``c``) leaves them room -- a load that
            # reuses such a buffer waits for the work, which beats leaving a pass out
            token = REUSE_FIRST.set(True)
            try:
                return _compile_npu(ir_text, options, print_after)
            except CompilationError:
                pass
            finally:
                REUSE_FIRST.reset(token)
        if "Unified Buffer" in e.message and em.scratch_top > em.ub_cap and not UB_HEADROOM.get():
            # the tiles fit, with the temporaries they did not: plan the tiles in the UB the
            # temporaries leave (a 128x256 accumulator stored column-major passes through UB, and
            # its epilogue is then done a few rows at a time: passes/epilogue_rows.py)
            room = em.m.capacity["ub"] - int(fn.attrs.get("ub_peak", 0)) + em.scratch_top - em.ub_cap
            token = UB_HEADROOM.set(room)
            try:
                retry = _compile_npu(ir_text, options, print_after)
            except CompilationError:
                pass
            else:
                retry.notes.insert(0, f"UB planned with {room} bytes left free for the emitter's temporaries: "
                                      f"{e.message.split(';')[0]}")
                return retry
            finally:
                UB_HEADROOM.reset(token)
        if "Unified Buffer" in e.message and SCALED_IN_L0C.get() and em.an.l0c_added:
            # the scaled products' drain buffers on top of a full plan: drained at once, as before
            try:
                return _without_scaled_in_l0c(ir_text, options, print_after)
            except CompilationError:
                pass
        # Buffer planning fits the tiles; emission adds temporaries (a sort's or a reduction's
        # scratch rows, dot operands staged in L1).  When those are what no longer fits next to
        # the second buffers (an L1 panel), the kernel compiles without them rather than not at all.
        if " of L1" in e.message and any(op.name == "panel_fill" for op in fn.walk()):
            return _without_panels(ir_text, options, print_after, e)
        if "scalar registers" in e.message:
            return _with_fewer_registers(fn, ir_text, options, print_after, e)
        if "Unified Buffer" not in e.message:
            raise
        if any(op.attrs.get("stagger") == "on" for op in fn.walk()):
            skip = tuple((options or {}).get("disable_passes") or ()) + ("stagger",)
            retry = _compile_npu(ir_text, {**(options or {}), "disable_passes": skip}, print_after)
            retry.notes.insert(0, f"stagger left out: {e.message.split(';')[0]} with the stages' values carried")
            return retry
        if not _double_buffered(fn):
            raise
        retry = _compile_npu(ir_text, {**(options or {}), "double_buffer": False}, print_after)
        retry.notes.insert(0, f"double buffering left out: {e.message.split(';')[0]} with two buffers per load")
        return retry
    # Analyse the body as the loop it is: a core runs its programs one after another, so hazards
    # from one program into the next are synced exactly like loop-carried ones.
    if "l0c-ring" in codegen_passes_for(options):
        out.l0c_ring = ring_l0c(nodes, em.m.capacity["l0c"], em.m.align["l0c"])
    by_halves(nodes, em.half_zeros, em.half_drains)     # (none recorded without l0c-halves)
    # (a persistent kernel's launch runs one program per core: its code runs once on a core)
    program_loop = Loop(Instr("for s63, 0, 1, 1", "S"), nodes, carry_flags=False, one_trip=out.persistent)
    # (panel fills in no branch of their own: the program keeps their event ids, see op_if)
    report = insert_sync([program_loop], reserved=panel_reserved(em.panel_events))
    lines = header + render(program_loop.body)
    text = "\n".join(lines) + "\n"
    out.asm["isa"] = text
    out.notes = _each_once(em.notes) + ([fn.__dict__["program_order_note"]]
                                        if fn.__dict__.get("program_order_note") else [])
    out.ub_bytes = em.scratch_high
    out.zeros_bytes = getattr(em, "zeros_bytes", 0)
    out.sync_pairs = report.pairs
    try:
        out.program = assemble(text, f"{fn.name}.s")
    except AsmError as e:
        raise CompilationError(f"internal compiler error: the emitted assembly does not assemble: {e}") from None
    return out


def _without_scaled_in_l0c(ir_text, options, print_after) -> NpuKernel:
    """The kernel compiled again with scaled products drained to UB at once (codegen/homes.py
    ``SCALED_IN_L0C``): waiting in L0C they left too little of it for the other products, or
    their drain buffers too little UB."""
    token = SCALED_IN_L0C.set(False)
    try:
        return _compile_npu(ir_text, options, print_after)
    finally:
        SCALED_IN_L0C.reset(token)


def _fewer_l0c_accumulators(ir_text, options, print_after, e) -> NpuKernel:
    """The kernel compiled again keeping at most one accumulator per loop in L0C (codegen/homes.py
    ``L0C_ACCUMULATORS``): a loop's accumulators and the products made beside them did not fit
    L0C together (Triton's attention backward keeps dk and dv, 64 KiB each at 128 x 128, and makes
    two more products a trip).  The others live in UB, each trip's product drained and added to
    them on the vector unit -- one more fp32 rounding a trip, as for an accumulator that starts
    from a loaded tile; a note says so.  If that does not compile either, the first error stands
    (it names what did not fit L0C)."""
    token = L0C_ACCUMULATORS.set(1)
    try:
        retry = _compile_npu(ir_text, options, print_after)
    except CompilationError:
        raise e from None
    finally:
        L0C_ACCUMULATORS.reset(token)
    retry.notes.insert(0, f"one accumulator per loop kept in L0C, the others in UB: {e.message.split(';')[0]}")
    return retry


def _without_panels(ir_text, options, print_after, e) -> NpuKernel:
    """The kernel compiled again without L1 panels (passes/panel_reuse.py), with a note saying why."""
    skip = tuple((options or {}).get("disable_passes") or ()) + ("panel-reuse",)
    retry = _compile_npu(ir_text, {**(options or {}), "disable_passes": skip}, print_after)
    retry.notes.insert(0, f"L1 panels left out: {e.message.split(';')[0]}")
    return retry


def _with_fewer_registers(fn, ir_text, options, print_after, e) -> NpuKernel:
    """The kernel compiled again when its scalar values outnumber the registers: a pipelined loop
    keeps the addresses and extents of every trip it loads ahead live, and an L1 panel gives its
    K loop several versions.  Fewer trips ahead first (half as many), then no panels, then no
    double buffering -- each with a note; the error stands when none of them is left to try."""
    stages = [n for op in fn.walk() if (n := _buffers_per_load(op))]
    why = e.message.split(";")[0]
    if stages and max(stages) > 2:
        cap = max(2, max(stages) // 2)
        token = REGISTER_STAGES.set(cap)
        try:
            retry = _compile_npu(ir_text, options, print_after)
        finally:
            REGISTER_STAGES.reset(token)
        retry.notes.insert(0, f"pipelined loops keep at most {cap} buffers per load: {why} with {max(stages)}")
        return retry
    if any(op.name == "panel_fill" for op in fn.walk()):
        return _without_panels(ir_text, options, print_after, e)
    if stages:
        retry = _compile_npu(ir_text, {**(options or {}), "double_buffer": False}, print_after)
        retry.notes.insert(0, f"double buffering left out: {why} with two buffers per load")
        return retry
    raise e


def _buffers_per_load(op) -> int:
    """How many buffers per load a pipelined loop got (``{double_buffer = "on"}``: 2, ``"on: N
    buffers"``: N); 0 for any other op."""
    mark = str(op.attrs.get("double_buffer", ""))
    if not mark.startswith("on"):
        return 0
    return int(mark.split(": ")[1].split()[0]) if ": " in mark else 2


def _double_buffered(fn) -> bool:
    return any(op.attrs.get("double_buffer") == "on" for op in fn.walk())


def written_args(kernel) -> set | None:
    """Names of the pointer arguments the kernel may write (None: it writes through a pointer whose
    argument is unknown)."""
    names = kernel.__dict__.get("_written_args", False)
    if names is False:
        from tritonpu.passes.rewrite import written_by
        ids = written_by(kernel.fn.body.ops)
        names = None if None in ids else {a.name for a in kernel.fn.args if id(a) in ids}
        kernel.__dict__["_written_args"] = names
    return names


def _share_memory(kernel, arrays) -> bool:
    """Whether an argument the kernel writes overlaps another pointer argument in memory (then the
    compiler may not take a store through one for a store that leaves the other's data alone).
    Inputs passed twice (``add(x, x)``) are no concern."""
    written = written_args(kernel)
    ptrs = [(a, written is None or p.name in written) for p, a in zip(kernel.fn.args, arrays)
            if p.type.is_ptr and a.nbytes]
    # (the arrays are contiguous spans, gm_span: bounds that overlap are shared bytes)
    return any((w or w2) and may_share_memory(a, a2)
               for i, (a, w) in enumerate(ptrs) for a2, w2 in ptrs[i + 1:])


def _artifact_key(options: dict, may_alias: bool) -> tuple:
    """The key of a compilation: its pass pipeline, codegen stages and aliasing (found once per
    set of skipped stages)."""
    choice = (_skipped(options), bool(may_alias))
    key = _ARTIFACT_KEYS.get(choice)
    if key is None:
        key = _ARTIFACT_KEYS[choice] = ("npu",) + tuple(pipeline_for(options)) + \
            tuple(codegen_passes_for(options)) + (("may-alias",) if may_alias else ())
    return key


_ARTIFACT_KEYS: dict = {}


def artifact(kernel, options: dict, scalars: dict, may_alias: bool = False) -> NpuKernel:
    """``kernel`` compiled for the NPU with these options and scalar arguments — made once and kept
    on the kernel: compilations per pass pipeline (and aliasing), several when they assumed
    argument values (see :class:`NpuKernel.accepts`)."""
    key = _artifact_key(options, may_alias)
    arts = kernel.backend_artifacts.setdefault(key, [])
    art = next((a for a in arts if a.accepts(scalars)), None)
    if art is None:
        art = compile_npu(kernel.asm["ir"], {**options, "may_alias": may_alias, "scalars": scalars})
        arts.append(art)
    return art


def launch_npu(kernel, arrays, grid, options) -> object:
    """Run a CompiledKernel on the virtual NPU; returns the launch's Stats."""
    from tritonpu.npu import NpuError
    scalars = {p.name: a for p, a in zip(kernel.fn.args, arrays) if not p.type.is_ptr}
    # the grid too: a persistent kernel gets it as arguments (passes/persistent.py), which
    # passes may specialize on like the others (program_runs.py)
    scalars.update((name, int(g)) for name, g in zip(GRID_ARGS, grid))
    scalars[CORES] = int(options.get("cores") or get_machine("ascend910b").cores)
    art = artifact(kernel, options, scalars, _share_memory(kernel, arrays))
    # h.asm shows the stages of the launch that ran last (a new dict, replaced at once: launches on
    # other threads may be reading the old one) -- made again unless the last launch ran this one
    if art.__dict__.get("_asm_shown") is not kernel.asm:
        stages = {*NPU_PIPELINE, "isa"}
        asm = {k: v for k, v in list(kernel.asm.items()) if k not in stages or k in art.asm}
        asm.update(art.asm)
        kernel.asm = art.__dict__["_asm_shown"] = asm
    prog = art.program
    names = art.__dict__.get("_arg_names")     # the program's name of each kernel argument
    if names is None or names[0] is not kernel.fn:
        names = art.__dict__["_arg_names"] = (kernel.fn, [p.name if prog.param(p.name) is not None
                                                          else f"arg_{p.name}" for p in kernel.fn.args])
    args = dict(zip(names[1], arrays))
    if art.zeros_bytes:
        from tritonpu.codegen.emit_memory import ZEROS
        args[ZEROS] = _zeros(art.zeros_bytes)
    if art.program_order is not None:
        from tritonpu.passes.program_balance import ORDER
        args[ORDER] = art.program_order
    user_grid = tuple(grid)
    if art.persistent:       # one program per core, looping over the user's programs
        for name, g in zip(GRID_ARGS, user_grid):
            args[name] = g
        grid = (min(scalars[CORES], user_grid[0] * user_grid[1] * user_grid[2]), 1, 1)
    try:
        sanitize = options.get("sanitize")
        if sanitize is None:
            sanitize = os.environ.get("TRITONPU_SANITIZE", "1") not in ("0", "false", "no")
        stats = prog.run(args, grid=grid, sanitize=sanitize, trace=bool(options.get("trace")),
                         cores=options.get("cores"), **({"max_steps": options["max_steps"]}
                                                        if options.get("max_steps") else {}))
    except NpuError as e:
        raise _execution_error(e, user_grid) from None
    except LaunchError:
        raise
    stats.notes = list(art.notes)
    if art.persistent:
        stats.grid, stats.programs = user_grid, user_grid[0] * user_grid[1] * user_grid[2]
    return stats


_ZERO_ROWS: dict = {}


def _zeros(nbytes: int):
    """A read-only row of zero bytes (shared by launches)."""
    z = _ZERO_ROWS.get(nbytes)
    if z is None:
        import numpy as np
        z = _ZERO_ROWS[nbytes] = np.zeros(nbytes, np.uint8)
        z.flags.writeable = False
    return z


def _execution_error(e, grid) -> ExecutionError:
    """The machine's finding, one line, then where: the instruction, core, program, kernel line."""
    msg = f"{e.kind}: {e.message}" if e.kind != "error" else e.message
    where = []
    if e.inst is not None:
        where.append(f"in `{e.inst.text().strip()}` (assembly line {e.inst.line})")
    if e.program is not None:
        p = e.program
        gx, gy = grid[0], grid[1]
        where.append(f"program ({p % gx}, {p // gx % gy}, {p // (gx * gy)})")
    if e.core is not None:
        where.append(f"core {e.core}")
    if where:
        msg += " [" + ", ".join(where) + "]"
    if e.loc is not None:
        f, line, col = e.loc
        return ExecutionError(msg, f, line, col)         # loc columns are 0-based, as the frontend's
    return ExecutionError(msg)
