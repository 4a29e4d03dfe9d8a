"""Machine presets: the numbers the cycle model uses, defined once.

``MACHINES["ascend910b"]`` carries exactly the numbers of DESIGN.md §5.  A few behaviours §5
does not fix (UB→L1 and UB→UB copies, scalar GM access) have values chosen here and are marked
*assumption* in :attr:`Machine.notes`; add other presets beside this one rather than editing it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

KiB = 1024
MiB = 1024 * KiB

#: Pipe names as written in assembly, in a fixed order (the index is the pipe's number).
PIPES = ("S", "MTE2", "MTE1", "M", "FIX", "V", "MTE3")
#: Name of each pipe in statistics (``stats.pipe_busy``), same order as :data:`PIPES`.
PIPE_STAT_NAMES = ("scalar", "mte2", "mte1", "cube", "fix", "vector", "mte3")
#: Long names for documentation.
PIPE_DOC = {
    "S": "scalar unit: issues every instruction in program order, runs scalar/control ones",
    "MTE2": "memory transfer engine 2: GM → UB, GM → L1",
    "MTE1": "memory transfer engine 1: L1 → L0A, L1 → L0B",
    "M": "cube unit: matrix multiply-accumulate L0A × L0B → L0C",
    "FIX": "fixpipe: L0C → GM, L0C → UB with dtype conversion",
    "V": "vector unit: elementwise, reductions, casts on UB; UB → UB copies",
    "MTE3": "memory transfer engine 3: UB → GM, UB → L1",
}

#: On-chip memory spaces (GM is the caller's arrays, named by kernel parameters).
SPACES = ("ub", "l1", "l0a", "l0b", "l0c")


@dataclass(frozen=True)
class Path:
    """One transfer path: the pipe that runs it, fixed latency and streaming rate."""

    pipe: str
    latency: int
    bytes_per_cycle: float | None   # None: GM reads, rate from the L2 model (DDR or L2 hit)
    note: str = ""


@dataclass(frozen=True)
class Machine:
    """A machine preset. Rates are bytes per cycle per core."""

    name: str
    cores: int
    clock_ghz: float
    capacity: dict          # space -> bytes per core
    align: dict             # space -> required address alignment in bytes
    beat_bytes: int         # transfers move 32 B bus beats
    l2_line_bytes: int      # first-touch granularity of the L2 model
    l2_bytes: int
    ddr_bytes_per_cycle: float
    l2_bytes_per_cycle: float
    paths: dict             # "gm->ub" ... -> Path
    cube_m0: int
    cube_n0: int
    cube_k0: dict           # input dtype -> K per cycle (16 f16/bf16, 8 f32, 32 i8)
    vector_repeat_bytes: int
    vector_slow_cycles: int     # cycles per repeat of the instructions whose cost rule is vector_slow
    scalar_cycles: int
    sync_cycles: int
    event_ids: int
    scalar_gm_latency: int
    notes: tuple = field(default=())

    def macs_per_cycle(self, in_dtype: str) -> int:
        return self.cube_m0 * self.cube_n0 * self.cube_k0[in_dtype]

    def path(self, name: str) -> Path:
        return self.paths[name]


ASCEND910B = Machine(
    name="ascend910b",
    cores=24,
    clock_ghz=1.8,
    capacity={"ub": 192 * KiB, "l1": 512 * KiB, "l0a": 64 * KiB, "l0b": 64 * KiB,
              "l0c": 128 * KiB},
    align={"ub": 32, "l1": 32, "l0a": 512, "l0b": 512, "l0c": 64},
    beat_bytes=32,
    l2_line_bytes=512,
    l2_bytes=192 * MiB,
    ddr_bytes_per_cycle=32,
    l2_bytes_per_cycle=110,
    paths={
        "gm->ub": Path("MTE2", 200, None, "DDR 32 B/cycle on first touch of a 512 B line, else L2 110 B/cycle"),
        "gm->l1": Path("MTE2", 200, None, "DDR 32 B/cycle on first touch of a 512 B line, else L2 110 B/cycle"),
        "l1->l0a": Path("MTE1", 20, 512),
        "l1->l0b": Path("MTE1", 20, 256),
        "l0c->gm": Path("FIX", 100, 256),
        "l0c->ub": Path("FIX", 0, 256),
        "ub->gm": Path("MTE3", 100, 64),
        "ub->l1": Path("MTE3", 20, 64, "assumption: MTE3 rate, on-chip latency as MTE1"),
        "ub->ub": Path("V", 0, 256, "assumption: a vector copy, 256 B per cycle"),
    },
    cube_m0=16,
    cube_n0=16,
    cube_k0={"f16": 16, "bf16": 16, "f32": 8, "i8": 32},
    vector_repeat_bytes=256,
    vector_slow_cycles=2,
    scalar_cycles=1,
    sync_cycles=1,
    event_ids=8,
    scalar_gm_latency=200,
    notes=(
        "UB->L1 runs on MTE3 at 64 B/cycle with 20 cycles latency (assumption; §5 is silent).",
        "UB->UB runs on the vector pipe at 256 B/cycle, no latency (assumption).",
        "Scalar loads/stores/atomics on GM take 200 cycles on the scalar unit (assumption).",
        "vexp2, vlog2, vsin, vcos, verf, vtanh, vsigmoid, vpow, vasin, vacos, vatan, vtan, vsinh, vcosh, vlog1p, vexpm1, vlog10 cost like vexp (assumption; §5 lists exp, log, sqrt, rsqrt, div, reciprocal).",
        "L2 has no eviction: 192 MiB is larger than any simulated working set.",
    ),
)

MACHINES: dict[str, Machine] = {ASCEND910B.name: ASCEND910B}


def machine(name_or_machine) -> Machine:
    """Look up a preset by name (or pass a :class:`Machine` through)."""
    if isinstance(name_or_machine, Machine):
        return name_or_machine
    try:
        return MACHINES[name_or_machine]
    except KeyError:
        raise KeyError(f"unknown machine {name_or_machine!r}; presets: {sorted(MACHINES)}") from None
