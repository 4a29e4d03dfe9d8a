"""``tritonpu asm``: print canonical assembly, run a standalone program, print the ISA reference.

    tritonpu asm FILE.s                      canonical text
    tritonpu asm FILE.s --run [--trace out.json] [--grid N[,M[,K]]] [--machine ascend910b]
                              [--cores N] [--arg NAME=VALUE ...] [--dump] [--save DIR]
                              [--no-sanitize]
    tritonpu asm --reference                 the ISA reference (REFERENCE.md)

Assembly and sanitizer errors print a clean message (no traceback) and exit with status 1.
"""
from __future__ import annotations

import os
import sys

import numpy as np


def add_asm_command(subparsers):
    p = subparsers.add_parser("asm", help="assemble / run / profile virtual-NPU assembly",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("file", nargs="?", help="assembly file (.s)")
    p.add_argument("--run", action="store_true", help="run the program and print the profile")
    p.add_argument("--trace", metavar="OUT.json", help="write a Chrome trace-event timeline")
    p.add_argument("--grid", default=None, help="grid N[,M[,K]] (default: .grid or 1)")
    p.add_argument("--machine", default="ascend910b")
    p.add_argument("--cores", type=int, default=None, help="number of cores to use")
    p.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE",
                   help="scalar parameter value (repeatable)")
    p.add_argument("--dump", action="store_true", help="print the GM buffers after the run")
    p.add_argument("--save", metavar="DIR", help="save the GM buffers as DIR/NAME.npy")
    p.add_argument("--no-sanitize", action="store_true", help="skip the sanitizer's checks")
    p.add_argument("--reference", action="store_true", help="print the ISA reference")
    p.set_defaults(func=run_asm_command)
    return p


def _parse_grid(s):
    try:
        g = tuple(int(x) for x in s.split(","))
    except ValueError:
        raise SystemExit(f"tritonpu asm: bad --grid {s!r} (expected N[,M[,K]])") from None
    return g


def _parse_value(s):
    try:
        return int(s, 0)
    except ValueError:
        return float(s)


def run_asm_command(args) -> int:
    from tritonpu.isa import reference_markdown

    from . import AsmError, NpuError, assemble

    out, err = sys.stdout, sys.stderr
    if args.reference:
        out.write(reference_markdown())
        return 0
    if not args.file:
        err.write("tritonpu asm: give an assembly file (or --reference)\n")
        return 2
    try:
        with open(args.file) as f:
            text = f.read()
    except OSError as e:
        err.write(f"tritonpu asm: {e}\n")
        return 1
    try:
        prog = assemble(text, filename=args.file)
    except AsmError as e:
        err.write(str(e) + "\n")
        return 1
    if not args.run:
        out.write(prog.text())
        return 0
    grid = _parse_grid(args.grid) if args.grid else (prog.grid or (1,))
    kwargs = {}
    for a in args.arg:
        if "=" not in a:
            err.write(f"tritonpu asm: --arg takes NAME=VALUE, got {a!r}\n")
            return 2
        k, v = a.split("=", 1)
        kwargs[k] = _parse_value(v)
    from .launch import launch
    try:
        stats = launch(prog, kwargs, grid=grid, machine=args.machine,
                       sanitize=not args.no_sanitize, trace=bool(args.trace), cores=args.cores,
                       base_dir=os.path.dirname(os.path.abspath(args.file)))
    except NpuError as e:
        err.write(str(e) + "\n")
        return 1
    except KeyError as e:
        err.write(f"tritonpu asm: {e.args[0]}\n")
        return 1
    out.write(f"cycles: {stats.cycles}\n")
    out.write(stats.profile_table() + "\n")
    if args.trace:
        stats.write_trace(args.trace)
        out.write(f"trace written to {args.trace}\n")
    if args.dump:
        with np.printoptions(threshold=64, edgeitems=4, linewidth=100):
            for name, a in stats.gm.items():
                out.write(f"{name} {a.dtype} {list(a.shape)}:\n{a}\n")
    if args.save:
        os.makedirs(args.save, exist_ok=True)
        for name, a in stats.gm.items():
            np.save(os.path.join(args.save, f"{name}.npy"), a)
    return 0
