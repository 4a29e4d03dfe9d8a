"""Golden tests for the dataflow-IR passes: IR text in, expected IR out (FileCheck-style)."""
import subprocess
import sys

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.ir import parse_function, print_function, verify
from tritonpu.passes import PassError, PassManager
from tritonpu.testing import filecheck

HEADER = '#f0 = "k.py"\n'


def run_passes(text: str, passes: list[str]) -> str:
    fn = parse_function(HEADER + text)
    verify(fn)
    PassManager(passes).run(fn)
    return print_function(fn)


def test_cse_merges_identical_pure_ops_but_not_loads():
    out = run_passes("""
func @k(%p: ptr<f32>, %n: i32) {
  %a = constant {value = 4} : i32 loc(#f0:1:0)
  %b = constant {value = 4} : i32 loc(#f0:2:0)
  %c = mul %n, %a : i32 loc(#f0:3:0)
  %d = mul %n, %b : i32 loc(#f0:4:0)
  %x = load %p : f32 loc(#f0:5:0)
  %y = load %p : f32 loc(#f0:6:0)
  %s = add %c, %d : i32 loc(#f0:7:0)
  %q = addptr %p, %s : ptr<f32> loc(#f0:8:0)
  %z = add %x, %y : f32 loc(#f0:9:0)
  store %q, %z loc(#f0:10:0)
  return loc(#f0:11:0)
}
""", ["cse", "dce"])
    filecheck(out, """
CHECK: %a = constant {value = 4} : i32
CHECK-NOT: constant
CHECK: %c = mul %n, %a : i32
CHECK-NOT: mul
CHECK: %x = load %p : f32
CHECK-NEXT: %y = load %p : f32
CHECK-NEXT: %s = add %c, %c : i32
""")


def test_cse_leaves_block_splats_apart():
    # a block splat is made again where it is needed: merged, the first tile would stay on chip
    # until the second's last use (a 64 KiB accumulator kept alive across a whole loop)
    out = run_passes("""
func @k(%p: ptr<f32>, %n: i32) {
  %c = constant {value = 0.0} : f32 loc(#f0:1:0)
  %one = constant {value = 1} : i32 loc(#f0:1:0)
  %B = constant {value = 16} : i32 loc(#f0:1:0)
  %a = splat %c : tensor<16xf32> loc(#f0:2:0)
  %b = splat %c : tensor<16xf32> loc(#f0:3:0)
  %s = add %a, %b : tensor<16xf32> loc(#f0:4:0)
  store_tile %p, %one, %B, %s loc(#f0:5:0)
  return loc(#f0:6:0)
}
""", ["cse", "dce"])
    filecheck(out, """
CHECK: %a = splat %c : tensor<16xf32>
CHECK-NEXT: %b = splat %c : tensor<16xf32>
CHECK-NEXT: %s = add %a, %b : tensor<16xf32>
""")


def test_canonicalize_folds_a_select_of_two_equal_values():
    # (double buffering makes `select(trip exists, extent, full)` where the extent is already full)
    out = run_passes("""
func @k(%p: ptr<i32>, %n: i32) {
  %a = constant {value = 64} : i32 loc(#f0:1:0)
  %b = constant {value = 64} : i32 loc(#f0:2:0)
  %z = constant {value = 0.0} : f32 loc(#f0:2:0)
  %nz = constant {value = -0.0} : f32 loc(#f0:2:0)
  %c = cmp %n, %a {pred = "lt"} : i1 loc(#f0:3:0)
  %s = select %c, %a, %b : i32 loc(#f0:4:0)
  %t = select %c, %n, %n : i32 loc(#f0:5:0)
  %u = select %c, %z, %nz : f32 loc(#f0:6:0)
  %v = add %s, %t : i32 loc(#f0:7:0)
  store %p, %v loc(#f0:8:0)
  %q = bitcast %p : ptr<f32> loc(#f0:9:0)
  store %q, %u loc(#f0:10:0)
  return loc(#f0:11:0)
}
""", ["canonicalize", "dce"])
    filecheck(out, """
CHECK-NOT: %s = select
CHECK-NOT: %t = select
CHECK: %u = select %c, %z, %nz : f32
CHECK: %v = add %a, %n : i32
""")


