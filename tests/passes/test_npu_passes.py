"""Golden tests for the NPU passes (memory-analysis, fusion, dce's carried-value pruning, tiling,
buffer-planning): IR text in, expected IR out; plus "results do not change when an optional pass is
switched off" on the real kernels, and ``tritonpu opt`` on IR text."""
import importlib
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.codegen.pipeline import OPTIONAL_PASSES, pipeline_for
from tritonpu.errors import CompilationError
from tritonpu.ir import parse_function, print_function, verify
from tritonpu.passes import PassManager
from tritonpu.testing import filecheck

ROOT = Path(__file__).resolve().parents[2]
MA = ["memory-analysis", "dce"]


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


def run(text: str, passes: list[str]):
    fn = parse_function(with_locs(text))
    verify(fn)
    PassManager(passes).run(fn)
    return fn


def run_text(text: str, passes: list[str]) -> str:
    fn = run(text, passes)
    verify(fn)
    return print_function(fn)


def body(out: str) -> str:
    """The printed function without the file header and without locs (for exact comparisons)."""
    lines = [re.sub(r" loc\(#f0:\d+:\d+\)", "", ln) for ln in out.strip().splitlines()[1:]]
    return "\n".join(lines)


def exact(out: str, want: str) -> None:
    assert body(out) == want.strip("\n"), f"got:\n{body(out)}"


# =============================================================================================
# memory-analysis
# =============================================================================================

ONE_D = """
func @k(%x: ptr<f32>, %y: ptr<f32>, %n: i32) {
  %pid = program_id {axis = 0} : i32
  %c = constant {value = 64} : i32
  %base = mul %pid, %c : i32
  %ar = arange {end = 64, start = 0} : tensor<64xi32>
  %bs = splat %base : tensor<64xi32>
  %offs = add %bs, %ar : tensor<64xi32>
  %ns = splat %n : tensor<64xi32>
  %m = cmp %offs, %ns {pred = "lt"} : tensor<64xi1>
  %xs = splat %x : tensor<64xptr<f32>>
  %xp = addptr %xs, %offs : tensor<64xptr<f32>>
  %v = load %xp, %m : tensor<64xf32>
  %ys = splat %y : tensor<64xptr<f32>>
  %yp = addptr %ys, %offs : tensor<64xptr<f32>>
  store %yp, %v, %m
  return
}
"""


def test_ma_1d_masked_load_store_valid_extent_is_clamped_scalar():
    out = run_text(ONE_D, MA)
    # valid = min(max(n - pid*64, 0), 64); base pointer x + pid*64; stride 1
    exact(out, """
func @k(%x: ptr<f32>, %y: ptr<f32>, %n: i32) {
  %pid = program_id {axis = 0} : i32
  %c = constant {value = 64} : i32
  %base = mul %pid, %c : i32
  %0 = sub %n, %base : i32
  %1 = constant {value = 0} : i32
  %2 = maximum %0, %1 : i32
  %3 = constant {value = 64} : i32
  %4 = minimum %2, %3 : i32
  %5 = addptr %x, %base : ptr<f32>
  %6 = constant {value = 1} : i32
  %7 = load_tile %5, %6, %4 : tensor<64xf32>
  %8 = sub %n, %base : i32
  %9 = constant {value = 0} : i32
  %10 = maximum %8, %9 : i32
  %11 = constant {value = 64} : i32
  %12 = minimum %10, %11 : i32
  %13 = addptr %y, %base : ptr<f32>
  %14 = constant {value = 1} : i32
  store_tile %13, %14, %12, %7
  return
}
""")
    # the inserted scalar ops carry the location of the access they serve
    filecheck(out, """
CHECK: %0 = sub %n, %base : i32 loc(#f0:12:0)
CHECK: %7 = load_tile %5, %6, %4 : tensor<64xf32> loc(#f0:12:0)
CHECK: store_tile %13, %14, %12, %7 loc(#f0:15:0)
""")


TWO_D = """
func @k(%a: ptr<f32>, %o: ptr<f32>, %M: i32, %N: i32, %stride: i32) {
  %pid = program_id {axis = 0} : i32
  %c16 = constant {value = 16} : i32
  %r0 = mul %pid, %c16 : i32
  %ar = arange {end = 16, start = 0} : tensor<16xi32>
  %r0s = splat %r0 : tensor<16xi32>
  %rows = add %r0s, %ar : tensor<16xi32>
  %cols = arange {end = 32, start = 0} : tensor<32xi32>
  %re = expand_dims %rows {axis = 1} : tensor<16x1xi32>
  %ss = splat %stride : tensor<16x1xi32>
  %rm = mul %re, %ss : tensor<16x1xi32>
  %rb = broadcast %rm : tensor<16x32xi32>
  %ce = expand_dims %cols {axis = 0} : tensor<1x32xi32>
  %cb = broadcast %ce : tensor<16x32xi32>
  %off = add %rb, %cb : tensor<16x32xi32>
  %Ms = splat %M : tensor<16x1xi32>
  %mr = cmp %re, %Ms {pred = "lt"} : tensor<16x1xi1>
  %Ns = splat %N : tensor<1x32xi32>
  %mc = cmp %ce, %Ns {pred = "lt"} : tensor<1x32xi1>
  %mrb = broadcast %mr : tensor<16x32xi1>
  %mcb = broadcast %mc : tensor<16x32xi1>
  %m = and %mrb, %mcb : tensor<16x32xi1>
  %as = splat %a : tensor<16x32xptr<f32>>
  %ap = addptr %as, %off : tensor<16x32xptr<f32>>
  %v = load %ap, %m : tensor<16x32xf32>
  %os = splat %o : tensor<16x32xptr<f32>>
  %op = addptr %os, %off : tensor<16x32xptr<f32>>
  store %op, %v, %m
  return
}
"""


def test_ma_2d_row_major_runtime_stride_both_masks():
    out = run_text(TWO_D, MA)
    filecheck(out, """
CHECK: %r0 = mul %pid, %c16 : i32
CHECK-NEXT: %0 = mul %r0, %stride : i32
CHECK-NEXT: %1 = sub %M, %r0 : i32
CHECK-NEXT: %2 = constant {value = 0} : i32
CHECK-NEXT: %3 = maximum %1, %2 : i32
CHECK-NEXT: %4 = constant {value = 16} : i32
CHECK-NEXT: %5 = minimum %3, %4 : i32
CHECK-NEXT: %6 = constant {value = 0} : i32
CHECK-NEXT: %7 = maximum %N, %6 : i32
CHECK-NEXT: %8 = constant {value = 32} : i32
CHECK-NEXT: %9 = minimum %7, %8 : i32
CHECK-NEXT: %10 = addptr %a, %0 : ptr<f32>
CHECK-NEXT: %11 = constant {value = 1} : i32
CHECK-NEXT: %12 = load_tile %10, %stride, %11, %5, %9 : tensor<16x32xf32>
CHECK-NOT: load %
CHECK-NOT: store %
CHECK: store_tile %23, %stride, %24, %18, %22, %12
CHECK-NEXT: return
""")
    assert "cmp" not in out and "and" not in out and "broadcast" not in out


