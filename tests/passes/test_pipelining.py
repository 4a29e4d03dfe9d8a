"""Persistent per-core loops and double buffering (tritonpu/passes/persistent.py, double_buffer.py).

* golden tests: IR text in, expected IR out, for ``persistent`` and ``double-buffer``;
* end to end: every kernel in kernels/ gives bitwise identical outputs with double buffering on
  and off and with the persistent loop on and off (sanitizer on), for odd and even trip counts of
  both the per-core program loop and the kernels' own loops, and matches numpy;
* double buffering overlaps: simulated cycles and the ISA of a one-row-per-program softmax;
* ``tritonpu run --no-double-buffer`` (when the CLI has it).
"""
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.ir import parse_function, print_function, verify
from tritonpu.passes import PassManager
from tritonpu.testing import filecheck

ROOT = Path(__file__).resolve().parents[2]


# =============================================================================================
# helpers
# =============================================================================================

def with_locs(text: str) -> str:
    """IR text whose op lines may omit ``loc(...)``: op line i gets ``loc(#f0:i:0)``."""
    lines = ['#f0 = "k.py"']
    for i, line in enumerate(text.strip("\n").splitlines(), 1):
        s = line.rstrip()
        t = s.strip()
        if t and not t.startswith(("func", "^bb")) and t not in ("{", "}") and not t.endswith("{") \
                and " loc(" not in s:
            s += f" loc(#f0:{i}:0)"
        lines.append(s)
    return "\n".join(lines) + "\n"


def run_fn(text: str, passes: list[str]):
    fn = parse_function(with_locs(text))
    verify(fn)
    PassManager(passes).run(fn)
    verify(fn)
    return fn


def run_text(text: str, passes: list[str]) -> str:
    return print_function(run_fn(text, passes))


def strip_locs(out: str) -> str:
    lines = [re.sub(r" loc\(#f0:\d+:\d+\)", "", ln) for ln in out.strip().splitlines()[1:]]
    return "\n".join(lines)


def operand_uses(out: str, name: str) -> list[str]:
    """Lines that use ``%name`` as an operand (not the line defining it)."""
    pat = re.compile(rf"%{re.escape(name)}\b")
    return [ln for ln in out.splitlines()
            if pat.search(ln.split("=", 1)[1] if re.match(rf"\s*%{re.escape(name)}\s*=", ln) else ln)
            and not re.match(rf"\s*%{re.escape(name)}\s*=", ln)]


# =============================================================================================
# persistent: golden tests
# =============================================================================================

GRID3 = """
func @k(%y: ptr<f32>) {
  %p0 = program_id {axis = 0} : i32
  %p1 = program_id {axis = 1} : i32
  %p2 = program_id {axis = 2} : i32
  %n0 = num_programs {axis = 0} : i32
  %n1 = num_programs {axis = 1} : i32
  %n2 = num_programs {axis = 2} : i32
  %a = mul %p1, %n0 : i32
  %b = add %a, %p0 : i32
  %c = mul %n0, %n1 : i32
  %d = mul %p2, %c : i32
  %e = add %b, %d : i32
  %f = add %e, %n2 : i32
  %o = cast %f : i64
  %q = addptr %y, %o : ptr<f32>
  %v = constant {value = 1.0} : f32
  store %q, %v
  return
}
"""


def test_persistent_wraps_body_in_per_core_program_loop():
    out = run_text(GRID3, ["persistent"])
    filecheck(out, """
CHECK: func @k(%y: ptr<f32>, %__grid_x: i32, %__grid_y: i32, %__grid_z: i32) {persistent = true} {
CHECK-NEXT: %0 = program_id {axis = 0} : i32
CHECK-NEXT: %1 = num_programs {axis = 0} : i32
CHECK-NEXT: %2 = mul %__grid_x, %__grid_y : i32
CHECK-NEXT: %3 = mul %2, %__grid_z : i32
CHECK-NEXT: for %0, %3, %1 {
CHECK-NEXT: ^bb(%pid: i32):
CHECK-NEXT: set_program %pid
CHECK-NEXT: %4 = rem %pid, %__grid_x : i32
CHECK-NEXT: %5 = div %pid, %__grid_x : i32
CHECK-NEXT: %6 = rem %5, %__grid_y : i32
CHECK-NEXT: %7 = div %pid, %2 : i32
CHECK: %a = mul %6, %__grid_x : i32
CHECK-NEXT: %b = add %a, %4 : i32
CHECK-NEXT: %c = mul %__grid_x, %__grid_y : i32
CHECK-NEXT: %d = mul %7, %c : i32
CHECK-NEXT: %e = add %b, %d : i32
CHECK-NEXT: %f = add %e, %__grid_z : i32
CHECK: store %q, %v
CHECK-NEXT: yield
CHECK-NEXT: }
CHECK-NEXT: return
""")
    # no use of the original program ids / sizes is left (their defining ops are dead)
    for name in ("p0", "p1", "p2", "n0", "n1", "n2"):
        assert operand_uses(out, name) == [], (name, out)
    # dce removes them; the only program_id / num_programs left are the core's own
    out2 = run_text(GRID3, ["persistent", "dce"])
    assert out2.count("program_id") == 1 and out2.count("num_programs") == 1, out2


def test_persistent_exact_small():
    src = """
func @k(%y: ptr<i32>) {
  %p = program_id {axis = 0} : i32
  %o = cast %p : i64
  %q = addptr %y, %o : ptr<i32>
  store %q, %p
  return
}
"""
    out = run_text(src, ["persistent", "dce"])
    assert strip_locs(out) == """\
func @k(%y: ptr<i32>, %__grid_x: i32, %__grid_y: i32, %__grid_z: i32) {persistent = true} {
  %0 = program_id {axis = 0} : i32
  %1 = num_programs {axis = 0} : i32
  %2 = mul %__grid_x, %__grid_y : i32
  %3 = mul %2, %__grid_z : i32
  for %0, %3, %1 {
  ^bb(%pid: i32):
    set_program %pid
    %4 = rem %pid, %__grid_x : i32
    %o = cast %4 : i64
    %q = addptr %y, %o : ptr<i32>
    store %q, %4
    yield
  }
  return
}""", strip_locs(out)


