"""The ``tritonpu`` command line.

Each stage that has a command registers it here through a small ``add_*_command(subparsers)``
function in its own package, so this file stays a table of subcommands.
"""
from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tritonpu",
        description="Triton-style kernels on a virtual Ascend-class NPU: compile, run, profile.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    from tritonpu.runtime.cli import add_run_command
    add_run_command(sub)
    from tritonpu.runtime.tune_cli import add_tune_command
    add_tune_command(sub)
    from tritonpu.passes.cli import add_opt_command
    add_opt_command(sub)
    try:
        from tritonpu.npu.cli import add_asm_command
    except ImportError:  # the virtual NPU is optional while it is being built
        add_asm_command = None
    if add_asm_command is not None:
        add_asm_command(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
