"""Single-trip versioning, loop-invariant load hoisting and load CSE (tritonpu/passes/versioning.py,
hoist.py, cse.py, dce.py).

* golden tests: IR text in, expected IR out, for ``versioning``, ``hoist``, ``cse`` on tile loads
  (across stores to other arguments, not across stores to the same one, not across a loop that
  writes it, not at all with ``may_alias``) and ``dce`` of unused tile loads;
* end to end: a LayerNorm whose row fits one block reads its row once and its weights once per
  core, with results bitwise identical to the kernel compiled without these passes; a launch
  whose arrays share memory is compiled with ``may_alias`` and gives numpy's answer.
"""
import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.ir import parse_function, print_function, verify
from tritonpu.passes import PassManager
from tritonpu.testing import filecheck

from test_pipelining import _load, kmod, run_text, with_locs


# =============================================================================================
# versioning
# =============================================================================================

OUTER = """
func @k(%x: ptr<f32>, %y: ptr<f32>, %n: i32, %progs: i32) {
  %z = constant {value = 0} : i32
  %B = constant {value = 32} : i32
  %one = constant {value = 1} : i32
  for %z, %progs, %one {
  ^bb(%pid: i32):
    %row = mul %pid, %n : i32
    %xr = addptr %x, %row : ptr<f32>
    %acc0 = constant {value = 0.0} : tensor<32xf32>
    %accr = for %z, %n, %B, %acc0 {
    ^bb(%i: i32, %acc: tensor<32xf32>):
      %p = addptr %xr, %i : ptr<f32>
      %rem = sub %n, %i : i32
      %v = load_tile %p, %one, %rem : tensor<32xf32>
      %a2 = add %acc, %v : tensor<32xf32>
      yield %a2
    } : tensor<32xf32>
    %yr = addptr %y, %row : ptr<f32>
    for %z, %n, %B {
    ^bb(%j: i32):
      %q = addptr %xr, %j : ptr<f32>
      %rem2 = sub %n, %j : i32
      %u = load_tile %q, %one, %rem2 : tensor<32xf32>
      %w = add %u, %accr : tensor<32xf32>
      %yp = addptr %yr, %j : ptr<f32>
      store_tile %yp, %one, %rem2, %w
      yield
    } loc(#f0:90:0)
    yield
  } loc(#f0:91:0)
  return
}
"""


def test_versioning_inlines_single_trip_inner_loops_and_loads_the_row_once():
    out = run_text(OUTER, ["versioning"])
    filecheck(out, """
CHECK: %0 = cmp %z, %n {pred = "lt"} : i1
CHECK-NEXT: %1 = sub %n, %B : i32
CHECK-NEXT: %2 = cmp %1, %z {pred = "le"} : i1
CHECK-NEXT: %3 = and %0, %2 : i1
CHECK-NEXT: if %3 {
CHECK-NEXT: for %z, %progs, %one {
CHECK-NEXT: ^bb(%pid: i32):
CHECK-NOT: for
CHECK: %v = load_tile %p, %one, %rem : tensor<32xf32>
CHECK-NEXT: %a2 = add %acc0, %v : tensor<32xf32>
CHECK-NEXT: %yr = addptr %y, %row : ptr<f32>
CHECK-NEXT: %w = add %v, %a2 : tensor<32xf32>
CHECK-NEXT: %yp = addptr %yr, %z : ptr<f32>
CHECK-NEXT: store_tile %yp, %one, %rem, %w
CHECK-NEXT: yield
CHECK-NEXT: }
CHECK-NEXT: yield
CHECK-NEXT: } {
CHECK-NEXT: for %z, %progs, %one {
CHECK: %accr = for %z, %n, %B, %acc0_1 {
CHECK: for %z, %n, %B {
""")
    fast = out.split("} {")[0]
    assert fast.count("load_tile") == 1 and out.count("load_tile") == 3, out
    # the two loops have the same bounds: one condition
    assert out.count('pred = "le"') == 1, out


def test_versioning_leaves_inner_loops_with_bounds_from_the_program_alone():
    text = OUTER.replace("%accr = for %z, %n, %B, %acc0 {", "%accr = for %z, %row, %B, %acc0 {") \
                .replace("for %z, %n, %B {", "for %z, %row, %B {")
    out = run_text(text, ["versioning"])
    assert " if " not in out and out.count("load_tile") == 2, out


