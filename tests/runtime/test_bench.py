"""``tritonpu.testing.do_bench`` / ``perf_report`` / ``Benchmark`` (tritonpu/runtime/bench.py), as
Triton benchmark scripts call them after ``import tritonpu as triton``.

do_bench returns the simulated device time in ms of the NPU launches one call makes (their cycles
at the preset's 1.8 GHz, added up), the same every time; off the NPU it times the host; perf_report
tables hold what the benchmarked function returned for every x and line, printed and saved as CSV.
"""
import numpy as np
import pytest

import tritonpu as triton
import tritonpu.language as tl


@triton.jit
def _scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def _launch(x, y, backend="npu"):
    return _scale[(triton.cdiv(x.size, 256),)](x, y, x.size, BLOCK=256, backend=backend, sanitize=False)


def test_do_bench_is_the_simulated_time_of_the_launches_one_call_makes():
    x = np.arange(4096, dtype=np.float32)
    y = np.empty_like(x)
    cycles = _launch(x, y).stats.cycles
    ms = triton.testing.do_bench(lambda: _launch(x, y))
    assert ms == cycles / 1.8e6
    two = triton.testing.do_bench(lambda: (_launch(x, y), _launch(x[:1024], y[:1024])))
    assert two == (cycles + _launch(x[:1024], y[:1024]).stats.cycles) / 1.8e6
    assert triton.testing.do_bench(lambda: _launch(x, y), quantiles=[0.5, 0.2, 0.8]) == [ms, ms, ms]
    assert triton.testing.do_bench(lambda: _launch(x, y), return_mode="median") == ms
    np.testing.assert_array_equal(y, 2 * x)


def test_do_bench_times_the_host_off_the_npu():
    x = np.arange(4096, dtype=np.float32)
    y = np.empty_like(x)
    times = triton.testing.do_bench(lambda: _launch(x, y, backend="ref"), warmup=1, rep=5, return_mode="all")
    assert isinstance(times, list) and len(times) >= 1 and all(t > 0 for t in times)
    assert triton.testing.do_bench(lambda: np.add(x, x), warmup=1, rep=2) > 0
    with pytest.raises(ValueError, match="return_mode"):
        triton.testing.do_bench(lambda: None, warmup=0, rep=0, return_mode="fastest")


def test_perf_report_prints_and_saves_the_table(tmp_path, capsys):
    calls = []

    @triton.testing.perf_report(triton.testing.Benchmark(
        x_names=["N"], x_vals=[256, 1024], line_arg="provider", line_vals=["npu", "twice"],
        line_names=["NPU", "Twice"], ylabel="ms", plot_name="scale", args={"k": 3}))
    def bench(N, provider, k):
        calls.append((N, provider, k))
        x = np.ones(N, np.float32)
        y = np.empty_like(x)
        ms = triton.testing.do_bench(lambda: _launch(x, y))
        return (2 * ms, ms, 3 * ms) if provider == "twice" else ms

    bench.run(print_data=True, save_path=str(tmp_path))
    assert calls == [(256, "npu", 3), (256, "twice", 3), (1024, "npu", 3), (1024, "twice", 3)]
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "scale:"
    assert printed[1].split() == ["N", "NPU", "Twice", "NPU-min", "NPU-max", "Twice-min", "Twice-max"]
    csv = (tmp_path / "scale.csv").read_text().splitlines()
    assert csv[0] == "N,NPU,Twice,NPU-min,NPU-max,Twice-min,Twice-max"
    n, npu, twice, _, _, lo, hi = csv[1].split(",")
    assert n == "256" and float(twice) == pytest.approx(2 * float(npu), rel=1e-5)
    assert float(lo) == pytest.approx(float(npu), rel=1e-5) and float(hi) == pytest.approx(3 * float(npu), rel=1e-5)
    assert len(printed) == 4 and len(csv) == 3
