"""The source-line profile, the bottleneck report, the CSVs, the PNG plots and the CLI
(tritonpu/profile).  Numbers come from deterministic simulations or constructed profiles."""
from __future__ import annotations

import csv
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

import profile_kernels as pk  # noqa: E402
from tritonpu.npu.stats import Stats  # noqa: E402
from tritonpu.isa import MACHINES  # noqa: E402
from tritonpu.profile import advice as adv, model, progress  # noqa: E402


@pytest.fixture(scope="module")
def h25():
    return pk.launch(25)


# ---- source-line profile ---------------------------------------------------------------------
def test_source_profile_columns_add_up_to_the_stats(h25):
    st = h25.stats
    sp = st.source_profile()
    tot = sp.totals()
    assert tot.cycles == st.pipe_busy                         # every pipe, the scalar unit's issue cycles too
    assert tot.bytes == st.bytes_by_path
    by_reason = {}
    for s in model.build(st).stalls:
        by_reason[s.reason] = by_reason.get(s.reason, 0) + s.cycles
    assert by_reason == st.stalls


def test_source_profile_rows(h25):
    sp = h25.stats.source_profile()
    load = sp.row(pk.LOAD_LINE)
    assert load.cost.bytes == {"gm->ub": 25 * 1024 * 4}      # the problem's bytes, on the load's line
    assert load.cost.cycles["mte2"] > 0 and load.cost.cycles["vector"] == 0
    assert load.cost.ddr_beats == 25 * 1024 * 4 // 32 and load.cost.l2_beats == 0   # all first touches
    store = sp.row(pk.STORE_LINE)
    assert store.cost.bytes == {"ub->gm": 25 * 1024 * 4} and store.cost.cycles["mte3"] > 0
    assert sp.row(pk.LOAD_LINE - 1).cost is None              # `m = offs < n` runs nothing of its own
    # the inlined helper: its own line, and added to the unique call site
    helper = [r for r in sp.rows if r.line == pk.HELPER_LINE and r.function == "twice_plus_one"][0]
    call = sp.row(pk.CALL_LINE)
    assert helper.callers == [pk.CALL_LINE] and call.rolled_up
    assert helper.cost.cycles["vector"] == call.cost.cycles["vector"] > 0
    # the load's data is what the helper's vector ops wait for: the load line caused the MTE2->V stalls
    assert load.cost.stall_caused >= h25.stats.stalls["wait_flag MTE2->V"] - 100
    text = str(sp)
    assert "x = tl.load(x_ptr + offs, mask=m)" in text and "%slow" in text and "stall" in text
    line = [ln for ln in text.splitlines() if "x = tl.load(x_ptr + offs" in ln][0]
    assert line.split()[0] == str(pk.LOAD_LINE) and "102400" in line and "100%" in line
    assert any(ln.startswith(f"{pk.CALL_LINE:>5}+") for ln in text.splitlines())


def test_records_are_not_mixed_across_relaunches():
    a = pk.launch(25)
    b = pk.launch(3)                      # the same decoded program, its trace list reused
    tot = b.stats.source_profile().totals()
    assert tot.bytes == b.stats.bytes_by_path == {"gm->ub": 3 * 4096, "ub->gm": 3 * 4096}
    assert a.stats.programs == 25
    assert a.stats.source_profile().totals().bytes == {"gm->ub": 102400, "ub->gm": 102400}   # its own timeline


def test_untraced_launch_says_what_to_do():
    import numpy as np
    x = np.ones(1024, np.float32)
    h = pk.scale_kernel[(1,)](x, np.empty_like(x), x.size, BLOCK=1024)
    with pytest.raises(model.NotTraced, match="trace=True"):
        h.stats.source_profile()
    assert "bound by" in str(h.stats.advice())      # the untraced report still has the stats' parts


# ---- bottleneck report -----------------------------------------------------------------------
def test_balance_numbers():
    assert adv.balance_text(adv.balance(64, 24)) == (
        "64 programs on 24 cores: 3 rounds, the last one 16/24 full — caps efficiency at 0.89; "
        "a grid of 48 or 72 programs would not")
    assert adv.balance_text(adv.balance(25, 24)) == (
        "25 programs on 24 cores: 2 rounds, the last one 1/24 full — caps efficiency at 0.52; "
        "a grid of 24 or 48 programs would not")
    assert adv.balance_text(adv.balance(14, 24)) == (
        "14 programs on 24 cores: 10 cores idle — caps efficiency at 0.58; a grid of 24 programs "
        "(smaller blocks) would use every core")
    assert adv.balance(48, 24)["cap"] == 1.0