def test_cse_reuses_outer_value_inside_loop_region():
    out = run_passes("""
func @k(%p: ptr<i32>, %n: i32) {
  %z = constant {value = 0} : i32 loc(#f0:1:0)
  %one = constant {value = 1} : i32 loc(#f0:1:0)
  %r = for %z, %n, %one, %z {
  ^bb(%i: i32, %acc: i32):
    %one2 = constant {value = 1} : i32 loc(#f0:2:0)
    %t = add %acc, %one2 : i32 loc(#f0:3:0)
    yield %t loc(#f0:4:0)
  } : i32 loc(#f0:5:0)
  store %p, %r loc(#f0:6:0)
  return loc(#f0:7:0)
}
""", ["cse", "dce"])
    filecheck(out, """
CHECK: ^bb(%i: i32, %acc: i32):
CHECK-NEXT: %t = add %acc, %one : i32
""")


def test_dce_removes_unused_pure_ops_and_keeps_effects():
    out = run_passes("""
func @k(%p: ptr<f32>, %n: i32) {
  %a = constant {value = 2.0} : f32 loc(#f0:1:0)
  %unused = mul %a, %a : f32 loc(#f0:2:0)
  %x = load %p : f32 loc(#f0:3:0)
  %z = constant {value = 0} : i32 loc(#f0:4:0)
  %one = constant {value = 1} : i32 loc(#f0:4:0)
  %dead = for %z, %n, %one, %a {
  ^bb(%i: i32, %acc: f32):
    %t = add %acc, %a : f32 loc(#f0:5:0)
    yield %t loc(#f0:6:0)
  } : f32 loc(#f0:7:0)
  return loc(#f0:8:0)
}
""", ["dce"])
    assert "mul" not in out and "for" not in out and "%a = constant" not in out
    filecheck(out, "CHECK: %x = load %p : f32\nCHECK-NEXT: return")


def test_canonicalize_folds_constants_with_the_language_semantics():
    out = run_passes("""
func @k(%p: ptr<i32>, %n: i32) {
  %a = constant {value = -7} : i32 loc(#f0:1:0)
  %b = constant {value = 2} : i32 loc(#f0:2:0)
  %q = div %a, %b : i32 loc(#f0:3:0)
  %r = rem %a, %b : i32 loc(#f0:4:0)
  %s = add %q, %r : i32 loc(#f0:5:0)
  %t = add %n, %s : i32 loc(#f0:6:0)
  store %p, %t loc(#f0:7:0)
  return loc(#f0:8:0)
}
""", ["canonicalize", "dce"])
    # C semantics: -7 / 2 = -3, -7 % 2 = -1 -> -4
    filecheck(out, "CHECK: %s = constant {value = -4} : i32\nCHECK-NEXT: %t = add %n, %s : i32")


def test_canonicalize_identities():
    out = run_passes("""
func @k(%p: ptr<i32>, %n: i32) {
  %zero = constant {value = 0} : i32 loc(#f0:1:0)
  %one = constant {value = 1} : i32 loc(#f0:1:0)
  %a = add %n, %zero : i32 loc(#f0:2:0)
  %b = mul %a, %one : i32 loc(#f0:3:0)
  store %p, %b loc(#f0:4:0)
  return loc(#f0:5:0)
}
""", ["canonicalize", "dce"])
    filecheck(out, "CHECK: store %p, %n")


def test_float_add_zero_is_kept():
    # -0.0 + 0.0 = +0.0: x + 0.0 is not x for floats.
    out = run_passes("""
func @k(%p: ptr<f32>, %x: f32) {
  %zero = constant {value = 0.0} : f32 loc(#f0:1:0)
  %a = add %x, %zero : f32 loc(#f0:2:0)
  store %p, %a loc(#f0:3:0)
  return loc(#f0:4:0)
}
""", ["canonicalize", "dce"])
    filecheck(out, "CHECK: %a = add %x, %zero : f32")


def test_unknown_pass_is_an_error():
    with pytest.raises(PassError, match="unknown pass 'nope'"):
        PassManager(["nope"])


@tritonpu.jit
def _affine_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    y = x * 2.0 + (3 * 4 - 11)
    tl.store(out_ptr + offs, y, mask=offs < n)


def test_default_pipeline_keeps_results_unchanged():
    from tritonpu.ref import evaluator
    x = np.arange(100, dtype=np.float32)
    out = np.zeros_like(x)
    h = _affine_kernel[(4,)](x, out, 100, BLOCK=32, backend="ref")
    fn = parse_function(h.asm["ir"])
    PassManager().run(fn)
    out2 = np.zeros_like(x)
    evaluator.run(fn, [x, out2, 100], (4, 1, 1))
    np.testing.assert_array_equal(out, x * 2 + 1)
    np.testing.assert_array_equal(out2, out)