def test_persistent_leaves_kernel_without_effects_alone():
    src = """
func @k(%n: i32) {
  %c = constant {value = 3} : i32
  %d = add %n, %c : i32
  return
}
"""
    fn = run_fn(src, ["persistent"])
    assert "persistent" not in fn.attrs
    assert print_function(fn) == print_function(parse_function(with_locs(src)))


def test_persistent_runs_once():
    fn = run_fn(GRID3, ["persistent"])
    once = print_function(fn)
    PassManager(["persistent"]).run(fn)
    assert print_function(fn) == once
    assert once.count("__grid_x: i32") == 1 and once.count("for ") == 1


# =============================================================================================
# double-buffer: golden tests
# =============================================================================================

LOOP = """
func @k(%x: ptr<f32>, %y: ptr<f32>, %n: i32) {pipeline_stages = 2} {
  %z = constant {value = 0} : i32
  %B = constant {value = 32} : i32
  %one = constant {value = 1} : i32
  %acc0 = constant {value = 0.0} : tensor<32xf32>
  %accr = for %z, %n, %B, %acc0 {
  ^bb(%i: i32, %acc: tensor<32xf32>):
    %off = cast %i : i64
    %p = addptr %x, %off : ptr<f32>
    %rem = sub %n, %i : i32
    %v = load_tile %p, %one, %rem : tensor<32xf32>
    %a2 = add %acc, %v : tensor<32xf32>
    yield %a2
  } : tensor<32xf32>
  store_tile %y, %one, %B, %accr
  return
}
"""


def test_double_buffer_prologue_pair_and_tail():
    out = run_text(LOOP, ["double-buffer"])
    filecheck(out, """
CHECK: %0 = cmp %z, %n {pred = "lt"} : i1
CHECK-NEXT: %off = cast %z : i64
CHECK-NEXT: %p = addptr %x, %off : ptr<f32>
CHECK-NEXT: %rem = sub %n, %z : i32
CHECK-NEXT: %1 = constant {value = 0} : i32
CHECK-NEXT: %2 = select %0, %rem, %1 : i32
CHECK-NEXT: %v = load_tile %p, %one, %2 : tensor<32xf32>
CHECK-NEXT: %3 = constant {value = 2} : i32
CHECK-NEXT: %4 = mul %B, %3 : i32
CHECK-NEXT: %5 = sub %n, %B : i32
CHECK-NEXT: %6, %7 = for %z, %5, %4, %acc0, %v {double_buffer = "on"} {
CHECK-NEXT: ^bb(%i: i32, %acc: tensor<32xf32>, %v_1: tensor<32xf32>):
CHECK-NEXT: %8 = add %i, %B : i32
CHECK-NEXT: %9 = cmp %8, %n {pred = "lt"} : i1
CHECK: %rem_1 = sub %n, %8 : i32
CHECK: %11 = select %9, %rem_1, %10 : i32
CHECK-NEXT: %v_2 = load_tile %p_1, %one, %11 : tensor<32xf32>
CHECK-NOT: load_tile
CHECK: %a2 = add %acc, %v_1 : tensor<32xf32>
CHECK-NEXT: %12 = add %i, %4 : i32
CHECK-NEXT: %13 = cmp %12, %n {pred = "lt"} : i1
CHECK: %rem_3 = sub %n, %12 : i32
CHECK: %15 = select %13, %rem_3, %14 : i32
CHECK-NEXT: %v_3 = load_tile %p_3, %one, %15 : tensor<32xf32>
CHECK-NOT: load_tile
CHECK: %a2_1 = add %a2, %v_2 : tensor<32xf32>
CHECK-NEXT: yield %a2_1, %v_3
CHECK-NEXT: } : tensor<32xf32>, tensor<32xf32>
CHECK-NOT: load_tile
CHECK: %accr = if
CHECK-NOT: load_tile
CHECK: %a2_2 = add %6, %7 : tensor<32xf32>
CHECK-NEXT: yield %a2_2
CHECK-NEXT: } {
CHECK-NEXT: yield %6
CHECK-NEXT: } : tensor<32xf32>
CHECK-NEXT: store_tile %y, %one, %B, %accr
""")
    # exactly: one prologue load, two prefetches in the loop, none in the tail
    assert out.count("load_tile") == 3, out
    # the pair loop's bounds: lb, ub - step, 2 * step
    assert re.search(r"%4 = mul %B, %3 : i32", out) and re.search(r"%5 = sub %n, %B : i32", out)


CHAIN = """
func @k(%x: ptr<i32>, %w: ptr<f32>, %y: ptr<f32>, %n: i32) {pipeline_stages = 2} {
  %z = constant {value = 0} : i32
  %B = constant {value = 32} : i32
  %one = constant {value = 1} : i32
  %o0 = constant {value = 0} : i64
  %acc0 = constant {value = 0.0} : tensor<32xf32>
  %accr, %offr = for %z, %n, %B, %acc0, %o0 {
  ^bb(%i: i32, %acc: tensor<32xf32>, %off: i64):
    %p = addptr %x, %off : ptr<i32>
    %t = load_tile %p, %one, %B : tensor<32xi32>
    %wo = cast %i : i64
    %wp = addptr %w, %wo : ptr<f32>
    %u = load_tile %wp, %one, %B : tensor<32xf32>
    %a2 = add %acc, %u : tensor<32xf32>
    %r = reduce %t {axis = 0, op = "max"} : i32
    %nx = cast %r : i64
    yield %a2, %nx
  } : tensor<32xf32>, i64
  store_tile %y, %one, %B, %accr
  return
}
"""