def test_advice_on_25_programs_on_24_cores(h25):
    a = h25.stats.advice()
    bal = a.section("balance")[0]
    assert bal.text == ("25 programs on 24 cores: 2 rounds, the last one 1/24 full — caps efficiency at 0.52; "
                        "a grid of 24 or 48 programs would not")
    first = a.section("try")[0]
    assert first.values["kind"] == "balance" and first.text.startswith("change the grid: 25 programs on 24 cores")
    bound = a.section("bound")[0]
    s = bound.values["core"]
    assert bound.values["pipe"] == "mte2" and bound.values["cycles"] == h25.stats.core_cycles[s] == h25.stats.cycles
    assert bound.values["busy"] == h25.stats.pipe_busy_by_core[s]["mte2"]
    stall = [f for f in a.section("stalls") if f.values["reason"] == "wait_flag MTE2->V"][0]
    (prod, cons), _ = stall.values["pairs"][0]
    assert prod[1] == pk.LOAD_LINE and cons[1] == pk.HELPER_LINE      # the helper's ops wait for the load
    reads = a.section("reads")[0]
    assert reads.values["ddr_bytes"] == 102400 and reads.values["l2_bytes"] == 0 and reads.values["reread"] == 1.0
    assert "UB" in a.section("memory")[0].text


def test_advice_without_tail():
    h = pk.launch(24)
    a = h.stats.advice()
    assert a.section("balance")[0].text == "24 programs on 24 cores: 1 full round (no tail)"
    assert all(f.values.get("kind") != "balance" for f in a.section("try"))


def _constructed(busy_by_core, core_cycles, programs=24, stalls=None):
    m = MACHINES["ascend910b"]
    names = ["scalar", "mte2", "mte1", "cube", "fix", "vector", "mte3"]
    by_core = [{n: b.get(n, 0) for n in names} for b in busy_by_core]
    busy = {n: sum(b[n] for b in by_core) for n in names}
    return Stats(kernel="k", machine=m, grid=(programs, 1, 1), programs=programs, cores=24,
                 cores_used=min(24, programs), cycles=max(core_cycles), core_cycles=list(core_cycles),
                 pipe_busy=busy, pipe_busy_by_core=by_core, instr_count={n: 0 for n in names},
                 bytes_by_path={}, bytes_by_pipe={n: 0 for n in names}, stalls=stalls or {}, queue_wait={},
                 read_bytes=0, write_bytes=0, cube_macs=0, macs_by_dtype={}, roofline_cycles=500.0,
                 roofline_bound="mte2 read", roofline_terms={})


def test_advice_on_a_constructed_profile():
    st = _constructed([{"vector": 400, "mte2": 300}, {"vector": 900, "mte2": 500, "scalar": 100}],
                      [800, 1000], programs=2, stalls={"wait_flag MTE2->V": 70})
    a = st.advice()
    assert a.section("bound")[0].text == (
        "bound by the vector unit: busy 900 of the slowest core's 1000 cycles (core 1) — pipe overlap 0.90; "
        "over all 2 cores it is busy 65% of the launch")
    assert a.section("bound")[1].text == "next busiest on that core: mte2 0.50, scalar 0.10"
    assert a.section("balance")[0].text.startswith("2 programs on 24 cores: 22 cores idle — caps efficiency at 0.08")
    assert a.section("balance")[1].text == "cores finish between 800 and 1000 cycles (mean 900): measured balance 0.90"
    assert a.section("stalls")[0].text == "wait_flag MTE2->V: 70 cycles over all cores"


# ---- CSV ---------------------------------------------------------------------------------------
def test_write_csv(h25, tmp_path):
    st = h25.stats
    paths = st.write_csv(tmp_path)
    assert [os.path.basename(p) for p in paths] == ["PipeUtilization.csv", "Memory.csv", "SourceProfile.csv"]
    rows = list(csv.DictReader(open(tmp_path / "PipeUtilization.csv")))
    assert len(rows) == 24 and rows[0]["programs"] == "2" and rows[1]["programs"] == "1"
    for c, r in enumerate(rows):
        assert int(r["total_cycles"]) == st.core_cycles[c]
        assert float(r["mte2_ratio"]) == pytest.approx(st.pipe_busy_by_core[c]["mte2"] / st.core_cycles[c], abs=1e-6)
        assert float(r["mte2_time(us)"]) == pytest.approx(st.pipe_busy_by_core[c]["mte2"] / 1800, abs=1e-6)
    mem = list(csv.DictReader(open(tmp_path / "Memory.csv")))
    per = {}
    for r in mem:
        if r["core"] != "total":
            per[r["path"]] = per.get(r["path"], 0) + int(r["bytes"])
    assert per == st.bytes_by_path
    assert {r["path"]: int(r["bytes"]) for r in mem if r["core"] == "total"} == st.bytes_by_path
    core0 = [r for r in mem if r["core"] == "0" and r["path"] == "gm->ub"][0]
    assert core0["bytes"] == core0["ddr_first_touch_bytes"] == "8192"   # core 0 runs programs 0 and 24


