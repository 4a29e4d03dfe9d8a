"""ISA mutation fuzzer: mutated ``.s`` programs through the assembler and the simulator.

The corpus is the hand-written examples in ``isa/examples`` and the assembly the compiler emits
for a few generated kernels (``h.asm["isa"]``), each with the arguments and grid it ran with.  A
mutant is one to three edits of a program's text — a line deleted, duplicated, swapped or taken
from another program, a number replaced by an edge value (0, -1, 2^31, 2^63, 1e38, inf, nan, ...),
a register, opcode, memory space, pipe or type suffix replaced by another, a token dropped, a
character inserted.  Running a mutant may end in only three ways:

* ``ok``: it assembled and ran (its arguments bound by name from the recipe, made up otherwise);
* ``rejected``: a tritonpu error — an :class:`~tritonpu.npu.AsmError` from the assembler, an
  :class:`~tritonpu.npu.NpuError` from the simulator (sanitizer findings, launch errors,
  the step limit), or a :class:`~tritonpu.errors.TritonpuError`;

and anything else is a finding: ``traceback`` (a raw Python exception), ``wrapped`` (a launch
error that only wraps a Python exception the simulator did not anticipate) or ``hang`` (no end
within the time bound; the simulator's own step limit is set low, ``max_steps``).
"""
from __future__ import annotations

import contextlib
import glob
import os
import random
import re
import signal
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field

import numpy as np

from tritonpu.errors import TritonpuError

EDGE_NUMBERS = ("0", "1", "-1", "2", "3", "7", "15", "16", "31", "32", "33", "63", "64", "255", "256", "511",
                "4096", "65535", "65536", "2147483647", "2147483648", "-2147483648", "4294967296",
                "9223372036854775807", "18446744073709551616", "10000000000", "-0.0", "0.5", "1e38",
                "3.5e38", "inf", "-inf", "nan", "1e-45", "0x7fffffff", "0xffffffff")
PYTHON_ERRORS = re.compile(r"^(?:launch: )?(KeyError|IndexError|TypeError|AttributeError|ValueError|"
                           r"AssertionError|ZeroDivisionError|OverflowError|RecursionError|MemoryError|"
                           r"NameError|UnboundLocalError|NotImplementedError|StopIteration|RuntimeError)\b")
FINDINGS = ("traceback", "wrapped", "hang")


@dataclass
class Seed:
    """A valid program and how to run it: arrays and scalars by parameter name, the grid."""
    name: str
    text: str
    args: dict = field(default_factory=dict)
    grid: tuple = (1,)


@dataclass
class MutantResult:
    seed: str
    text: str
    category: str           # ok | rejected | traceback | wrapped | hang
    detail: str = ""
    seconds: float = 0.0


# ---------------------------------------------------------------------------------- corpus
def example_seeds() -> list:
    """The hand-written programs of ``isa/examples`` (they declare their own ``.gm`` data)."""
    from tritonpu.isa import EXAMPLES_DIR
    out = []
    for path in sorted(glob.glob(os.path.join(str(EXAMPLES_DIR), "*.s"))):
        with open(path) as fh:
            out.append(Seed(os.path.basename(path), fh.read()))
    return out


@contextlib.contextmanager
def _recording_launches(log: list):
    """Record ``(program, args, grid)`` of every NPU launch made inside the block."""
    from tritonpu.npu.program import Program
    real = Program.run

    def run(self, args, grid=(1,), **kw):
        log.append((self, {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}, grid))
        return real(self, args, grid=grid, **kw)
    Program.run = run
    try:
        yield
    finally:
        Program.run = real


def compiled_seeds(kernel_seeds=range(8)) -> list:
    """The assembly the compiler emits for generated kernels, with their launch arguments."""
    from .differential import load_kernel
    from .generate import generate, make_args
    out = []
    for s in kernel_seeds:
        case = generate(s)
        log: list = []
        try:
            kern = load_kernel(case)
            arrays, scalars, consts, _, grid = make_args(case.meta)
            with _recording_launches(log):
                h = kern[grid](*arrays, *scalars, **consts, backend="npu")
        except TritonpuError:
            continue
        if log:
            prog, args, g = log[-1]
            out.append(Seed(f"kernel-{s}", h.asm["isa"], args, tuple(g)))
    return out


def corpus(kernel_seeds=range(8)) -> list:
    return example_seeds() + compiled_seeds(kernel_seeds)


# ---------------------------------------------------------------------------------- mutations
_TOKEN = re.compile(r"-?0x[0-9a-fA-F]+|-?\d+\.?\d*(?:e-?\d+)?|[A-Za-z_][\w.]*")


def _opcodes() -> list:
    from tritonpu.isa import INSTRUCTIONS
    return sorted(INSTRUCTIONS)


def mutate(text: str, rng: random.Random, donors: list) -> str:
    """One to three random edits of ``text`` (``donors``: other programs' texts, for lines)."""
    lines = text.split("\n")
    for _ in range(rng.choice((1, 1, 2, 3))):
        if not lines:
            lines = [""]
        i = rng.randrange(len(lines))
        k = rng.random()
        if k < 0.10:
            del lines[i]
        elif k < 0.17:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif k < 0.22:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif k < 0.30:
            donor = rng.choice(donors).split("\n")
            lines.insert(i, rng.choice(donor))
        else:
            lines[i] = _mutate_line(lines[i], rng, k)
    return "\n".join(lines)


