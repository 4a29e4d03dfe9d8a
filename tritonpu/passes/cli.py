"""``tritonpu opt FILE.ir``: run a pass pipeline on IR text alone, as MLIR's ``*-opt`` tools do."""
from __future__ import annotations

import sys

from tritonpu.ir import IRParseError, VerifyError, parse_module, print_function, verify


def add_opt_command(sub) -> None:
    from tritonpu.passes import DEFAULT_PIPELINE, PASSES
    p = sub.add_parser("opt", help="run passes on dataflow IR text and print the result",
                       description="Parse IR text (as printed by --emit-ir), verify it, run a pass pipeline "
                                   "and print the IR. Passes: " + ", ".join(sorted(PASSES)) +
                                   f". Default pipeline: {','.join(DEFAULT_PIPELINE)}.")
    p.add_argument("file", help="IR text file, or - for standard input")
    p.add_argument("--passes", default="default", help="comma-separated pass names, or 'default'")
    p.add_argument("--print-ir-after", metavar="all|PASS[,PASS]", help="print the IR after these passes")
    p.set_defaults(func=opt_command)


def opt_command(args) -> int:
    from tritonpu.passes import PassError, PassManager, parse_pipeline
    try:
        text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()
    except (OSError, UnicodeDecodeError) as e:
        print(f"tritonpu opt: cannot read {args.file}: {e}", file=sys.stderr)
        return 1
    try:
        fns = parse_module(text)
        for fn in fns:
            verify(fn)
        for fn in fns:
            pm = PassManager(parse_pipeline(args.passes), print_after=args.print_ir_after)
            pm.run(fn)
            for name, dump in pm.dumps:
                print(f"// ---- IR after {name} ----")
                print(dump, end="")
            if not pm.dumps or pm.dumps[-1][0] != pm.pipeline[-1]:
                print(print_function(fn), end="")
    except (IRParseError, VerifyError, PassError) as e:
        print(f"tritonpu opt: {args.file}: {e}", file=sys.stderr)
        return 1
    return 0
