"""Generate ``REFERENCE.md`` from the instruction table and the presets.

``python -m tritonpu.isa.reference > isa/REFERENCE.md`` (or ``tritonpu asm --reference``)
writes it; a test fails when the committed file differs from what this module produces.
"""
from __future__ import annotations

from .instructions import COST_RULES, INSTRUCTIONS, TYPESETS
from .machines import MACHINES, PIPE_DOC, PIPES

_GROUPS = [("scalar", "Scalar unit"), ("control", "Control flow"), ("sync", "Synchronisation"),
           ("vector", "Vector unit"), ("transfer", "Transfers"), ("cube", "Cube"),
           ("debug", "Debug")]

_SYNTAX = """\
## Assembly syntax

One statement per line: an optional `label:`, then a directive or an instruction; comments run
from `//`, `;` or `#` to the end of the line. An instruction is
`mnemonic[.T[.U]] operand, operand, ..., key=value, ... [loc("file.py":LINE:COL)]`; type
suffixes follow operand order (destination type first: `vcast.f16.f32` makes f16 from f32).

Directives:

| directive | meaning |
|---|---|
| `.kernel NAME` | the kernel's name |
| `.param NAME gm DTYPE` | a GM tensor bound at launch to a numpy array; operands `NAME[addr]` address it in bytes |
| `.param NAME DTYPE [init=V]` | a scalar argument; `NAME` reads it wherever a value goes |
| `.gm NAME DTYPE [d0, d1, ...] [init=zeros\\|ones\\|arange\\|random\\|[v, ...]\\|"file.npy"] [seed=N]` | a GM tensor a standalone run creates when the caller passes none (random: seeded normal floats / ints in [-8, 8)) |
| `.buffer NAME SPACE ADDR SIZE` | names an on-chip region: `ub[NAME]`, `ub[NAME+64]` |
| `.reg NAME sN` | an alias for a scalar register |
| `.grid X [Y [Z]]` | the default grid of a standalone run |
| `.string NAME "text"` | a text constant for `dbg.print`, `dbg.prints`, `dbg.assert`, `dbg.asserts` (no `"` or newline inside) |

Operands: scalar registers `s0`..`s63` (64-bit ints or floats); values are immediates
(`12`, `0x40`, `-1.5`, `inf`, `nan`), registers, named scalars, or sums such as `s3+64`,
`buf+s3-32` (at most one register, added). Memory operands are `ub[addr]`, `l1[addr]`,
`l0a[addr]`, `l0b[addr]`, `l0c[addr]` (byte addresses) and `PARAM[addr]` for GM (bytes from the
start of the parameter's array). Vector and cube operands may add strides in elements:
`ub[addr, row_stride]` or `ub[addr, row_stride, col_stride]` (row stride 0 repeats one row on
every row; column stride 0 gives a per-row scalar, as `x - rowmax[:, None]`). The row stride
defaults to `cols` (dense), the column stride to 1. `cols` and `rows` may be registers: elements
past them are not touched (the mask of a ragged tail).

Cube layout: `mmad` reads A (m×k) from L0A and B (k×n) from L0B, row-major; A's rows are
`ceil(k, K0)` elements apart (K0 = 32 bytes of T: 16 f16/bf16, 8 f32, 32 i8), B's and C's rows
`ceil(n, 16)` elements apart unless the operands give other row strides; C (m×n, f32/i32) is in
L0C. Only the logical m, k, n elements are read or written; cost counts 16×16×K0 fractals.

Example:

```
.kernel scale
.param x gm f32
.param n i32
    block_idx s0
    mul s1, s0, 4096                    // byte offset of this program's tile
    mov.gm.ub ub[0], x[s1], 1, 4096, 0, 0
    set_flag MTE2, V, 0
    wait_flag MTE2, V, 0
    vmuls.f32 ub[0], ub[0], 2.0, 1024
    set_flag V, MTE3, 0
    wait_flag V, MTE3, 0
    mov.ub.gm x[s1], ub[0], 1, 4096, 0, 0
```

## Simulation

Instructions execute functionally in program order; timing is computed alongside. The scalar
unit issues one instruction per cycle in program order; an instruction on pipe P starts at
max(its issue cycle, the end of P's previous instruction) and — for `wait_flag` — the cycle its
flag fired; `barrier all` waits for every pipe. Each pipe is in order; pipes overlap. A
transfer's fixed path latency is pipelined: the transfer holds its pipe only for its beats (its
cost minus the latency, at least 1 cycle), so the pipe starts its next instruction then, while
the data lands `latency` cycles later. A single transfer still completes its whole cost after it
starts, but back-to-back transfers on one pipe overlap their latencies, and a pipe's busy cycles
exclude them. `set_flag P, Q` fires at the later of its own end and the landing of P's last
transfer; `barrier P` and `barrier all` also wait for the landings; a gather waits for its
own pipe's transfers that write its indices to land. A core's cycles are when its last pipe
finishes or its last transfer lands; a launch takes as long as its slowest core. Grid programs
go round-robin over the cores (program p on core p mod cores); a core runs its programs in turn,
its pipe clocks, flags and on-chip memory carry over from one program to the next.
"""