def _mutate_line(line: str, rng: random.Random, k: float) -> str:
    toks = list(_TOKEN.finditer(line))
    if not toks:
        return line + rng.choice((" 0", " s1", ",", " ub[0]"))
    t = rng.choice(toks)
    word = t.group()
    if k < 0.62:                                   # numbers -> edge values
        nums = [m for m in toks if re.fullmatch(r"-?(0x)?[\d.a-fA-F]+(e-?\d+)?", m.group()) and m.group()[0] in "-0123456789"]
        if nums:
            t = rng.choice(nums)
        new = rng.choice(EDGE_NUMBERS)
    elif k < 0.72 and re.fullmatch(r"s\d+", word):
        new = f"s{rng.choice((0, 1, 2, 5, 31, 62, 63, 64, 255, 1000))}"
    elif k < 0.82:
        pool = (_opcodes() + ["ub", "l1", "l0a", "l0b", "l0c", "S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX",
                              "f32", "f16", "i32", "i8", "u8", "i16", "bf16", "zeros", "random", "arange"])
        new = rng.choice(pool)
        if "." in word and rng.random() < 0.5:   # keep or change one suffix of a mnemonic
            parts = word.split(".")
            parts[rng.randrange(len(parts))] = rng.choice(("f32", "f16", "i32", "u8", "gm", "ub", "l1", "atomic", "x"))
            new = ".".join(parts)
    elif k < 0.90:
        new = ""
    else:
        pos = rng.randrange(len(line) + 1)
        return line[:pos] + rng.choice("[](),=-.\"#:;{}x0") + line[pos:]
    return line[:t.start()] + new + line[t.end():]


# ---------------------------------------------------------------------------------- running
class _Hang(BaseException):
    """Raised by the alarm; a BaseException so that no ``except Exception`` in the simulator
    mistakes it for the program's own failure."""


def _alarm(*_):
    raise _Hang()


def _bind(prog, seed: Seed) -> dict:
    """Arguments for every parameter the (mutated) program declares: the recipe's when the name
    and dtype match, else made up (a small zero array, the scalar 1)."""
    from tritonpu.dtypes import SCALARS
    args = {}
    for p in prog.params:
        v = seed.args.get(p.name)
        if p.kind == "gm":
            if p.declared_by == ".gm":
                continue
            dt = SCALARS[p.dtype].np if p.dtype in SCALARS else np.uint8
            if isinstance(v, np.ndarray) and v.dtype == dt:
                args[p.name] = v.copy()
            else:
                args[p.name] = np.zeros(4096, dt)
        else:
            args[p.name] = v if v is not None and not isinstance(v, np.ndarray) else 1
    return args


def run_mutant(text: str, seed: Seed, timeout: float = 5.0, max_steps: int = 100_000,
               sanitize: bool = True) -> MutantResult:
    """Assemble and run one program; classify how it ended (see the module docstring)."""
    from tritonpu.npu import AsmError, NpuError, assemble
    from tritonpu.npu.launch import launch
    t0 = time.perf_counter()
    timed = threading.current_thread() is threading.main_thread()
    if timed:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    cat, detail = "ok", ""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            prog = assemble(text, f"{seed.name}.s")
            launch(prog, _bind(prog, seed), grid=seed.grid if seed.args else (prog.grid or (1,)),
                   sanitize=sanitize, max_steps=max_steps)
    except _Hang:
        cat, detail = "hang", f"no end within {timeout} s"
    except (AsmError, NpuError, TritonpuError) as e:
        msg = getattr(e, "message", str(e))
        if PYTHON_ERRORS.match(msg or ""):
            cause = e.__cause__
            tb = traceback.format_exception(type(cause), cause, cause.__traceback__) if cause else []
            cat, detail = "wrapped", f"{type(e).__name__}: {msg}\n" + "".join(tb[-6:])
        else:
            cat, detail = "rejected", f"{type(e).__name__}: {(msg or '').splitlines()[0][:200] if msg else ''}"
    except Exception as e:          # noqa: BLE001 - the finding this fuzzer looks for
        tb = traceback.format_exception(type(e), e, e.__traceback__)
        cat, detail = "traceback", "".join(tb[-8:])
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    return MutantResult(seed.name, text, cat, detail, time.perf_counter() - t0)


def fuzz_isa(count: int, seed: int = 0, seeds=None, timeout: float = 5.0, deadline: float | None = None,
             on_result=None) -> list:
    """Run ``count`` mutants (or until ``deadline``, a ``time.monotonic()`` value); returns every
    result whose category is a finding, and calls ``on_result(result)`` for each mutant."""
    seeds = seeds if seeds is not None else corpus()
    donors = [s.text for s in seeds]
    rng = random.Random(seed)
    findings = []
    for i in range(count):
        if deadline is not None and time.monotonic() > deadline:
            break
        s = seeds[rng.randrange(len(seeds))]
        text = mutate(s.text, rng, donors)
        r = run_mutant(text, s, timeout=timeout, sanitize=rng.random() < 0.7)
        if on_result:
            on_result(r)
        if r.category in FINDINGS:
            findings.append(r)
    return findings
