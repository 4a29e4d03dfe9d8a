"""Every elementwise / cast op of the op table on the cpu backend against the reference evaluator,
over every dtype it accepts, with a masked tail (13 of 16 lanes) and as rank-0 scalars."""
from __future__ import annotations

import numpy as np
import pytest
from cpu_helpers import FLOATS, INTS, NP, assert_close, ir_kernel, run_both, values

from tritonpu.cpu.lower import missing_lowerings
from tritonpu.ir.ops import BINARY, FLOAT_ONLY_BINARY, OPS, UNARY

N, B = 13, 16


def _block_io(dts, out_dt, body):
    """IR: load operands of dtypes ``dts`` (16 lanes, mask lane < n), ``body`` -> %r, store %r."""
    args = ", ".join(f"%a{i}: ptr<{d}>" for i, d in enumerate(dts))
    lines = [f"func @k({args}, %o: ptr<{out_dt}>, %n: i32) {{",
             f"  %offs = arange {{end = {B}, start = 0}} : tensor<{B}xi32>",
             f"  %ns = splat %n : tensor<{B}xi32>",
             f"  %m = cmp %offs, %ns {{pred = \"lt\"}} : tensor<{B}xi1>"]
    for i, d in enumerate(dts):
        lines += [f"  %p{i} = splat %a{i} : tensor<{B}xptr<{d}>>",
                  f"  %q{i} = addptr %p{i}, %offs : tensor<{B}xptr<{d}>>",
                  f"  %x{i} = load %q{i}, %m : tensor<{B}x{d}>"]
    lines += ["  " + line for line in body(f"tensor<{B}x{{}}>")]
    lines += [f"  %po = splat %o : tensor<{B}xptr<{out_dt}>>",
              f"  %qo = addptr %po, %offs : tensor<{B}xptr<{out_dt}>>",
              "  store %qo, %r, %m", "  return", "}"]
    return "\n".join(lines)


def _scalar_io(dts, out_dt, body):
    args = ", ".join(f"%a{i}: ptr<{d}>" for i, d in enumerate(dts))
    lines = [f"func @k({args}, %o: ptr<{out_dt}>, %n: i32) {{"]
    for i, d in enumerate(dts):
        lines += [f"  %x{i} = load %a{i} : {d}"]
    lines += ["  " + line for line in body("{}")]
    lines += ["  store %o, %r", "  return", "}"]
    return "\n".join(lines)


def _run(text, dts, out_dt, rng, small=False, n=B):
    k = ir_kernel(text)
    ins = [values(d, n, rng, small) for d in dts]
    out = np.zeros(n, NP[out_dt])
    ref, cpu = run_both(k, ins + [out, N])
    return ref[-1], cpu[-1], k


def _binary_dtypes(op):
    if op in ("and", "or", "xor"):
        return INTS + ("i1",)
    if op in ("shl", "shr"):
        return INTS
    if op in FLOAT_ONLY_BINARY:
        return FLOATS
    return FLOATS + INTS + ("i1",)


BIN_CASES = [(op, dt) for op in BINARY for dt in _binary_dtypes(op) if not (dt == "i1" and op in ("div", "rem"))]


@pytest.mark.parametrize("op,dt", BIN_CASES)
@pytest.mark.parametrize("rank", ["block", "scalar"])
def test_binary(op, dt, rank):
    rng = np.random.default_rng(hash((op, dt)) % 2**32)
    wrap = _block_io if rank == "block" else _scalar_io
    text = wrap([dt, dt], dt, lambda t: [f"%r = {op} %x0, %x1 : {t.format(dt)}"])
    small = op in ("shl", "shr")
    for _ in range(3 if rank == "scalar" else 1):
        ref, cpu, _k = _run(text, [dt, dt], dt, rng, small=small)
        assert_close(cpu, ref, 1 if op == "pow" else 0, f"{op} {dt}")   # libm pow in f64, rounded once


FLOAT_UNARY = sorted(UNARY)
ULPS = {"exp": 1, "exp2": 1, "log": 1, "log2": 1, "sin": 1, "cos": 1, "erf": 1, "tanh": 1, "asin": 1, "acos": 1,
        "atan": 1, "tan": 1, "sinh": 1, "cosh": 1, "log1p": 1, "expm1": 1, "log10": 1}


