"""Golden and end-to-end tests for `x % m` offsets (memory analysis guards the structured transfer
with "the block does not wrap around") and loop unswitching (the guard leaves the loop)."""
import numpy as np
import pytest
from test_npu_passes import run_text

import tritonpu
import tritonpu.language as tl
from tritonpu.testing import filecheck

WRAPPED = """
func @k(%x: ptr<f32>, %y: ptr<f32>, %m: i32, %n: i32) {
  %pid = program_id {axis = 0} : i32
  %c64 = constant {value = 64} : i32
  %base = mul %pid, %c64 : i32
  %ar = arange {end = 64, start = 0} : tensor<64xi32>
  %bs = splat %base : tensor<64xi32>
  %offs = add %bs, %ar : tensor<64xi32>
  %ms = splat %m : tensor<64xi32>
  %w = rem %offs, %ms : tensor<64xi32>
  %xs = splat %x : tensor<64xptr<f32>>
  %xp = addptr %xs, %w : tensor<64xptr<f32>>
  %v = load %xp : tensor<64xf32>
  %ys = splat %y : tensor<64xptr<f32>>
  %yp = addptr %ys, %offs : tensor<64xptr<f32>>
  store %yp, %v
  return
}
"""


def test_rem_offsets_become_a_guarded_tile_load():
    # guarded by `base + 63` within i32 and `base % m + 64 <= m` (`base >= 0` is known: pid * 64)
    out = run_text(WRAPPED, ["memory-analysis", "cse", "dce"])
    filecheck(out, """
        CHECK: = rem %base, %m : i32
        CHECK: = constant {value = 2147483584} : i32
        CHECK: = cmp %base, %
        CHECK: pred = "le"
        CHECK-NOT: pred = "ge"
        CHECK: = and
        CHECK: = if
        CHECK: load_tile
        CHECK: yield
        CHECK: = load %xp
        CHECK: yield
        CHECK: store_tile""")


LOOPED = """
func @k(%x: ptr<f32>, %y: ptr<f32>, %m: i32, %n: i32) {
  %pid = program_id {axis = 0} : i32
  %c0 = constant {value = 0} : i32
  %c1 = constant {value = 1} : i32
  %c64 = constant {value = 64} : i32
  %base = mul %pid, %c64 : i32
  %ar = arange {end = 64, start = 0} : tensor<64xi32>
  %bs = splat %base : tensor<64xi32>
  %offs = add %bs, %ar : tensor<64xi32>
  %ms = splat %m : tensor<64xi32>
  %w = rem %offs, %ms : tensor<64xi32>
  %xs = splat %x : tensor<64xptr<f32>>
  %xp = addptr %xs, %w : tensor<64xptr<f32>>
  %z = constant {value = 0.0} : tensor<64xf32>
  %acc = for %c0, %n, %c1, %z {
  ^bb(%i: i32, %a: tensor<64xf32>):
    %v = load %xp : tensor<64xf32>
    %s = add %a, %v : tensor<64xf32>
    yield %s
  } : tensor<64xf32>
  %ys = splat %y : tensor<64xptr<f32>>
  %yp = addptr %ys, %offs : tensor<64xptr<f32>>
  store %yp, %acc
  return
}
"""


def test_unswitch_takes_the_invariant_guard_out_of_the_loop():
    out = run_text(LOOPED, ["memory-analysis", "cse", "unswitch", "dce"])
    lines = [ln.strip() for ln in out.splitlines()]
    outer_if = next(i for i, ln in enumerate(lines) if " = if " in ln)
    loops = [i for i, ln in enumerate(lines) if " = for " in ln]
    assert len(loops) == 2 and all(i > outer_if for i in loops)      # one loop per version, inside the if
    first, second = loops
    fast = "\n".join(lines[first:second])
    assert "load_tile" in fast and " = if " not in fast               # the fast loop is straight-line
    assert "= load %" in "\n".join(lines[second:])


@tritonpu.jit
def wrap_kernel(x_ptr, y_ptr, M, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    rows = (pid * BLOCK + tl.arange(0, BLOCK)) % M          # wraps in the last program unless M % BLOCK == 0
    acc = tl.zeros((BLOCK,), tl.float32)
    for k in range(3):
        acc += tl.load(x_ptr + k * M + rows)
    tl.store(y_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)


@pytest.mark.parametrize("M", [128, 100, 33])
def test_wrapped_offsets_are_correct_on_both_paths(M):
    x = np.random.default_rng(M).standard_normal(3 * M).astype(np.float32)
    progs = (M + 63) // 64
    y = np.zeros(progs * 64, np.float32)
    h = wrap_kernel[(progs,)](x, y, M, BLOCK=64)
    rows = (np.arange(progs * 64)) % M
    np.testing.assert_allclose(y, x[rows] + x[M + rows] + x[2 * M + rows], rtol=1e-6)
    assert "load_tile" in h.asm["unswitch"] and "mov.gm.ub.f32" in h.asm["isa"]