BODY = """
func @k(%x: ptr<f32>, %y: ptr<f32>, %n: i32) {
  %z = constant {value = 0} : i32
  %B = constant {value = 32} : i32
  %one = constant {value = 1} : i32
  %acc0 = constant {value = 0.0} : tensor<32xf32>
  %accr = for %z, %n, %B, %acc0 {
  ^bb(%i: i32, %acc: tensor<32xf32>):
    %p = addptr %x, %i : ptr<f32>
    %v = load_tile %p, %one, %B : tensor<32xf32>
    %a2 = add %acc, %v : tensor<32xf32>
    yield %a2
  } : tensor<32xf32>
  store_tile %y, %one, %B, %accr
  return
}
"""


def test_versioning_kernel_body_without_a_program_loop():
    out = run_text(BODY, ["versioning"])
    filecheck(out, """
CHECK: %3 = and %0, %2 : i1
CHECK-NEXT: if %3 {
CHECK-NOT: for
CHECK: %p = addptr %x, %z : ptr<f32>
CHECK-NEXT: %v = load_tile %p, %one, %B : tensor<32xf32>
CHECK-NEXT: %a2 = add %acc0, %v : tensor<32xf32>
CHECK-NEXT: store_tile %y, %one, %B, %a2
CHECK-NEXT: yield
CHECK-NEXT: } {
CHECK: %accr = for %z, %n, %B, %acc0_1 {
CHECK: store_tile %y, %one_1, %B, %accr
CHECK-NEXT: yield
CHECK-NEXT: }
CHECK-NEXT: return
""")


def test_versioning_leaves_loops_without_loads_or_with_unknown_step():
    no_load = BODY.replace("%v = load_tile %p, %one, %B : tensor<32xf32>", "%v = splat %one : tensor<32xf32>") \
                  .replace("splat %one", "cast %acc")
    assert " if " not in run_text(no_load, ["versioning"])
    step = BODY.replace("func @k(%x: ptr<f32>, %y: ptr<f32>, %n: i32)", "func @k(%x: ptr<f32>, %y: ptr<f32>, %n: i32, %s: i32)") \
               .replace("for %z, %n, %B, %acc0", "for %z, %n, %s, %acc0")
    assert " if " not in run_text(step, ["versioning"])


# =============================================================================================
# cse of tile loads
# =============================================================================================

LOADS = """
func @k(%x: ptr<f32>, %y: ptr<f32>, %o: ptr<f32>) {
  %one = constant {value = 1} : i32
  %B = constant {value = 32} : i32
  %a = load_tile %x, %one, %B : tensor<32xf32>
  store_tile %y, %one, %B, %a
  %b = load_tile %x, %one, %B : tensor<32xf32>
  %s = add %a, %b : tensor<32xf32>
  store_tile %o, %one, %B, %s
  return
}
"""


def test_cse_merges_a_reload_across_a_store_to_another_argument():
    out = run_text(LOADS, ["cse"])
    assert "%s = add %a, %a : tensor<32xf32>" in out, out


def test_cse_keeps_a_reload_after_a_store_to_the_same_argument():
    out = run_text(LOADS.replace("store_tile %y, %one, %B, %a", "store_tile %x, %one, %B, %a"), ["cse"])
    assert "%s = add %a, %b : tensor<32xf32>" in out, out


def test_cse_keeps_a_reload_when_the_arguments_may_share_memory():
    fn = parse_function(with_locs(LOADS))
    fn.attrs["may_alias"] = True
    PassManager(["cse"]).run(fn)
    verify(fn)
    assert "%s = add %a, %b : tensor<32xf32>" in print_function(fn)


def test_cse_keeps_a_reload_inside_a_loop_that_writes_its_argument():
    text = """
func @k(%x: ptr<f32>, %n: i32) {
  %z = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %B = constant {value = 32} : i32
  %a = load_tile %x, %one, %B : tensor<32xf32>
  for %z, %n, %one {
  ^bb(%i: i32):
    %b = load_tile %x, %one, %B : tensor<32xf32>
    %s = add %a, %b : tensor<32xf32>
    store_tile %x, %one, %B, %s
    yield
  } loc(#f0:90:0)
  return
}
"""
    out = run_text(text, ["cse"])
    assert "%s = add %a, %b : tensor<32xf32>" in out, out
    out = run_text(text.replace("store_tile %x,", "store_tile %x_other,").replace(
        "func @k(%x: ptr<f32>,", "func @k(%x: ptr<f32>, %x_other: ptr<f32>,"), ["cse"])
    assert "%s = add %a, %a : tensor<32xf32>" in out, out


