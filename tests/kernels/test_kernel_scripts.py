"""Every script in kernels/ runs, checks itself against numpy, and passes, from the CLI too."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

KERNELS = sorted((Path(__file__).resolve().parents[2] / "kernels").glob("*.py"))


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"kernels_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.stem)
def test_kernel_script_matches_numpy(path, capsys):
    mod = _load(path)
    assert mod.main() is True
    out = capsys.readouterr().out
    assert "OK against numpy" in out and "MISMATCH" not in out
    # each launch ran on the virtual NPU and printed its profile
    assert "backend npu" in out and "roofline:" in out and "efficiency" in out and "bytes by path" in out


def test_kernel_script_from_cli_prints_ir():
    path = next(p for p in KERNELS if p.stem == "vector_add")
    proc = subprocess.run([sys.executable, "-m", "tritonpu.cli", "run", str(path), "--emit-ir"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "// ---- add_kernel: ir ----" in proc.stdout
    assert "func @add_kernel(%x_ptr: ptr<f32>, %y_ptr: ptr<f32>, %out_ptr: ptr<f32>, %n_elements: i32)" in proc.stdout
    assert "OK against numpy" in proc.stdout


def test_the_example_wrappers_are_right_on_views_of_arrays():
    """Arrays users pass are often views (a transpose, every other column, a slice of rows): the
    wrappers in kernels/ pass their real strides or a contiguous copy -- they passed
    ``shape[1]`` as the row stride, and ``matmul(a, b[:, :72])`` was silently wrong."""
    mods = {p.stem: _load(p) for p in KERNELS}
    rng = np.random.default_rng(3)
    a = rng.standard_normal((96, 160), dtype=np.float32)
    b = rng.standard_normal((160, 200), dtype=np.float32)
    for x, y in ((a, b[:, :72]), (a[:, ::2], b[::2, 8:80]), (b[:96, :80].T.copy().T, a.T[:80, :40])):
        c, _ = mods["matmul"].matmul(x, y, np.float32, 32, 32, 32)
        np.testing.assert_allclose(c, x.astype(np.float64) @ y, atol=1e-3, rtol=1e-4)
    ct, _ = mods["matmul"].matmul(b.T[:72], a.T[:, :48], np.float32, 32, 32, 32)      # transposed views
    np.testing.assert_allclose(ct, b.T[:72].astype(np.float64) @ a.T[:, :48], atol=1e-3, rtol=1e-4)
    sm = mods["softmax"]
    x = a[::2, 10:140]
    np.testing.assert_allclose(sm.softmax(x)[0], sm.reference(x), atol=1e-6, rtol=1e-5)
    np.testing.assert_allclose(sm.online_softmax(x)[0], sm.reference(x), atol=1e-6, rtol=1e-5)
    ln = mods["layernorm"]
    w, bias = b[:130, 0], b[:130, 1]          # columns of b: strided views
    np.testing.assert_allclose(ln.layernorm(x, w, bias)[0], ln.reference(x, w, bias), atol=1e-4, rtol=1e-4)
    va = mods["vector_add"]
    np.testing.assert_array_equal(va.add(a[:, ::3], b[:96, :160:3])[0], a[:, ::3] + b[:96, :160:3])