def test_double_buffer_does_not_prefetch_load_behind_loaded_carried_value():
    out = run_text(CHAIN, ["double-buffer"])
    # %u (address from the induction variable) is prefetched: prologue + 2 in the loop;
    # %t (address from a carried value computed from a load) stays in place: 2 copies + tail
    filecheck(out, """
CHECK: %u = load_tile %wp, %one, %2 : tensor<32xf32>
CHECK: %6, %7, %8 = for %z, %5, %4, %acc0, %o0, %u {double_buffer = "on"} {
CHECK-NEXT: ^bb(%i: i32, %acc: tensor<32xf32>, %off: i64, %u_1: tensor<32xf32>):
CHECK: %u_2 = load_tile %wp_1, %one, %12 : tensor<32xf32>
CHECK-NEXT: %p = addptr %x, %off : ptr<i32>
CHECK-NEXT: %t = load_tile %p, %one, %B : tensor<32xi32>
CHECK: %a2 = add %acc, %u_1 : tensor<32xf32>
CHECK: %r = reduce %t {axis = 0, op = "max"} : i32
CHECK-NEXT: %nx = cast %r : i64
CHECK: %u_3 = load_tile %wp_3, %one, %16 : tensor<32xf32>
CHECK-NEXT: %p_1 = addptr %x, %nx : ptr<i32>
CHECK-NEXT: %t_1 = load_tile %p_1, %one, %B : tensor<32xi32>
CHECK: %a2_1 = add %a2, %u_2 : tensor<32xf32>
CHECK: yield %a2_1, %nx_1, %u_3
CHECK: %accr, %offr = if
CHECK-NEXT: %p_2 = addptr %x, %7 : ptr<i32>
CHECK-NEXT: %t_2 = load_tile %p_2, %one, %B : tensor<32xi32>
CHECK: %a2_2 = add %6, %8 : tensor<32xf32>
""")
    # the pointer-chasing load is never issued with a select'ed extent nor before the loop
    assert not re.search(r"load_tile %\w+, %one, %\d+ : tensor<32xi32>", out), out
    pre = out.split("for %z")[0]
    assert "tensor<32xi32>" not in pre


def test_double_buffer_only_load_behind_loaded_carried_value_is_left_alone():
    src = """
func @k(%x: ptr<i32>, %y: ptr<i64>, %n: i32) {
  %z = constant {value = 0} : i32
  %B = constant {value = 32} : i32
  %one = constant {value = 1} : i32
  %o0 = constant {value = 0} : i64
  %offr = for %z, %n, %B, %o0 {
  ^bb(%i: i32, %off: i64):
    %p = addptr %x, %off : ptr<i32>
    %t = load_tile %p, %one, %B : tensor<32xi32>
    %r = reduce %t {axis = 0, op = "max"} : i32
    %nx = cast %r : i64
    yield %nx
  } : i64
  store %y, %offr
  return
}
"""
    before = print_function(parse_function(with_locs(src)))
    assert run_text(src, ["double-buffer"]) == before


def test_double_buffer_prefetches_through_carried_scalar_from_induction():
    src = """
func @k(%x: ptr<f32>, %y: ptr<f32>, %n: i32, %s: i64) {pipeline_stages = 2} {
  %z = constant {value = 0} : i32
  %B = constant {value = 32} : i32
  %one = constant {value = 1} : i32
  %o0 = constant {value = 0} : i64
  %acc0 = constant {value = 0.0} : tensor<32xf32>
  %accr, %offr = for %z, %n, %one, %acc0, %o0 {
  ^bb(%i: i32, %acc: tensor<32xf32>, %off: i64):
    %p = addptr %x, %off : ptr<f32>
    %v = load_tile %p, %one, %B : tensor<32xf32>
    %a2 = add %acc, %v : tensor<32xf32>
    %nx = add %off, %s : i64
    yield %a2, %nx
  } : tensor<32xf32>, i64
  store_tile %y, %one, %B, %accr
  return
}
"""
    out = run_text(src, ["double-buffer"])
    assert 'double_buffer = "on' in out
    assert out.count("load_tile") == 3, out
    # the prefetch of trip i+1 uses the next carried offset, computed ahead
    filecheck(out, """
CHECK: for
CHECK: %nx = add %off, %s : i64
CHECK-NEXT: %p_1 = addptr %x, %nx : ptr<f32>
CHECK: load_tile %p_1,
CHECK: %nx_1 = add %off, %s : i64
CHECK: %nx_2 = add %nx_1, %s : i64
CHECK-NEXT: %p_3 = addptr %x, %nx_2 : ptr<f32>
CHECK: load_tile %p_3,
CHECK: %nx_3 = add %nx_1, %s : i64
CHECK-NEXT: yield %a2_1, %nx_3, %v_3
""")


@pytest.mark.parametrize("step", ["neg", "arg"])
def test_double_buffer_leaves_negative_or_unknown_step_alone(step):
    decl = "%st = constant {value = -32} : i32" if step == "neg" else "%st = add %s, %z : i32"
    src = f"""
func @k(%x: ptr<f32>, %y: ptr<f32>, %n: i32, %s: i32) {{
  %z = constant {{value = 0}} : i32
  %B = constant {{value = 32}} : i32
  %one = constant {{value = 1}} : i32
  {decl}
  %acc0 = constant {{value = 0.0}} : tensor<32xf32>
  %accr = for %n, %z, %st, %acc0 {{
  ^bb(%i: i32, %acc: tensor<32xf32>):
    %off = cast %i : i64
    %p = addptr %x, %off : ptr<f32>
    %v = load_tile %p, %one, %B : tensor<32xf32>
    %a2 = add %acc, %v : tensor<32xf32>
    yield %a2
  }} : tensor<32xf32>
  store_tile %y, %one, %B, %accr
  return
}}
"""
    before = print_function(parse_function(with_locs(src)))
    out = run_text(src, ["double-buffer"])
    assert out == before
    assert "double_buffer" not in out


BIG = """
func @k(%x: ptr<f32>, %w: ptr<f32>, %y: ptr<f32>, %n: i32) {
  %z = constant {value = 0} : i32
  %B = constant {value = 16384} : i32
  %one = constant {value = 1} : i32
  for %z, %n, %B {
  ^bb(%i: i32):
    %o = cast %i : i64
    %p = addptr %x, %o : ptr<f32>
    %q = addptr %w, %o : ptr<f32>
    %r = addptr %y, %o : ptr<f32>
    %a = load_tile %p, %one, %B : tensor<16384xf32>
    %b = load_tile %q, %one, %B : tensor<16384xf32>
    %c = add %a, %b : tensor<16384xf32>
    store_tile %r, %one, %B, %c
    yield
  } loc(#f0:99:0)
  return
}
"""


