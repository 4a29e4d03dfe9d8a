"""``tritonpu run FILE.py``: run a kernel script and show what each kernel it compiles became."""
from __future__ import annotations

import os
import runpy
import sys

from tritonpu.errors import TritonpuError
from tritonpu.runtime import hooks


def add_run_command(sub) -> None:
    p = sub.add_parser("run", help="run a Python file that launches kernels, printing the stages asked for",
                       description="Run FILE.py as a script (its __name__ is '__main__'). For each kernel "
                                   "specialization it compiles, print the stages asked for.")
    p.add_argument("file", help="the Python script to run")
    p.add_argument("--emit-ir", action="store_true", help="print the dataflow IR from the frontend")
    p.add_argument("--emit-llvm", action="store_true",
                   help="print the optimised LLVM IR of each kernel the cpu backend compiles (once per kernel)")
    p.add_argument("--check", action="store_true",
                   help="precision check: rerun every launch on a baseline backend (cpu, or ref when checking cpu) "
                        "and report the max abs/rel error of each output (sets TRITONPU_CHECK)")
    p.add_argument("--print-ir-after", metavar="PASS", default=None,
                   help="print the IR after the named NPU compiler passes (comma-separated) or 'all' "
                        "(passes: " + ", ".join(_npu_passes()) + ")")
    p.add_argument("--emit-isa", action="store_true", help="print the NPU assembly of each kernel (once per kernel)")
    p.add_argument("--profile", nargs="?", const="pipes", default=None, choices=["pipes", "source", "all"],
                   help="print the virtual NPU's profile of every launch: cycles, pipes, bytes, roofline and "
                        "the bottleneck report (--profile); --profile=source: the source-line profile "
                        "instead; --profile=all: both")
    p.add_argument("--report", metavar="OUT.html",
                   help="write a self-contained HTML report of each NPU launch (timeline, source profile, "
                        "roofline, bottleneck report); further launches go to OUT-2.html, OUT-3.html, ...")
    p.add_argument("--timeline", metavar="OUT.png",
                   help="write a PNG timeline of each NPU launch (needs matplotlib: tritonpu[plot])")
    p.add_argument("--csv", metavar="DIR",
                   help="write msprof-style CSVs of each NPU launch under DIR (DIR/1, DIR/2, ... per launch)")
    p.add_argument("--no-double-buffer", action="store_true",
                   help="compile NPU kernels without double buffering (to compare cycles; sets "
                        "TRITONPU_DOUBLE_BUFFER=0)")
    p.add_argument("--no-sanitize", action="store_true",
                   help="run the virtual NPU without the race/bounds sanitizer (faster)")
    p.add_argument("--backend", choices=["ref", "cpu", "npu"],
                   help="run every launch on this backend (sets TRITONPU_BACKEND)")
    p.add_argument("script_args", nargs="*", help="arguments passed to the script (after --)")
    p.set_defaults(func=run_command)


def _npu_passes():
    from tritonpu.codegen.pipeline import NPU_PIPELINE
    return NPU_PIPELINE


def _printer(args):
    def on_compile(jitfn, kernel):
        if args.emit_ir:
            print(f"// ---- {kernel.name}: ir ----")
            print(kernel.asm["ir"], end="", flush=True)
    return on_compile


def _launch_printer(args):
    shown = set()

    def on_launch(jitfn, handle):
        kernel = handle.kernel
        first = kernel.key not in shown
        shown.add(kernel.key)
        if getattr(args, "emit_llvm", False) and kernel.asm.get("llvm") and first:
            print(f"// ---- {kernel.name}: llvm ----")
            print(kernel.asm["llvm"], end="", flush=True)
        if first and args.print_ir_after and handle.backend == "npu":
            wanted = _npu_passes() if args.print_ir_after == "all" else \
                [p.strip() for p in args.print_ir_after.split(",") if p.strip()]
            for name in wanted:
                if name in kernel.asm:
                    print(f"// ---- {kernel.name}: ir after {name} ----")
                    print(kernel.asm[name], end="", flush=True)
        if first and args.emit_isa and kernel.asm.get("isa"):
            print(f"// ---- {kernel.name}: isa ----")
            print(kernel.asm["isa"], end="", flush=True)
        stats = handle.stats
        if stats is None or not hasattr(stats, "profile_table"):
            return
        launches[0] += 1
        n = launches[0]
        if args.profile in ("pipes", "all"):
            print(f"// ---- {kernel.name}: profile, grid {handle.grid} ----")
            print(stats.profile_table(), flush=True)
            print(stats.advice(), flush=True)
        if args.profile in ("source", "all"):
            print(f"// ---- {kernel.name}: source profile, grid {handle.grid} ----")
            print(stats.source_profile(), flush=True)
        outputs = []
        if getattr(args, "report", None):
            outputs.append(("--report", "report", _numbered(args.report, n), stats.write_html))
        if getattr(args, "timeline", None):
            outputs.append(("--timeline", "timeline", _numbered(args.timeline, n), stats.plot_timeline))
        if getattr(args, "csv", None):
            outputs.append(("--csv", "CSVs", os.path.join(args.csv, str(n)), stats.write_csv))
        for flag, what, path, write in outputs:
            try:
                write(path)
            except OSError as e:                    # the script goes on; the file is not there
                print(f"tritonpu run: {flag}: cannot write {path}: {e.strerror or e}", file=sys.stderr, flush=True)
                continue
            print(f"// {kernel.name}: {what} written to {path}", flush=True)
    launches = [0]
    return on_launch


