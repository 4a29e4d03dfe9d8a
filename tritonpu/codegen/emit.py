"""ISA emission: the planned dataflow IR to a structured NPU instruction list.

Input: IR after memory analysis, fusion and buffer planning (every UB-resident value has its
``ub`` address).  Output: an :mod:`asmlist` program whose instructions state the pipe and the
memory they touch; the sync pass then orders the pipes.

Mapping, one rule per kind of value:

* scalars in registers: scalar-unit instructions (``add``, ``fmul``, ``cvt``...); an operation
  whose type is narrower than the 64-bit registers wraps (integers: the op's type suffix,
  ``add.i32``) or rounds (a ``cvt`` after it) exactly as the IR says; scalar parameters are read by name, constants are
  immediates;
* tiles in UB: one vector instruction per op over ``rows x cols`` (dense operands of any rank
  are flattened; broadcasts, expand_dims, permutes are strided views, never copies);
* memory: ``load_tile``/``store_tile`` become ``mov.gm.ub``/``mov.ub.gm`` with segment strides and
  valid extents, ``gather_rows`` a ``gather.gm.ub``, and any other load or store of a pointer tile
  an element-by-element gather/scatter (one segment per element: correct for any addresses,
  and visible in the profile as such);
* control flow: ``for`` -> ``for``/``endfor``, ``if``/``while`` -> branches; carried values are
  copied into their homes at entry and at every ``yield``.

Anything the emitter cannot map raises a ``CompilationError`` at the op's source line.
"""
from __future__ import annotations

import re

from tritonpu.codegen.analysis import Analysis, elem_bytes
from tritonpu.codegen.asmlist import Access, If, Instr, Loop, While, panel_reserved
from tritonpu.codegen.emit_cube import CubeEmitter
from tritonpu.codegen.emit_memory import MemoryEmitter
from tritonpu.codegen.emit_scalar import ScalarEmitter
from tritonpu.codegen.emit_vector import VectorEmitter
from tritonpu.codegen.values import Imm, Reg, Tile, asm_type
from tritonpu.errors import CompilationError
from tritonpu.isa.machines import machine as get_machine
from tritonpu.passes.persistent import is_program_loop

NUM_REGS = 64
SPILL_RESERVE = 6          # registers kept free for temporaries once values start to spill
RESERVED = re.compile(r"^(s\d+|ub|l1|l0a|l0b|l0c|all|S|V|M|FIX|MTE[123])$")


def _clobbers(dst, src) -> bool:
    """Writing ``dst`` (a Tile or a register) changes what ``src`` holds."""
    if isinstance(dst, Tile) and isinstance(src, Tile):
        return dst.space == src.space and dst.addr < src.addr + src.nbytes and src.addr < dst.addr + dst.nbytes
    return isinstance(dst, Reg) and isinstance(src, Reg) and str(dst) == str(src)