def test_double_buffer_off_when_ub_too_small():
    out = run_text(BIG, ["double-buffer"])
    m = re.search(r'for %z, %n, %B \{double_buffer = "off: ([^"]*)"\}', out)
    assert m, out
    assert "Unified Buffer" in m.group(1) and "two buffers per load" in m.group(1), m.group(1)
    # otherwise unchanged
    before = print_function(parse_function(with_locs(BIG)))
    assert re.sub(r' \{double_buffer = "[^"]*"\}', "", out) == before
    assert out.count("load_tile") == 2
    # and the loop still compiles with the rest of the pipeline (one buffer per load)
    fn = run_fn(BIG, ["double-buffer", "buffer-planning"])
    assert 'double_buffer = "off:' in print_function(fn)


def test_double_buffer_runs_once():
    fn = run_fn(LOOP, ["double-buffer"])
    once = print_function(fn)
    PassManager(["double-buffer"]).run(fn)
    assert print_function(fn) == once


# =============================================================================================
# end to end: kernels/ with double buffering and the persistent loop on and off
# =============================================================================================

def _load(stem: str):
    path = ROOT / "kernels" / f"{stem}.py"
    spec = importlib.util.spec_from_file_location(f"pipelining_kernels_{stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_MODS: dict = {}


def kmod(stem: str):
    if stem not in _MODS:
        _MODS[stem] = _load(stem)
    return _MODS[stem]


CONFIGS = {
    "db+persistent": dict(),
    "nodb+persistent": dict(double_buffer=False),
    "db+nopersistent": dict(disable_passes=("persistent",)),
    "nodb+nopersistent": dict(double_buffer=False, disable_passes=("persistent",)),
    "db+persistent-versioning-hoist": dict(disable_passes=("versioning", "hoist")),
}


def _bytes(x) -> bytes:
    return np.ascontiguousarray(x).view(np.uint8).tobytes()


def all_configs(fn, extra=None):
    """fn(**launch) -> (tuple of outputs, handle); returns outputs of every config after checking
    they are bitwise identical, and the handles."""
    outs, handles = {}, {}
    for name, opts in CONFIGS.items():
        o, h = fn(**opts, **(extra or {}))
        outs[name] = o
        handles[name] = h
    base = outs["db+persistent"]
    for name, o in outs.items():
        assert len(o) == len(base)
        for i, (a, b) in enumerate(zip(base, o)):
            assert a.dtype == b.dtype and a.shape == b.shape
            if _bytes(a) != _bytes(b):
                diff = np.flatnonzero(a.view(np.uint8).ravel() != b.view(np.uint8).ravel())
                raise AssertionError(f"output {i}: {name} differs from db+persistent at {diff.size} bytes, "
                                     f"first byte {diff[0]}")
    return base, handles


def _close(actual, expected, atol, rtol):
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64),
                               atol=atol, rtol=rtol)


@pytest.mark.parametrize("programs", [1, 2, 3, 25, 49])
def test_e2e_vector_add(programs):
    m = kmod("vector_add")
    rng = np.random.default_rng(programs)
    n = 64 * programs - 5
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)

    def f(**kw):
        out, h = m.add(x, y, BLOCK=64, **kw)
        return (out,), h
    (out,), hs = all_configs(f)
    assert np.array_equal(out, x + y)
    assert hs["db+persistent"].stats.programs == programs


@pytest.mark.parametrize("rows", [1, 2, 3, 25, 49])
def test_e2e_softmax(rows):
    m = kmod("softmax")
    x = np.random.default_rng(rows).standard_normal((rows, 100), dtype=np.float32)

    def f(**kw):
        out, h = m.softmax(x, **kw)
        return (out,), h
    (out,), _ = all_configs(f)
    _close(out, m.reference(x), 1e-5, 1e-5)


@pytest.mark.parametrize("rows,cols", [(1, 64), (2, 100), (3, 150), (25, 100), (3, 64), (2, 128), (5, 192)])
def test_e2e_online_softmax(rows, cols):
    # BLOCK 64: 1, 2, 3 column trips (ragged and exact).  n_cols >= BLOCK: with fewer columns
    # than BLOCK the kernel's masked lanes are -inf on every trip and exp(-inf - -inf) makes the
    # row NaN on every backend (ref included) -- a property of the kernel, not of the passes.
    m = kmod("softmax")
    x = np.random.default_rng(cols).standard_normal((rows, cols), dtype=np.float32)

    def f(**kw):
        out, h = m.online_softmax(x, BLOCK=64, **kw)
        return (out,), h
    (out,), _ = all_configs(f)
    _close(out, m.reference(x), 1e-5, 1e-5)


@pytest.mark.parametrize("rows,cols", [(1, 50), (2, 100), (3, 150), (25, 128), (3, 192)])
def test_e2e_layernorm(rows, cols):
    m = kmod("layernorm")
    rng = np.random.default_rng(cols)
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    w = rng.standard_normal(cols, dtype=np.float32)
    b = rng.standard_normal(cols, dtype=np.float32)

    def f(**kw):
        y, mean, rstd, h = m.layernorm(x, w, b, BLOCK=64, **kw)
        return (y, mean, rstd), h
    (y, mean, rstd), _ = all_configs(f)
    _close(y, m.reference(x, w, b), 1e-4, 1e-4)
    _close(mean, x.mean(axis=1), 1e-5, 1e-5)


