"""Per-instruction interpreter overhead of the virtual NPU (wall-clock; never part of the tests).

Runs loops of one instruction kind (10 copies per iteration) and prints the wall time per
executed instruction, with the sanitizer on and off, then one summary line.

    python bench/npu_dispatch.py [--iters N]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from tritonpu.npu import assemble

CASES = {
    "scalar add": "add s1, s1, 1",
    "branch not taken": "br.lt s1, -1, done",
    "vadd.f32 64 elems (static)": "vadd.f32 ub[0], ub[256], ub[512], 64",
    "vadd.f32 64 elems (reg addr)": "vadd.f32 ub[s2], ub[s2+256], ub[s2+512], 64",
    "vexp.f32 4x256 elems": "vexp.f32 ub[4096], ub[4096], 256, rows=4",
    "vreduce.max.f32 4x256": "vreduce.max.f32 ub[0], ub[4096], 256, rows=4",
    "mov.gm.ub 256 B": "mov.gm.ub ub[8192], x[s3], 1, 256, 0, 0",
    "mov.ub.gm 256 B": "mov.ub.gm x[s3], ub[16384], 1, 256, 0, 0",
    "mmad 16x16x16 f16": "mmad.f32.f16 l0c[0], l0a[0], l0b[0], 16, 16, 16",
    "set_flag+wait_flag": "set_flag MTE2, V, 0\n    wait_flag MTE2, V, 0",
}


def program(line, n):
    body = "\n".join(["    " + line] * 10)
    return f""".param x gm f32
    mov s2, 0
    mov s3, 0
    for s0, 0, {n}, 1
{body}
    endfor
done:
"""


def measure(line, n, sanitize, reps=3):
    prog = assemble(program(line, n))
    x = np.zeros(1 << 16, np.float32)
    best = None
    for _ in range(reps):
        t0 = time.perf_counter()
        st = prog.run({"x": x}, sanitize=sanitize)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    executed = sum(st.instr_count.values())
    return best / executed * 1e6, executed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iters", type=int, default=2000)
    args = ap.parse_args()
    print(f"{'instruction (10 per loop iteration)':<34}{'us/instr sanitize=on':>22}"
          f"{'us/instr off':>14}{'executed':>10}")
    ons, offs = [], []
    for name, line in CASES.items():
        on, n = measure(line, args.iters, True)
        off, _ = measure(line, args.iters, False)
        ons.append(on)
        offs.append(off)
        print(f"{name:<34}{on:>22.2f}{off:>14.2f}{n:>10}")
    print(f"summary: median per-instruction overhead {statistics.median(offs):.2f} us "
          f"(sanitizer off), {statistics.median(ons):.2f} us (on); "
          f"max {max(offs):.2f} / {max(ons):.2f} us")


if __name__ == "__main__":
    main()