START_TWO_LOOPS = """
func @k(%x: ptr<f16>, %w: ptr<f16>, %o: ptr<f32>, %n: i32) {
  %z = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %B = constant {value = 16} : i32
  %zf = constant {value = 0.0} : f32
  %acc0 = splat %zf : tensor<16x16xf32>
  %wt = load_tile %w, %B, %one, %B, %B : tensor<16x16xf16>
  %a = load_tile %x, %B, %one, %B, %B : tensor<16x16xf16>
  %r1, %t1 = for %z, %n, %one, %acc0, %a {
  ^bb(%i: i32, %acc: tensor<16x16xf32>, %t: tensor<16x16xf16>):
    %d = dot %t, %wt, %acc : tensor<16x16xf32>
    %p = addptr %x, %i : ptr<f16>
    %nt = load_tile %p, %B, %one, %B, %B : tensor<16x16xf16>
    yield %d, %nt
  } : tensor<16x16xf32>, tensor<16x16xf16> loc(#f0:90:0)
  %b = load_tile %x, %B, %one, %B, %B : tensor<16x16xf16>
  %r2, %t2 = for %z, %n, %one, %acc0, %b {
  ^bb(%j: i32, %acc2: tensor<16x16xf32>, %u: tensor<16x16xf16>):
    %d2 = dot %u, %wt, %acc2 : tensor<16x16xf32>
    %p2 = addptr %x, %j : ptr<f16>
    %nu = load_tile %p2, %B, %one, %B, %B : tensor<16x16xf16>
    yield %d2, %nu
  } : tensor<16x16xf32>, tensor<16x16xf16> loc(#f0:91:0)
  %s = add %r1, %r2 : tensor<16x16xf32>
  store_tile %o, %B, %one, %B, %B, %s
  return
}
"""


def test_cse_keeps_l1_loads_that_start_loops_apart():
    # two loops start from the same block of a dot operand (as the unrolled copies of a program loop
    # prefetching an inner loop's first trip do): the block lives in L1, where each loop builds its
    # carried tile in its own buffer — merged, one of them would need an L1-to-L1 copy (no such path)
    out = run_text(START_TWO_LOOPS, ["cse"])
    assert "%r2, %t2 = for %z, %n, %one, %acc0, %b" in out, out
    # the same blocks worked on by the vector unit live in UB: merged (a UB copy starts the loop)
    ub = START_TWO_LOOPS.replace("%d = dot %t, %wt, %acc", "%d = add %acc, %acc") \
                        .replace("%d2 = dot %u, %wt, %acc2", "%d2 = add %acc2, %acc2")
    out = run_text(ub, ["cse"])
    assert "%r2, %t2 = for %z, %n, %one, %acc0, %a" in out, out


def test_dce_drops_an_unused_tile_load():
    out = run_text(LOADS.replace("%s = add %a, %b", "%s = add %a, %a"), ["dce"])
    assert out.count("load_tile") == 1, out


# =============================================================================================
# hoist
# =============================================================================================

HOIST = """
func @k(%w: ptr<f32>, %x: ptr<f32>, %y: ptr<f32>, %n: i32) {
  %z = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %B = constant {value = 32} : i32
  for %z, %n, %one {
  ^bb(%i: i32):
    %wv = load_tile %w, %one, %B : tensor<32xf32>
    %off = mul %i, %B : i32
    %xp = addptr %x, %off : ptr<f32>
    %xv = load_tile %xp, %one, %B : tensor<32xf32>
    %s = add %xv, %wv : tensor<32xf32>
    %yp = addptr %y, %off : ptr<f32>
    store_tile %yp, %one, %B, %s
    yield
  } loc(#f0:90:0)
  return
}
"""


def test_hoist_moves_an_invariant_load_before_the_loop_reading_nothing_without_trips():
    out = run_text(HOIST, ["hoist"])
    filecheck(out, """
CHECK: %0 = cmp %z, %n {pred = "lt"} : i1
CHECK-NEXT: %1 = constant {value = 0} : i32
CHECK-NEXT: %2 = select %0, %B, %1 : i32
CHECK-NEXT: %wv = load_tile %w, %one, %2 : tensor<32xf32>
CHECK-NEXT: for %z, %n, %one {
CHECK-NEXT: ^bb(%i: i32):
CHECK-NEXT: %off = mul %i, %B : i32
CHECK-NEXT: %xp = addptr %x, %off : ptr<f32>
CHECK-NEXT: %xv = load_tile %xp, %one, %B : tensor<32xf32>
CHECK-NEXT: %s = add %xv, %wv : tensor<32xf32>
""")