@pytest.mark.parametrize("n,dim", [(8, 20), (16, 40), (24, 60), (200, 32), (392, 33)])
def test_e2e_gather(n, dim):
    # ROWS 8: 1, 2, 3, 25, 49 programs; BLOCK_D 16: 2, 3, 4, 2, 3 column trips
    m = kmod("gather")
    rng = np.random.default_rng(n)
    table = rng.standard_normal((300, dim), dtype=np.float32)
    idx = rng.integers(0, 300, n).astype(np.int32)

    def f(**kw):
        out, h = m.gather(table, idx, ROWS=8, BLOCK_D=16, **kw)
        return (out,), h
    (out,), _ = all_configs(f)
    assert np.array_equal(out, table[idx])


@pytest.mark.parametrize("n,dim", [(8, 16), (8, 10)])
def test_e2e_gather_single_column_trip(n, dim):
    m = kmod("gather")
    rng = np.random.default_rng(dim)
    table = rng.standard_normal((50, dim), dtype=np.float32)
    idx = rng.integers(0, 50, n).astype(np.int32)

    def f(**kw):
        out, h = m.gather(table, idx, ROWS=8, BLOCK_D=16, **kw)
        return (out,), h
    (out,), _ = all_configs(f)
    assert np.array_equal(out, table[idx])


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("M,N,K", [(16, 16, 20), (40, 16, 50), (16, 40, 90), (16, 16, 64), (48, 48, 96)])
def test_e2e_matmul(dtype, M, N, K):
    # BLOCK_K 32: 1, 2, 3, 2, 3 K trips; BLOCK_M/N 16: 1, 3, 3, 1, 9 programs
    m = kmod("matmul")
    rng = np.random.default_rng(M * K)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    if dtype == "fp16":
        a, b = a.astype(np.float16), b.astype(np.float16)

    def f(**kw):
        c, h = m.matmul(a, b, np.float32, BLOCK_M=16, BLOCK_N=16, BLOCK_K=32, GROUP_M=2, **kw)
        return (c,), h
    (c,), _ = all_configs(f)
    tol = 1e-4 if dtype == "fp32" else 1e-3
    _close(c, a.astype(np.float64) @ b.astype(np.float64), tol, tol)


def test_e2e_matmul_many_programs():
    # 25 programs over 24 cores: one core runs two programs, the rest one
    m = kmod("matmul")
    rng = np.random.default_rng(7)
    a = rng.standard_normal((80, 40), dtype=np.float32)
    b = rng.standard_normal((40, 80), dtype=np.float32)

    def f(**kw):
        c, h = m.matmul(a, b, np.float32, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2, **kw)
        return (c,), h
    (c,), hs = all_configs(f)
    assert hs["db+persistent"].stats.programs == 25
    _close(c, a.astype(np.float64) @ b, 1e-4, 1e-4)


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("heads,seq", [(1, 20), (1, 50), (2, 90), (1, 64)])
def test_e2e_flash_attention(dtype, heads, seq):
    # BLOCK_N 32: 1, 2, 3, 2 key/value trips
    m = kmod("flash_attention")
    rng = np.random.default_rng(seq)
    dt = np.float32 if dtype == "fp32" else np.float16
    q, k, v = (rng.standard_normal((heads, seq, 16)).astype(dt) for _ in range(3))

    def f(**kw):
        out, h = m.attention(q, k, v, BLOCK_M=16, BLOCK_N=32, **kw)
        return (out,), h
    (out,), _ = all_configs(f)
    tol = 1e-4 if dtype == "fp32" else 2e-2
    _close(out, m.reference(q, k, v), tol, tol)


@pytest.mark.parametrize("cores", [1, 2, 3])
def test_e2e_few_cores_odd_and_even_program_loops(cores):
    # 3 / 2 / 1 cores over 5 programs: per-core loops of 5, 3+2, 2+2+1 programs
    m = kmod("softmax")
    x = np.random.default_rng(cores).standard_normal((5, 150), dtype=np.float32)

    def f(**kw):
        o1, h1 = m.online_softmax(x, BLOCK=64, **kw)
        o2, h2 = m.softmax(x, **kw)
        return (o1, o2), h1
    (o1, o2), _ = all_configs(f, dict(cores=cores))
    _close(o1, m.reference(x), 1e-5, 1e-5)
    _close(o2, m.reference(x), 1e-5, 1e-5)


def test_e2e_ir_shows_the_passes_ran():
    m = kmod("softmax")
    x = np.random.default_rng(0).standard_normal((3, 150), dtype=np.float32)
    _, h = m.online_softmax(x, BLOCK=64)
    assert "persistent = true" in h.asm["persistent"]
    assert 'double_buffer = "on' in h.asm["double-buffer"]
    _, h = m.online_softmax(x, BLOCK=64, double_buffer=False, disable_passes=("persistent",))
    assert "__grid_x" not in h.asm["isa"]
    # (h.asm keeps the stage texts of earlier launches for stages this launch did not run, so
    # h.asm["double-buffer"] is not checked here)


@tritonpu.jit
def _grid3_kernel(out_ptr, BLOCK: tl.constexpr):
    x, y, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    nx, ny, nz = tl.num_programs(0), tl.num_programs(1), tl.num_programs(2)
    p = (z * ny + y) * nx + x
    offs = tl.arange(0, BLOCK)
    vals = tl.where(offs == 0, x, tl.where(offs == 1, y, tl.where(offs == 2, z, tl.where(
        offs == 3, nx, tl.where(offs == 4, ny, tl.where(offs == 5, nz, p))))))
    tl.store(out_ptr + p * BLOCK + offs, vals)


