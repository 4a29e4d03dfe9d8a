"""IR text round trip (print -> parse -> print is identical, the parsed function verifies), parser
errors with line and column, and the verifier on hand-written bad IR.

Every kernel compiled by any test is also round-tripped at compile time by tests/conftest.py (the
test that compiled it fails if its IR does not round-trip); here: a few kernels exercising every
op kind, and every kernel the kernels/ scripts compile.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.language.extra import libdevice
from tritonpu.ir.ops import FRONTEND_OPS
from tritonpu.ir import (IRParseError, VerifyError, parse_function, parse_module, print_function, types as T,
                         verify)
from tritonpu.runtime.jit import JITFunction

ROOT = Path(__file__).resolve().parents[2]


def roundtrip(text: str) -> None:
    fn = parse_function(text)
    verify(fn)
    assert print_function(fn) == text
    fn2 = parse_function(print_function(fn))
    verify(fn2)


# ---------------------------------------------------------------------------------------------
# kernels covering every op
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def everything_kernel(x_ptr, i_ptr, out_ptr, lock_ptr, n, f, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    npg = tl.num_programs(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=float("-inf"), cache_modifier=".cg", eviction_policy="evict_last")
    i = tl.load(i_ptr + offs, mask=mask, other=0, volatile=True)
    y = tl.where(x > 0, tl.exp(x) - tl.exp2(x) + tl.log(tl.abs(x) + 1) * tl.log2(x * x + 2), -x)
    y = y + tl.sqrt(tl.abs(x)) * tl.rsqrt(x * x + 1) + tl.sin(x) * tl.cos(x) + tl.floor(x) - tl.ceil(x) + tl.erf(x) \
        + libdevice.tanh(x) + libdevice.pow(tl.abs(x), 1.5) + libdevice.asin(x) + libdevice.acos(x) \
        + libdevice.atan(x) + libdevice.tan(x) + libdevice.sinh(x) + libdevice.cosh(x) + libdevice.log1p(x) \
        + libdevice.expm1(x) + libdevice.log10(x) + libdevice.rint(x)
    y = tl.fma(y, f, 1e-30) + tl.maximum(x, 0.0) - tl.minimum(x, -1.5)
    j = (i // 3) % 5 + (i & 7 | 1) ^ (i << 2) >> 1
    j = ~j + tl.cdiv(j, 4) - npg
    a = tl.reshape(tl.broadcast_to(y[None, :], (16, BLOCK)), (BLOCK, 16))
    b = tl.trans(a).to(tl.float16)
    c = tl.dot(a.to(tl.float16), b, acc=tl.zeros((BLOCK, BLOCK), dtype=tl.float32), input_precision="ieee")
    s = tl.sum(c, axis=1) + tl.max(c, axis=1) + tl.min(c, axis=1) + tl.argmax(c, 1) + tl.argmin(c, 1)
    s = s + tl.cumsum(s, 0, reverse=True) + tl.permute(tl.expand_dims(s, 1), (1, 0)).reshape(BLOCK)
    z = s.to(tl.int32, bitcast=True).to(tl.float32) + j + tl.sum(tl.topk(x, 3), 0)
    z = tl.insert_slice(z, tl.extract_slice(z, [1], [4], [2]) * 0.5, [0], [4], [1])
    old = tl.atomic_add(out_ptr + offs, z, mask=mask, sem="acq_rel", scope="gpu")
    tl.atomic_max(out_ptr + offs, old, mask=mask)
    tl.atomic_xchg(lock_ptr, 0)
    while tl.atomic_cas(lock_ptr, 0, 1) != 0:
        pass
    acc = 0.0
    for k in range(0, n, 4):
        if k > 8:
            acc += 1.0
        else:
            acc -= 0.5
    for k in tl.static_range(2):
        acc += k
    if pid == 0:
        tl.device_print("acc=", acc, hex=False)
    tl.device_assert(acc > -1e9, "acc is finite")
    tl.store(out_ptr + offs, z + acc, mask=mask)
    if pid > 100:
        return
    tl.store(out_ptr, 1.5)


def test_everything_kernel_roundtrips_and_uses_most_ops():
    x = np.linspace(-2, 2, 40, dtype=np.float32)
    out = np.zeros(40, np.float32)
    h = everything_kernel[(3,)](x, np.arange(40, dtype=np.int32), out, np.zeros(1, np.int32), 40, 1.0, BLOCK=16,
                                debug=True)          # device_assert is compiled in debug mode only, as in Triton
    text = h.asm["ir"]
    roundtrip(text)
    used = {op.name for op in parse_function(text).walk()}
    # the tile transfers are made by the memory-analysis pass, not by the frontend
    missing = set(FRONTEND_OPS) - used - {"atomic_rmw", "cmp", "print", "assert"} - {"fma"}
    assert used >= {"atomic_rmw", "atomic_cas", "dot", "reduce", "scan", "for", "while", "if", "bitcast", "permute",
                    "reshape", "broadcast", "expand_dims", "slice", "splat", "select", "print", "assert", "condition",
                    "yield", "return", "load", "store", "cast", "cmp", "arange", "program_id", "num_programs"}
    assert not (missing - {"neg", "not", "shl", "shr"}), f"ops the kernel does not exercise: {sorted(missing)}"


def test_special_float_constants_roundtrip():
    @tritonpu.jit
    def consts(out_ptr):
        tl.store(out_ptr, float("inf"))
        tl.store(out_ptr + 1, float("-inf"))
        tl.store(out_ptr + 2, float("nan"))
        tl.store(out_ptr + 3, 1e-30)
        tl.store(out_ptr + 4, -2.5e20)

    out = np.zeros(5, np.float32)
    h = consts[(1,)](out)
    roundtrip(h.asm["ir"])
    assert "value = inf" in h.asm["ir"] and "value = -inf" in h.asm["ir"] and "value = nan" in h.asm["ir"]
    assert np.isinf(out[0]) and np.isnan(out[2]) and out[4] == np.float32(-2.5e20)


def _jit_functions(mod) -> list[JITFunction]:
    out = []
    for v in vars(mod).values():
        while v is not None and not isinstance(v, JITFunction) and hasattr(v, "fn"):
            v = v.fn                      # Autotuner / Heuristics wrap the JITFunction
        if isinstance(v, JITFunction) and v not in out:
            out.append(v)
    return out


KERNEL_SCRIPTS = sorted((ROOT / "kernels").glob("*.py"))


@pytest.mark.parametrize("path", KERNEL_SCRIPTS, ids=lambda p: p.stem)
def test_kernel_scripts_roundtrip(path, capsys):
    spec = importlib.util.spec_from_file_location(f"roundtrip_kernels_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if hasattr(mod, "main"):
        mod.main()
    capsys.readouterr()
    compiled = [k for jf in _jit_functions(mod) for k in jf.cache.values()]
    if not compiled:
        pytest.skip(f"{path.name} compiled no kernel")
    for k in compiled:
        roundtrip(k.asm["ir"])


# ---------------------------------------------------------------------------------------------
# hand-written IR
# ---------------------------------------------------------------------------------------------
GOOD = '''#f0 = "k.py"
func @k(%x: ptr<f32>, %n: i32) {BLOCK = 16} {
  %0 = arange {end = 16, start = 0} : tensor<16xi32> loc(#f0:1:0)
  %1 = splat %n : tensor<16xi32> loc(#f0:2:0)
  %m = cmp %0, %1 {pred = "lt"} : tensor<16xi1> loc(#f0:2:0)
  %p0 = splat %x : tensor<16xptr<f32>> loc(#f0:3:0)
  %p = addptr %p0, %0 : tensor<16xptr<f32>> loc(#f0:3:0)
  %v = load %p, %m : tensor<16xf32> loc(#f0:4:0)
  %c0 = constant {value = 0} : i32 loc(#f0:5:0)
  %c1 = constant {value = 1} : i32 loc(#f0:5:0)
  %r = for %c0, %n, %c1, %v {
  ^bb(%i: i32, %acc: tensor<16xf32>):
    %acc_1 = add %acc, %v : tensor<16xf32> loc(#f0:6:0)
    yield %acc_1 loc(#f0:6:0)
  } : tensor<16xf32> loc(#f0:5:0)
  store %p, %r, %m loc(#f0:7:0)
  return loc(#f0:8:0)
}
'''


def test_hand_written_ir_roundtrips_and_runs():
    roundtrip(GOOD)
    from tritonpu.ref import evaluator
    fn = parse_function(GOOD)
    x = np.arange(16, dtype=np.float32)
    evaluator.run(fn, [x, 10], (1, 1, 1))
    assert x.tolist() == [11.0 * v for v in range(10)] + list(range(10, 16))


def test_parse_module_with_two_functions():
    second = GOOD.replace("func @k(", "func @k2(").split("\n", 1)[1]
    fns = parse_module(GOOD + second)
    assert [f.name for f in fns] == ["k", "k2"]
    with pytest.raises(IRParseError, match="expected one function, found 2"):
        parse_function(GOOD + second)


@pytest.mark.parametrize("old,new,line,col,msg", [
    ("%1 = splat %n", "%1 = splat %nope", 4, 14, "use of undefined value %nope"),
    ("%m = cmp", "%0 = cmp", 5, 3, "value %0 is defined twice"),
    ("%v = load %p, %m", "%v = frobnicate %p, %m", 8, 8, "unknown op 'frobnicate'"),
    ("loc(#f0:4:0)", "loc(#f9:4:0)", 8, 41, "unknown file alias #f9"),
    (": tensor<16xi1>", ": tensor<16xq7>", 5, 35, "unknown type 'q7'"),
    ("store %p, %r, %m", "store %p, %r, %m {", 16, 25, "unexpected Token('LPAR', '(')"),
    ("%p = addptr %p0, %0 :", "%p = addptr %p0 %0 :", 7, 19, "unexpected"),
])
def test_parse_errors_have_line_and_column(old, new, line, col, msg):
    assert old in GOOD
    bad = GOOD.replace(old, new, 1)
    with pytest.raises(IRParseError) as info:
        parse_function(bad)
    err = info.value
    assert (err.line, err.col) == (line, col), str(err)
    assert str(err).startswith(f"line {line}, column {col}: ")
    assert msg in str(err)


@pytest.mark.parametrize("old,new,msg", [
    ("%acc_1 = add %acc, %v : tensor<16xf32>", "%acc_1 = add %acc, %m : tensor<16xf32>",
     "'add' operands and result must have one element type"),
    ("%m = cmp %0, %1 {pred = \"lt\"} : tensor<16xi1>", "%m = cmp %0, %1 {pred = \"lt\"} : tensor<16xi32>",
     "'cmp' compares two values of one element type into i1"),
    ("{pred = \"lt\"}", "{pred = \"less\"}", "unknown predicate 'less'"),
    ("%v = load %p, %m : tensor<16xf32>", "%v = load %p, %m : tensor<16xi32>", "'load' loads tensor<16xi32>"),
    ("yield %acc_1", "yield %acc", None),                                 # fine: yields the region argument
    ("yield %acc_1 loc(#f0:6:0)", "yield %i loc(#f0:6:0)", "'yield' passes (i32), expected (tensor<16xf32>)"),
    ("    yield %acc_1 loc(#f0:6:0)\n", "", "k.py:6:0: region does not end in a terminator"),
    ("  return loc(#f0:8:0)\n", "", "k.py:7:0: region does not end in a terminator"),
    ("  return loc(#f0:8:0)\n", "  yield loc(#f0:8:0)\n", "the kernel body must end in 'return'"),
    ("%0 = arange {end = 16, start = 0}", "%0 = arange {end = 16, start = 0, step = 2}",
     "'arange' has unknown attributes ['step']"),
    ("%0 = arange {end = 16, start = 0}", "%0 = arange {start = 0}", "'arange' needs attribute 'end'"),
    ("%0 = arange {end = 16, start = 0}", "%0 = arange {end = 32, start = 0}",
     "'arange' arange(0, 32) must have type tensor<Nxi32>, got tensor<16xi32>"),
    ("%p = addptr %p0, %0 : tensor<16xptr<f32>>", "%p = addptr %p0, %v0 : tensor<16xptr<f32>>", None),
    ("store %p, %r, %m", "store %p, %r, %0", "'store' mask must be i1 of the pointer's shape"),
    ("store %p, %r, %m", "store %p", "'store' takes 2..3 operands, got 1"),
    ("%1 = splat %n : tensor<16xi32>", "%1 = splat %n : tensor<16xf32>", "'splat' splats a scalar into a block"),
    ("%r = for %c0, %n, %c1, %v {", "%r = for %c0, %n, %m, %v {",
     "'for' bounds and step must be i32 or i64 scalars"),
])
def test_verifier_rejects_bad_ir(old, new, msg):
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    if "%v0" in new:
        text = text.replace("  %p0 = splat", "  %v0 = constant {value = 1.0} : tensor<16xf32> loc(#f0:3:0)\n  %p0 = splat")
        msg = "'addptr' adds an integer offset to a pointer"
    fn = parse_function(text)
    if msg is None:
        verify(fn)
        return
    with pytest.raises(VerifyError) as info:
        verify(fn)
    assert msg in str(info.value)
    if "return" not in msg and "terminator" not in msg:
        assert str(info.value).startswith("k.py:"), str(info.value)


def test_verifier_dominance_across_regions():
    # the parser resolves names in text order; the verifier checks that a region's values stay inside it
    fn = parse_function(GOOD.replace("  store %p, %r, %m", "  store %p, %acc_1, %m"))
    with pytest.raises(VerifyError, match=r"k.py:7:0: 'store' uses Value\(acc_1: tensor<16xf32>\) where its "
                                          "definition does not dominate"):
        verify(fn)


def test_verifier_rejects_nested_return_and_bad_if():
    fn = parse_function('''#f0 = "k.py"
func @k(%c: i32) {
  if %c {
    yield loc(#f0:2:0)
  } {
    yield loc(#f0:3:0)
  } loc(#f0:1:0)
  return loc(#f0:4:0)
}
''')
    with pytest.raises(VerifyError, match="'if' condition must be an i1 scalar"):
        verify(fn)


def test_types_parse_and_print():
    for text in ["f32", "i1", "bf16", "u8", "ptr<f16>", "tensor<16xf32>", "tensor<32x64xi8>", "tensor<4x8xptr<bf16>>"]:
        assert str(T.parse_type(text)) == text
    with pytest.raises(ValueError):
        T.parse_type("tensor<16xq>")