def test_hoist_leaves_a_load_whose_argument_the_loop_writes():
    out = run_text(HOIST.replace("store_tile %yp,", "store_tile %w,"), ["hoist"])
    assert out.index("for %z") < out.index("%wv = load_tile"), out
    fn = parse_function(with_locs(HOIST))
    fn.attrs["may_alias"] = True
    PassManager(["hoist"]).run(fn)
    out = print_function(fn)
    assert out.index("for %z") < out.index("%wv = load_tile"), out


# =============================================================================================
# end to end
# =============================================================================================

OFF = dict(disable_passes=("versioning", "hoist"))


@pytest.mark.parametrize("rows,cols,block", [(30, 256, 256), (30, 200, 256), (7, 300, 128)])
def test_e2e_layernorm_row_in_one_block_reads_it_once(rows, cols, block):
    m = kmod("layernorm")
    rng = np.random.default_rng(cols)
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    w = rng.standard_normal(cols, dtype=np.float32)
    b = rng.standard_normal(cols, dtype=np.float32)
    y, mean, rstd, h = m.layernorm(x, w, b, BLOCK=block)
    y0, mean0, rstd0, h0 = m.layernorm(x, w, b, BLOCK=block, **OFF)
    for a, a0 in ((y, y0), (mean, mean0), (rstd, rstd0)):
        assert a.tobytes() == a0.tobytes()
    np.testing.assert_allclose(y, m.reference(x, w, b), atol=1e-4, rtol=1e-4)
    read = h.stats.bytes_by_path["gm->ub"]
    cores = h.stats.cores_used
    if cols <= block:    # x once per row, w and b once per core
        assert read == x.nbytes + 2 * cores * w.nbytes, (read, x.nbytes)
        # without them, cleanup's cse still merges the first trips of the three loops (x once),
        # but w and b are read per row
        assert h0.stats.bytes_by_path["gm->ub"] == x.nbytes + 2 * rows * w.nbytes
        assert h.stats.cycles < h0.stats.cycles
    else:                # several column blocks: the loops run as written
        assert read == h0.stats.bytes_by_path["gm->ub"]


@tritonpu.jit
def _reload(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, a + 1.0)
    b = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, b * 2.0)


def test_e2e_arrays_that_share_memory_are_compiled_with_may_alias():
    x = np.arange(64, dtype=np.float32)
    y, out = np.empty_like(x), np.empty_like(x)
    h = _reload[(1,)](x, y, out, BLOCK=64)
    assert np.array_equal(out, x * 2) and np.array_equal(y, x + 1)
    assert h.asm["dce"].count("load_tile") == 1
    x2 = np.arange(64, dtype=np.float32)
    h = _reload[(1,)](x2, x2, out, BLOCK=64)       # y is x: the second load sees the store
    assert np.array_equal(out, (np.arange(64, dtype=np.float32) + 1) * 2)
    assert "may_alias = true" in h.asm["dce"] and h.asm["dce"].count("load_tile") == 2


def test_e2e_launch_decides_the_version_and_compiles_again_when_arguments_change():
    m = _load("layernorm")        # a kernel object of its own: no compilation from other tests
    rng = np.random.default_rng(5)
    w = rng.standard_normal(300, dtype=np.float32)
    b = rng.standard_normal(300, dtype=np.float32)
    x_short = rng.standard_normal((6, 100), dtype=np.float32)
    x_long = rng.standard_normal((6, 300), dtype=np.float32)
    _, _, _, h = m.layernorm(x_short, w[:100].copy(), b[:100].copy(), BLOCK=128)
    arts = [a for k, v in h.kernel.backend_artifacts.items() if k[0] == "npu" for a in v]
    assert len(arts) == 1 and "single_trip = true" in h.asm["versioning"]
    assert "for " not in h.asm["versioning"].split("for ", 1)[1], "no inner loop in the one-trip version"
    y, _, _, h = m.layernorm(x_long, w, b, BLOCK=128)         # 3 column blocks: compiled again
    np.testing.assert_allclose(y, m.reference(x_long, w, b), atol=1e-4, rtol=1e-4)
    assert "single_trip = false" in h.asm["versioning"]
    arts = [a for k, v in h.kernel.backend_artifacts.items() if k[0] == "npu" for a in v]
    assert len(arts) == 2 and ["single_trip = true" in a.asm["versioning"] for a in arts] == [True, False]
    assert all(a.guards for a in arts)
    y, _, _, h = m.layernorm(x_short, w[:100].copy(), b[:100].copy(), BLOCK=128)   # the first again
    np.testing.assert_allclose(y, m.reference(x_short, w[:100], b[:100]), atol=1e-4, rtol=1e-4)
    assert "single_trip = true" in h.asm["versioning"]
    assert len([a for k, v in h.kernel.backend_artifacts.items() if k[0] == "npu" for a in v]) == 2


