"""The instruction table: every instruction of the virtual NPU, defined once, as data.

Each :class:`Instruction` row says how the instruction is written (mnemonic, type suffixes,
operands and keyword options), which pipe runs it, which cost rule prices it, which semantic
family implements it (``impl`` + ``op``) and what it does, in one line.  The assembler checks
operands against the row, the interpreter dispatches on ``impl``/``op``, the cycle model on
``cost``, and ``REFERENCE.md`` is generated from it; tests fail when a row lacks any of them.

Operand kinds
    ``rd``      scalar register written (``s0``..``s63``)
    ``val``     value: immediate (int or float), register, or ``reg+imm`` / ``name+imm``
    ``label``   a label name
    ``pipe``    pipe name (S V M MTE1 MTE2 MTE3 FIX); ``pipe|all`` also accepts ``all``
    ``event``   event id, immediate 0..7
    ``axis``    grid axis 0..2 (immediate)
    ``str``     the name of a text constant declared by ``.string NAME "text"``
    memory      ``SPACE:MODE`` with SPACE in ub l1 l0a l0b l0c gm (``ub|gm``: either) and MODE
                ``r``/``w``/``rw``; written ``ub[addr]``, ``ub[addr, row_stride]``,
                ``ub[addr, row_stride, col_stride]`` (strides in elements, vector operands only)
                or ``PARAM[addr]`` for GM (byte offset into the parameter's array)
A trailing ``?`` makes an operand optional.  Type slots: ``T``/``U`` name one element type from
``tritonpu.dtypes`` restricted to the slot's set; a trailing ``?`` makes the suffix optional.
"""
from __future__ import annotations

from dataclasses import dataclass

# ---- element-type sets for type slots -------------------------------------------------------
FLOAT = ("f16", "bf16", "f32", "f64")
INT = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
NUM = FLOAT + INT
ALL = NUM + ("i1",)
TYPESETS = {
    "F": FLOAT, "I": INT, "N": NUM, "A": ALL,
    "ACC": ("f32", "i32"), "CUBE": ("f16", "bf16", "f32", "i8"),
}

# ---- cost rules (key -> the rule, in words; the cycle model implements each key) ------------
COST_RULES = {
    "scalar": "1 cycle on the scalar unit (the issue cycle).",
    "scalar_mem": "1 cycle; a GM access adds the preset's scalar_gm_latency (200) to the scalar unit.",
    "control": "1 cycle on the scalar unit; taken or not.",
    "sync": "1 cycle on the pipe it is issued into (set_flag: SRC, wait_flag: DST, barrier: that pipe "
            "or every pipe); wait_flag starts no earlier than the matching set_flag fired; a "
            "set_flag fires no earlier than SRC's transfers have landed, and a barrier waits for "
            "them too.",
    "vector": "rows * ceil(cols*elem_bytes/256) repeats, 1 cycle each (elem_bytes: the widest operand type).",
    "vector_slow": "rows * ceil(cols*elem_bytes/256) repeats, 2 cycles each.",
    "vector_reduce": "rows * ceil(cols*elem_bytes/256) repeats + ceil(log2(n)) steps, n the reduced "
                     "length (cols for axis=1, rows for axis=0).",
    "transfer": "path latency + sum over segments of 32 B beats (GM side: the 32 B granules the "
                "segment touches; on chip: ceil(bytes/32)) at the path rate, total rounded up; GM "
                "reads: a 512 B line not read before in the launch comes whole from DDR -- its "
                "16 beats at 32 B/cycle, whatever part of it the transfer reads (those beats come "
                "with it, once) -- and every other beat (in a line read before, or read again by "
                "a later segment of the transfer) from L2 at 110 B/cycle; so every distinct line "
                "costs its 512 B at the DDR rate once per launch, and the roofline's read bound "
                "is a lower bound. "
                "The latency is pipelined: the pipe is busy only for the rest (the beats, at "
                "least 1 cycle) and takes its next instruction then, while the data lands "
                "latency cycles later (a single transfer still completes after the whole cost; "
                "back-to-back transfers on one pipe overlap their latencies).  A transfer that reads "
                "no GM byte (no segments, or valid= 0: only pad is written) takes 1 cycle and has "
                "no latency.",
    "gather": "as transfer, one segment per row (masked-off rows move nothing); it reads its "
              "indices (and mask) at its start, so it starts no earlier than the transfers of "
              "its own pipe that write them have landed.",
    "mmad": "ceil(m/16) * ceil(n/16) * ceil(k/K0) cycles, K0 = 16 f16/bf16, 8 f32, 32 i8; "
            "m*k*n MACs count for the roofline.",
}


