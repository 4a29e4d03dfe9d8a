"""The kernel cache: in memory per JITFunction, on disk under TRITONPU_CACHE_DIR (atomic writes,
corrupted entries are misses), TRITONPU_DUMP_DIR dumps, and the CLI's --emit-ir."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.runtime import hooks
from tritonpu.runtime.jit import JITFunction


@tritonpu.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * factor, mask=offs < n)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("TRITONPU_CACHE_DIR", str(d))
    return d


@pytest.fixture
def compiles():
    """The names of the kernels compiled (or loaded from disk) while the test runs."""
    seen = []

    def listener(jitfn, kernel):
        seen.append((kernel.name, kernel.key, kernel.from_disk))
    hooks.add_listener(listener)
    yield seen
    hooks.remove_listener(listener)


def fresh(jitfn: JITFunction) -> JITFunction:
    """A new JITFunction of the same Python function: empty in-memory cache, as in a new process."""
    return JITFunction(jitfn.fn)


def launch(k, dtype=np.float32, n=40, factor=2.0, block=16, **opts):
    x = np.arange(n).astype(dtype)
    out = np.zeros(n, dtype)
    h = k[(tritonpu.cdiv(n, block),)](x, out, n, factor, BLOCK=block, **opts)
    np.testing.assert_allclose(out.astype(np.float64), (x.astype(np.float64) * factor).astype(dtype), rtol=1e-3)
    return h


def test_same_specialization_compiles_once(cache_dir, compiles):
    k = fresh(scale_kernel)
    h1 = launch(k)
    h2 = launch(k, n=100, factor=3.0)          # other runtime values, same types: same kernel
    assert h1.kernel is h2.kernel
    assert len(k.cache) == 1 and len(compiles) == 1


@pytest.mark.parametrize("change", [dict(dtype=np.float16), dict(block=32), dict(num_warps=8), dict(factor=3),
                                    dict(num_stages=4)])
def test_new_specialization_makes_a_new_entry(cache_dir, compiles, change):
    k = fresh(scale_kernel)
    h1 = launch(k)
    h2 = launch(k, **change)
    assert h1.kernel is not h2.kernel and h1.kernel.key != h2.kernel.key
    assert len(k.cache) == 2 and len(compiles) == 2
    assert len(list(cache_dir.glob("*.json"))) == 2


def test_backend_option_does_not_change_the_key(cache_dir):
    k = fresh(scale_kernel)
    h1 = launch(k)
    h2 = launch(k, backend="ref")
    assert h1.kernel is h2.kernel


def test_disk_cache_reused_by_a_fresh_jitfunction(cache_dir, compiles):
    h1 = launch(fresh(scale_kernel))
    files = list(cache_dir.glob("*.json"))
    assert [f.name for f in files] == [f"{h1.kernel.key}.json"]
    entry = json.loads(files[0].read_text())
    assert entry["key"] == h1.kernel.key and entry["ir"] == h1.asm["ir"]
    h2 = launch(fresh(scale_kernel))
    assert h2.kernel.from_disk and not h1.kernel.from_disk
    assert h2.kernel.key == h1.kernel.key and h2.asm["ir"] == h1.asm["ir"]
    assert [c[2] for c in compiles] == [False, True]


def test_an_entry_made_by_other_compiler_code_is_not_reused(cache_dir, compiles, monkeypatch):
    # the key holds a hash of the compiler's own sources: after an upgrade (or an edit of a checkout)
    # the IR cached by the old code is not taken for the new code's
    from tritonpu.runtime import cache
    h1 = launch(fresh(scale_kernel))
    monkeypatch.setattr(cache, "compiler_fingerprint", lambda: "other compiler code")
    h2 = launch(fresh(scale_kernel))
    assert h2.kernel.key != h1.kernel.key and not h2.kernel.from_disk
    assert [c[2] for c in compiles] == [False, False] and len(list(cache_dir.glob("*.json"))) == 2


def test_the_compiler_fingerprint_covers_the_package_sources(tmp_path):
    from tritonpu.runtime.cache import compiler_fingerprint
    assert compiler_fingerprint() == compiler_fingerprint() and len(compiler_fingerprint()) == 16


@pytest.mark.parametrize("garbage", ["", "{not json", '{"key": "someone-else", "ir": "", "asm": {}}',
                                     '{"key": "KEY", "ir": "func @broken(", "asm": {}}', "[1, 2, 3]"])
def test_corrupted_cache_file_is_a_miss_and_is_rewritten(cache_dir, garbage):
    h1 = launch(fresh(scale_kernel))
    path = cache_dir / f"{h1.kernel.key}.json"
    path.write_text(garbage.replace("KEY", h1.kernel.key))
    h2 = launch(fresh(scale_kernel))
    assert not h2.kernel.from_disk
    assert json.loads(path.read_text())["ir"] == h1.asm["ir"]      # rewritten with a good entry
    assert launch(fresh(scale_kernel)).kernel.from_disk


def test_cache_files_appear_atomically(cache_dir):
    for block in (16, 32, 64):
        launch(fresh(scale_kernel), block=block)
    names = sorted(os.listdir(cache_dir))
    assert len(names) == 3
    assert all(n.endswith(".json") and not n.startswith(".tmp") for n in names), names


def test_unwritable_cache_dir_only_costs_recompilation(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("TRITONPU_CACHE_DIR", str(blocker / "sub"))   # cannot create a folder under a file
    assert not launch(fresh(scale_kernel)).kernel.from_disk
    assert not launch(fresh(scale_kernel)).kernel.from_disk


MODULE_SRC = '''
import tritonpu
import tritonpu.language as tl

SCALE = tl.constexpr({scale})


@tritonpu.jit
def helper(x):
    return x * {helper_mul}


@tritonpu.jit
def kern(out_ptr):
    tl.store(out_ptr, helper(SCALE) + 0.0)
'''


def _load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("scale,helper_mul", [(3, 10), (2, 11)])
def test_key_covers_globals_and_called_functions(cache_dir, tmp_path, scale, helper_mul):
    """A changed constexpr global or a changed @jit helper must not hit the old disk entry."""
    path = tmp_path / "mod_under_test.py"
    path.write_text(MODULE_SRC.format(scale=2, helper_mul=10))
    out = np.zeros(1, np.float32)
    mod = _load_module(path, "mod_under_test_a")
    mod.kern[(1,)](out)
    assert out[0] == 20.0
    path.write_text(MODULE_SRC.format(scale=scale, helper_mul=helper_mul))
    mod2 = _load_module(path, "mod_under_test_b")
    h = mod2.kern[(1,)](out)
    assert out[0] == scale * helper_mul and not h.kernel.from_disk


MODULE_MORE_SRC = """
import tritonpu
import tritonpu.language as tl
import {helpers} as hp