COL_MAJOR = """
func @k(%a: ptr<f32>, %o: ptr<f32>, %stride: i32) {
  %rows = arange {end = 16, start = 0} : tensor<16xi32>
  %cols = arange {end = 32, start = 0} : tensor<32xi32>
  %re = expand_dims %rows {axis = 1} : tensor<16x1xi32>
  %rb = broadcast %re : tensor<16x32xi32>
  %ce = expand_dims %cols {axis = 0} : tensor<1x32xi32>
  %ss = splat %stride : tensor<1x32xi32>
  %cm = mul %ce, %ss : tensor<1x32xi32>
  %cb = broadcast %cm : tensor<16x32xi32>
  %off = add %rb, %cb : tensor<16x32xi32>
  %as = splat %a : tensor<16x32xptr<f32>>
  %ap = addptr %as, %off : tensor<16x32xptr<f32>>
  %v = load %ap : tensor<16x32xf32>
  %os = splat %o : tensor<16x32xptr<f32>>
  %op = addptr %os, %off : tensor<16x32xptr<f32>>
  store %op, %v
  return
}
"""


def test_ma_column_major_transposed_access_strides():
    out = run_text(COL_MAJOR, MA)
    exact(out, """
func @k(%a: ptr<f32>, %o: ptr<f32>, %stride: i32) {
  %0 = constant {value = 16} : i32
  %1 = constant {value = 32} : i32
  %2 = constant {value = 1} : i32
  %3 = load_tile %a, %2, %stride, %0, %1 : tensor<16x32xf32>
  %4 = constant {value = 16} : i32
  %5 = constant {value = 32} : i32
  %6 = constant {value = 1} : i32
  store_tile %o, %6, %stride, %4, %5, %3
  return
}
""")


COL_MAJOR_DOT = """
func @k(%a: ptr<f16>, %b: ptr<f16>, %o: ptr<f32>, %stride: i32) {
  %rows = arange {end = 16, start = 0} : tensor<16xi32>
  %cols = arange {end = 32, start = 0} : tensor<32xi32>
  %re = expand_dims %rows {axis = 1} : tensor<16x1xi32>
  %rb = broadcast %re : tensor<16x32xi32>
  %ce = expand_dims %cols {axis = 0} : tensor<1x32xi32>
  %ss = splat %stride : tensor<1x32xi32>
  %cm = mul %ce, %ss : tensor<1x32xi32>
  %cb = broadcast %cm : tensor<16x32xi32>
  %off = add %rb, %cb : tensor<16x32xi32>
  %as = splat %a : tensor<16x32xptr<f16>>
  %ap = addptr %as, %off : tensor<16x32xptr<f16>>
  %x = load %ap : tensor<16x32xf16>
  %bs = splat %b : tensor<16x32xptr<f16>>
  %bp = addptr %bs, %off : tensor<16x32xptr<f16>>
  %y = load %bp : tensor<16x32xf16>
  %yt = permute %y {order = [1, 0]} : tensor<32x16xf16>
  %d = dot %x, %yt : tensor<16x16xf32>
  %oc = expand_dims %rows {axis = 0} : tensor<1x16xi32>
  %s16 = constant {value = 16} : i32
  %sr = splat %s16 : tensor<16x1xi32>
  %orow = mul %re, %sr : tensor<16x1xi32>
  %orb = broadcast %orow : tensor<16x16xi32>
  %ocb = broadcast %oc : tensor<16x16xi32>
  %oo = add %orb, %ocb : tensor<16x16xi32>
  %os = splat %o : tensor<16x16xptr<f32>>
  %op = addptr %os, %oo : tensor<16x16xptr<f32>>
  store %op, %d
  return
}
"""


def test_ma_a_column_major_dot_operand_is_loaded_as_its_transpose_and_viewed_transposed():
    """Rows 1 apart, columns `stride` apart (x @ W.T with W row-major): the transpose's rows are
    contiguous, so it can go straight to L1 -- a load_tile of it and a permute view; tl.trans of
    such a load is the transpose as loaded (no permute left)."""
    out = run_text(COL_MAJOR_DOT, MA)
    exact(out, """
func @k(%a: ptr<f16>, %b: ptr<f16>, %o: ptr<f32>, %stride: i32) {
  %0 = constant {value = 16} : i32
  %1 = constant {value = 32} : i32
  %2 = constant {value = 1} : i32
  %3 = load_tile %a, %stride, %2, %1, %0 : tensor<32x16xf16>
  %4 = permute %3 {order = [1, 0]} : tensor<16x32xf16>
  %5 = constant {value = 16} : i32
  %6 = constant {value = 32} : i32
  %7 = constant {value = 1} : i32
  %8 = load_tile %b, %stride, %7, %6, %5 : tensor<32x16xf16>
  %d = dot %4, %8 : tensor<16x16xf32>
  %9 = constant {value = 16} : i32
  %10 = constant {value = 16} : i32
  %11 = constant {value = 16} : i32
  %12 = constant {value = 1} : i32
  store_tile %o, %11, %12, %9, %10, %d
  return
}
""")


def _k1(mask_ops: str, mask: str, other_ops: str = "", other: str = "") -> str:
    return f"""
func @k(%x: ptr<f32>, %y: ptr<f32>, %n: i32, %f: f32) {{
  %ar = arange {{end = 64, start = 0}} : tensor<64xi32>
{mask_ops}{other_ops}  %xs = splat %x : tensor<64xptr<f32>>
  %xp = addptr %xs, %ar : tensor<64xptr<f32>>
  %v = load %xp, {mask}{other} : tensor<64xf32>
  %ys = splat %y : tensor<64xptr<f32>>
  %yp = addptr %ys, %ar : tensor<64xptr<f32>>
  store %yp, %v
  return
}}
"""


LT_N = '  %ns = splat %n : tensor<64xi32>\n  %m = cmp %ar, %ns {pred = "lt"} : tensor<64xi1>\n'


@pytest.mark.parametrize("mask_ops", [
    # offs >= 1: a lower bound, not an extent from 0
    '  %one = constant {value = 1} : tensor<64xi32>\n  %m = cmp %ar, %one {pred = "ge"} : tensor<64xi1>\n',
    # data-dependent: x > 0
    '  %q = splat %y : tensor<64xptr<f32>>\n  %qp = addptr %q, %ar : tensor<64xptr<f32>>\n'
    '  %d = load %qp : tensor<64xf32>\n  %zf = constant {value = 0.0} : tensor<64xf32>\n'
    '  %m = cmp %d, %zf {pred = "gt"} : tensor<64xi1>\n',
    # offs != n: not a bound
    '  %ns = splat %n : tensor<64xi32>\n  %m = cmp %ar, %ns {pred = "ne"} : tensor<64xi1>\n',
    # (offs < n) | (offs < 3): a disjunction
    LT_N + '  %three = constant {value = 3} : tensor<64xi32>\n'
    '  %m2 = cmp %ar, %three {pred = "lt"} : tensor<64xi1>\n  %mo = or %m, %m2 : tensor<64xi1>\n',
], ids=["ge1", "data", "ne", "or"])
def test_ma_masks_that_are_not_extents_stay_load(mask_ops):
    mask = "%mo" if "%mo" in mask_ops else "%m"
    out = run_text(_k1(mask_ops, mask), MA)
    filecheck(out, f"""
CHECK: %v = load %xp, {mask} : tensor<64xf32>
CHECK-NOT: load_tile %x
CHECK: store_tile %y,
""")