@dataclass(frozen=True)
class Instruction:
    """One row of the table."""

    name: str            # mnemonic without type suffixes: "vadd", "mov.gm.ub", "vcmp.lt"
    types: tuple         # type slots: ("N",), ("A", "A"), ("A?",) ...
    operands: tuple      # ((name, kind), ...)
    options: tuple       # ((name, kind, default), ...) keyword options name=value
    pipe: str            # S V M MTE1 MTE2 MTE3 FIX, or "src"/"dst"/"arg" (sync: named by operand)
    cost: str            # key of COST_RULES
    impl: str            # semantic family implemented by the interpreter
    op: str              # the operation inside the family
    doc: str             # semantics in one line
    group: str

    def syntax(self) -> str:
        """The instruction's syntax line for documentation."""
        m = self.name + "".join(
            (f"[.{t[:-1]}]" if t.endswith("?") else f".{t}") for t in self._slot_names())
        ops = []
        for n, k in self.operands:
            ops.append(f"[{n}]" if k.endswith("?") else n)
        for n, k, d in self.options:
            ops.append(f"[{n}={d}]")
        return (m + " " + ", ".join(ops)).strip()

    def _slot_names(self):
        names = ["T", "U"] if len(self.types) == 1 else ["U", "T"]
        return [names[i] + ("?" if t.endswith("?") else "") for i, t in enumerate(self.types)]

    def type_sets(self) -> list:
        return [(TYPESETS[t.rstrip("?")], t.endswith("?")) for t in self.types]


INSTRUCTIONS: dict[str, Instruction] = {}


def _add(name, types, operands, pipe, cost, impl, op, doc, group, options=()):
    assert name not in INSTRUCTIONS, name
    assert cost in COST_RULES, cost
    INSTRUCTIONS[name] = Instruction(name, tuple(types), tuple(operands), tuple(options), pipe,
                                     cost, impl, op, doc, group)


# ================================ scalar unit ================================================
_S3 = (("d", "rd"), ("a", "val"), ("b", "val"))
_add("mov", (), (("d", "rd"), ("a", "val")), "S", "scalar", "smov", "mov",
     "d = a (int or float)", "scalar")
for _op, _doc in [("add", "a + b"), ("sub", "a - b"), ("mul", "a * b"),
                  ("div", "a / b truncated toward zero (C); x/0 = 0"),
                  ("rem", "a % b with the sign of a (C); x%0 = 0"),
                  ("and", "a & b"), ("or", "a | b"), ("xor", "a ^ b"),
                  ("shl", "a << b"), ("shr", "a >> b (arithmetic)"),
                  ("min", "min(a, b)"), ("max", "max(a, b)")]:
    _add(_op, ("I?",), _S3, "S", "scalar", "sint", _op,
         f"d = {_doc}, int64 wrapping; with T, then wrapped to T (as a following cvt.T would)", "scalar")
for _op, _doc in [("fadd", "a + b"), ("fsub", "a - b"), ("fmul", "a * b"), ("fdiv", "a / b"),
                  ("fmin", "min(a, b), the non-NaN operand if one is NaN (minnum)"),
                  ("fmax", "max(a, b), the non-NaN operand if one is NaN (maxnum)")]:
    _add(_op, (), _S3, "S", "scalar", "sfloat", _op[1:], f"d = {_doc} in float64", "scalar")
