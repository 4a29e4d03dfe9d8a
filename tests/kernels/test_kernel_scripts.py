"""Every script in kernels/ runs, checks itself against numpy, and passes, from the CLI too."""
import importlib.util
import subprocess
import sys
from pathlib import Path

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
