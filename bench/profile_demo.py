"""The profile's advice applied: Triton's tutorial matmul (bench/cube.py), 768^3 fp16 -> fp32.

    python bench/profile_demo.py [--docs]      # --docs: write docs/profile_report.png, docs/profile_timeline.png

Before: 128x128x64 blocks, 36 programs on 24 cores; the bottleneck report says "36 programs on 24
cores: 2 rounds, the last one 12/24 full — caps efficiency at 0.75; a grid of 24 or 48 programs
would not".  After: the two grids it names (128x96x64: 48 programs; 192x128x64: 24 programs).
Simulated cycles (deterministic), results checked against numpy.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cube import tutorial_matmul  # noqa: E402

N = 768
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def run(bm, bn, bk, a, b):
    c = np.empty((N, N), np.float16)
    grid = (-(-N // bm) * -(-N // bn),)
    h = tutorial_matmul[grid](a, b, c, N, N, N, N, 1, N, 1, N, 1, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
                              BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, sanitize=False, trace=True)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    assert np.allclose(c.astype(np.float32), ref, atol=2e-2, rtol=1e-2)
    return h.stats


def main() -> None:
    rng = np.random.default_rng(0)
    a = (rng.random((N, N)) - 0.5).astype(np.float16)
    b = (rng.random((N, N)) - 0.5).astype(np.float16)
    before = run(128, 128, 64, a, b)
    adv = before.advice()
    print(f"before: 128x128x64, {before.programs} programs: {before.cycles} cycles, efficiency {before.efficiency:.2f}")
    print("  advice:", adv.section("try")[0].text)
    for bm, bn, bk in ((128, 96, 64), (192, 128, 64)):
        st = run(bm, bn, bk, a, b)
        print(f"after:  {bm}x{bn}x{bk}, {st.programs} programs: {st.cycles} cycles "
              f"({before.cycles / st.cycles:.2f}x fewer), efficiency {st.efficiency:.2f}")
    if "--docs" in sys.argv:
        docs = os.path.join(ROOT, "docs")
        os.makedirs(docs, exist_ok=True)
        before.plot_timeline(os.path.join(docs, "profile_timeline.png"), max_cores=4)
        html = os.path.join(tempfile.mkdtemp(), "report.html")
        before.write_html(html)
        exe = shutil.which("chromium") or "/usr/bin/chromium"
        with tempfile.TemporaryDirectory() as prof:
            subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                            "--disable-background-networking", "--disable-component-update", "--disable-sync",
                            f"--user-data-dir={prof}", "--window-size=1100,1000",
                            f"--screenshot={os.path.join(docs, 'profile_report.png')}", "file://" + html],
                           check=True, capture_output=True)
        print("wrote docs/profile_timeline.png, docs/profile_report.png")


if __name__ == "__main__":
    main()