DT = tl.{dtype}


@tritonpu.jit
def times(v):
    return v * {mul}


@tritonpu.jit
def kern(x_ptr, out_ptr, FN: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(out_ptr + tl.arange(0, 16), x.to(DT).to(tl.float32))
    tl.store(out_ptr + 16 + tl.arange(0, 16), FN(x))
    tl.store(out_ptr + 32 + tl.arange(0, 16), hp.act(x))
"""

HELPERS_SRC = """
import tritonpu


@tritonpu.jit
def act(v):
    return v * {mul}
"""


@pytest.mark.parametrize("backend", ["npu", "ref"])
def test_key_covers_dtype_globals_jit_arguments_and_module_helpers(cache_dir, tmp_path, backend, monkeypatch):
    """What a fresh process must not take from the old disk entry: a dtype global that changed, a
    @jit function passed as a constexpr argument whose body changed, a helper called through a
    module (``hp.act``) whose body changed."""
    x = np.full(16, 0.1, np.float32)
    outs = []
    for dtype, mul in (("float32", 2), ("float16", 5)):
        # the files edited in place and loaded again, as a new process would (same names and paths)
        (tmp_path / "helpers_under_test.py").write_text(HELPERS_SRC.format(mul=mul))
        monkeypatch.setitem(sys.modules, "helpers_under_test",
                            _load_module(tmp_path / "helpers_under_test.py", "helpers_under_test"))
        path = tmp_path / "mod_more.py"
        path.write_text(MODULE_MORE_SRC.format(helpers="helpers_under_test", dtype=dtype, mul=mul))
        mod = _load_module(path, "mod_more")
        out = np.zeros(48, np.float32)
        mod.kern[(1,)](x, out, FN=mod.times, backend=backend)
        outs.append(out)
    for out, dt, mul in ((outs[0], np.float32, 2), (outs[1], np.float16, 5)):
        np.testing.assert_array_equal(out[:16], x.astype(dt).astype(np.float32))
        np.testing.assert_allclose(out[16:], np.full(32, 0.1 * mul, np.float32), rtol=1e-6)


GLOBAL_SRC = """
import tritonpu
import tritonpu.language as tl

SCALE = tl.constexpr(2)
DT = tl.float32


@tritonpu.jit
def kern(x_ptr, out_ptr):
    offs = tl.arange(0, 16)
    tl.store(out_ptr + offs, (tl.load(x_ptr + offs) * SCALE).to(DT).to(tl.float32))
"""


@pytest.mark.parametrize("backend", ["npu", "cpu", "ref"])
@pytest.mark.parametrize("name,value", [("SCALE", "tl.constexpr(5)"), ("DT", "tl.float16")])
def test_a_global_changed_after_compiling_is_an_error_not_the_old_kernel(cache_dir, tmp_path, backend, name, value):
    """As in Triton: a kernel reads its globals when it is compiled; running it again after one
    changed raises (a RuntimeError) at the line that reads it instead of running the old code."""
    path = tmp_path / "mod_global.py"
    path.write_text(GLOBAL_SRC)
    mod = _load_module(path, "mod_global")
    x, out = np.full(16, 0.1, np.float32), np.zeros(16, np.float32)
    mod.kern[(1,)](x, out, backend=backend)
    np.testing.assert_allclose(out, 0.2, rtol=1e-6)
    setattr(mod, name, eval(value))
    with pytest.raises(RuntimeError) as e:
        mod.kern[(1,)](x, out, backend=backend)
    assert isinstance(e.value, tritonpu.CompilationError)
    assert f"global `{name}` has changed since `kern` was compiled" in str(e.value)
    assert e.value.line == 12 and e.value.file == str(path)         # the store that reads it
    setattr(mod, name, eval(value.replace("5", "2").replace("float16", "float32")))     # back: runs again
    mod.kern[(1,)](x, out, backend=backend)
    np.testing.assert_allclose(out, 0.2, rtol=1e-6)


def test_dump_dir_writes_every_stage(cache_dir, tmp_path, monkeypatch):
    # the frontend's IR at compile time, then what the launch made: each NPU pass and the assembly
    # (only the IR was written before: the backend's stages did not exist yet at compile time)
    dump = tmp_path / "dump"
    monkeypatch.setenv("TRITONPU_DUMP_DIR", str(dump))
    h = launch(fresh(scale_kernel), block=64)
    files = {p.name for p in dump.iterdir()}
    prefix = f"scale_kernel.{h.kernel.key[:8]}"
    ext = {"ir": "ir", "isa": "s"}
    assert files == {f"{prefix}.{stage}.{ext.get(stage, 'txt')}" for stage in h.asm}
    assert {"ir", "tiling", "buffer-planning", "isa"} <= set(h.asm)
    assert (dump / f"{prefix}.ir.ir").read_text() == h.asm["ir"]
    assert (dump / f"{prefix}.isa.s").read_text() == h.asm["isa"]


def test_a_launch_handle_prints_on_one_line(cache_dir):
    h = launch(fresh(scale_kernel), block=64)
    assert repr(h) == f"<LaunchHandle scale_kernel grid=(1, 1, 1) backend='npu', cycles={h.stats.cycles}, " \
                      f"efficiency={h.stats.efficiency:.3f}>"
    assert repr(launch(fresh(scale_kernel), block=64, backend="ref")) == \
        "<LaunchHandle scale_kernel grid=(1, 1, 1) backend='ref'>"


SCRIPT = '''
import numpy as np
import tritonpu
import tritonpu.language as tl


@tritonpu.jit
def double_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


if __name__ == "__main__":
    x = np.arange(10, dtype=np.float32)
    double_kernel[(1,)](x, 10, BLOCK=16)
    print("result", x.tolist())
'''


def _cli(args, tmp_path, **env):
    full_env = dict(os.environ, TRITONPU_CACHE_DIR=str(tmp_path / "cli-cache"), **env)
    return subprocess.run([sys.executable, "-m", "tritonpu.cli", *args], capture_output=True, text=True,
                          timeout=120, env=full_env, cwd=tmp_path)


def test_cli_run_emit_ir(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT))
    proc = _cli(["run", str(script), "--emit-ir"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "// ---- double_kernel: ir ----"
    assert lines[1] == f'#f0 = {json.dumps(str(script))}'
    assert lines[2] == "func @double_kernel(%x_ptr: ptr<f32>, %n: i32) {BLOCK = 16} {"
    assert "  %offs = arange {end = 16, start = 0} : tensor<16xi32> loc(#f0:9:11)" in lines
    assert lines[-1] == "result [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0]"
    # a second run loads from the on-disk cache and still prints the IR
    again = _cli(["run", str(script), "--emit-ir"], tmp_path)
    assert again.stdout == proc.stdout


def test_cli_run_without_emit_prints_only_the_script_output(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT))
    proc = _cli(["run", str(script)], tmp_path)
    assert proc.returncode == 0 and proc.stdout.splitlines() == [
        "result [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0]"]


def test_cli_reports_user_errors_without_traceback(tmp_path):
    script = tmp_path / "bad.py"
    script.write_text(textwrap.dedent(SCRIPT).replace("tl.arange(0, BLOCK)", "tl.arange(BLOCK, 0)"))
    proc = _cli(["run", str(script), "--emit-ir"], tmp_path)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"CompilationError: {script}:9:12: error: tl.arange's end must be greater than "
                                  "its start; got (16, 0)")
    missing = _cli(["run", str(tmp_path / "nope.py")], tmp_path)
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_cli_run_shows_a_scripts_own_errors_as_python_would(tmp_path):
    (tmp_path / "raises.py").write_text("import numpy\n\n\ndef f():\n    raise ValueError('boom')\n\n\nf()\n")
    proc = _cli(["run", "raises.py"], tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["Traceback (most recent call last):",
                                        '  File "raises.py", line 8, in <module>', "    f()",
                                        '  File "raises.py", line 5, in f', "    raise ValueError('boom')",
                                        "ValueError: boom"]                 # no runpy / tritonpu frames
    (tmp_path / "exits.py").write_text("import sys\nsys.exit('fatal: input file missing')\n")
    proc = _cli(["run", "exits.py"], tmp_path)
    assert (proc.returncode, proc.stderr) == (1, "fatal: input file missing\n")   # was silent
    (tmp_path / "syntax.py").write_text("x = (\n")
    proc = _cli(["run", "syntax.py"], tmp_path)
    assert proc.returncode == 1 and proc.stderr.splitlines()[-1] == "SyntaxError: '(' was never closed"
    assert "runpy" not in proc.stderr and "tritonpu" not in proc.stderr


def test_cli_run_checks_its_outputs_before_running(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT))
    proc = _cli(["run", str(script), "--report", str(tmp_path / "missing" / "r.html")], tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")                       # the script did not run
    assert proc.stderr == f"tritonpu run: --report: cannot write {tmp_path / 'missing' / 'r.html'}: no such folder " \
                          f"{tmp_path / 'missing'}\n"
    proc = _cli(["run", str(script), "--backend", "cpu", "--profile", "--csv", "out"], tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "tritonpu run: --profile, --csv show the virtual NPU's cycle profile; --backend cpu has " \
                          "none (leave --backend out, or use --backend npu)\n"
    (tmp_path / "file").write_text("")                                      # a file where a folder must be
    proc = _cli(["run", str(script), "--csv", str(tmp_path / "file" / "d")], tmp_path)
    assert proc.returncode == 2 and proc.stderr.endswith(f"{tmp_path / 'file'} is not a folder\n")


def test_the_handle_of_a_cpu_or_ref_launch_shows_no_npu_assembly(cache_dir):
    k = fresh(scale_kernel)
    assert "isa" in launch(k, block=64).asm                   # npu
    for backend in ("cpu", "ref"):
        h = launch(k, block=64, backend=backend)
        assert "isa" not in h.asm and "tiling" not in h.asm and "ir" in h.asm
    assert "isa" in launch(k, block=64).asm                   # npu again: its compilation was kept