def run_script(file: str) -> int:
    """Run ``file`` as ``__main__`` (``tritonpu run`` and ``tritonpu tune``); its exit code. What stops
    it is reported as Python would, without the runner's frames: a tritonpu error in one message, a
    ``sys.exit("message")`` by its message, any other exception by the script's own traceback."""
    try:
        runpy.run_path(file, run_name="__main__")
    except TritonpuError as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(e.code, file=sys.stderr)
        return 1
    except Exception as e:
        print(_script_traceback(e, file), end="", file=sys.stderr)
        return 1
    return 0


def _unwritable(path: str, is_dir: bool) -> str | None:
    """Why ``path`` (a file, or a folder made if missing) cannot be written, checked before the
    script runs -- not after its first launch has been simulated; None when it can."""
    target = os.path.abspath(path) if is_dir else os.path.dirname(os.path.abspath(path))
    probe = target
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        return f"{probe} is not a folder"
    if not os.access(probe, os.W_OK):
        return f"{probe} is not writable"
    if not is_dir and probe != target:
        return f"no such folder {target}"
    return None


def _script_traceback(e: BaseException, file: str) -> str:
    """The traceback of an exception the script raised, from the script's own first frame on (the
    runner's frames -- runpy, this module -- left out); a syntax error as Python reports it."""
    import traceback
    tb, mine = e.__traceback__, os.path.abspath(file)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != mine:
        tb = tb.tb_next
    if tb is None:
        return "".join(traceback.format_exception_only(type(e), e))
    return "".join(traceback.format_exception(type(e), e, tb))


def _numbered(path: str, n: int) -> str:
    """``out.html`` for the first launch, ``out-2.html``, ``out-3.html``, ... for the next ones."""
    if n == 1:
        return path
    root, ext = os.path.splitext(path)
    return f"{root}-{n}{ext}"


def run_command(args) -> int:
    if not os.path.isfile(args.file):
        print(f"tritonpu run: no such file: {args.file}", file=sys.stderr)
        return 2
    if args.backend:
        os.environ["TRITONPU_BACKEND"] = args.backend
    if args.print_ir_after and args.print_ir_after != "all":
        unknown = [p for p in args.print_ir_after.split(",") if p.strip() and p.strip() not in _npu_passes()]
        if unknown:
            print(f"tritonpu run: --print-ir-after: unknown pass {unknown[0]!r}; passes: "
                  f"{', '.join(_npu_passes())}", file=sys.stderr)
            return 2
    wanted = [f"--{name}" for name in ("profile", "report", "timeline", "csv") if getattr(args, name, None)]
    if wanted and args.backend in ("cpu", "ref"):
        print(f"tritonpu run: {', '.join(wanted)} show the virtual NPU's cycle profile; --backend {args.backend} "
              "has none (leave --backend out, or use --backend npu)", file=sys.stderr)
        return 2
    for flag, path, is_dir in (("--report", args.report, False), ("--timeline", args.timeline, False),
                               ("--csv", args.csv, True)):
        problem = _unwritable(path, is_dir) if path else None
        if problem:
            print(f"tritonpu run: {flag}: cannot write {path}: {problem}", file=sys.stderr)
            return 2
    if args.timeline:
        from tritonpu.profile.plot import pyplot
        try:
            pyplot()
        except ImportError as e:
            print(f"tritonpu run: --timeline: {e}", file=sys.stderr)
            return 2
    saved_trace = os.environ.get("TRITONPU_TRACE")
    if args.profile in ("source", "all") or args.report or args.timeline or args.csv:
        os.environ["TRITONPU_TRACE"] = "1"          # the launches record their timelines
    if args.no_sanitize:
        os.environ["TRITONPU_SANITIZE"] = "0"
    if args.no_double_buffer:
        os.environ["TRITONPU_DOUBLE_BUFFER"] = "0"
    if getattr(args, "check", False):
        os.environ["TRITONPU_CHECK"] = "1"
    listener = _printer(args)
    hooks.add_listener(listener)
    launch_listener = _launch_printer(args)
    hooks.add_launch_listener(launch_listener)
    saved_argv = sys.argv
    sys.argv = [args.file] + list(args.script_args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.file)))
    try:
        return run_script(args.file)
    finally:
        if saved_trace is None:
            os.environ.pop("TRITONPU_TRACE", None)
        else:
            os.environ["TRITONPU_TRACE"] = saved_trace
        sys.argv = saved_argv
        hooks.remove_listener(listener)
        hooks.remove_launch_listener(launch_listener)
    return 0