class Emitter(ScalarEmitter, VectorEmitter, MemoryEmitter, CubeEmitter):
    def __init__(self, fn, machine="ascend910b"):
        self.fn = fn
        self.m = get_machine(machine)
        self.an = Analysis(fn)
        self.done: set = set()          # ops already emitted with an earlier one
        self.out: list = []
        self.op = None
        self.home: dict = {}            # id(value) -> Imm | Reg | Tile
        self.param_of: dict = {}        # id(pointer value) -> GM parameter name
        self.panel_events: set = set()  # the events of the L1 panel fills emitted (see op_if)
        self.reg_owner: dict = {}       # register -> group
        self.free_regs = [f"s{i}" for i in range(NUM_REGS - 1, -1, -1)]
        self.temp_regs: list = []
        self.pending_spills: list = []
        self.ub_cap = self.m.capacity["ub"]
        self.scratch_base = self.scratch_top = self.scratch_high = int(fn.attrs.get("ub_peak", 0))
        self.notes: list[str] = []
        self.params: list[str] = []
        self.prologue: list = []        # instructions run once at the kernel's start (constant rows)
        self.reserved_top = self.ub_cap  # UB reserved from the top for kernel-wide constants
        # an L0C accumulator issued by row halves (emit_cube._l0c_halves): its zeroing products and
        # its FIX drains, for codegen/l0c_halves.py
        self.l0c_halves = True          # the stage l0c-halves runs (pipeline.py)
        self.half_zeros: list = []
        self.half_drains: list = []

    # ---- entry ---------------------------------------------------------------------------------------
    def run(self) -> tuple[list[str], list]:
        """(header lines, instruction list)."""
        header = [f".kernel {self.fn.name}"]
        for a in self.fn.args:
            name = a.name if not RESERVED.match(a.name or "") else f"arg_{a.name}"
            if a.type.is_ptr:
                pointee = a.type.scalar.pointee
                header.append(f".param {name} gm {'i1' if pointee.is_bool else asm_type(pointee)}")
                self.param_of[id(a)] = name
                self.home[id(a)] = Imm(0)          # a pointer argument is offset 0 in its parameter
            else:
                header.append(f".param {name} {asm_type(a.type)}")
                self.home[id(a)] = Reg(name)
            self.params.append(name)
        self.region(self.fn.body.ops)
        for text, name in getattr(self, "_strings", {}).items():
            header.append(f'.string {name} "{text}"')
        if getattr(self, "zeros_bytes", 0):
            from tritonpu.codegen.emit_memory import ZEROS
            header.append(f".param {ZEROS} gm u8")
        return header, self.prologue + self.out

    def region(self, ops) -> None:
        outer_temps, outer_scratch, outer_op = self.temp_regs, self.scratch_top, self.op
        for op in ops:
            if id(op) in self.done:         # emitted with the op before it (a dot's scale, by FIX)
                continue
            self.op = op
            self.release(self.an.span[id(op)][0])
            self.scratch_top = max(outer_scratch, self.scratch_base)
            self.temp_regs = []
            fn = getattr(self, "op_" + op.name, None)
            if fn is None:
                fn = getattr(self, "kind_" + op.opdef.kind, None)
            if fn is None:
                self.fail(f"'{op.name}' is not supported on the NPU backend yet")
            fn(op)
            if "l1_stage" in op.attrs:
                self.stage_result(op)
            self.flush_spills()
            self._track_pointer(op)
            for r in self.temp_regs:
                self.free_regs.append(r)
        self.temp_regs, self.scratch_top, self.op = outer_temps, max(outer_scratch, self.scratch_top if
                                                                     outer_op is None else outer_scratch), outer_op

    def _track_pointer(self, op) -> None:
        """Pointer results point into the parameter their pointer operands point into."""
        for r in op.results:
            if r.type.scalar.is_ptr and id(r) not in self.param_of:
                params = {self.param_of.get(id(v)) for v in op.operands if v.type.scalar.is_ptr}
                params.discard(None)
                if len(params) == 1:
                    self.param_of[id(r)] = params.pop()
                elif len(params) > 1:
                    self.fail("a pointer that may point into different kernel arguments (for example "
                              "`tl.where(c, x_ptr, y_ptr)`) is not supported on the NPU")

    # ---- diagnostics ----------------------------------------------------------------------------------
    def fail(self, msg: str, op=None):
        op = op or self.op
        raise CompilationError.at(msg, getattr(op, "loc", None))

    # ---- output -------------------------------------------------------------------------------------
    def emit(self, text: str, pipe: str, reads=(), writes=(), comment="") -> Instr:
        op = self.op
        ins = Instr(text, pipe, tuple(reads), tuple(writes), getattr(op, "loc", None), comment,
                    op.attrs.get("prefetch") if op is not None else None)
        self.out.append(ins)
        return ins

    def nested(self, fn, *args) -> list:
        """Run ``fn`` collecting what it emits into a new list (a loop body or branch)."""
        saved, self.out = self.out, []
        try:
            fn(*args)
            return self.out
        finally:
            self.out = saved

    # ---- registers -------------------------------------------------------------------------------
    def release(self, now: int) -> None:
        for r, g in list(self.reg_owner.items()):
            if g.end < now:
                del self.reg_owner[r]
                self.free_regs.append(r)

    def new_reg(self, v) -> Reg:
        """The register holding value ``v`` (allocated for its whole group)."""
        g = self.an.group_of[id(v)]
        for r, owner in self.reg_owner.items():
            if owner is g:
                return Reg(r)
        if not self.free_regs:
            self.fail("too many scalar values are live at once for the 64 scalar registers")
        r = self.free_regs.pop()
        self.reg_owner[r] = g
        return Reg(r)

    def temp_reg(self) -> Reg:
        if not self.free_regs:
            self.fail("out of scalar registers")
        r = self.free_regs.pop()
        self.temp_regs.append(r)
        return Reg(r)

    # ---- UB -----------------------------------------------------------------------------------------
    def reserve_ub(self, nbytes: int) -> int:
        """UB for the whole kernel, taken from the top (constant rows)."""
        align = self.m.align["ub"]
        self.reserved_top -= (nbytes + align - 1) // align * align
        if self.reserved_top < self.scratch_high:
            self.fail("the kernel's tiles and constants do not fit the Unified Buffer; use smaller blocks")
        self.ub_cap = self.reserved_top
        return self.reserved_top

    def scratch(self, nbytes: int, persistent: bool = False) -> int:
        align = self.m.align["ub"]
        at = self.scratch_top
        self.scratch_top = at + (nbytes + align - 1) // align * align
        if persistent:
            self.scratch_base = self.scratch_top
        self.scratch_high = max(self.scratch_high, self.scratch_top)
        if self.scratch_top > self.ub_cap:
            self.fail(f"the kernel needs {self.scratch_top} bytes of Unified Buffer (with temporaries) but UB "
                      f"holds {self.ub_cap}; use smaller blocks")
        return at

    def planned(self, v, space=None) -> int:
        """The address buffer planning gave ``v`` in its space (UB, L1 or L0C)."""
        space = space or self.an.home.get(id(v), "ub")
        if space not in ("ub", "l1", "l0c"):
            space = "ub"
        op, idx = v.owner, v.index
        if op is None:
            parent = self._region_parent(v)
            if parent is None:
                self.fail(f"no UB address for {v!r}")
            op, region_idx = parent
            args = op.regions[region_idx].args
            i = args.index(v)
            if op.name == "for":
                key, idx = (space + "_carry" if space + "_carry" in op.attrs else space), i - 1
            elif op.name == "while":
                key, idx = (space, i) if region_idx == 0 else (space + "_out", i)
            else:
                key, idx = space, i
        else:
            key = space + "_out" if op.name == "while" else space
        a = op.attrs.get(key)
        if isinstance(a, list):
            a = a[idx]
        if a is None or a < 0:
            self.fail(f"internal error: no UB address was planned for a {v.type} value (run buffer-planning)")
        return a

    def _region_parent(self, v):
        """(op, region index) of the region whose argument ``v`` is (a map made once: emission
        does not change the IR)."""
        parents = self.__dict__.get("_parents")
        if parents is None:
            parents = self._parents = {id(a): (op, i) for op in self.fn.walk()
                                       for i, r in enumerate(op.regions) for a in r.args}
        return parents.get(id(v))

    def dense_tile(self, v, addr=None) -> Tile:
        ty = v.type
        shape = ty.shape if ty.is_block else ()
        space = self.an.home.get(id(v), "ub")
        space = space if space in ("l1", "l0c") else "ub"
        return Tile.dense(self.planned(v) if addr is None else addr, asm_type(ty), shape, elem_bytes(ty), space)

    def temp_tile(self, ty_dtype: str, shape, esize: int) -> Tile:
        n = 1
        for d in shape:
            n *= d
        return Tile.dense(self.scratch(max(n, 1) * esize), ty_dtype, tuple(shape), esize)

    @staticmethod
    def acc(t: Tile) -> Access:
        return Access(t.space, t.addr, t.addr + t.nbytes)

    # ---- values ----------------------------------------------------------------------------------
    def val(self, v):
        """Imm | Reg | Tile for an operand already emitted."""
        h = self.home.get(id(v))
        if h is None:
            self.fail(f"internal error: {v!r} used before it was emitted")
        return h

    def define(self, v, h) -> None:
        self.home[id(v)] = h

    def is_ub(self, v) -> bool:
        return self.an.is_ub(v)

    def out_tile(self, v) -> Tile:
        t = self.dense_tile(v)
        self.define(v, t)
        return t

    def out_reg(self, v) -> Reg:
        """The register an op writes its scalar result ``v`` to.  When registers run short (fewer
        than ``SPILL_RESERVE`` free) a value of its own group — not loop-carried, not an if's
        result — is spilled instead: the op writes a temporary register, ``sst`` stores it to a UB
        slot after the op, and its uses read it back with ``sld`` (see ``scalar``)."""
        g = self.an.group_of[id(v)]
        if len(self.free_regs) < SPILL_RESERVE and g.values == [v] and \
                not any(owner is g for owner in self.reg_owner.values()):
            r = self.temp_reg()
            at = self.spill_slot(elem_bytes(v.type))
            self.pending_spills.append((v, r, Tile.dense(at, asm_type(v.type), (), elem_bytes(v.type))))
            self.define(v, r)
            return r
        r = self.new_reg(v)
        self.define(v, r)
        return r

    def spill_slot(self, nbytes: int) -> int:
        """A UB slot for a spilled scalar, for the rest of the kernel (taken from the top of UB)."""
        return self.reserve_ub(nbytes)

    def flush_spills(self) -> None:
        """Store the results spilled during the op just emitted; from here on they live in UB."""
        for v, r, t in self.pending_spills:
            self.emit(f"sst.{t.dtype} ub[{t.addr}], {r}", "S", writes=[Access("ub", t.addr, t.addr + t.esize)])
            self.define(v, t)
        self.pending_spills = []

    def scalar(self, v):
        """v as a scalar-unit operand (Imm or Reg); a UB-resident scalar is loaded (``sld``)."""
        h = self.val(v)
        if isinstance(h, Tile):
            r = self.temp_reg()
            self.emit(f"sld.{h.dtype} {r}, ub[{h.addr}]", "S", reads=[Access("ub", h.addr, h.addr + h.esize)])
            return r
        return h

    def param(self, v) -> str:
        p = self.param_of.get(id(v))
        if p is None:
            self.fail("cannot tell which kernel argument this pointer points into (pointers must come from "
                      "pointer arguments by pointer arithmetic)")
        return p

    # ---- control flow --------------------------------------------------------------------------------
    def copy_into(self, dst_v, src_v, home=None) -> None:
        """Copy src_v into the home of dst_v (a register or a planned UB tile)."""
        src = self.val(src_v)
        dst = home if home is not None else self.home.get(id(dst_v))
        if isinstance(dst, Reg):
            if isinstance(src, Tile):
                self.emit(f"sld.{src.dtype} {dst}, ub[{src.addr}]", "S",
                          reads=[Access("ub", src.addr, src.addr + src.esize)])
            elif str(src) != str(dst):
                self.emit(f"mov {dst}, {src}", "S")
            return
        if isinstance(src, Tile) and src == dst:
            return
        if isinstance(src, Tile) and src.space == "l0c" and dst.space == "ub":
            self.drain_l0c(src, dst)            # an L0C accumulator leaves a branch through FIX
            return
        if dst.space != "ub" or (isinstance(src, Tile) and src.space != "ub"):
            self.fail(f"internal error: cannot copy a tile from {getattr(src, 'space', 'a register')} to "
                      f"{dst.space} (a carried value was not planned in place)")
        self.copy_tile(dst, src)

    def carried_home(self, v, planned_v=None):
        if self.an.home.get(id(v)) in ("ub", "l0c", "l1"):
            return self.dense_tile(v, self.planned(planned_v if planned_v is not None else v))
        return self.new_reg(v)

    def parallel_copy(self, homes: list, values: list) -> None:
        """Copy values[i] into homes[i] all at once (a yield).  A copy runs only when no copy still to run reads the bytes (or register) it
        writes -- a value may sit in another value's home (computed in place over a carried tile:
        ``a, b = b, a + b``) -- and a cycle is broken by saving one source in a temporary first."""
        moves = []                          # [home, value, its location, saved copy or None]
        for h, v in zip(homes, values):
            src = self.val(v)
            if isinstance(src, Tile) and src == h or \
                    isinstance(h, Reg) and not isinstance(src, Tile) and str(src) == str(h):
                continue
            moves.append([h, v, src, None])
        while moves:
            k = next((k for k, m in enumerate(moves)
                      if not any(j != k and _clobbers(m[0], o[3] or o[2]) for j, o in enumerate(moves))), None)
            if k is None:                   # a cycle: the first copy waits for another's source
                o = next(o for o in moves[1:] if _clobbers(moves[0][0], o[3] or o[2]))
                src = o[2]
                if isinstance(src, Tile):
                    o[3] = self.temp_tile(src.dtype, src.shape, src.esize)
                    self.copy_tile(o[3], src)
                else:
                    o[3] = self.temp_reg()
                    self.emit(f"mov {o[3]}, {src}", "S")
                continue
            h, v, _, saved = moves.pop(k)
            if saved is None:
                self.copy_into(None, v, home=h)
            elif isinstance(h, Reg):
                self.emit(f"mov {h}, {saved}", "S")
            else:
                self.copy_tile(h, saved)

    def op_for(self, op) -> None:
        lb, ub, step, *inits = op.operands
        body = op.regions[0]
        iv, *iters = body.args
        homes = [self.carried_home(a) for a in iters]
        for a, r, h, init in zip(iters, op.results, homes, inits):
            self.define(a, h)
            self._carry_param(init, a, r)
        in_l0c = {i for i, h in enumerate(homes) if isinstance(h, Tile) and h.space == "l0c"}
        for i in in_l0c:        # the accumulator starts at zero in L0C: a product over k = 0
            if i not in self.an.l0c_continued.get(id(op), {}):      # (else it goes on in its tile)
                self.zero_l0c(homes[i], self.an.l0c_loops[id(op)][i][0])
        self.parallel_copy([h for i, h in enumerate(homes) if i not in in_l0c],
                           [v for i, v in enumerate(inits) if i not in in_l0c])
        ivr = self.new_reg(iv)
        self.define(iv, ivr)
        head = Instr(f"for {ivr}, {self.scalar(lb)}, {self.scalar(ub)}, {self.scalar(step)}", "S",
                     loc=op.loc)
        saved_op = op

        def inner():
            self.region(body.ops[:-1])
            self.op = body.ops[-1]
            self._check_params(iters, body.ops[-1].operands)
            self.parallel_copy(homes, body.ops[-1].operands)
        once = bool(op.attrs.get("one_trip"))      # (passes/one_program.py)
        loop = Loop(head, self.nested(inner), carry_flags=not once, programs=is_program_loop(op), one_trip=once)
        self.op = saved_op
        self.out.append(loop)
        for i, (r, h) in enumerate(zip(op.results, homes)):
            if i in in_l0c and self.an.home.get(id(r)) != "l0c":     # drained once, after the loop
                self.drain_l0c(h, self.out_tile(r))
            else:               # (an odd last trip after the loop accumulates on in L0C and drains)
                self.define(r, h)

    def _carry_param(self, src, *dsts) -> None:
        if src.type.scalar.is_ptr and id(src) in self.param_of:
            for d in dsts:
                self.param_of[id(d)] = self.param_of[id(src)]

    def _check_params(self, carried, values) -> None:
        """Every value a loop yields (a branch gives) for a carried pointer points into the argument
        that pointer was bound to: an instruction names one GM argument."""
        for c, v in zip(carried, values):
            a, b = self.param_of.get(id(c)), self.param_of.get(id(v))
            if c.type.scalar.is_ptr and a is not None and b is not None and a != b:
                self.fail(f"a pointer that may point into different kernel arguments (`{a}` or `{b}`: chosen "
                          "by a branch, or swapped in a loop as in `src, dst = dst, src`) is not supported on "
                          "the NPU: an instruction addresses one argument; branch around the loads and "
                          "stores of each argument instead")

    def _carry_param_later(self, src, *dsts) -> None:
        """Pointer results of a while take their parameter from the before-region (emitted first)."""
        self._later = getattr(self, "_later", [])
        self._later.append((src, dsts))

    def op_if(self, op) -> None:
        cond = self.scalar(op.operands[0])
        homes = [self.carried_home(r) for r in op.results]
        for r, h in zip(op.results, homes):
            self.define(r, h)

        def branch(region):
            self.region(region.ops[:-1])
            self.op = region.ops[-1]
            if region is op.regions[1]:
                self._check_params(op.regions[0].ops[-1].operands, region.ops[-1].operands)
            self.parallel_copy(homes, region.ops[-1].operands)
        test = [Instr(f"br.eq {cond}, 0, {{target}}", "S", loc=op.loc)]
        # the branch that runs an L1 panel's loop (passes/panel_reuse.py) keeps the id of the
        # panel's fence from the sync pass (not the branches around it: only there is it used)
        outer, self.panel_events = self.panel_events, set()
        then = self.nested(branch, op.regions[0])
        reserved, self.panel_events = panel_reserved(self.panel_events), set()
        orelse = self.nested(branch, op.regions[1])
        reserved_else, self.panel_events = panel_reserved(self.panel_events), outer
        for i, r in enumerate(op.results):
            self._carry_param(op.regions[0].ops[-1].operands[i], r)
        self.op = op
        self.out.append(If(test, then, orelse, reserved, reserved_else))

    def op_while(self, op) -> None:
        before, after = op.regions
        homes_in = [self.carried_home(a) for a in before.args]
        for a, h, init in zip(before.args, homes_in, op.operands):
            self.define(a, h)
            self._carry_param(init, a)
        cond_op = before.ops[-1]
        for v, a, r in zip(cond_op.operands[1:], after.args, op.results):
            self._carry_param_later(v, a, r)
        self.parallel_copy(homes_in, op.operands)
        homes_out = [self.carried_home(r) for r in op.results]
        for a, r, h in zip(after.args, op.results, homes_out):
            self.define(a, h)
            self.define(r, h)
        cond_reg = []

        def first():
            self.region(before.ops[:-1])
            term = before.ops[-1]
            for src, dsts in getattr(self, "_later", []):
                self._carry_param(src, *dsts)
            self.op = term
            self.parallel_copy(homes_out, term.operands[1:])
            cond_reg.append(self.scalar(term.operands[0]))

        def second():
            self.region(after.ops[:-1])
            self.op = after.ops[-1]
            self._check_params(before.args, after.ops[-1].operands)
            self.parallel_copy(homes_in, after.ops[-1].operands)
        b = self.nested(first)
        a = self.nested(second)
        self.op = op
        test = [Instr(f"br.eq {cond_reg[0]}, 0, {{target}}", "S", loc=op.loc)]
        self.out.append(While(b, test, a))

    def op_return(self, op) -> None:
        pass

    def op_yield(self, op) -> None:     # handled by the parent op
        pass