def test_opt_cli_runs_passes_on_ir_text(tmp_path):
    src = tmp_path / "k.ir"
    src.write_text(HEADER + """
func @k(%p: ptr<i32>) {
  %a = constant {value = 3} : i32 loc(#f0:1:0)
  %b = constant {value = 3} : i32 loc(#f0:2:0)
  %c = mul %a, %b : i32 loc(#f0:3:0)
  store %p, %c loc(#f0:4:0)
  return loc(#f0:5:0)
}
""")
    proc = subprocess.run([sys.executable, "-m", "tritonpu.cli", "opt", str(src), "--print-ir-after=all"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    filecheck(proc.stdout, """
CHECK: // ---- IR after canonicalize ----
CHECK: %c = constant {value = 9} : i32
CHECK: // ---- IR after cse ----
CHECK: // ---- IR after dce ----
CHECK-NOT: %a = constant
CHECK: store %p, %c
""")


def test_opt_cli_reports_parse_errors_with_line(tmp_path):
    src = tmp_path / "bad.ir"
    src.write_text('func @k(%p: ptr<i32>) {\n  %a = frobnicate : i32 loc(#f0:1:0)\n}\n')
    proc = subprocess.run([sys.executable, "-m", "tritonpu.cli", "opt", str(src)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "line 2" in proc.stderr


_WHILE = """
func @k(%p: ptr<f32>, %n: i32) {
  %z = constant {value = 0.0} : f32 loc(#f0:1:0)
  %zero = constant {value = 0} : i32 loc(#f0:2:0)
  %acc, %k = while %z, %zero {
  ^bb(%a0: f32, %k0: i32):
    %c = cmp %k0, %n {pred = "PRED"} : i1 loc(#f0:3:0)
    condition %c, %a0, %k0 loc(#f0:3:0)
  } {
  ^bb(%a1: f32, %k1: i32):
    %q = addptr %p, %k1 : ptr<f32> loc(#f0:4:0)
    %x = load %q : f32 loc(#f0:4:0)
    %a2 = add %a1, %x : f32 loc(#f0:5:0)
    %s = constant {value = STEP} : i32 loc(#f0:6:0)
    %k2 = add %k1, %s : i32 loc(#f0:6:0)
    yield %a2, %k2 loc(#f0:3:0)
  } : f32, i32 loc(#f0:3:0)
  store %p, %acc loc(#f0:7:0)
  return loc(#f0:8:0)
}
"""


def test_a_while_counting_up_to_a_bound_is_a_for_loop():
    out = run_passes(_WHILE.replace("PRED", "lt").replace("STEP", "4"), ["canonicalize"])
    filecheck(out, """
CHECK: %zero = constant {value = 0} : i32
CHECK-NEXT: %0 = constant {value = 4} : i32
CHECK-NEXT: %acc = for %zero, %n, %0, %z {
CHECK-NEXT: ^bb(%k1: i32, %a1: f32):
CHECK: yield %a2
CHECK-NOT: while
CHECK: store %p, %acc
""")


@pytest.mark.parametrize("pred, step, why", [("le", "4", "k <= n: one trip more than a range"),
                                             ("lt", "0", "a step of 0 never ends"),
                                             ("lt", "-4", "counting down")])
def test_a_while_that_is_no_range_stays(pred, step, why):
    out = run_passes(_WHILE.replace("PRED", pred).replace("STEP", step), ["canonicalize"])
    assert " while " in out and " for " not in out, why


def test_a_while_whose_final_count_is_read_stays():
    text = _WHILE.replace("PRED", "lt").replace("STEP", "4").replace(
        "  store %p, %acc loc(#f0:7:0)", "  %r = cast %k : f32 loc(#f0:7:0)\n  store %p, %r loc(#f0:7:0)")
    assert " while " in run_passes(text, ["canonicalize"])


@tritonpu.jit
def _while_k_loop(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    k0 = 0
    while k0 < K:
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=kk[None, :] < K, other=0.0)
        b = tl.load(b_ptr + kk[:, None] * BN + rn[None, :], mask=kk[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
        k0 += BK
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


def test_a_while_k_loop_runs_as_its_for_loop():
    """A matmul's K loop written as a ``while``: before, its accumulator stayed in UB (no L0C, no
    double buffering; 128x128x64 at K 300 did not fit)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((128, 300)).astype(np.float16), rng.standard_normal((300, 128)).astype(np.float16)
    c = np.zeros((128, 128), np.float32)
    h = _while_k_loop[(1,)](a, b, c, 300, BM=128, BN=128, BK=64)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-2)
    assert " while " not in h.asm["canonicalize"] and "double_buffer = \"on" in h.asm["double-buffer"]
