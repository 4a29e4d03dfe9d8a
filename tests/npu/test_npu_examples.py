"""The hand-written examples run from the CLI, compute the right thing, and take the cycles
their header comments derive; the trace loads as JSON with the expected tracks."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tritonpu.cli import main
from tritonpu.isa import EXAMPLES_DIR
from tritonpu.npu import assemble
from tritonpu.npu.launch import launch

EXAMPLES = sorted(p.name for p in EXAMPLES_DIR.glob("*.s"))


def expected_cycles(path):
    m = re.search(r"expected cycles:\s*(\d+)", path.read_text())
    assert m, f"{path.name} has no 'expected cycles:' line"
    return int(m.group(1))


def test_the_five_examples_exist():
    assert {"vadd_double.s", "vadd_single.s", "softmax_rows.s", "matmul_tile.s",
            "embedding_gather.s"} <= set(EXAMPLES)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_from_cli_with_the_cycles_of_its_comment(name, capsys, tmp_path):
    path = EXAMPLES_DIR / name
    trace = tmp_path / "t.json"
    assert main(["asm", str(path), "--run", "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert f"cycles: {expected_cycles(path)}\n" in out
    assert "busy cycles" in out and "roofline" in out
    data = json.loads(trace.read_text())
    ev = data["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("name") == "thread_name"}
    procs = {e["pid"]: e["args"]["name"] for e in ev if e.get("name") == "process_name"}
    assert procs[0] == "core 0"
    assert sorted(set(names.values())) == sorted(["S", "MTE2", "MTE1", "M", "FIX", "V", "MTE3"])
    spans = [e for e in ev if e["ph"] == "X"]
    assert spans and all(e["dur"] >= 0 and (e["pid"], e["tid"]) in names for e in spans)


def _run(name):
    prog = assemble((EXAMPLES_DIR / name).read_text(), filename=name)
    return launch(prog, {}, grid=prog.grid or (1,))


@pytest.mark.parametrize("name", ["vadd_single.s", "vadd_double.s"])
def test_vadd_results(name):
    st = _run(name)
    g = st.gm
    np.testing.assert_array_equal(g["z"], g["x"] + g["y"])


def test_double_buffering_gain_is_what_the_model_predicts():
    single, double = _run("vadd_single.s"), _run("vadd_double.s")
    latency, beats, vadd, flag, tiles = 200, 16384 // 32, 16384 // 256, 1, 8
    load = latency + beats
    # single: x's latency overlaps y's beats, the set MTE2->V fires when y lands, then the V
    # chain; MTE2 waits for the vadd of the previous tile.  double: MTE2 streams the beats
    period_single = flag + beats + load + flag + flag + vadd + flag
    period_double = flag + 2 * beats + flag
    assert (period_single, period_double) == (1292, 1026)
    predicted = (tiles - 1) * (period_single - period_double) - 3   # 3 more issue cycles up front
    assert single.cycles - double.cycles == predicted == 1859
    assert (single.cycles, double.cycles) == (10698, 8839)
    assert double.pipe_busy["mte2"] == single.pipe_busy["mte2"] + 1   # one more final wait
    assert double.pipe_busy["mte2"] == tiles * (flag + 2 * beats + flag) + 2 * flag


def test_softmax_result():
    st = _run("softmax_rows.s")
    x = st.gm["x"].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(st.gm["y"], e / e.sum(axis=1, keepdims=True), rtol=2e-6, atol=1e-7)
    assert st.cores_used == 4 and st.core_cycles == [st.cycles] * 4


def test_matmul_result():
    st = _run("matmul_tile.s")
    g = st.gm
    ref = (g["a"].astype(np.float32) @ g["bt"].astype(np.float32).T).astype(np.float16)
    np.testing.assert_allclose(g["c"].astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=2e-3)
    assert st.cube_macs == 64 * 128 * 64


def test_embedding_result():
    st = _run("embedding_gather.s")
    g = st.gm
    np.testing.assert_array_equal(g["out"], g["table"][g["tokens"]])


def test_cli_prints_canonical_text_and_reference(capsys):
    path = EXAMPLES_DIR / "vadd_double.s"
    assert main(["asm", str(path)]) == 0
    text = capsys.readouterr().out
    assert assemble(text).text() == text and "//" not in text
    assert main(["asm", "--reference"]) == 0
    assert capsys.readouterr().out.startswith("# tritonpu virtual NPU")


def test_cli_errors_are_clean(tmp_path, capsys):
    bad = tmp_path / "bad.s"
    bad.write_text(".kernel k\n    vadd.f32 ub[0], ub[0]\n")
    assert main(["asm", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "bad.s:2:5: error:" in err and "Traceback" not in err
    race = tmp_path / "race.s"
    race.write_text(".gm x f32 [1024]\n    mov.gm.ub ub[0], x[0], 1, 4096, 0, 0\n"
                    "    vexp.f32 ub[0], ub[0], 1024\n")
    assert main(["asm", str(race), "--run"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("race:") and "line 3" in err and "Traceback" not in err
    assert main(["asm", str(race), "--run", "--no-sanitize"]) == 0


def test_cli_grid_args_dump_and_npy_init(tmp_path, capsys):
    np.save(tmp_path / "v.npy", np.arange(8, dtype=np.float32))
    src = tmp_path / "p.s"
    src.write_text(""".gm v f32 [8] init="v.npy"
.gm out i32 [4]
.param k i32 init=1
    block_idx s0
    mul s1, s0, 4
    sst.i32 out[s1], k
""")
    assert main(["asm", str(src), "--run", "--grid", "2,2", "--arg", "k=7", "--dump",
                 "--save", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "grid (2, 2) = 4 programs" in out and "[7 7 7 7]" in out
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "out.npy"), [7, 7, 7, 7])
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "v.npy"), np.arange(8))