def _types(ins) -> str:
    out = []
    for t in ins.types:
        names = TYPESETS[t.rstrip("?")]
        out.append(("optional " if t.endswith("?") else "") + (t.rstrip("?") if len(names) > 4
                                                               else "/".join(names)))
    return ", ".join(out) or "—"


def reference_markdown() -> str:
    lines = ["# tritonpu virtual NPU — ISA reference", "",
             "Generated from `isa/instructions.py` and `isa/machines.py` by `isa/reference.py`; "
             "do not edit by hand (`tritonpu asm --reference > isa/REFERENCE.md`).", ""]
    lines += ["## Pipes", "", "| pipe | runs |", "|---|---|"]
    lines += [f"| `{p}` | {PIPE_DOC[p]} |" for p in PIPES]
    lines += ["", "Type sets: " + "; ".join(f"`{k}` = {', '.join(v)}" for k, v in TYPESETS.items())
              + ".", ""]
    for name, m in MACHINES.items():
        lines += [f"## Machine `{name}`", "", "| part | value |", "|---|---|",
                  f"| cores | {m.cores} |", f"| clock | {m.clock_ghz} GHz |"]
        lines += [f"| {s.upper()} capacity / alignment | {m.capacity[s] // 1024} KiB / {m.align[s]} B |"
                  for s in m.capacity]
        lines += [f"| GM reads | {m.l2_line_bytes} B lines: first touch in a launch from DDR at "
                  f"{m.ddr_bytes_per_cycle} B/cycle, again from L2 ({m.l2_bytes >> 20} MiB) at "
                  f"{m.l2_bytes_per_cycle} B/cycle; {m.beat_bytes} B beats |"]
        for pname, p in m.paths.items():
            rate = "L2 model" if p.bytes_per_cycle is None else f"{p.bytes_per_cycle} B/cycle"
            lines.append(f"| {pname} | pipe {p.pipe}, {p.latency} cycles latency, {rate}"
                         + (f" ({p.note})" if p.note else "") + " |")
        lines += [f"| cube | 16×16×K0 MACs per cycle, K0: "
                  + ", ".join(f"{k} {v}" for k, v in m.cube_k0.items()) + " |",
                  f"| vector | {m.vector_repeat_bytes} B per repeat, 1 cycle; "
                  f"{m.vector_slow_cycles} cycles for " + ", ".join(sorted(i.name for i in INSTRUCTIONS.values()
                                                            if i.cost == "vector_slow")) + " |",
                  f"| scalar / sync | {m.scalar_cycles} / {m.sync_cycles} cycle; {m.event_ids} "
                  "event ids per ordered pipe pair |",
                  f"| scalar GM access | {m.scalar_gm_latency} cycles |", ""]
        lines += [f"- {n}" for n in m.notes] + [""]
    lines += ["## Cost rules", "", "| rule | cycles |", "|---|---|"]
    lines += [f"| `{k}` | {v} |" for k, v in COST_RULES.items()]
    lines += ["", _SYNTAX]
    for group, title in _GROUPS:
        lines += [f"## {title}", "", "| syntax | types | pipe | cost | semantics |",
                  "|---|---|---|---|---|"]
        for ins in INSTRUCTIONS.values():
            if ins.group != group:
                continue
            lines.append(f"| `{ins.syntax()}` | {_types(ins)} | {ins.pipe} | `{ins.cost}` | "
                         f"{ins.doc.replace('|', chr(92) + '|')} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    import sys
    sys.stdout.write(reference_markdown())