def test_ma_le_and_swapped_compare_forms():
    # n > offs is offs < n; offs <= n is offs < n + 1
    gt = run_text(_k1('  %ns = splat %n : tensor<64xi32>\n  %m = cmp %ns, %ar {pred = "gt"} : tensor<64xi1>\n',
                      "%m"), MA)
    filecheck(gt, "CHECK: %1 = maximum %n, %0 : i32\nCHECK-NEXT: %2 = constant {value = 64} : i32\n"
                  "CHECK-NEXT: %3 = minimum %1, %2 : i32\nCHECK: load_tile %x, %4, %3 : tensor<64xf32>")
    le = run_text(_k1('  %ns = splat %n : tensor<64xi32>\n  %m = cmp %ar, %ns {pred = "le"} : tensor<64xi1>\n',
                      "%m"), MA)
    filecheck(le, "CHECK: add %n, %0 : i32\nCHECK: maximum\nCHECK: minimum\nCHECK: load_tile %x,")


def test_ma_uniform_other_becomes_fill_operand():
    out = run_text(_k1(LT_N, "%m", "  %o = splat %f : tensor<64xf32>\n", ", %o"), MA)
    exact(out, """
func @k(%x: ptr<f32>, %y: ptr<f32>, %n: i32, %f: f32) {
  %0 = constant {value = 0} : i32
  %1 = maximum %n, %0 : i32
  %2 = constant {value = 64} : i32
  %3 = minimum %1, %2 : i32
  %4 = constant {value = 1} : i32
  %5 = load_tile %x, %4, %3, %f : tensor<64xf32>
  %6 = constant {value = 64} : i32
  %7 = constant {value = 1} : i32
  store_tile %y, %7, %6, %5
  return
}
""")


def test_ma_block_constant_other_becomes_fill_operand():
    out = run_text(_k1(LT_N, "%m", "  %o = constant {value = 0.5} : tensor<64xf32>\n", ", %o"), MA)
    filecheck(out, "CHECK: constant {value = 0.5} : f32\nCHECK: load_tile %x,")
    assert re.search(r"load_tile %x, %\d+, %\d+, %\d+ : tensor<64xf32>", out), out


def test_ma_non_uniform_other_becomes_select():
    out = run_text(_k1(LT_N, "%m", "  %os = splat %y : tensor<64xptr<f32>>\n"
                                    "  %op = addptr %os, %ar : tensor<64xptr<f32>>\n"
                                    "  %o = load %op : tensor<64xf32>\n", ", %o"), MA)
    filecheck(out, """
CHECK: %ns = splat %n : tensor<64xi32>
CHECK-NEXT: %m = cmp %ar, %ns {pred = "lt"} : tensor<64xi1>
CHECK: %2 = load_tile %y, %1, %0 : tensor<64xf32>
CHECK: %6 = minimum %4, %5 : i32
CHECK-NEXT: %7 = constant {value = 1} : i32
CHECK-NEXT: %8 = load_tile %x, %7, %6 : tensor<64xf32>
CHECK-NEXT: %9 = select %m, %8, %2 : tensor<64xf32>
CHECK: store_tile %y, %11, %10, %9
""")


GATHER = """
func @k(%tab: ptr<f32>, %idxp: ptr<i32>, %out: ptr<f32>, %n: i32, %D: i32) {
  %rows = arange {end = 8, start = 0} : tensor<8xi32>
  %cols = arange {end = 16, start = 0} : tensor<16xi32>
  %ip = splat %idxp : tensor<8xptr<i32>>
  %ipp = addptr %ip, %rows : tensor<8xptr<i32>>
  %idx = load %ipp : tensor<8xi32>
  %ie = expand_dims %idx {axis = 1} : tensor<8x1xi32>
  %Ds = splat %D : tensor<8x1xi32>
  %im = mul %ie, %Ds : tensor<8x1xi32>
  %ib = broadcast %im : tensor<8x16xi32>
  %ce = expand_dims %cols {axis = 0} : tensor<1x16xi32>
  %cb = broadcast %ce : tensor<8x16xi32>
  %off = add %ib, %cb : tensor<8x16xi32>
  %Dc = splat %D : tensor<1x16xi32>
  %mc = cmp %ce, %Dc {pred = "lt"} : tensor<1x16xi1>
  %m = broadcast %mc : tensor<8x16xi1>
  %ts = splat %tab : tensor<8x16xptr<f32>>
  %tp = addptr %ts, %off : tensor<8x16xptr<f32>>
  %v = load %tp, %m : tensor<8x16xf32>
  %re = expand_dims %rows {axis = 1} : tensor<8x1xi32>
  %rm = mul %re, %Ds : tensor<8x1xi32>
  %rb = broadcast %rm : tensor<8x16xi32>
  %ooff = add %rb, %cb : tensor<8x16xi32>
  %os = splat %out : tensor<8x16xptr<f32>>
  %op = addptr %os, %ooff : tensor<8x16xptr<f32>>
  store %op, %v, %m
  return
}
"""


def test_ma_embedding_gather_becomes_gather_rows():
    out = run_text(GATHER, MA)
    filecheck(out, """
CHECK: %2 = load_tile %idxp, %1, %0 : tensor<8xi32>
CHECK-NEXT: %ie = expand_dims %2 {axis = 1} : tensor<8x1xi32>
CHECK-NEXT: %Ds = splat %D : tensor<8x1xi32>
CHECK-NEXT: %im = mul %ie, %Ds : tensor<8x1xi32>
CHECK-NEXT: %3 = constant {value = 0} : i32
CHECK-NEXT: %4 = maximum %D, %3 : i32
CHECK-NEXT: %5 = constant {value = 16} : i32
CHECK-NEXT: %6 = minimum %4, %5 : i32
CHECK-NEXT: %7 = reshape %im : tensor<8xi32>
CHECK-NEXT: %8 = gather_rows %tab, %7, %6 : tensor<8x16xf32>
CHECK-NOT: load %
CHECK: store_tile %out, %D,
""")


def test_ma_gather_rows_scatter_with_row_mask_and_fill():
    text = GATHER.replace("%m = broadcast %mc : tensor<8x16xi1>",
                          "%ns = splat %n : tensor<8x1xi32>\n  %mr = cmp %re0, %ns {pred = \"lt\"} : tensor<8x1xi1>\n"
                          "  %mrb = broadcast %mr : tensor<8x16xi1>\n  %mcb = broadcast %mc : tensor<8x16xi1>\n"
                          "  %m = and %mrb, %mcb : tensor<8x16xi1>\n  %zf = constant {value = 0.0} : f32\n"
                          "  %fill = splat %zf : tensor<8x16xf32>") \
        .replace("%v = load %tp, %m :", "%v = load %tp, %m, %fill :") \
        .replace("%ip = splat", "%re0 = expand_dims %rows {axis = 1} : tensor<8x1xi32>\n  %ip = splat") \
        .replace("%op = addptr %os, %ooff", "%op = addptr %os, %off")
    out = run_text(text, MA)
    filecheck(out, """
CHECK: %zf = constant {value = 0.0} : f32
CHECK: arange {end = 8, start = 0} : tensor<8xi32>
CHECK: cmp %
CHECK: gather_rows %tab,
""")
    assert re.search(r"gather_rows %tab, %\d+, %\d+, %\d+, %zf : tensor<8x16xf32>", out), out
    assert re.search(r"scatter_rows %out, %\d+, %\d+, %\d+, %\d+\n|scatter_rows %out, %\d+, %\d+, %\d+, %\d+ loc",
                     out), out
    assert "load %tp" not in out and "store %op" not in out