@pytest.mark.parametrize("grid", [(1, 1, 1), (3, 2, 2), (5, 1, 5), (2, 3, 1), (7, 7, 1)])
@pytest.mark.parametrize("cores", [None, 2, 5])
def test_e2e_persistent_program_coordinates(grid, cores):
    gx, gy, gz = grid
    want = np.zeros((gx * gy * gz, 8), np.int32)
    for p in range(gx * gy * gz):
        want[p] = [p % gx, p // gx % gy, p // (gx * gy), gx, gy, gz, p, p]
    extra = {} if cores is None else {"cores": cores}
    outs = {}
    for name, opts in CONFIGS.items():
        out = np.full((gx * gy * gz, 8), -1, np.int32)
        h = _grid3_kernel[grid](out, BLOCK=8, **opts, **extra)
        outs[name] = out
        assert h.stats.grid == grid or tuple(h.stats.grid) == grid
    for name, out in outs.items():
        assert np.array_equal(out, want), name


# =============================================================================================
# a guarantee beyond kernels/: loads that read what a store of the same program wrote
# =============================================================================================

# A prefetch runs before the trip's (and the program's) stores: loads from an argument the loop
# writes must not be prefetched. These kernels read back what they (or the previous trip) stored.


@tritonpu.jit
def _chain_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for i in range(0, n):
        v = tl.load(x_ptr + i * BLOCK + offs)
        tl.store(x_ptr + (i + 1) * BLOCK + offs, v + 1.0)


@tritonpu.jit
def _store_load_loop_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for i in range(0, n):
        tl.store(x_ptr + i * BLOCK + offs, tl.full([BLOCK], 1.0, tl.float32) * i)
        v = tl.load(x_ptr + i * BLOCK + offs)
        tl.store(y_ptr + i * BLOCK + offs, v + 1.0)


@tritonpu.jit
def _store_load_program_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.full([BLOCK], 1.0, tl.float32) * pid)
    v = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, v + 1.0)


def _check_all_configs(launch, want):
    """launch(**opts) -> output array; every config (and the ref backend) must give ``want``."""
    assert np.array_equal(launch(backend="ref"), want)
    bad = [name for name, opts in CONFIGS.items() if not np.array_equal(launch(**opts), want)]
    assert not bad, f"wrong results with {bad}"


@pytest.mark.parametrize("trips", [1, 2, 3, 4])
def test_e2e_trip_reads_previous_trips_store(trips):
    # block i+1 = block i + 1: trip i+1 loads what trip i stored, so its load cannot be issued
    # before trip i's store ("every trip computes, reads and writes exactly what it did before")
    x0 = np.zeros((trips + 1) * 32, np.float32)
    x0[:32] = np.arange(32)
    want = x0.copy()
    for i in range(trips):
        want[(i + 1) * 32:(i + 2) * 32] = want[i * 32:(i + 1) * 32] + 1

    def launch(**opts):
        x = x0.copy()
        _chain_kernel[(1,)](x, trips, BLOCK=32, **opts)
        return x
    _check_all_configs(launch, want)


@pytest.mark.parametrize("trips", [1, 2, 3])
def test_e2e_trip_reads_back_its_own_store(trips):
    want = np.repeat(np.arange(trips, dtype=np.float32) + 1, 32)

    def launch(**opts):
        x = np.full(trips * 32, -7.0, np.float32)       # not what any trip stores
        y = np.zeros(trips * 32, np.float32)
        _store_load_loop_kernel[(1,)](x, y, trips, BLOCK=32, **opts)
        return y
    _check_all_configs(launch, want)


@pytest.mark.parametrize("programs", [1, 3, 25])
def test_e2e_program_reads_back_its_own_store(programs):
    want = np.repeat(np.arange(programs, dtype=np.float32) + 1, 32)

    def launch(**opts):
        x = np.full(programs * 32, -7.0, np.float32)    # not what any program stores
        y = np.zeros(programs * 32, np.float32)
        _store_load_program_kernel[(programs,)](x, y, BLOCK=32, **opts)
        return y
    _check_all_configs(launch, want)


# =============================================================================================
# double buffering overlaps
# =============================================================================================

def test_double_buffer_overlaps_softmax_rows():
    m = kmod("softmax")
    x = np.random.default_rng(0).standard_normal((512, 1024), dtype=np.float32)
    on, h_on = m.softmax(x)
    isa_on, db_on = h_on.asm["isa"], h_on.asm["double-buffer"]
    off, h_off = m.softmax(x, double_buffer=False)
    assert _bytes(on) == _bytes(off)
    _close(on, m.reference(x), 1e-5, 1e-5)
    c_on, c_off = h_on.stats.cycles, h_off.stats.cycles
    assert c_on * 1.5 <= c_off, (c_on, c_off)
    # the unrolled loop: set_flag pre-sets before it, one GM->UB transfer per buffer in its body
    stages = re.search(r'double_buffer = "on(?:: (\d) buffers)?"', db_on).group(1)
    lines = isa_on.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("for "))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("endfor"))
    loop_body = lines[start + 1:end]
    assert sum("mov.gm.ub" in ln for ln in loop_body) == int(stages or 2), "\n".join(loop_body)
    assert not any(ln.startswith("for ") or ln.strip().startswith("for ") for ln in loop_body)
    filecheck(isa_on, """
CHECK: mov.gm.ub
CHECK: set_flag
CHECK: for
CHECK: mov.gm.ub
CHECK: mov.gm.ub
CHECK-NOT: mov.gm.ub
CHECK: endfor
CHECK: wait_flag
""")
    pre = lines[:start]
    i_mov = max(i for i, ln in enumerate(pre) if "mov.gm.ub" in ln)
    assert any(ln.startswith("set_flag") for ln in pre[i_mov + 1:]), "\n".join(pre)
    # with it off, one GM->UB transfer per trip of the program loop
    loff = h_off.asm["isa"].splitlines()
    s = next(i for i, ln in enumerate(loff) if ln.startswith("for "))
    e = next(i for i in range(s, len(loff)) if loff[i].startswith("endfor"))
    assert sum("mov.gm.ub" in ln for ln in loff[s + 1:e]) == 1


# =============================================================================================
# CLI
# =============================================================================================