for _op in ("neg", "abs", "sqrt", "exp", "log", "floor", "ceil"):
    _add("f" + _op, (), (("d", "rd"), ("a", "val")), "S", "scalar", "sfunary", _op,
         f"d = {_op}(a) in float64", "scalar")
_add("ffma", ("F",), (("d", "rd"), ("a", "val"), ("b", "val"), ("c", "val")), "S", "scalar", "sfma",
     "fma", "d = a * b + c rounded once to T (f64: twice)", "scalar")
_add("itof", (), (("d", "rd"), ("a", "val")), "S", "scalar", "sconv", "itof",
     "d = float(a)", "scalar")
_add("ftoi", (), (("d", "rd"), ("a", "val")), "S", "scalar", "sconv", "ftoi",
     "d = int(a) truncated toward zero (C)", "scalar")
_add("cvt", ("N",), (("d", "rd"), ("a", "val")), "S", "scalar", "sconv", "cvt",
     "d = a rounded/wrapped to element type T (as a store and load of T would)", "scalar")
for _c, _sym in [("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">=")]:
    _add("cmp." + _c, (), _S3, "S", "scalar", "scmp", _c, f"d = 1 if a {_sym} b else 0 (ints)", "scalar")
    _add("fcmp." + _c, (), _S3, "S", "scalar", "scmp", _c, f"d = 1 if a {_sym} b else 0 (floats)",
         "scalar")
_add("sel", (), (("d", "rd"), ("c", "val"), ("a", "val"), ("b", "val")), "S", "scalar", "ssel",
     "sel", "d = a if c != 0 else b", "scalar")
_add("block_idx", (), (("d", "rd"), ("axis", "axis?")), "S", "scalar", "sgrid", "idx",
     "d = the program id (linear x + gx*(y + gy*z) without axis; that axis' coordinate with one)",
     "scalar")
_add("block_num", (), (("d", "rd"), ("axis", "axis?")), "S", "scalar", "sgrid", "num",
     "d = the number of programs (all, or along axis)", "scalar")
_add("set_program", (), (("a", "val"),), "S", "scalar", "sprog", "set",
     "from here the core runs grid program a (a linear id) of a persistent loop: the sanitizer's GM race "
     "check and error messages name that program (block_idx is unchanged)", "scalar")
_add("sld", ("A",), (("d", "rd"), ("src", "ub|gm:r")), "S", "scalar_mem", "smem", "ld",
     "d = the T element at src (naturally aligned)", "scalar")
_add("sst", ("A",), (("dst", "ub|gm:w"), ("a", "val")), "S", "scalar_mem", "smem", "st",
     "store a as a T element at dst (ints wrap, floats round)", "scalar")
for _op, _doc in [("add", "mem += v"), ("max", "mem = max(mem, v)"), ("min", "mem = min(mem, v)"),
                  ("xchg", "mem = v")]:
    _add("satomic." + _op, ("N",), (("d", "rd"), ("dst", "gm:rw"), ("v", "val")), "S",
         "scalar_mem", "satomic", _op, f"atomically d = old T value at dst; {_doc}", "scalar")
_add("satomic.cas", ("N",), (("d", "rd"), ("dst", "gm:rw"), ("cmp", "val"), ("v", "val")), "S",
     "scalar_mem", "satomic", "cas", "atomically d = old; if old == cmp: mem = v", "scalar")

# ================================ control ====================================================
_add("jmp", (), (("target", "label"),), "S", "control", "ctrl", "jmp", "jump to target", "control")
for _c, _sym in [("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">=")]:
    _add("br." + _c, (), (("a", "val"), ("b", "val"), ("target", "label")), "S", "control", "ctrl",
         _c, f"jump to target if a {_sym} b", "control")
_add("for", (), (("i", "rd"), ("start", "val"), ("end", "val"), ("step", "val")), "S", "control",
     "ctrl", "for", "i = start; run the body up to the matching endfor while i < end (step > 0) or "
     "i > end (step < 0); end and step are read once", "control")
_add("endfor", (), (), "S", "control", "ctrl", "endfor",
     "i += step; back to the body of the matching for while the condition holds", "control")
_add("exit", (), (), "S", "control", "ctrl", "exit", "end this program", "control")
_add("nop", (), (), "S", "control", "ctrl", "nop", "do nothing", "control")

# ================================ sync =======================================================
_add("set_flag", (), (("src", "pipe"), ("dst", "pipe"), ("event", "event")), "src", "sync", "sync",
     "set", "issued into pipe src: fires event (src, dst, event) when src's earlier work is done",
     "sync")
_add("wait_flag", (), (("src", "pipe"), ("dst", "pipe"), ("event", "event")), "dst", "sync",
     "sync", "wait", "pipe dst starts nothing later before event (src, dst, event) fired; "
     "consumes it", "sync")
_add("barrier", (), (("pipe", "pipe|all"),), "arg", "sync", "sync", "barrier",
     "pipe: later instructions of that pipe wait for its earlier ones; all: every pipe and the "
     "scalar unit wait until every earlier instruction is done", "sync")

# ================================ vector =====================================================
_V = (("dst", "ub:w"),)
_VO = (("rows", "val", 1),)
_BIN = [("add", "N", "a + b"), ("sub", "N", "a - b"), ("mul", "N", "a * b"),
        ("div", "N", "a / b (ints: truncated toward zero, x/0 = 0)"),
        ("max", "N", "max(a, b) (floats: maxnum, the non-NaN operand if one is NaN)"),
        ("min", "N", "min(a, b) (floats: minnum, the non-NaN operand if one is NaN)"),
        ("and", "I", "a & b"), ("or", "I", "a | b"), ("xor", "I", "a ^ b"),
        ("shl", "I", "a << b"), ("shr", "I", "a >> b (arithmetic for signed)"),
        ("rem", "N", "C remainder (sign of a; fmod for floats; x%0 = 0)"),
        ("floordiv", "N", "ints: a / b truncated toward zero (C); floats: floor(a / b)"),
        ("pow", "F", "a ** b (C powf)")]
for _op, _ts, _doc in _BIN:
    _cost = "vector_slow" if _op in ("div", "pow") else "vector"
    _add("v" + _op, (_ts,), _V + (("a", "ub:r"), ("b", "ub:r"), ("cols", "val")), "V", _cost,
         "vbinary", _op, f"dst[r, c] = {_doc}, for r < rows, c < cols", "vector", _VO)
    _add("v" + _op + "s", (_ts,), _V + (("a", "ub:r"), ("s", "val"), ("cols", "val")), "V", _cost,
         "vscalar", _op, f"as v{_op} with b replaced by scalar s (register or immediate, taken as a value of T)",
         "vector", _VO)
_add("vfma", ("F",), _V + (("a", "ub:r"), ("b", "ub:r"), ("c", "ub:r"), ("cols", "val")), "V",
     "vector", "vfma", "fma", "dst[r, c] = a * b + c, rounded once (f64: twice)", "vector", _VO)
_add("vrsubs", ("N",), _V + (("a", "ub:r"), ("s", "val"), ("cols", "val")), "V", "vector",
     "vscalar", "rsub", "dst[r, c] = s - a[r, c]", "vector", _VO)
_add("vrdivs", ("N",), _V + (("a", "ub:r"), ("s", "val"), ("cols", "val")), "V", "vector_slow",
     "vscalar", "rdiv", "dst[r, c] = s / a[r, c]", "vector", _VO)
_UN = [("exp", "F"), ("exp2", "F"), ("log", "F"), ("log2", "F"), ("sqrt", "F"), ("rsqrt", "F"),
       ("abs", "N"), ("neg", "N"), ("sin", "F"), ("cos", "F"), ("floor", "F"), ("ceil", "F"),
       ("erf", "F"), ("recip", "F"), ("tanh", "F"), ("sigmoid", "F"), ("not", "I"),
       ("asin", "F"), ("acos", "F"), ("atan", "F"), ("tan", "F"), ("sinh", "F"), ("cosh", "F"),
       ("log1p", "F"), ("expm1", "F"), ("log10", "F"), ("rint", "F"),
       ("relu", "N"), ("mov", "A")]
_SLOW = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf", "recip", "tanh",
         "sigmoid", "asin", "acos", "atan", "tan", "sinh", "cosh", "log1p", "expm1", "log10"}
for _op, _ts in _UN:
    _doc = {"recip": "1 / a", "rsqrt": "1 / sqrt(a)", "not": "~a (bitwise)", "neg": "-a",
            "mov": "a (copy; a stride of 0 broadcasts)", "relu": "max(a, 0)",
            "sigmoid": "1 / (1 + exp(-a))"}.get(_op, f"{_op}(a)")
    _add("v" + _op, (_ts,), _V + (("a", "ub:r"), ("cols", "val")), "V",
         "vector_slow" if _op in _SLOW else "vector", "vunary", _op,
         f"dst[r, c] = {_doc}", "vector", _VO)
for _c, _sym in [("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">=")]:
    _add("vcmp." + _c, ("N",), _V + (("a", "ub:r"), ("b", "ub:r"), ("cols", "val")), "V", "vector",
         "vcmp", _c, f"dst (u8 mask) [r, c] = a {_sym} b ? 1 : 0", "vector", _VO)
    _add("vcmps." + _c, ("N",), _V + (("a", "ub:r"), ("s", "val"), ("cols", "val")), "V", "vector",
         "vcmp", _c, f"dst (u8 mask) [r, c] = a {_sym} s ? 1 : 0 with scalar s", "vector", _VO)
_add("vsel", ("A",), _V + (("mask", "ub:r"), ("a", "ub:r"), ("b", "ub:r"), ("cols", "val")), "V",
     "vector", "vsel", "sel", "dst[r, c] = a if mask (u8) != 0 else b", "vector", _VO)
_add("vsels", ("A",), _V + (("mask", "ub:r"), ("a", "ub:r"), ("s", "val"), ("cols", "val")), "V",
     "vector", "vsel", "sels", "dst[r, c] = a if mask (u8) != 0 else scalar s", "vector", _VO)
_add("vcast", ("A", "A"), _V + (("a", "ub:r"), ("cols", "val")), "V", "vector", "vcast", "cast",
     "dst (type U) = a (type T): floats round to nearest even, float->int truncates toward zero "
     "and saturates (NaN -> 0), ints wrap, ->i1 is a != 0", "vector", _VO)
_add("vdup", ("A",), _V + (("s", "val"), ("cols", "val")), "V", "vector", "vfill", "dup",
     "dst[r, c] = scalar s", "vector", _VO)
_add("varange", ("N",), _V + (("start", "val"), ("cols", "val")), "V", "vector", "vfill", "arange",
     "dst[r, c] = start + c", "vector", _VO)
for _op, _doc in [("sum", "sum"), ("max", "max (floats: NaNs ignored unless all are NaN)"),
                  ("min", "min (floats: NaNs ignored unless all are NaN)"),
                  ("argmax", "index (i32) of the first max"), ("argmin", "index (i32) of the first min")]:
    _add("vreduce." + _op, ("N",), _V + (("a", "ub:r"), ("cols", "val")), "V", "vector_reduce",
         "vreduce", _op, f"axis=1: dst[r] = {_doc} of a[r, :cols]; axis=0: dst[c] = {_doc} of "
         "a[:rows, c]", "vector", _VO + (("axis", "val", 1),))
for _op in ("cumsum", "cumprod"):
    _add("v" + _op, ("N",), _V + (("a", "ub:r"), ("cols", "val")), "V", "vector_reduce", "vscan", _op,
         f"dst = {_op} of a along axis (1: within each row, 0: down columns); reverse=1: from the "
         "last element to the first (dst[i] = the {_op[3:]} of a[i:])", "vector",
         _VO + (("axis", "val", 1), ("reverse", "val", 0)))
_add("vtranspose", ("A",), _V + (("a", "ub:r"), ("cols", "val")), "V", "vector", "vtranspose",
     "transpose", "dst[c, r] = a[r, c] (dst is cols x rows)", "vector", _VO)

# ================================ transfers ==================================================
_DESC = (("nseg", "val"), ("seg_bytes", "val"), ("src_stride", "val"), ("dst_stride", "val"))
_PAD = (("valid", "val", "seg_bytes"), ("pad", "val", "none"))
_add("mov.gm.ub", ("A?",), (("dst", "ub:w"), ("src", "gm:r")) + _DESC, "MTE2", "transfer",
     "xfer", "gm->ub", "copy nseg segments of seg_bytes, strides between segment starts in bytes; "
     "with valid=: read valid bytes per segment and fill the rest with pad (type T)", "transfer", _PAD)
_add("mov.gm.l1", ("A?",), (("dst", "l1:w"), ("src", "gm:r")) + _DESC, "MTE2", "transfer", "xfer",
     "gm->l1", "as mov.gm.ub, into L1", "transfer", _PAD)
_add("mov.l1.l0a", ("A?",), (("dst", "l0a:w"), ("src", "l1:r")) + _DESC, "MTE1", "transfer", "xfer",
     "l1->l0a", "copy segments L1 -> L0A; transpose=1 (needs T): segments are rows of T, written "
     "transposed (dst row j at dst + j*dst_stride)", "transfer", (("transpose", "val", 0),))
_add("mov.l1.l0b", ("A?",), (("dst", "l0b:w"), ("src", "l1:r")) + _DESC, "MTE1", "transfer", "xfer",
     "l1->l0b", "copy segments L1 -> L0B; transpose=1 as mov.l1.l0a", "transfer",
     (("transpose", "val", 0),))
_add("mov.l0c.gm", ("A", "ACC"), (("dst", "gm:w"), ("src", "l0c:r")) + _DESC, "FIX", "transfer",
     "xfer", "l0c->gm", "FIX: convert T (f32/i32) segments to U and write GM; seg_bytes and "
     "src_stride count L0C bytes, dst_stride GM bytes; atomic=add|max|min", "transfer",
     (("atomic", "none", "none"),))
_add("mov.l0c.ub", ("A", "ACC"), (("dst", "ub:w"), ("src", "l0c:r")) + _DESC, "FIX", "transfer",
     "xfer", "l0c->ub", "FIX: as mov.l0c.gm, into UB; scale=s (f32 sources) multiplies each element by "
     "the f32 scalar s (rounded once, as vmuls.f32) before the conversion", "transfer",
     (("scale", "val", "none"),))
_add("mov.ub.gm", ("A?",), (("dst", "gm:w"), ("src", "ub:r")) + _DESC, "MTE3", "transfer", "xfer",
     "ub->gm", "copy segments UB -> GM; atomic=add|max|min (needs T) read-modify-writes GM",
     "transfer", (("atomic", "none", "none"),))
_add("mov.ub.l1", ("A?",), (("dst", "l1:w"), ("src", "ub:r")) + _DESC, "MTE3", "transfer", "xfer",
     "ub->l1", "copy segments UB -> L1 (on MTE3)", "transfer")
_add("mov.ub.ub", ("A?",), (("dst", "ub:w"), ("src", "ub:r")) + _DESC, "V", "transfer", "xfer",
     "ub->ub", "copy segments UB -> UB (on the vector pipe)", "transfer")
_GD = (("nrows", "val"), ("row_bytes", "val"), ("row_stride", "val"))
_GATHER_OPTS = (("idx", "none", "i32"), ("mask", "ub:r", "none"), ("pad", "val", "none"),
                ("valid", "val", "row_bytes"), ("nseg", "val", 1), ("seg_stride", "val", 0),
                ("dst_seg_stride", "val", 0))
_add("gather.gm.ub", ("A?",), (("dst", "ub:w"), ("base", "gm:r"), ("idx", "ub:r")) + _GD
     + (("dst_stride", "val"),), "MTE2", "gather", "gather", "gather",
     "row i (< nrows): row_bytes from base + idx[i]*row_stride to dst + i*dst_stride; idx=i32|i64; "
     "mask= (u8 per row) skips rows, filled with pad (type T) if given; valid= reads only the first "
     "valid bytes of each row and fills the rest with pad; nseg= moves nseg such segments per row, "
     "segment r from seg_stride*r further in GM to dst_seg_stride*r further (a gather of columns: "
     "idx picks the columns, the segments are the rows)", "transfer", _GATHER_OPTS)
_add("gather.gm.l1", ("A?",), (("dst", "l1:w"), ("base", "gm:r"), ("idx", "ub:r")) + _GD
     + (("dst_stride", "val"),), "MTE2", "gather", "gather", "gather",
     "as gather.gm.ub, into L1 (rows of a dot operand picked by an index vector)", "transfer", _GATHER_OPTS)
_add("scatter.ub.gm", ("A?",), (("base", "gm:w"), ("src", "ub:r"), ("idx", "ub:r")) + _GD
     + (("src_stride", "val"),), "MTE3", "gather", "gather", "scatter",
     "row i: row_bytes from src + i*src_stride to base + idx[i]*row_stride; mask= skips rows; "
     "atomic=add|max|min (needs T)", "transfer",
     (("idx", "none", "i32"), ("mask", "ub:r", "none"), ("atomic", "none", "none")))

# ================================ cube =======================================================
_add("mmad", ("ACC", "CUBE"), (("c", "l0c:rw"), ("a", "l0a:r"), ("b", "l0b:r"), ("m", "val"),
                                ("k", "val"), ("n", "val")), "M", "mmad", "mmad", "mmad",
     "C[m, n] (U) = (init ? 0 : C) + A[m, k] @ B[k, n] (T): for each K0-wide chunk of k its exact "
     "sum added to C with one f32 rounding (i32: exact, wrapping); row-major, row strides default "
     "A: ceil(k, 32 B/|T|) B, C: ceil(n, 16) elements; init= 0/1 or a register", "cube",
     (("init", "val", 1),))

# ================================ debug ======================================================
_DBG = "appends to this core's print line (started by 'pid (x, y, z) ' and NAME's text; later " \
       "values follow after one space); last=1 prints the line to stdout and clears it"
_add("dbg.print", ("A",), (("name", "str"), ("src", "ub:r"), ("cols", "val")), "S", "scalar",
     "dbg", "print", "device_print: the dense row-major T tile at src (rank=0: one element; 1: "
     "cols elements; 2: rows x cols), formatted as str(numpy_array.tolist()) (i1: bytes as bool); "
     + _DBG, "debug", (("rows", "val", 1), ("rank", "val", 1), ("last", "val", 1)))
_add("dbg.prints", ("A",), (("name", "str"), ("val", "val")), "S", "scalar", "dbg", "prints",
     "device_print of scalar val converted to T (as cvt), formatted as str(T(val).tolist()); "
     + _DBG, "debug", (("last", "val", 1),))
_add("dbg.assert", (), (("name", "str"), ("src", "ub:r"), ("cols", "val")), "S", "scalar", "dbg",
     "assert", "device_assert: if any of the rows x cols dense u8 mask bytes at src is 0, the "
     "launch fails with an assertion error 'device_assert failed: ' + NAME's text", "debug",
     (("rows", "val", 1),))
_add("dbg.asserts", (), (("name", "str"), ("val", "val")), "S", "scalar", "dbg", "asserts",
     "device_assert of a scalar: fails as dbg.assert when val == 0", "debug")


def mnemonic_index() -> dict:
    """Map each mnemonic (without type suffixes) to its row; the assembler's lookup table."""
    return INSTRUCTIONS