def test_ma_a_mask_of_data_per_row_is_the_row_gathers_and_scatters_row_mask():
    """``mask=(idx < n)[:, None] & (cols < D)``: the rows' conjunct is data, which only a row
    transfer can apply (its row mask): the gather of rows picked by ``idx`` takes it, and so does
    the store to rows one stride apart, a scatter of rows ``arange * D``.  (Both were element by
    element, a pointer block in UB: vLLM's fused-MoE matmul did not fit at 64x64x64.)"""
    text = GATHER.replace("%m = broadcast %mc : tensor<8x16xi1>",
                          "%ns = splat %n : tensor<8xi32>\n  %mr = cmp %idx, %ns {pred = \"lt\"} : tensor<8xi1>\n"
                          "  %mre = expand_dims %mr {axis = 1} : tensor<8x1xi1>\n"
                          "  %mrb = broadcast %mre : tensor<8x16xi1>\n  %mcb = broadcast %mc : tensor<8x16xi1>\n"
                          "  %m = and %mrb, %mcb : tensor<8x16xi1>")
    out = run_text(text, MA)
    filecheck(out, r"""
CHECK: %mre = expand_dims %mr {axis = 1} : tensor<8x1xi1>
CHECK: %7 = reshape %im : tensor<8xi32>
CHECK-NEXT: %8 = reshape %mre : tensor<8xi1>
CHECK-NEXT: %9 = gather_rows %tab, %7, %6, %8 : tensor<8x16xf32>
CHECK: %14 = arange {end = 8, start = 0} : tensor<8xi32>
CHECK-NEXT: %15 = splat %D : tensor<8xi32>
CHECK-NEXT: %16 = mul %14, %15 : tensor<8xi32>
CHECK-NEXT: %17 = reshape %mre : tensor<8xi1>
CHECK-NEXT: scatter_rows %out, %16, %13, %9, %17
""")
    assert "load %tp" not in out and "store %op" not in out


LOOP = """
func @k(%x: ptr<f32>, %y: ptr<f32>, %n: i32, %stride: i32) {
  %z = constant {value = 0} : i32
  %B = constant {value = 32} : i32
  %ar = arange {end = 32, start = 0} : tensor<32xi32>
  %xs = splat %x : tensor<32xptr<f32>>
  %p0 = addptr %xs, %ar : tensor<32xptr<f32>>
  %acc0 = constant {value = 0.0} : tensor<32xf32>
  %pr, %accr = for %z, %n, %B, %p0, %acc0 {
  ^bb(%i: i32, %p: tensor<32xptr<f32>>, %acc: tensor<32xf32>):
    %v = load %p : tensor<32xf32>
    %a2 = add %acc, %v : tensor<32xf32>
    %st = mul %B, %stride : i32
    %sts = splat %st : tensor<32xi32>
    %pn = addptr %p, %sts : tensor<32xptr<f32>>
    yield %pn, %a2
  } : tensor<32xptr<f32>>, tensor<32xf32>
  %ys = splat %y : tensor<32xptr<f32>>
  %yp = addptr %ys, %ar : tensor<32xptr<f32>>
  store %yp, %accr
  return
}
"""


def test_ma_loop_pointer_induction_gets_scalar_offset():
    out = run_text(LOOP, ["memory-analysis"])
    filecheck(out, """
CHECK: %0 = constant {value = 0} : i64
CHECK-NEXT: %pr, %accr, %1 = for %z, %n, %B, %p0, %acc0, %0 {
CHECK-NEXT: ^bb(%i: i32, %p: tensor<32xptr<f32>>, %acc: tensor<32xf32>, %p_off: i64):
CHECK-NEXT: %2 = constant {value = 32} : i32
CHECK-NEXT: %3 = addptr %x, %p_off : ptr<f32>
CHECK-NEXT: %4 = constant {value = 1} : i32
CHECK-NEXT: %5 = load_tile %3, %4, %2 : tensor<32xf32>
CHECK-NEXT: %a2 = add %acc, %5 : tensor<32xf32>
CHECK: %pn = addptr %p, %sts : tensor<32xptr<f32>>
CHECK-NEXT: %6 = cast %st : i64
CHECK-NEXT: %7 = add %p_off, %6 : i64
CHECK-NEXT: yield %pn, %a2, %7
CHECK-NEXT: } : tensor<32xptr<f32>>, tensor<32xf32>, i64
""")


# =============================================================================================
# dce: carried values that only feed themselves
# =============================================================================================

def test_dce_loop_pointer_carry_removed_after_memory_analysis():
    out = run_text(LOOP, MA)
    exact(out, """
func @k(%x: ptr<f32>, %y: ptr<f32>, %n: i32, %stride: i32) {
  %z = constant {value = 0} : i32
  %B = constant {value = 32} : i32
  %acc0 = constant {value = 0.0} : tensor<32xf32>
  %0 = constant {value = 0} : i64
  %accr, %1 = for %z, %n, %B, %acc0, %0 {
  ^bb(%i: i32, %acc: tensor<32xf32>, %p_off: i64):
    %2 = constant {value = 32} : i32
    %3 = addptr %x, %p_off : ptr<f32>
    %4 = constant {value = 1} : i32
    %5 = load_tile %3, %4, %2 : tensor<32xf32>
    %a2 = add %acc, %5 : tensor<32xf32>
    %st = mul %B, %stride : i32
    %6 = cast %st : i64
    %7 = add %p_off, %6 : i64
    yield %a2, %7
  } : tensor<32xf32>, i64
  %8 = constant {value = 32} : i32
  %9 = constant {value = 1} : i32
  store_tile %y, %9, %8, %accr
  return
}
""")


CARRY = """
func @k(%p: ptr<i32>, %n: i32) {
  %z = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %two = constant {value = 2} : i32
  %ra, %rb = for %z, %n, %one, %z, %z {
  ^bb(%i: i32, %a: i32, %b: i32):
    %t = mul %a, %two : i32
    %an = add %t, %one : i32
    %bn = add %b, %i : i32
    yield %an, %bn
  } : i32, i32
  store %p, %rb
  return
}
"""


def test_dce_drops_self_feeding_scalar_carry_and_its_chain():
    exact(run_text(CARRY, ["dce"]), """
func @k(%p: ptr<i32>, %n: i32) {
  %z = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %rb = for %z, %n, %one, %z {
  ^bb(%i: i32, %b: i32):
    %bn = add %b, %i : i32
    yield %bn
  } : i32
  store %p, %rb
  return
}
""")


def test_dce_keeps_carry_whose_result_is_used():
    out = run_text(CARRY.replace("store %p, %rb", "%s = add %ra, %rb : i32\n  store %p, %s"), ["dce"])
    filecheck(out, """
CHECK: %ra, %rb = for %z, %n, %one, %z, %z {
CHECK-NEXT: ^bb(%i: i32, %a: i32, %b: i32):
CHECK-NEXT: %t = mul %a, %two : i32
CHECK-NEXT: %an = add %t, %one : i32
CHECK: yield %an, %bn
""")


def test_dce_keeps_carry_that_feeds_another_carry():
    # a's result is unused, but b's next value reads a: a must stay.
    out = run_text(CARRY.replace("%bn = add %b, %i : i32", "%bn = add %b, %a : i32"), ["dce"])
    filecheck(out, "CHECK: %ra, %rb = for %z, %n, %one, %z, %z {\nCHECK: yield %an, %bn")


def test_dce_keeps_carry_read_by_an_op_with_effects():
    out = run_text(CARRY.replace("%bn = add %b, %i : i32", "%bn = add %b, %i : i32\n    store %p, %a"), ["dce"])
    filecheck(out, "CHECK: %ra, %rb = for %z, %n, %one, %z, %z {\nCHECK: store %p, %a\nCHECK: yield %an, %bn")


