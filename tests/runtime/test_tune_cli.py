"""``tritonpu tune FILE.py``: sweeps a script's autotuned launches (and, with --kernel, its plain
launches), prints the table, writes the CSV, and the next run starts tuned from the disk."""
import csv
import textwrap

import numpy as np

from tritonpu.cli import main

SCRIPT = textwrap.dedent("""
    import numpy as np
    import tritonpu
    import tritonpu.language as tl

    @tritonpu.autotune(configs=[tritonpu.Config({"BLOCK": b}) for b in (128, 512, 2048)], key=["n"])
    @tritonpu.jit
    def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    @tritonpu.jit
    def plus_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

    n = 6000
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    double[lambda meta: (tritonpu.cdiv(n, meta["BLOCK"]),)](x, out, n)
    assert (out == 2 * x).all()
    plus_one[lambda meta: (tritonpu.cdiv(n, meta["BLOCK"]),)](x, out, n, BLOCK=64)
    assert (out == x + 1).all()
    print("SCRIPT DONE")
""")


def test_tune_prints_the_table_writes_the_csv_and_the_next_run_starts_tuned(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRITONPU_CACHE_DIR", str(tmp_path / "cache"))
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    out_csv = tmp_path / "tune.csv"
    assert main(["tune", str(script), "--executor", "inprocess", "--csv", str(out_csv)]) == 0
    text = capsys.readouterr().out
    assert "SCRIPT DONE" in text and "double key=(6000,)" in text and "list search on inprocess" in text
    assert "bound pipe" in text and "best" in text
    rows = list(csv.DictReader(open(out_csv)))
    assert {r["config"] for r in rows} == {"BLOCK=128", "BLOCK=512", "BLOCK=2048"}
    assert sum(r["status"] == "best" for r in rows) == 1 and all(r["cycles"] for r in rows)
    best = next(r["config"] for r in rows if r["status"] == "best")
    # the second run finds the choice on disk: no sweep
    assert main(["tune", str(script), "--csv", str(out_csv)]) == 0
    text = capsys.readouterr().out
    assert "tuned before (on disk): " + best in text and "list search" not in text


def test_tune_kernel_tunes_the_plain_launches_of_that_kernel(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRITONPU_CACHE_DIR", str(tmp_path / "cache"))
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    out_csv = tmp_path / "tune.csv"
    assert main(["tune", str(script), "--kernel", "plus_one", "--executor", "processes", "--workers", "2",
                 "--csv", str(out_csv)]) == 0
    text = capsys.readouterr().out
    assert "SCRIPT DONE" in text and "plus_one key=" in text and "double key=" not in text
    rows = list(csv.DictReader(open(out_csv)))
    assert rows and {r["kernel"] for r in rows} == {"plus_one"}
    best = [r for r in rows if r["status"] == "best"]
    assert len(best) == 1 and best[0]["config"].startswith("BLOCK=")
    sims = [int(r["cycles"]) for r in rows if r["cycles"]]
    assert int(best[0]["cycles"]) == min(sims)


def test_tune_without_an_autotuned_launch_says_so(tmp_path, capsys):
    script = tmp_path / "plain.py"
    script.write_text("print('hi')\n")
    assert main(["tune", str(script), "--csv", str(tmp_path / "t.csv")]) == 0
    assert "no autotuned launch ran" in capsys.readouterr().err
    assert not (tmp_path / "t.csv").exists()
    np.zeros(1)