# ---- PNG ---------------------------------------------------------------------------------------
def _need_matplotlib():
    if os.environ.get("CI") == "true":
        import matplotlib  # noqa: F401  (the test extra installs it: in CI this must run)
    return pytest.importorskip("matplotlib", reason="matplotlib not installed (pip install tritonpu[plot])")


def test_plot_timeline_png(h25, tmp_path):
    _need_matplotlib()
    import matplotlib.image as mpimg
    path = tmp_path / "t.png"
    h25.stats.plot_timeline(path)
    img = mpimg.imread(path)
    assert img.shape[0] > 300 and img.shape[1] > 600
    assert img[..., :3].std() > 0.05                    # not blank
    blue = (np.abs(img[..., 0] - 0x1f / 255) < 0.02) & (np.abs(img[..., 2] - 0xb4 / 255) < 0.02)
    assert blue.sum() > 100                             # MTE2's bars are drawn


def test_perf_report_saves_png(tmp_path):
    _need_matplotlib()
    import matplotlib.image as mpimg
    import tritonpu.testing as tt
    bench = tt.Benchmark(x_names=["n"], x_vals=[1, 2, 4], line_arg="k", line_vals=[1, 2], line_names=["one", "two"],
                         plot_name="scaling", ylabel="ms")

    @tt.perf_report(bench)
    def f(n, k):
        return float(n * k)
    f.run(save_path=str(tmp_path))
    assert (tmp_path / "scaling.csv").read_text().splitlines()[1] == "1,1,2"
    assert mpimg.imread(tmp_path / "scaling.png")[..., :3].std() > 0.01


def test_plot_without_matplotlib(h25, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install tritonpu\[plot\]"):
        h25.stats.plot_timeline("never.png")


# ---- progress ----------------------------------------------------------------------------------
def test_progress_is_silent_off_a_terminal(monkeypatch, capsys):
    monkeypatch.delenv("TRITONPU_PROGRESS", raising=False)
    items = [1, 2, 3]
    assert progress.bar(items) is items                 # pytest captures stdout: not a terminal
    monkeypatch.setenv("TRITONPU_PROGRESS", "0")
    assert progress.bar(items) is items


def test_progress_bar_when_forced(monkeypatch):
    pytest.importorskip("tqdm")
    monkeypatch.setenv("TRITONPU_PROGRESS", "1")
    b = progress.bar([1, 2, 3], desc="x")
    assert list(b) == [1, 2, 3] and type(b).__name__ == "tqdm"
    monkeypatch.setitem(sys.modules, "tqdm", None)      # no tqdm: no bar, no error
    items = [1]
    assert progress.bar(items) is items


# ---- CLI ---------------------------------------------------------------------------------------
def test_cli_profile_source_report_csv(tmp_path, capsys):
    from tritonpu.cli import main
    script = tmp_path / "run_me.py"
    script.write_text("import sys\nsys.path.insert(0, %r)\nimport profile_kernels as pk\n"
                      "x = pk.launch(25)\n" % os.path.dirname(__file__))
    before = os.environ.get("TRITONPU_TRACE")
    rc = main(["run", str(script), "--profile=all", "--report", str(tmp_path / "r.html"),
               "--csv", str(tmp_path / "csv")])
    out = capsys.readouterr().out
    assert rc == 0
    assert "source profile of scale_kernel" in out and "bottleneck report for scale_kernel" in out
    assert "25 programs on 24 cores: 2 rounds, the last one 1/24 full" in out
    assert (tmp_path / "r.html").exists() and (tmp_path / "csv" / "1" / "PipeUtilization.csv").exists()
    assert os.environ.get("TRITONPU_TRACE") == before


def test_cli_csv_into_a_relative_folder_not_made_yet(tmp_path, capsys, monkeypatch):
    """`tritonpu run FILE --csv prof/` (README's example) was refused: 'cannot write prof/:  is not a
    folder' -- the folder's parent was taken as '' and never found."""
    from tritonpu.cli import main
    script = tmp_path / "run_me.py"
    script.write_text("import sys\nsys.path.insert(0, %r)\nimport profile_kernels as pk\n"
                      "x = pk.launch(25)\n" % os.path.dirname(__file__))
    monkeypatch.chdir(tmp_path)
    rc = main(["run", str(script), "--csv", "prof/"])
    capsys.readouterr()
    assert rc == 0 and (tmp_path / "prof" / "1" / "PipeUtilization.csv").exists()