def test_dce_drops_both_mutually_dependent_dead_carries():
    # a' = a + b, b' = b + 1, neither result used: both go (over repeated sweeps), then the loop.
    text = CARRY.replace("%t = mul %a, %two : i32\n    %an = add %t, %one : i32", "%an = add %a, %b : i32") \
        .replace("%bn = add %b, %i : i32", "%bn = add %b, %one : i32").replace("store %p, %rb", "store %p, %n")
    exact(run_text(text, ["dce"]), """
func @k(%p: ptr<i32>, %n: i32) {
  store %p, %n
  return
}
""")


def test_dce_drops_carries_that_yield_one_outside_value_twice():
    # b and c are carried unchanged (each yields the value it starts from, %n): a value from outside
    # the body yielded for two carries feeds nothing of the body, so both go (a block pointer's
    # shape and strides, advanced by (0, BK), were kept: registers a pipelined K loop needed)
    text = """
func @k(%p: ptr<i32>, %n: i32) {
  %z = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %ra, %rb, %rc = for %z, %n, %one, %z, %n, %n {
  ^bb(%i: i32, %a: i32, %b: i32, %c: i32):
    %an = add %a, %i : i32
    yield %an, %n, %n
  } : i32, i32, i32
  store %p, %ra
  return
}
"""
    exact(run_text(text, ["dce"]), """
func @k(%p: ptr<i32>, %n: i32) {
  %z = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %ra = for %z, %n, %one, %z {
  ^bb(%i: i32, %a: i32):
    %an = add %a, %i : i32
    yield %an
  } : i32
  store %p, %ra
  return
}
""")


def test_canonicalize_reads_a_carry_that_yields_its_own_initial_value_from_that_value():
    text = """
func @k(%p: ptr<i32>, %n: i32) {
  %z = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %ra, %rb = for %z, %n, %one, %z, %n {
  ^bb(%i: i32, %a: i32, %b: i32):
    %an = add %a, %b : i32
    yield %an, %n
  } : i32, i32
  %s = add %ra, %rb : i32
  store %p, %s
  return
}
"""
    filecheck(run_text(text, ["canonicalize", "dce"]), """
CHECK: %ra = for %z, %n, %one, %z {
CHECK-NEXT: ^bb(%i: i32, %a: i32):
CHECK-NEXT: %an = add %a, %n : i32
CHECK-NEXT: yield %an
CHECK: %s = add %ra, %n : i32
""")


def test_dce_keeps_swapped_carries():
    # yield %b, %a: a's next value is b (not itself), b's is a; only results decide.
    text = CARRY.replace("yield %an, %bn", "yield %b, %a")
    out = run_text(text, ["dce"])
    filecheck(out, "CHECK: %ra, %rb = for %z, %n, %one, %z, %z {\nCHECK: yield %b, %a")


# =============================================================================================
# fusion
# =============================================================================================

FUSE = """
func @k(%x: ptr<f32>, %s: f32, %n: i32) {
  %ar = arange {end = 16, start = 0} : tensor<16xi32>
  %cols = arange {end = 32, start = 0} : tensor<32xi32>
  %xs = splat %x : tensor<16x32xptr<f32>>
  %t = load %xs : tensor<16x32xf32>
  %ss = splat %s : tensor<16x32xf32>
  %a = add %t, %ss : tensor<16x32xf32>
  %b = sub %ss, %a : tensor<16x32xf32>
  %row = load %x : f32
  %rv = splat %row : tensor<1x32xf32>
  %rb = broadcast %rv : tensor<16x32xf32>
  %c = mul %b, %rb : tensor<16x32xf32>
  %cf = cast %ar : tensor<16xf32>
  %ce = expand_dims %cf {axis = 1} : tensor<16x1xf32>
  %cb = broadcast %ce : tensor<16x32xf32>
  %d = add %c, %cb : tensor<16x32xf32>
  %m = cmp %d, %cb {pred = "lt"} : tensor<16x32xi1>
  %e = select %m, %ss, %d : tensor<16x32xf32>
  %r = reduce %e {axis = 1, op = "sum"} : tensor<16xf32>
  store %xs, %e
  return
}
"""


def test_fusion_splat_scalar_into_add_and_sub():
    out = run_text(FUSE, ["fusion"])
    filecheck(out, """
CHECK: %a = add %t, %s {fused = true} : tensor<16x32xf32>
CHECK-NEXT: %b = sub %s, %a {fused = true} : tensor<16x32xf32>
""")


def test_fusion_broadcast_of_splat_folds_to_scalar_and_column_vector_stays_a_vector():
    out = run_text(FUSE, ["fusion"])
    filecheck(out, """
CHECK: %c = mul %b, %row {fused = true} : tensor<16x32xf32>
CHECK: %d = add %c, %ce {fused = true} : tensor<16x32xf32>
""")


def test_fusion_into_cmp_and_select():
    out = run_text(FUSE, ["fusion"])
    filecheck(out, """
CHECK: %m = cmp %d, %ce {fused = true, pred = "lt"} : tensor<16x32xi1>
CHECK-NEXT: %e = select %m, %s, %d {fused = true} : tensor<16x32xf32>
""")


def test_fusion_leaves_non_elementwise_ops_alone():
    out = run_text(FUSE, ["fusion"])
    filecheck(out, """
CHECK: %t = load %xs : tensor<16x32xf32>
CHECK: %cf = cast %ar : tensor<16xf32>
CHECK-NEXT: %ce = expand_dims %cf {axis = 1} : tensor<16x1xf32>
CHECK-NEXT: %cb = broadcast %ce : tensor<16x32xf32>
CHECK: store %xs, %e
""")
    # an op whose operands are not splats/broadcasts is not marked
    assert "%t = load %xs : tensor<16x32xf32>" in out


def test_fusion_row_vector_broadcast_and_dce_removes_dead_views():
    text = """
func @k(%x: ptr<f32>, %y: ptr<f32>) {
  %cols = arange {end = 32, start = 0} : tensor<32xi32>
  %xs = splat %x : tensor<32xptr<f32>>
  %xp = addptr %xs, %cols : tensor<32xptr<f32>>
  %v = load %xp : tensor<32xf32>
  %ve = expand_dims %v {axis = 0} : tensor<1x32xf32>
  %vb = broadcast %ve : tensor<16x32xf32>
  %ys = splat %y : tensor<16x32xptr<f32>>
  %t = load %ys : tensor<16x32xf32>
  %a = add %t, %vb : tensor<16x32xf32>
  %tt = permute %vb {order = [1, 0]} : tensor<32x16xf32>
  %u = reduce %vb {axis = 0, op = "sum"} : tensor<32xf32>
  store %ys, %a
  store %xp, %u
  return
}
"""
    out = run_text(text, ["fusion", "dce"])
    filecheck(out, """
CHECK: %ve = expand_dims %v {axis = 0} : tensor<1x32xf32>
CHECK-NEXT: %vb = broadcast %ve : tensor<16x32xf32>
CHECK: %a = add %t, %ve {fused = true} : tensor<16x32xf32>
CHECK-NOT: permute
CHECK: reduce %vb
""")


def test_fusion_op_with_nothing_to_fold_is_untouched():
    text = """
func @k(%x: ptr<f32>) {
  %xs = splat %x : tensor<8xptr<f32>>
  %t = load %xs : tensor<8xf32>
  %a = add %t, %t : tensor<8xf32>
  store %xs, %a
  return
}
"""
    out = run_text(text, ["fusion"])
    exact(out, """
func @k(%x: ptr<f32>) {
  %xs = splat %x : tensor<8xptr<f32>>
  %t = load %xs : tensor<8xf32>
  %a = add %t, %t : tensor<8xf32>
  store %xs, %a
  return
}
""")


