"""Fuzz campaigns: random kernels checked across backends, or mutated NPU assembly.

    python bench/fuzz.py --minutes 20 --seed 0                  # kernels: npu / cpu / pass-off variants vs ref
    python bench/fuzz.py --minutes 10 --seed 0 --isa            # ISA mutants through assembler + simulator
    python bench/fuzz.py --count 500 --seed 1000 --variants -1  # every pass-off variant on each kernel

Prints the counts (kernels, mismatches, internal errors, per category and per generator feature)
and writes every failing case to ``--out`` (default: a new temporary folder) as a runnable script
``seed_<S>.py`` with its shrunk version ``seed_<S>_min.py``; ISA findings as ``isa_<N>_<kind>.s``
with the traceback in ``.txt``.  ``summary.json`` holds the figures.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time

from tritonpu.fuzz import isa as isa_fuzz
from tritonpu.fuzz.differential import check_case
from tritonpu.fuzz.generate import generate
from tritonpu.fuzz.shrink import shrink


def kernel_campaign(args, out) -> dict:
    counts, by_feature, failing_runs = collections.Counter(), collections.Counter(), collections.Counter()
    shrunk_signatures = collections.Counter()
    deadline = time.monotonic() + args.minutes * 60
    seed, n = args.seed, 0
    t0 = time.monotonic()
    while time.monotonic() < deadline and (args.count is None or n < args.count):
        case = generate(seed)
        v = check_case(case, n_variants=args.variants, timeout=args.timeout)
        n += 1
        counts["kernels"] += 1
        counts[v.status] += 1
        for cat in v.categories():
            counts["run:" + cat] += 1
        for feat in case.meta.get("feats") or ["plain"]:
            by_feature[feat if feat in FEATURES else "other"] += 1
        if v.status == "fail":
            for f in v.failures:
                failing_runs[f] += 1
            print(v.report().split("kernel:")[0].rstrip(), flush=True)
            with open(os.path.join(out, f"seed_{seed}.py"), "w") as fh:
                fh.write(case.file_text() + "\n# " + v.report().split("kernel:")[0].replace("\n", "\n# ") + "\n")
            first = next(o for o in v.outcomes if f"{o.category}:{o.run}" == v.failures[0])
            sig = (first.category, first.run)
            if not args.no_shrink and shrunk_signatures[sig] < 3:
                shrunk_signatures[sig] += 1
                small = shrink(case, first.run, first.category, budget=args.shrink_budget)
                with open(os.path.join(out, f"seed_{seed}_min.py"), "w") as fh:
                    fh.write(small.file_text())
                print(f"  shrunk to {len(small.source.splitlines())} lines: {out}/seed_{seed}_min.py", flush=True)
        if n % 100 == 0:
            print(f"[{time.monotonic() - t0:6.0f} s] {n} kernels: {dict(counts)}", flush=True)
        seed += 1
    return {"kernels": counts["kernels"], "ok": counts["ok"], "failing_kernels": counts["fail"],
            "rejected_by_frontend": counts["rejected"],
            "mismatches": sum(v for k, v in failing_runs.items() if k.startswith("mismatch")),
            "internal_errors": sum(v for k, v in failing_runs.items() if k.startswith("internal")),
            "errors": sum(v for k, v in failing_runs.items() if k.startswith("error")),
            "timeouts": sum(v for k, v in failing_runs.items() if k.startswith("timeout")),
            "runs_by_category": {k[4:]: v for k, v in counts.items() if k.startswith("run:")},
            "failing_runs": dict(failing_runs), "kernels_by_feature": dict(by_feature),
            "seeds": [args.seed, seed - 1], "seconds": round(time.monotonic() - t0, 1)}


FEATURES = ("reduce", "scan", "loop", "if", "rand", "dot", "atomic")


def isa_campaign(args, out) -> dict:
    seeds = isa_fuzz.corpus(range(args.corpus_kernels))
    counts, by_seed = collections.Counter(), collections.Counter()
    seen = {}
    t0 = time.monotonic()

    def on_result(r):
        counts["mutants"] += 1
        counts[r.category] += 1
        if r.category in isa_fuzz.FINDINGS:
            by_seed[r.seed] += 1
            i = counts["findings_written"] = counts["findings_written"] + 1
            base = os.path.join(out, f"isa_{i}_{r.category}")
            with open(base + ".s", "w") as fh:
                fh.write(r.text)
            with open(base + ".txt", "w") as fh:
                fh.write(f"corpus program: {r.seed}\n{r.detail}\n")
            key = (r.category, r.detail.strip().splitlines()[-1][:120] if r.detail.strip() else "")
            if key not in seen:
                seen[key] = base + ".s"
                print(f"{r.category}: {key[1]}  ({base}.s)", flush=True)
        if counts["mutants"] % 5000 == 0:
            print(f"[{time.monotonic() - t0:6.0f} s] {counts['mutants']} mutants: "
                  f"{ {k: v for k, v in counts.items() if k != 'findings_written'} }", flush=True)

    isa_fuzz.fuzz_isa(args.count or 10 ** 9, seed=args.seed, seeds=seeds, timeout=args.timeout,
                      deadline=time.monotonic() + args.minutes * 60, on_result=on_result)
    return {"mutants": counts["mutants"], "ok": counts["ok"], "rejected": counts["rejected"],
            "tracebacks": counts["traceback"], "wrapped_python_errors": counts["wrapped"], "hangs": counts["hang"],
            "corpus": [s.name for s in seeds], "distinct_findings": {f"{k[0]}: {k[1]}": p for k, p in seen.items()},
            "seconds": round(time.monotonic() - t0, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=0, help="first seed (kernels) / random stream (ISA)")
    ap.add_argument("--count", type=int, default=None, help="stop after this many kernels / mutants")
    ap.add_argument("--isa", action="store_true", help="mutate NPU assembly instead of generating kernels")
    ap.add_argument("--variants", type=int, default=3,
                    help="pass-off / core-count NPU variants per kernel (-1: all)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per run (default 60; ISA 5)")
    ap.add_argument("--corpus-kernels", type=int, default=16, help="generated kernels in the ISA corpus")
    ap.add_argument("--out", default=None, help="folder for failing cases (default: a new temporary one)")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--shrink-budget", type=float, default=120.0, help="seconds per shrink")
    args = ap.parse_args(argv)
    if args.timeout is None:
        args.timeout = 5.0 if args.isa else 60.0
    out = args.out or tempfile.mkdtemp(prefix="tritonpu-fuzz-out-")
    os.makedirs(out, exist_ok=True)
    os.environ.setdefault("TRITONPU_CACHE_DIR", os.path.join(out, "cache"))
    print(f"writing failing cases to {out}", flush=True)
    summary = isa_campaign(args, out) if args.isa else kernel_campaign(args, out)
    summary["command"] = " ".join(["python", "bench/fuzz.py"] + (argv if argv is not None else sys.argv[1:]))
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=1)
    print(json.dumps(summary, indent=1))
    bad = summary.get("failing_kernels", 0) + summary.get("tracebacks", 0) + summary.get("hangs", 0) \
        + summary.get("wrapped_python_errors", 0)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