def _cli_run(*flags):
    proc = subprocess.run([sys.executable, "-m", "tritonpu.cli", "run", str(ROOT / "kernels" / "softmax.py"),
                           "--profile", "--print-ir-after", "double-buffer", *flags],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "OK against numpy" in proc.stdout and "MISMATCH" not in proc.stdout
    assert "roofline:" in proc.stdout
    cycles = {}      # the first profile the CLI printed for each kernel (the script prints its own too)
    for m in re.finditer(r"// ---- (\w+): profile, grid [^\n]*\nkernel \1: (\d+) cycles", proc.stdout):
        cycles.setdefault(m.group(1), int(m.group(2)))
    return proc.stdout, cycles


def test_cli_run_no_double_buffer_profile():
    from tritonpu.runtime import cli
    if "--no-double-buffer" not in Path(cli.__file__).read_text():
        pytest.skip("tritonpu run has no --no-double-buffer flag yet (tritonpu/runtime/cli.py)")
    off, c_off = _cli_run("--no-double-buffer")
    on, c_on = _cli_run()
    # without double buffering the pass did not run: no IR after it, no loop marked "on"
    assert "ir after double-buffer" not in off and 'double_buffer = "on' not in off
    assert "ir after double-buffer" in on and 'double_buffer = "on' in on
    assert set(c_off) == set(c_on) == {"softmax_kernel", "online_softmax_kernel", "scale_bias_softmax_kernel"}, \
        (c_off, c_on)
    assert c_on["softmax_kernel"] < c_off["softmax_kernel"], (c_on, c_off)


def _fresh_k_loop_dot():
    """A kernel object of its own (the compilations it keeps are its own launches') running one K
    loop of dots."""
    @tritonpu.jit
    def _k_loop_dot(a_ptr, b_ptr, c_ptr, K, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                    BK: tl.constexpr):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            acc += tl.dot(tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :]),
                          tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :]))
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
    return _k_loop_dot


_k_loop_dot = _fresh_k_loop_dot()


@pytest.mark.parametrize("K,buffers", [(1024, 6), (128, 4), (64, 4)])
def test_a_k_loop_of_short_trips_gets_buffers_for_the_trips_it_has(K, buffers):
    """Short trips (32x64x32 fp16 tiles: 6 KiB, 56 cycles at the L2 rate) against MTE2's 200-cycle
    latency ask for six buffers (1 + ceil(256 / 56), made even: the trips alternate L0 halves);
    when the launch's K gives fewer trips than that (a guard), four at most -- more only add checks
    for trips that do not exist."""
    rng = np.random.default_rng(K)
    a = (rng.random((64, K)) - 0.5).astype(np.float16)
    b = (rng.random((K, 64)) - 0.5).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    h = _k_loop_dot[(2,)](a, b, c, K, N=64, BM=32, BN=64, BK=32, disable_passes=("panel-reuse",))
    got = re.findall(r'double_buffer = "on(?:: (\d) buffers)?"', h.asm["double-buffer"])
    assert [int(g or 2) for g in got] == [buffers], got
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), atol=1e-3, rtol=1e-3)
    if buffers == 6:
        # a trip's prefetched loads are one group: the flag for A's tile waits for B's too, so the
        # K loop sets one MTE2 -> MTE1 flag per trip
        loop = _inner_loop(h.asm["isa"])
        assert loop.count("set_flag MTE2, MTE1") == 6 and loop.count("mov.gm.l1") == 12, loop


@pytest.mark.parametrize("K", [1024, 992, 160])
def test_a_k_loop_whose_launch_gives_its_trip_count_issues_no_empty_load(K):
    """With the trip count given by the launch (a guard), the pipelined K loop runs only the passes
    whose prefetches all exist and its last trips (5 to 10 here, or all 5 at K = 160) are
    straight-line code: every load executed brings a tile a dot reads -- an empty load for a trip
    past the end would still wait for its buffer to be read, in MTE2's queue ahead of whatever
    follows -- and the last trips' dots accumulate into the loop's L0C tile (no vector work).
    Results are bitwise those without double buffering."""
    rng = np.random.default_rng(K)
    a = (rng.random((64, K)) - 0.5).astype(np.float16)
    b = (rng.random((K, 64)) - 0.5).astype(np.float16)
    outs = []
    for db in (False, True):
        outs.append(np.zeros((64, 64), np.float32))
        h = _k_loop_dot[(2,)](a, b, outs[-1], K, N=64, BM=32, BN=64, BK=32, disable_passes=("panel-reuse",),
                              double_buffer=db, trace=True)
    assert re.findall(r'double_buffer = "on(?:: (\d) buffers)?"', h.asm["double-buffer"]) == ["6" if K > 160 else "4"]
    loads = [e for e in h.stats.trace_events if e["ph"] == "X" and e["args"]["text"].startswith("mov.gm.l1")]
    assert len(loads) == 2 * 2 * (K // 32), len(loads)       # two programs, A's and B's tile a trip
    assert h.stats.instr_count["vector"] == 0
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[0], a.astype(np.float32) @ b.astype(np.float32), atol=1e-3, rtol=1e-3)