# =============================================================================================
# tiling
# =============================================================================================

def _big(shape: str, ty: str = "f32") -> str:
    return f"""
func @k(%x: ptr<{ty}>) {{
  %xs = splat %x : tensor<{shape}xptr<{ty}>>
  %big = load %xs : tensor<{shape}x{ty}>
  store %xs, %big
  return
}}
"""


@pytest.mark.parametrize("shape,ty,nbytes", [("65536", "f32", 262144), ("256x256", "f32", 262144),
                                             ("131072", "f16", 262144), ("49153", "f32", 196612)])
def test_tiling_block_larger_than_ub_is_an_error(shape, ty, nbytes):
    fn = parse_function(with_locs(_big(shape, ty)))
    with pytest.raises(CompilationError) as ei:
        PassManager(["tiling"]).run(fn)
    msg = str(ei.value)
    # the splat of pointers (8 B each) is the first too-large block
    assert "`xs`" in msg or "`big`" in msg, msg
    assert "larger than the Unified Buffer (196608 bytes)" in msg and "use a smaller block size" in msg, msg


def test_tiling_error_names_value_bytes_and_line():
    text = """
func @k(%x: ptr<f32>, %y: ptr<f32>) {
  %xs = splat %x : tensor<1024xptr<f32>>
  %v = load %xs : tensor<1024xf32>
  %ve = expand_dims %v {axis = 0} : tensor<1x1024xf32>
  %vb = broadcast %ve : tensor<64x1024xf32>
  %w = add %vb, %vb : tensor<64x1024xf32>
  %ys = splat %y : tensor<64x1024xptr<f32>>
  store %ys, %w
  %r = reduce %w {axis = 0, op = "sum"} : tensor<1024xf32>
  store %xs, %r
  return
}
"""
    # (%w only stored element by element: element-rows stores it a few rows at a time instead;
    # read by a reduction too, it must be whole)
    fn = parse_function(with_locs(text))
    with pytest.raises(CompilationError) as ei:
        PassManager(["tiling"]).run(fn)
    msg = str(ei.value)
    # the broadcast is a view (no storage): the first real block too large is %w, 64*1024*4 bytes
    assert "`w` is a tensor<64x1024xf32> block of 262144 bytes, larger than the Unified Buffer " \
           "(196608 bytes)" in msg, msg
    assert msg.startswith("k.py:6:"), msg


@tritonpu.jit
def _row_softmax_65536(x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        cols = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


def test_tiling_says_why_a_reduction_over_a_block_larger_than_ub_is_not_split():
    # Triton's softmax tutorial with a 50000-column row (BLOCK = next power of 2 = 65536 fp32)
    x = np.zeros((2, 50000), np.float32)
    with pytest.raises(CompilationError) as ei:
        _row_softmax_65536[(2,)](x, np.empty_like(x), 2, 50000, BLOCK=65536)
    msg = str(ei.value)
    assert "tensor<65536xf32> block of 262144 bytes, larger than the Unified Buffer (196608 bytes)" in msg, msg
    assert "the reduction at line" in msg and "loop over the block in smaller pieces" in msg, msg


def test_tiling_block_exactly_ub_sized_and_views_pass():
    fn = run(_big("24576"), ["tiling"])       # the pointer block: 24576 * 8 = 196608 bytes, fits exactly
    assert "load %xs : tensor<24576xf32>" in print_function(fn)
    text = """
func @k(%x: ptr<f32>) {
  %c = constant {value = 1.0} : f32
  %s = splat %c : tensor<1x1xf32>
  %b = broadcast %s : tensor<512x512xf32>
  %r = reduce %b {axis = 0, op = "sum"} : tensor<512xf32>
  %xs = splat %x : tensor<512xptr<f32>>
  store %xs, %r
  return
}
"""
    before = print_function(parse_function(with_locs(text)))
    assert print_function(run(text, ["tiling"])) == before       # tiling changes nothing that fits


# =============================================================================================
# buffer-planning
# =============================================================================================

def bp(text: str) -> str:
    return run_text(text, ["buffer-planning"])


def test_bp_live_values_disjoint_dead_reused_and_peak():
    out = bp("""
func @k(%x: ptr<f32>, %y: ptr<f32>) {
  %xs = splat %x : tensor<64xptr<f32>>
  %a = load %xs : tensor<64xf32>
  %b = load %xs : tensor<64xf32>
  %c = add %a, %b : tensor<64xf32>
  store %xs, %c
  %d = load %xs : tensor<64xf32>
  store %xs, %d
  return
}
""")
    # %xs: 64 pointers * 8 B = 512 B at 0, live to the end; %a and %b live together; %c may
    # overwrite an operand (one elementwise instruction); %d reuses dead space
    filecheck(out, """
CHECK: func @k(%x: ptr<f32>, %y: ptr<f32>) {ub_peak = 1024} {
CHECK-NEXT: %xs = splat %x {ub = 0} : tensor<64xptr<f32>>
CHECK-NEXT: %a = load %xs {ub = 512} : tensor<64xf32>
CHECK-NEXT: %b = load %xs {ub = 768} : tensor<64xf32>
CHECK-NEXT: %c = add %a, %b {ub = 512} : tensor<64xf32>
CHECK-NEXT: store %xs, %c
CHECK-NEXT: %d = load %xs {ub = 512} : tensor<64xf32>
""")


def _addrs(out: str) -> dict:
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"%(\w+) = [^\n]*\bub = (\d+)", out)}


def test_bp_alignment_32_bytes():
    out = bp("""
func @k(%x: ptr<f32>) {
  %c = constant {value = 1.0} : f32
  %a = splat %c : tensor<3xf32>
  %b = splat %c : tensor<5xf32>
  %d = splat %c : tensor<1xf32>
  %r1 = reduce %a {axis = 0, op = "sum"} : f32
  %r2 = reduce %b {axis = 0, op = "sum"} : f32
  %r3 = reduce %d {axis = 0, op = "sum"} : f32
  %s = add %r1, %r2 : f32
  %t = add %s, %r3 : f32
  store %x, %t
  return
}
""")
    addrs = _addrs(out)
    assert {"a", "b", "d"} <= set(addrs), out
    assert all(v % 32 == 0 for v in addrs.values()), out
    assert sorted([addrs["a"], addrs["b"], addrs["d"]]) == [0, 32, 64], out
    peak = int(re.search(r"ub_peak = (\d+)", out).group(1))
    assert peak % 32 == 0 and peak >= 96, out


def test_bp_views_share_their_source_address():
    out = bp("""
func @k(%x: ptr<f32>) {
  %xs = splat %x : tensor<32xptr<f32>>
  %v = load %xs : tensor<32xf32>
  %w = load %xs : tensor<32xf32>
  %e = expand_dims %v {axis = 0} : tensor<1x32xf32>
  %b = broadcast %e : tensor<8x32xf32>
  %r = reshape %w : tensor<4x8xf32>
  %p = permute %r {order = [1, 0]} : tensor<8x4xf32>
  %i = bitcast %v : tensor<32xi32>
  %q = reduce %b {axis = 0, op = "sum"} : tensor<32xf32>
  %q2 = reduce %p {axis = 0, op = "sum"} : tensor<4xf32>
  %j = cast %i : tensor<32xf32>
  store %xs, %q
  store %xs, %j
  return
}
""")
    a = _addrs(out)
    assert a["e"] == a["b"] == a["i"] == a["v"], out
    assert a["r"] == a["p"] == a["w"], out
    assert a["v"] != a["w"], out