def test_hoist_moves_invariant_pure_ops_and_keeps_those_of_the_trip():
    text = HOIST.replace("    %wv = load_tile %w, %one, %B : tensor<32xf32>\n", """    %wv = load_tile %w, %one, %B : tensor<32xf32>
    %ar = arange {end = 32, start = 0} : tensor<32xi32>
    %nb = splat %n : tensor<32xi32>
    %mk = cmp %ar, %nb {pred = "lt"} : tensor<32xi1>
    %ib = splat %i : tensor<32xi32>
    %mi = cmp %ar, %ib {pred = "lt"} : tensor<32xi1>
    %both = and %mk, %mi : tensor<32xi1>
""").replace("%s = add %xv, %wv : tensor<32xf32>", "%s0 = add %xv, %wv : tensor<32xf32>\n    %z32 = splat %z : tensor<32xf32>\n    %s = select %both, %s0, %z32 : tensor<32xf32>")
    text = text.replace("%z32 = splat %z : tensor<32xf32>", "%zf = constant {value = 0.0} : f32\n    %z32 = splat %zf : tensor<32xf32>")
    out = run_text(text, ["hoist"])
    before, inside = out.split("for %z, %n, %one {")
    for name in ("%ar = arange", "%nb = splat %n", "%mk = cmp %ar, %nb", "%zf = constant", "%z32 = splat %zf",
                 "%wv = load_tile"):
        assert name in before, (name, out)
    for name in ("%ib = splat %i", "%mi = cmp %ar, %ib", "%both = and %mk, %mi", "%xv = load_tile"):
        assert name in inside, (name, out)


def test_a_tile_stored_in_a_pipelined_loop_keeps_its_buffer_for_the_whole_trip():
    # the next trip's early work must not compute into the buffer the store still drains
    from tritonpu.codegen.analysis import UB
    from tritonpu.passes.buffer_planning import plan
    m = kmod("layernorm")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((50, 256), dtype=np.float32)
    w = rng.standard_normal(256, dtype=np.float32)
    _, _, _, h = m.layernorm(x, w, w.copy())
    fn = parse_function(h.asm["cleanup"])
    an, addr = plan(fn)
    loops = [o for o in fn.walk() if o.name == "for" and o.attrs.get("double_buffer") == "on"]
    assert loops
    checked = 0
    for lp in loops:
        s, e = an.span[id(lp)]
        inside = [g for g in an.groups if g.home == UB and s < an.defined[id(g.first)] < e]
        for st in (o for o in lp.walk() if o.name == "store_tile" and o.operands[-1].type.is_block):
            g = an.group_of[id(st.operands[-1])]
            lo, hi = addr[id(g)], addr[id(g)] + g.bytes
            for other in inside:
                if other is g:
                    continue
                olo = addr[id(other)]
                assert olo + other.bytes <= lo or olo >= hi, (st, other.first)
            checked += 1
    assert checked >= 2


def test_e2e_an_input_passed_twice_is_no_aliasing():
    # only an argument the kernel writes that overlaps another one makes the launch `may_alias`
    x = np.arange(64, dtype=np.float32)
    y, out = np.empty_like(x), np.empty_like(x)
    h = _reload[(1,)](x, y, out, BLOCK=64)
    m = kmod("vector_add")
    res, h2 = m.add(x, x, BLOCK=64)
    assert np.array_equal(res, 2 * x)
    assert "may_alias" not in h2.asm["dce"]
    _reload[(1,)](x, y, x[::-1].copy(), BLOCK=64)             # disjoint arrays: no may_alias either
    h = _reload[(1,)](x, y, out, BLOCK=64)
    assert "may_alias" not in h.asm["dce"]