@pytest.mark.parametrize("op", FLOAT_UNARY)
@pytest.mark.parametrize("dt", FLOATS)
def test_unary_float(op, dt):
    if op == "not":
        pytest.skip("bitwise not is integer-only")
    rng = np.random.default_rng(1)
    text = _block_io([dt], dt, lambda t: [f"%r = {op} %x0 : {t.format(dt)}"])
    k = ir_kernel(text)
    x = values(dt, B, rng, small=True)
    if op in ("log", "log2", "sqrt", "rsqrt"):
        x = np.abs(x).astype(x.dtype)
    out = np.zeros(B, NP[dt])
    ref, cpu = run_both(k, [x, out, B])
    # 16-bit floats round the f32 result once: equal unless the f32 results straddle a rounding point
    assert_close(cpu[-1], ref[-1], ULPS.get(op, 0), f"{op} {dt}")


@pytest.mark.parametrize("op", ["neg", "not", "abs"])
@pytest.mark.parametrize("dt", INTS + ("i1",))
def test_unary_int(op, dt):
    if dt == "i1" and op == "neg":
        pytest.skip("numpy has no negative for bool")
    rng = np.random.default_rng(2)
    text = _block_io([dt], dt, lambda t: [f"%r = {op} %x0 : {t.format(dt)}"])
    ref, cpu, _k = _run(text, [dt], dt, rng)
    assert_close(cpu, ref, 0, f"{op} {dt}")


@pytest.mark.parametrize("pred", ["lt", "le", "gt", "ge", "eq", "ne"])
@pytest.mark.parametrize("dt", FLOATS + INTS + ("i1",))
def test_cmp(pred, dt):
    rng = np.random.default_rng(3)
    text = _block_io([dt, dt], "i1", lambda t: [f"%r = cmp %x0, %x1 {{pred = \"{pred}\"}} : {t.format('i1')}"])
    k = ir_kernel(text)
    a, b = values(dt, B, rng, small=True), values(dt, B, rng, small=True)
    b[:5] = a[:5]                                  # some equal lanes
    if dt in FLOATS:
        a[6] = np.nan
    out = np.zeros(B, np.bool_)
    ref, cpu = run_both(k, [a, b, out, N])
    assert_close(cpu[-1], ref[-1], 0, f"cmp {pred} {dt}")


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_select_and_fma(dt):
    rng = np.random.default_rng(4)
    text = _block_io([dt, dt, dt, "i1"], dt, lambda t: [
        f"%f = fma %x0, %x1, %x2 : {t.format(dt)}",
        f"%r = select %x3, %f, %x0 : {t.format(dt)}"])
    k = ir_kernel(text)
    ins = [values(dt, B, rng, small=True) for _ in range(3)] + [values("i1", B, rng)]
    out = np.zeros(B, NP[dt])
    ref, cpu = run_both(k, ins + [out, N])
    assert_close(cpu[-1], ref[-1], 0, f"fma/select {dt}")


ALL = FLOATS + INTS + ("i1",)


@pytest.mark.parametrize("src", ALL)
@pytest.mark.parametrize("dst", ALL)
def test_cast(src, dst):
    if src == dst:
        pytest.skip("no-op")
    rng = np.random.default_rng(5)
    text = _block_io([src], dst, lambda t: [f"%r = cast %x0 : {t.format(dst)}"])
    k = ir_kernel(text)
    x = values(src, B, rng, small=(src in FLOATS or dst in FLOATS))
    if src in FLOATS and dst in INTS:
        x = np.abs(x).astype(x.dtype) if dst.startswith("u") else x   # in range: out-of-range is undefined
        x[-1] = 1.75                                                  # truncation toward zero
        x[-2] = -1.75 if not dst.startswith("u") else 2.5
    out = np.zeros(B, NP[dst])
    ref, cpu = run_both(k, [x, out, N])
    assert_close(cpu[-1], ref[-1], 0, f"cast {src}->{dst}")


BITCASTS = [(a, b) for a in ALL for b in ALL if a != b and a != "i1" and b != "i1"
            and np.dtype(NP[a]).itemsize == np.dtype(NP[b]).itemsize]


@pytest.mark.parametrize("src,dst", BITCASTS)
def test_bitcast(src, dst):
    rng = np.random.default_rng(6)
    text = _block_io([src], dst, lambda t: [f"%r = bitcast %x0 : {t.format(dst)}"])
    k = ir_kernel(text)
    x = values(src, B, rng)
    out = np.zeros(B, NP[dst])
    ref, cpu = run_both(k, [x, out, N])
    np.testing.assert_array_equal(cpu[-1].view(np.uint8), ref[-1].view(np.uint8))


def test_every_op_has_a_lowering():
    assert missing_lowerings() == []
    assert set(OPS) >= {"load", "store", "dot", "reduce", "scan"}


def test_missing_lowering_is_detected(monkeypatch):
    from tritonpu.cpu import lower
    monkeypatch.delitem(lower.LOWER, "fma")
    assert missing_lowerings() == ["fma"]