def test_bp_loop_carried_value_keeps_one_address_across_the_loop():
    out = bp("""
func @k(%x: ptr<f32>, %n: i32) {
  %z = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %xs = splat %x : tensor<64xptr<f32>>
  %init = load %xs : tensor<64xf32>
  %r = for %z, %n, %one, %init {
  ^bb(%i: i32, %acc: tensor<64xf32>):
    %v = load %xs : tensor<64xf32>
    %t = add %acc, %v : tensor<64xf32>
    %u = mul %t, %t : tensor<64xf32>
    yield %u
  } : tensor<64xf32>
  store %xs, %r
  return
}
""")
    m = re.search(r"%r = for %z, %n, %one, %init \{ub = \[(\d+)\]\}", out)
    assert m, out
    carried = int(m.group(1))
    a = _addrs(out)
    # the yielded %u is computed after %acc's last read: it takes the carried buffer (no copy at yield);
    # %t reads %acc once and last, so it is computed in place over the carried buffer too
    assert a["u"] == carried and a["t"] == carried, out
    # the carried value's home is live across the whole loop: nothing else inside overlaps it
    for name in ("v", "xs"):
        lo = a[name]
        size = 512 if name == "xs" else 256
        assert lo + size <= carried or carried + 256 <= lo, (name, out)
    assert a["xs"] + 512 <= a["v"] or a["v"] + 256 <= a["xs"], out


def test_bp_ub_overflow_names_value_and_bytes():
    text = """
func @k(%x: ptr<f32>) {
  %xs = splat %x : tensor<16384xptr<f32>>
  %a = load %xs : tensor<16384xf32>
  %b = load %xs : tensor<16384xf32>
  %c = add %a, %b : tensor<16384xf32>
  store %xs, %c
  return
}
"""
    fn = parse_function(with_locs(text))
    PassManager(["tiling"]).run(fn)         # every block alone fits
    with pytest.raises(CompilationError) as ei:
        PassManager(["buffer-planning"]).run(fn)
    msg = str(ei.value)
    # 128 KiB of pointers + 64 KiB + 64 KiB live at once
    assert "but UB holds 196608" in msg, msg
    assert "`xs` (tensor<16384xptr<f32>>) alone takes 131072 bytes" in msg, msg
    assert "the kernel needs 262144 bytes" in msg, msg


def test_bp_fits_exactly_at_capacity():
    out = bp("""
func @k(%x: ptr<f32>) {
  %xs = splat %x : tensor<8192xptr<f32>>
  %a = load %xs : tensor<8192xf32>
  %b = load %xs : tensor<8192xf32>
  %c = load %xs : tensor<8192xf32>
  %d = load %xs : tensor<8192xf32>
  %s = add %a, %b : tensor<8192xf32>
  %t = add %c, %d : tensor<8192xf32>
  %u = add %s, %t : tensor<8192xf32>
  store %xs, %u
  return
}
""")
    assert "ub_peak = 196608" in out, out


_AFTER_LOOP = """
func @k(%x: ptr<f32>, %n: i32) {
  %z = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %e = constant {value = N} : i32
  %xs = splat %x : tensor<64xptr<f32>>
  %r = for %z, %n, %one, %z {
  ^bb(%i: i32, %s: i32):
    %v = load_tile %x, %one, %e : tensor<N xf32>
    %q = reduce %v {axis = 0, op = "sum"} : f32
    %c = cast %q : i32
    %s2 = add %s, %c : i32
    yield %s2
  } : i32
  %w = load_tile %x, %one, %e : tensor<N xf32>
  %t = reduce %w {axis = 0, op = "sum"} : f32
  %f = cast %r : f32
  %u = add %t, %f : f32
  store %x, %u
  return
}
"""


def test_bp_a_tile_loaded_after_a_loop_keeps_clear_of_the_loops_tiles_when_there_is_room():
    # %w's load need not wait for the loop's last read of %v's buffer: they get different addresses
    a = _addrs(bp(_AFTER_LOOP.replace("N ", "1024").replace("value = N", "value = 1024")))
    assert a["w"] + 4096 <= a["v"] or a["v"] + 4096 <= a["w"], a


def test_bp_a_tile_loaded_after_a_loop_reuses_the_loops_space_when_nothing_else_fits():
    # two 128 KiB tiles do not fit UB (192 KiB) side by side: %w takes %v's space, as before
    out = bp(_AFTER_LOOP.replace("N ", "32768").replace("value = N", "value = 32768"))
    a = _addrs(out)
    assert a["w"] == a["v"], a
    assert int(re.search(r"ub_peak = (\d+)", out).group(1)) < 2 * 131072, out


# =============================================================================================
# optional passes leave results unchanged on the real kernels
# =============================================================================================