def test_the_straight_line_last_trips_are_compiled_once_per_remainder_of_the_trip_count():
    """The guard the straight-line last trips take is the trip count's remainder by the buffers
    (and a least count), not the count itself: K = 1024 and 1216 (32 and 38 trips of six buffers:
    8 last trips each) share one compilation, K = 992 (31 trips) takes another; every launch
    executes exactly two loads a trip and is right."""
    k_loop = _fresh_k_loop_dot()
    compiled = []
    for K in (1024, 1216, 992):
        rng = np.random.default_rng(K)
        a = (rng.random((64, K)) - 0.5).astype(np.float16)
        b = (rng.random((K, 64)) - 0.5).astype(np.float16)
        c = np.zeros((64, 64), np.float32)
        h = k_loop[(2,)](a, b, c, K, N=64, BM=32, BN=64, BK=32, disable_passes=("panel-reuse",), trace=True)
        np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), atol=1e-3, rtol=1e-3)
        loads = [e for e in h.stats.trace_events if e["ph"] == "X" and e["args"]["text"].startswith("mov.gm.l1")]
        assert len(loads) == 2 * 2 * (K // 32), (K, len(loads))
        compiled.append(len([x for key, v in h.kernel.backend_artifacts.items() if key[0] == "npu" for x in v]))
    assert compiled == [1, 1, 2], compiled


def test_a_k_loop_of_very_short_trips_issues_its_loads_two_trips_at_a_time():
    """16x32x32 fp16 tiles (2 KiB a trip, ~19 cycles at the L2 rate) ask for twelve buffers: more
    than the eight event ids a pipe pair has, so the loads go two trips at a time under one flag
    (the trip the pass consumes itself and the last one alone): 12 / 2 + 1 flags a pass.  Before the
    loop, each pair's flag is set right after its loads, so the first trip waits for its own tiles,
    not for the eleven trips loaded ahead.  Results are bitwise those without double buffering."""
    K = 1024
    rng = np.random.default_rng(K)
    a = (rng.random((32, K)) - 0.5).astype(np.float16)
    b = (rng.random((K, 32)) - 0.5).astype(np.float16)
    c = np.zeros((32, 32), np.float32)
    h = _k_loop_dot[(2,)](a, b, c, K, N=32, BM=16, BN=32, BK=32, disable_passes=("panel-reuse",))
    assert re.findall(r'double_buffer = "on: (\d+) buffers"', h.asm["double-buffer"]) == ["12"]
    loop = _inner_loop(h.asm["isa"])
    assert loop.count("set_flag MTE2, MTE1") == 7 and loop.count("mov.gm.l1") == 24, loop
    lines = h.asm["isa"].splitlines()
    loops = [i for i, ln in enumerate(lines) if ln.strip().startswith("for ")]      # the program loop, the K loop
    head = [ln.strip().split(" loc(")[0] for ln in lines[loops[0] + 1:loops[-1]]]
    kinds = ["L" if ln.startswith("mov.gm.l1") else "F" for ln in head
             if ln.startswith("mov.gm.l1") or ln.startswith("set_flag MTE2, MTE1")]
    assert "".join(kinds) == "LLLLF" * 5 + "LLF", kinds     # A and B of two trips, then their flag
    c0 = np.zeros_like(c)
    _k_loop_dot[(2,)](a, b, c0, K, N=32, BM=16, BN=32, BK=32, disable_passes=("panel-reuse",), double_buffer=False)
    assert c.tobytes() == c0.tobytes()
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), atol=1e-3, rtol=1e-3)


@tritonpu.jit
def _k_loop_from_pid(a_ptr, b_ptr, c_ptr, K, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr):
    pid = tl.program_id(0)
    pm = pid // (N // BN)
    pn = pid % (N // BN)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range((pid % 5) * BK, K, BK):
        acc += tl.dot(tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :]),
                      tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :]))
    if pid % 3 == 0:
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
    elif pid % 3 == 1:
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc * 2.0)


def test_a_k_loop_of_sixteen_buffers_that_runs_no_pass_is_synced():
    """Found by a probe: 13 to 17 trips of 16x16x16 tiles (sixteen buffers: every trip but the
    last runs after the loop, on the tiles loaded before it), the first trip's flags set right
    after their loads -- the drain after the loop claimed every load before it, and a trip after
    the loop read a tile still in flight (the sanitizer, on by default, reported the race)."""
    rng = np.random.default_rng(5)
    a = (rng.random((32, 272)) - 0.5).astype(np.float16)
    b = (rng.random((272, 320)) - 0.5).astype(np.float16)
    c = np.full((32, 320), 7.0, np.float32)
    _k_loop_from_pid[(40,)](a, b, c, 272, N=320, BM=16, BN=16, BK=16)
    want = np.full_like(c, 7.0)
    for pid in range(40):
        pm, pn, k0 = pid // 20, pid % 20, (pid % 5) * 16
        blk = a[pm * 16:pm * 16 + 16, k0:].astype(np.float32) @ b[k0:, pn * 16:pn * 16 + 16].astype(np.float32)
        if pid % 3 < 2:
            want[pm * 16:pm * 16 + 16, pn * 16:pn * 16 + 16] = blk * (1.0 if pid % 3 == 0 else 2.0)
    np.testing.assert_allclose(c, want, atol=1e-3, rtol=1e-3)


def _inner_loop(isa: str) -> str:
    """The text of the innermost (last-opened) ``for`` loop with the most instructions."""
    lines, best, stack = isa.splitlines(), "", []
    for i, ln in enumerate(lines):
        if ln.strip().startswith("for "):
            stack.append(i)
        elif ln.strip() == "endfor" and stack:
            start = stack.pop()
            body = lines[start + 1:i]
            if not any(x.strip().startswith("for ") for x in body) and len(body) > len(best.splitlines()):
                best = "\n".join(body)
    return best


@tritonpu.jit
def _matmul_plus_bias(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                      BK: tl.constexpr):
    pid = tl.program_id(0)
    pid_m = pid // tl.cdiv(N, BN)
    pid_n = pid % tl.cdiv(N, BN)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptr + rm[:, None] * K + (k * BK + rk)[None, :], mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptr + (k * BK + rk)[:, None] * N + rn[None, :], mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
    acc += tl.load(bias_ptr + rn, mask=rn < N, other=0.0)[None, :]      # loaded after the K loop
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def test_a_load_after_an_inner_loop_is_prefetched_where_it_was():
    """A persistent matmul's bias row, loaded after its K loop: the next program's row is loaded
    one trip ahead at the same place, after the K loop -- at the trip's start it waited for the
    previous program's epilogue to read its buffer, ahead of this program's K loop loads in MTE2's
    queue (1024x768x512 at 128x64x32: 9176 cycles, 7961 now; 7274 without the bias)."""
    M, N, K = 1024, 768, 512
    rng = np.random.default_rng(8)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    bias = rng.standard_normal(N).astype(np.float32)
    c = np.zeros((M, N), np.float16)
    h = _matmul_plus_bias[((M // 128) * (N // 64),)](a, b, c, bias, M, N, K, BM=128, BN=64, BK=32)
    want = a.astype(np.float64) @ b.astype(np.float64) + bias
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=1e-2, atol=2e-2 * np.abs(want).max())
    isa = h.asm["isa"].splitlines()
    top = next(i for i, line in enumerate(isa) if line.startswith("for "))      # the program loop
    ahead = [i for i, line in enumerate(isa) if i > top and "bias_ptr[" in line and "mov.gm.ub" in line]
    assert ahead and all(any(x.strip() == "endfor" for x in isa[top:i]) for i in ahead), (top, ahead)