def _kernel(name):
    sys.path.insert(0, str(ROOT / "kernels"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


def _run_kernel(name, disable):
    rng = np.random.default_rng(1)
    launch = dict(backend="npu", disable_passes=disable)
    if name == "vector_add":
        m = _kernel(name)
        x, y = rng.standard_normal(3001, dtype=np.float32), rng.standard_normal(3001, dtype=np.float32)
        out, _ = m.add(x, y, BLOCK=256, **launch)
        return [out], [x + y]
    if name == "softmax":
        m = _kernel(name)
        x = rng.standard_normal((9, 100), dtype=np.float32)
        o1, _ = m.softmax(x, **launch)
        o2, _ = m.online_softmax(x, BLOCK=32, **launch)
        return [o1, o2], [m.reference(x), m.reference(x)]
    if name == "layernorm":
        m = _kernel(name)
        x = rng.standard_normal((5, 300), dtype=np.float32)
        w, b = rng.standard_normal(300, dtype=np.float32), rng.standard_normal(300, dtype=np.float32)
        y, mean, rstd, _ = m.layernorm(x, w, b, BLOCK=128, **launch)
        return [y, mean, rstd], [m.reference(x, w, b), x.mean(axis=1), None]
    if name == "gather":
        m = _kernel(name)
        table = rng.standard_normal((300, 70), dtype=np.float32)
        idx = rng.integers(0, 300, 100).astype(np.int32)
        out, _ = m.gather(table, idx, ROWS=16, BLOCK_D=32, **launch)
        return [out], [table[idx]]
    raise AssertionError(name)


KERNELS = ("vector_add", "softmax", "layernorm", "gather")
_baseline: dict = {}


def _all_on(name):
    if name not in _baseline:
        _baseline[name] = _run_kernel(name, ())
    return _baseline[name]


@pytest.mark.parametrize("kernel", KERNELS)
def test_all_passes_on_matches_numpy(kernel):
    got, want = _all_on(kernel)
    for g, w in zip(got, want):
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("disabled", OPTIONAL_PASSES)
def test_disabling_optional_pass_gives_bitwise_identical_results(kernel, disabled):
    assert disabled not in pipeline_for({"disable_passes": (disabled,)})
    base, want = _all_on(kernel)
    got, _ = _run_kernel(kernel, (disabled,))
    for g, b, w in zip(got, base, want):
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        assert g.dtype == b.dtype and g.shape == b.shape
        assert g.tobytes() == b.tobytes(), f"{kernel} without {disabled} differs bitwise from all passes on"


def test_optional_passes_are_in_the_pipeline():
    from tritonpu.codegen.pipeline import CODEGEN_PASSES, NPU_PIPELINE
    assert set(OPTIONAL_PASSES) <= set(NPU_PIPELINE) | set(CODEGEN_PASSES)
    assert pipeline_for({"disable_passes": OPTIONAL_PASSES}) == [p for p in NPU_PIPELINE if p not in OPTIONAL_PASSES]


# =============================================================================================
# tritonpu opt on IR text
# =============================================================================================

def test_opt_cli_runs_npu_passes_and_prints_after_memory_analysis(tmp_path):
    src = tmp_path / "k1d.ir"
    src.write_text(with_locs(ONE_D))
    proc = subprocess.run([sys.executable, "-m", "tritonpu.cli", "opt", str(src),
                           "--passes=canonicalize,memory-analysis,cse,fusion,dce",
                           "--print-ir-after=memory-analysis"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    filecheck(proc.stdout, """
CHECK: // ---- IR after memory-analysis ----
CHECK: func @k(
CHECK: %m = cmp %offs, %ns {pred = "lt"} : tensor<64xi1>
CHECK: load_tile
CHECK: store_tile
CHECK: return
CHECK: func @k(
CHECK-NOT: cmp
CHECK-NOT: splat
CHECK: = load_tile %4, %5, %3
CHECK: store_tile
""")
    assert proc.stdout.count("// ---- IR after") == 1, proc.stdout


@tritonpu.jit
def _scale_cols(x, cs, rs, o, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    v = tl.load(x + rm[:, None] * N + rn[None, :])
    w = tl.load(cs + rn)                       # a column vector: the same for every row tile
    r = tl.load(rs + rm)                       # a row vector: tiled with the rows
    tl.store(o + rm[:, None] * N + rn[None, :], v * w[None, :] + r[:, None] + rn[None, :])


@pytest.mark.parametrize("M,N,BM", [(128, 1024, 64), (256, 256, 256), (64, 512, 64)])
def test_tiling_keeps_column_vectors_whole_whatever_their_length(M, N, BM):
    # regression: rows were told by size, so a column vector as long as the rows (a square block)
    # was split with them (an internal error), and a longer one blocked tiling altogether
    rng = np.random.default_rng(M + N)
    x, c, r = (rng.standard_normal(s).astype(np.float32) for s in ((M, N), N, M))
    o = np.zeros_like(x)
    h = _scale_cols[(M // BM,)](x, c, r, o, N, BM=BM, BN=N)
    np.testing.assert_allclose(o, x * c[None, :] + r[:, None] + np.arange(N)[None, :], rtol=1e-6, atol=1e-5)
    if BM * N * 4 > 196608 // 2:
        filecheck(h.asm["tiling"], f"""
            CHECK: for
            CHECK: arange {{end = {N}, start = 0}} : tensor<{N}xi32>
            CHECK: x{N}xf32>
        """)
        assert re.search(rf"load_tile %cs, [^:]*: tensor<{N}xf32>", h.asm["tiling"])


WRAPPED = """
func @k(%b: ptr<f16>, %out: ptr<f16>, %N: i32, %pid_n: i32, %sk: i32) {
  %BN = constant {value = 16} : i32
  %c = mul %pid_n, %BN : i32
  %cs = splat %c : tensor<16xi32>
  %ar = arange {end = 16, start = 0} : tensor<16xi32>
  %o = add %cs, %ar : tensor<16xi32>
  %Ns = splat %N : tensor<16xi32>
  %offs_n = rem %o, %Ns : tensor<16xi32>
  %rk = arange {end = 8, start = 0} : tensor<8xi32>
  %rke = expand_dims %rk {axis = 1} : tensor<8x1xi32>
  %sks = splat %sk : tensor<8x1xi32>
  %rows = mul %rke, %sks : tensor<8x1xi32>
  %rb = broadcast %rows : tensor<8x16xi32>
  %ce = expand_dims %offs_n {axis = 0} : tensor<1x16xi32>
  %cb = broadcast %ce : tensor<8x16xi32>
  %off = add %rb, %cb : tensor<8x16xi32>
  %bs = splat %b : tensor<8x16xptr<f16>>
  %p = addptr %bs, %off : tensor<8x16xptr<f16>>
  %v = load %p : tensor<8x16xf16>
  %ar2 = arange {end = 128, start = 0} : tensor<128xi32>
  %flat = reshape %v : tensor<128xf16>
  %os = splat %out : tensor<128xptr<f16>>
  %op = addptr %os, %ar2 : tensor<128xptr<f16>>
  store %op, %flat
  return
}
"""


def test_ma_wrapped_columns_become_a_tile_load_or_a_column_gather():
    """`(c + arange) % N` columns: a tile load while the block does not wrap around, else the
    offsets as an index vector (a gather of columns, `row stride` apart) -- never a pointer block."""
    out = run_text(WRAPPED, MA)
    filecheck(out, """
CHECK: = if %
CHECK-NEXT: load_tile %
CHECK: yield %
CHECK: } {
CHECK: = reshape %ce : tensor<16xi32>
CHECK-NEXT: = gather_cols %b, %
CHECK: } : tensor<8x16xf16>
CHECK-NOT: load %p
""")
    assert "tensor<8x16xptr" not in out, out
    assert re.search(r"gather_cols %b, %\d+, %sk, %\d+ : tensor<8x16xf16>", out), out


@pytest.mark.parametrize("N,sk", [(24, 24), (48, 56), (8, 8)])
def test_wrapped_column_gather_matches_the_reference(N, sk):
    """The wrapped tile (both versions) on the NPU against the reference evaluator."""
    from tritonpu.codegen.pipeline import launch_npu
    from tritonpu.ref import evaluator
    from tritonpu.runtime.jit import CompiledKernel
    fn = parse_function(with_locs(WRAPPED))
    rng = np.random.default_rng(3)
    for pid_n in range(4):
        b = rng.standard_normal(8 * sk).astype(np.float16)
        args_ref = [b, np.zeros(128, np.float16), N, pid_n, sk]
        args_npu = [b, np.zeros(128, np.float16), N, pid_n, sk]
        evaluator.run(fn, args_ref, (1, 1, 1))
        launch_npu(CompiledKernel("k", fn, {"ir": print_function(fn)}), args_npu, (1, 1, 1), {})
        np.testing.assert_array_equal(args_npu[1], args_ref[1])


def test_when_temporaries_do_not_fit_beside_tiles_kept_clear_of_a_loop_the_compile_plans_them_as_they_stand(
        monkeypatch):
    import importlib.util
    from pathlib import Path
    from tritonpu.codegen import emit, pipeline
    path = Path(__file__).resolve().parents[2] / "kernels" / "layernorm.py"
    spec = importlib.util.spec_from_file_location("kernels_layernorm_bp", path)
    ln = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ln)
    seen = []
    real = emit.Emitter.run

    def run(self):      # emission runs out of UB whenever the plan kept tiles clear of a loop
        seen.append(self.fn.__dict__.get("early_starts"))
        if seen[-1]:
            raise CompilationError("the kernel needs 200000 bytes of Unified Buffer (with temporaries) but UB "
                                   "holds 196608; use smaller blocks")
        return real(self)
    monkeypatch.setattr(emit.Emitter, "run", run)
    assert pipeline.EARLY_STARTS.get() is True
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 2048), dtype=np.float32)
    w, b = rng.standard_normal(2048, dtype=np.float32), rng.standard_normal(2048, dtype=np.float32)
    y = ln.layernorm(x, w, b, BLOCK=512)[0]
    np.testing.assert_allclose(y, ln.reference(x, w, b), atol=1e-4, rtol=1e-4)
    assert seen == [True, False], seen          # planned with them, then without
