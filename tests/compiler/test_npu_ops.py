"""Every elementwise / compare / select / cast / bitcast / reduce / scan op of the op table on the
NPU backend (compiler + virtual NPU) against the reference evaluator, over every dtype it accepts:
as blocks (UB tiles, 16 lanes with a masked tail of 13), as rank-0 scalars (scalar registers), and
as 2-D blocks with broadcast operands (row / column vectors, splats: fused, strided operands).

Tolerances: integers and i1 exactly; floats exactly (0 ulps) for everything except
  * exp/exp2/log/log2/sin/cos/erf/sqrt/rsqrt: ``ULPS`` below — the reference evaluates them with
    numpy in the operand's precision (f32 for f16/bf16/f32) while the scalar unit evaluates them
    in float64 and rounds once, so the two libm results may differ in the last place;
"""
from __future__ import annotations

import numpy as np
import pytest
from npu_helpers_ops import ALL, FLOATS, INTS, NP, assert_close, ir_kernel, run_ref_npu, values

import tritonpu
import tritonpu.language as tl
from tritonpu.ir.ops import BINARY, FLOAT_ONLY_BINARY, INT_ONLY_BINARY as INT_ONLY, UNARY

N, B = 13, 16
ULPS = {"exp": 1, "exp2": 1, "log": 1, "log2": 1, "sin": 1, "cos": 1, "erf": 1, "sqrt": 0, "rsqrt": 1}


# ---------------------------------------------------------------------------------------------
# IR builders
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


WRAP = {"block": _block_io, "scalar": _scalar_io}
RANKS = ["block", "scalar"]


def _check(text, ins, out_dt, max_ulps=0, what="", n=B):
    k = ir_kernel(text)
    out = np.zeros(n, NP[out_dt])
    ref, npu = run_ref_npu(k, list(ins) + [out, N])
    if text.count("load %a0 :"):          # scalar kernel: only element 0 is meaningful
        ref[-1], npu[-1] = ref[-1][:1], npu[-1][:1]
    assert_close(npu[-1], ref[-1], max_ulps, what)


# ---------------------------------------------------------------------------------------------
# binary
def _binary_dtypes(op):
    if op in ("and", "or", "xor"):
        return INTS + ("i1",)
    if op in ("shl", "shr"):
        return INTS
    if op in FLOAT_ONLY_BINARY:
        return FLOATS
    return FLOATS + INTS + ("i1",)


BIN_CASES = [(op, dt) for op in BINARY for dt in _binary_dtypes(op) if not (dt == "i1" and op in ("div", "rem"))]


def _bin_inputs(op, dt, rng):
    a, b = values(dt, B, rng), values(dt, B, rng)
    if op in ("shl", "shr"):          # shifts by the width or more (or negative) are undefined
        bits = np.dtype(NP[dt]).itemsize * 8
        b = (np.abs(b.astype(np.int64)) % bits).astype(NP[dt])
    if dt in FLOATS and op in ("add", "sub", "maximum", "minimum"):
        a[9], b[10] = np.nan, np.nan
    return a, b


@pytest.mark.parametrize("op,dt", BIN_CASES)
@pytest.mark.parametrize("rank", RANKS)
def test_binary(op, dt, rank):
    rng = np.random.default_rng(abs(hash((op, dt))) % 2**32)
    text = WRAP[rank]([dt, dt], dt, lambda t: [f"%r = {op} %x0, %x1 : {t.format(dt)}"])
    a, b = _bin_inputs(op, dt, rng)
    for i in range(B if rank == "scalar" else 1):     # scalar kernels read element 0: rotate the inputs
        _check(text, [np.roll(a, -i), np.roll(b, -i)], dt, 0, f"{op} {dt} {rank} round {i}")


@pytest.mark.parametrize("op,dt", [("add", "f32"), ("sub", "i32"), ("mul", "f16"), ("div", "f32"),
                                   ("div", "i32"), ("rem", "i64"), ("shl", "u16"), ("shr", "i8"),
                                   ("maximum", "f32"), ("minimum", "bf16"), ("sub", "u8")])
@pytest.mark.parametrize("side", ["lhs", "rhs"])
def test_binary_with_scalar_operand(op, dt, side):
    """A block op with one operand a register scalar (the v*s / vrsubs / vrdivs forms)."""
    rng = np.random.default_rng(7)
    args = f"%a0: ptr<{dt}>, %s: {dt}, %o: ptr<{dt}>, %n: i32"
    operands = "%x0, %s" if side == "rhs" else "%s, %x0"
    text = "\n".join([
        f"func @k({args}) {{",
        f"  %offs = arange {{end = {B}, start = 0}} : tensor<{B}xi32>",
        f"  %ns = splat %n : tensor<{B}xi32>",
        f"  %m = cmp %offs, %ns {{pred = \"lt\"}} : tensor<{B}xi1>",
        f"  %p0 = splat %a0 : tensor<{B}xptr<{dt}>>",
        f"  %q0 = addptr %p0, %offs : tensor<{B}xptr<{dt}>>",
        f"  %x0 = load %q0, %m : tensor<{B}x{dt}>",
        f"  %sb = splat %s : tensor<{B}x{dt}>",
        f"  %r = {op} {operands.replace('%s', '%sb')} : tensor<{B}x{dt}>",
        f"  %po = splat %o : tensor<{B}xptr<{dt}>>",
        f"  %qo = addptr %po, %offs : tensor<{B}xptr<{dt}>>",
        "  store %qo, %r, %m", "  return", "}"])
    k = ir_kernel(text)
    a = values(dt, B, rng, small=True)
    s = {"shl": 3, "shr": 2}.get(op, 3)
    if op in ("shl", "shr") and side == "lhs":
        a = (np.abs(a.astype(np.int64)) % 8).astype(NP[dt])
        s = 77
    s = NP[dt](s) if dt not in FLOATS else float(-2.5)
    out = np.zeros(B, NP[dt])
    ref, npu = run_ref_npu(k, [a, s, out, N])
    assert_close(npu[-1], ref[-1], 0, f"{op} {dt} scalar {side}")


# ---------------------------------------------------------------------------------------------
# unary
@pytest.mark.parametrize("op", sorted(set(UNARY) - {"not"}))
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("rank", RANKS)
def test_unary_float(op, dt, rank):
    rng = np.random.default_rng(1)
    text = WRAP[rank]([dt], dt, lambda t: [f"%r = {op} %x0 : {t.format(dt)}"])
    x = values(dt, B, rng, small=True)
    if op in ("log", "log2", "sqrt", "rsqrt"):
        x = np.abs(x).astype(x.dtype)
    for i in range(B if rank == "scalar" else 1):
        _check(text, [np.roll(x, -i)], dt, ULPS.get(op, 0), f"{op} {dt} {rank} lane {i}")


@pytest.mark.parametrize("op", ["neg", "not", "abs"])
@pytest.mark.parametrize("dt", INTS + ("i1",))
@pytest.mark.parametrize("rank", RANKS)
def test_unary_int(op, dt, rank):
    if dt == "i1" and op == "neg":
        pytest.skip("numpy has no negative for bool")
    rng = np.random.default_rng(2)
    text = WRAP[rank]([dt], dt, lambda t: [f"%r = {op} %x0 : {t.format(dt)}"])
    x = values(dt, B, rng)
    for i in range(8 if rank == "scalar" else 1):
        _check(text, [np.roll(x, -i)], dt, 0, f"{op} {dt} {rank} lane {i}")


# ---------------------------------------------------------------------------------------------
# compare / select / fma
@pytest.mark.parametrize("pred", ["lt", "le", "gt", "ge", "eq", "ne"])
@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("rank", RANKS)
def test_cmp(pred, dt, rank):
    rng = np.random.default_rng(3)
    text = WRAP[rank]([dt, dt], "i1", lambda t: [f"%r = cmp %x0, %x1 {{pred = \"{pred}\"}} : {t.format('i1')}"])
    a, b = values(dt, B, rng, small=True), values(dt, B, rng, small=True)
    b[:5] = a[:5]                                  # some equal lanes
    if dt in FLOATS:
        a[6] = np.nan
        b[7] = np.nan
    for i in range(9 if rank == "scalar" else 1):
        _check(text, [np.roll(a, -i), np.roll(b, -i)], "i1", 0, f"cmp {pred} {dt} {rank} lane {i}")


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("rank", RANKS)
def test_select(dt, rank):
    rng = np.random.default_rng(4)
    text = WRAP[rank]([dt, dt, "i1"], dt, lambda t: [f"%r = select %x2, %x0, %x1 : {t.format(dt)}"])
    a, b, c = values(dt, B, rng), values(dt, B, rng), values("i1", B, rng)
    c[:2] = [True, False]
    for i in range(2 if rank == "scalar" else 1):
        _check(text, [np.roll(a, -i), np.roll(b, -i), np.roll(c, -i)], dt, 0, f"select {dt} {rank}")


@pytest.mark.parametrize("dt", FLOATS + INTS)
@pytest.mark.parametrize("rank", RANKS)
def test_fma(dt, rank):
    """Exactly the reference's bits: floats rounded once (vfma / ffma), with cancellation too."""
    rng = np.random.default_rng(4)
    text = WRAP[rank]([dt, dt, dt], dt, lambda t: [f"%r = fma %x0, %x1, %x2 : {t.format(dt)}"])
    ins = [values(dt, B, rng, small=True) for _ in range(3)]
    for i in range(4 if rank == "scalar" else 1):
        _check(text, [np.roll(x, -i) for x in ins], dt, 0, f"fma {dt} {rank}")


# ---------------------------------------------------------------------------------------------
# casts
def _cast_inputs(src, dst, rng):
    x = values(src, B, rng, small=(src in FLOATS or dst in FLOATS))
    if src in FLOATS and dst in INTS:
        x = np.abs(x).astype(x.dtype) if dst.startswith("u") else x   # in range: out-of-range is undefined
        if dst in ("i8", "u8"):
            x = np.clip(x, -100, 100).astype(x.dtype)
        x[-1] = 1.75                                                  # truncation toward zero
        x[-2] = -1.75 if not dst.startswith("u") else 2.5
        x[1] = -0.75 if not dst.startswith("u") else 0.75
    return x


@pytest.mark.parametrize("src", ALL)
@pytest.mark.parametrize("dst", ALL)
@pytest.mark.parametrize("rank", RANKS)
def test_cast(src, dst, rank):
    if src == dst:
        pytest.skip("no-op")
    rng = np.random.default_rng(5)
    text = WRAP[rank]([src], dst, lambda t: [f"%r = cast %x0 : {t.format(dst)}"])
    x = _cast_inputs(src, dst, rng)
    for i in range(B if rank == "scalar" else 1):
        _check(text, [np.roll(x, -i)], dst, 0, f"cast {src}->{dst} {rank} lane {i}")


BITCASTS = [(a, b) for a in ALL for b in ALL if a != b and a != "i1" and b != "i1"
            and np.dtype(NP[a]).itemsize == np.dtype(NP[b]).itemsize]


@pytest.mark.parametrize("src,dst", BITCASTS)
@pytest.mark.parametrize("rank", RANKS)
def test_bitcast(src, dst, rank):
    rng = np.random.default_rng(6)
    text = WRAP[rank]([src], dst, lambda t: [f"%r = bitcast %x0 : {t.format(dst)}"])
    x = values(src, B, rng)
    k = ir_kernel(text)
    for i in range(4 if rank == "scalar" else 1):
        out = np.zeros(B, NP[dst])
        ref, npu = run_ref_npu(k, [np.roll(x, -i), out, N])
        n = 1 if rank == "scalar" else B
        np.testing.assert_array_equal(npu[-1][:n].view(np.uint8), ref[-1][:n].view(np.uint8))


@pytest.mark.parametrize("dt", FLOATS)
def test_scalar_erf_against_math_erf(dt):
    """Rank-0 erf on the NPU (vector unit over a one-element tile) against math.erf of the f32 /
    f64 value, rounded once: the reference evaluator cannot run rank-0 erf (reported)."""
    import math
    text = _scalar_io([dt], dt, lambda t: [f"%r = erf %x0 : {t.format(dt)}"])
    k = ir_kernel(text)
    x = values(dt, B, np.random.default_rng(1), small=True)
    for v in x:
        out = np.zeros(1, NP[dt])
        from tritonpu.codegen.pipeline import launch_npu
        launch_npu(k, [np.array([v]), out, 1], (1, 1, 1), {})
        cdt = np.float64 if dt == "f64" else np.float32
        want = np.array([cdt(math.erf(cdt(v)))]).astype(NP[dt])
        assert_close(out, want, 1, f"erf {dt} {v}")


# ---------------------------------------------------------------------------------------------
# 2-D blocks: broadcast operands (row / column vectors, splats), reductions and scans
def _prologue_2d(R, C, dt, out_dt):
    """Args (%a: RxC, %b: vector, %s: scalar, %o, %nr, %nc); defines %off (RxC offsets), %m (mask
    r < nr & c < nc), %r0/%c0 (aranges) and their masks %mr0/%mc0."""
    T = f"tensor<{R}x{C}x{{}}>"
    return [
        f"func @k(%a: ptr<{dt}>, %b: ptr<{dt}>, %s: {dt}, %o: ptr<{out_dt}>, %nr: i32, %nc: i32) {{",
        f"  %r0 = arange {{end = {R}, start = 0}} : tensor<{R}xi32>",
        f"  %r = expand_dims %r0 {{axis = 1}} : tensor<{R}x1xi32>",
        f"  %c0 = arange {{end = {C}, start = 0}} : tensor<{C}xi32>",
        f"  %c = expand_dims %c0 {{axis = 0}} : tensor<1x{C}xi32>",
        f"  %Cs = constant {{value = {C}}} : i32",
        f"  %Cb = splat %Cs : tensor<{R}x1xi32>",
        f"  %ro = mul %r, %Cb : tensor<{R}x1xi32>",
        f"  %rob = broadcast %ro : {T.format('i32')}",
        f"  %cb = broadcast %c : {T.format('i32')}",
        f"  %off = add %rob, %cb : {T.format('i32')}",
        f"  %nrs = splat %nr : tensor<{R}x1xi32>",
        f"  %mr = cmp %r, %nrs {{pred = \"lt\"}} : tensor<{R}x1xi1>",
        f"  %ncs = splat %nc : tensor<1x{C}xi32>",
        f"  %mc = cmp %c, %ncs {{pred = \"lt\"}} : tensor<1x{C}xi1>",
        f"  %mrb = broadcast %mr : {T.format('i1')}",
        f"  %mcb = broadcast %mc : {T.format('i1')}",
        f"  %m = and %mrb, %mcb : {T.format('i1')}",
        f"  %nr1 = splat %nr : tensor<{R}xi32>",
        f"  %mr0 = cmp %r0, %nr1 {{pred = \"lt\"}} : tensor<{R}xi1>",
        f"  %nc1 = splat %nc : tensor<{C}xi32>",
        f"  %mc0 = cmp %c0, %nc1 {{pred = \"lt\"}} : tensor<{C}xi1>",
    ]


def _operand_2d(kind, name, R, C, dt, other=None):
    """IR lines defining %{name}: RxC of dt from operand kind full (a), row / col (vector b), splat (s)."""
    T = f"tensor<{R}x{C}x{dt}>"
    if kind == "full":
        lines = [f"  %pa_{name} = splat %a : tensor<{R}x{C}xptr<{dt}>>",
                 f"  %qa_{name} = addptr %pa_{name}, %off : tensor<{R}x{C}xptr<{dt}>>"]
        if other is None:
            return lines + [f"  %{name} = load %qa_{name}, %m : {T}"]
        return lines + [f"  %ocst_{name} = constant {{value = {other}}} : {dt}",
                        f"  %oth_{name} = splat %ocst_{name} : {T}",
                        f"  %{name} = load %qa_{name}, %m, %oth_{name} : {T}"]
    if kind == "splat":
        return [f"  %{name} = splat %s : {T}"]
    n, idx, mask, ax, sh = (C, "%c0", "%mc0", 0, f"1x{C}") if kind == "row" else (R, "%r0", "%mr0", 1, f"{R}x1")
    return [f"  %pb_{name} = splat %b : tensor<{n}xptr<{dt}>>",
            f"  %qb_{name} = addptr %pb_{name}, {idx} : tensor<{n}xptr<{dt}>>",
            f"  %v_{name} = load %qb_{name}, {mask} : tensor<{n}x{dt}>",
            f"  %e_{name} = expand_dims %v_{name} {{axis = {ax}}} : tensor<{sh}x{dt}>",
            f"  %{name} = broadcast %e_{name} : {T}"]


def _store_2d(R, C, out_dt):
    return [f"  %po = splat %o : tensor<{R}x{C}xptr<{out_dt}>>",
            f"  %qo = addptr %po, %off : tensor<{R}x{C}xptr<{out_dt}>>",
            "  store %qo, %res, %m", "  return", "}"]


def _inputs_2d(dt, R, C, rng, small=False):
    a = values(dt, R * C, rng, small).reshape(R, C)
    b = values(dt, R * C, rng, small)[::-1].copy()
    s = values(dt, 9, rng, small)[-1]
    return a, b, s


SHAPES = [(4, 16, 3, 13), (8, 8, 8, 5)]
BCAST = [("full", "row"), ("row", "full"), ("col", "full"), ("full", "col"), ("full", "splat"),
         ("splat", "full"), ("row", "col"), ("col", "splat")]
BCAST_OPS = [(op, dt) for op, dt in BIN_CASES]


@pytest.mark.parametrize("op,dt", BCAST_OPS)
@pytest.mark.parametrize("kinds", BCAST, ids=lambda k: "-".join(k))
def test_binary_2d_broadcast(op, dt, kinds):
    R, C, nr, nc = SHAPES[hash(kinds) % 2]
    rng = np.random.default_rng(11)
    lines = _prologue_2d(R, C, dt, dt)
    lines += _operand_2d(kinds[0], "x", R, C, dt) + _operand_2d(kinds[1], "y", R, C, dt)
    lines += [f"  %res = {op} %x, %y : tensor<{R}x{C}x{dt}>"]
    a, b, s = _inputs_2d(dt, R, C, rng, small=op in ("shl", "shr"))
    if op in ("shl", "shr"):
        bits = np.dtype(NP[dt]).itemsize * 8
        a, b = [(np.abs(v.astype(np.int64)) % bits).astype(NP[dt]) for v in (a, b)]
        s = NP[dt](3)
    k = ir_kernel("\n".join(lines + _store_2d(R, C, dt)))
    out = np.zeros((R, C), NP[dt])
    ref, npu = run_ref_npu(k, [a, b, s, out, nr, nc])
    assert_close(npu[-1], ref[-1], 0, f"{op} {dt} {kinds}")


@pytest.mark.parametrize("dt", ["f32", "bf16", "i16", "u32"])
@pytest.mark.parametrize("kinds", [("full", "row", "col"), ("col", "splat", "row"), ("row", "full", "splat"),
                                   ("full", "col", "full")], ids=lambda k: "-".join(k))
def test_chain_2d_broadcast(dt, kinds):
    """A fused chain over broadcast operands: cmp, select, neg/abs, cast, a unary and an fma."""
    R, C, nr, nc = 4, 16, 3, 13
    rng = np.random.default_rng(12)
    T = f"tensor<{R}x{C}x{{}}>"
    lines = _prologue_2d(R, C, dt, "f32")
    for k_, nm in zip(kinds, ("x", "y", "z")):
        lines += _operand_2d(k_, nm, R, C, dt)
    lines += [f"  %lt = cmp %x, %y {{pred = \"lt\"}} : {T.format('i1')}",
              f"  %mx = select %lt, %y, %z : {T.format(dt)}",
              f"  %ab = abs %mx : {T.format(dt)}",
              f"  %f = cast %ab : {T.format('f32')}",
              f"  %g = sqrt %f : {T.format('f32')}",
              f"  %zf = cast %z : {T.format('f32')}",
              f"  %za = abs %zf : {T.format('f32')}",
              f"  %res = fma %g, %za, %f : {T.format('f32')}"]
    a, b, s = _inputs_2d(dt, R, C, rng, small=True)
    k = ir_kernel("\n".join(lines + _store_2d(R, C, "f32")))
    out = np.zeros((R, C), np.float32)
    ref, npu = run_ref_npu(k, [a, b, s, out, nr, nc])
    # fma of non-negative operands: at most 1 ulp (vmul + vadd round twice; no cancellation)
    assert_close(npu[-1], ref[-1], 1, f"chain {dt} {kinds}")


@pytest.mark.parametrize("op", ["exp", "neg", "abs", "floor", "sin"])
@pytest.mark.parametrize("kind", ["row", "col", "splat"])
def test_unary_2d_broadcast(op, kind):
    R, C, nr, nc = 4, 16, 4, 11
    rng = np.random.default_rng(13)
    lines = _prologue_2d(R, C, "f32", "f32") + _operand_2d(kind, "x", R, C, "f32")
    lines += [f"  %res = {op} %x : tensor<{R}x{C}xf32>"]
    a, b, s = _inputs_2d("f32", R, C, rng, small=True)
    k = ir_kernel("\n".join(lines + _store_2d(R, C, "f32")))
    out = np.zeros((R, C), np.float32)
    ref, npu = run_ref_npu(k, [a, b, s, out, nr, nc])
    assert_close(npu[-1], ref[-1], ULPS.get(op, 0), f"{op} {kind}")


def _sum_exact(x):
    """Float test data whose sums are exact in f32 whatever the order (multiples of 1/8, small)."""
    if x.dtype.kind == "f" or x.dtype == NP["bf16"]:
        return (np.round(x.astype(np.float32) * 8) / 8).astype(x.dtype)
    return x


REDUCE_DTS = FLOATS + INTS


@pytest.mark.parametrize("kind", ["sum", "max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("dt", REDUCE_DTS)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_reduce_2d(kind, dt, axis, shape):
    R, C, nr, nc = shape
    rng = np.random.default_rng(14)
    out_dt = "i32" if kind.startswith("arg") else dt
    n = C if axis == 0 else R
    lines = _prologue_2d(R, C, dt, out_dt) + _operand_2d("full", "x", R, C, dt, other=1 if dt in INTS else -1.5)
    lines += [f"  %res = reduce %x {{axis = {axis}, op = \"{kind}\"}} : tensor<{n}x{out_dt}>",
              f"  %po = splat %o : tensor<{n}xptr<{out_dt}>>",
              f"  %qo = addptr %po, {'%c0' if axis == 0 else '%r0'} : tensor<{n}xptr<{out_dt}>>",
              f"  store %qo, %res, {'%mc0' if axis == 0 else '%mr0'}", "  return", "}"]
    a, b, s = _inputs_2d(dt, R, C, rng, small=(dt in FLOATS))
    a = _sum_exact(a)
    a.ravel()[5] = a.ravel()[2]                           # ties: arg* take the first
    if dt in FLOATS and kind in ("max", "min"):
        a[0, 1] = np.nan                                   # maxnum/minnum skip NaN
    k = ir_kernel("\n".join(lines))
    out = np.zeros(n, NP[out_dt])
    ref, npu = run_ref_npu(k, [a, b, s, out, nr, nc])
    assert_close(npu[-1], ref[-1], 0, f"reduce {kind} {dt} axis {axis}")


@pytest.mark.parametrize("kind", ["sum", "max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("dt", REDUCE_DTS)
def test_reduce_1d(kind, dt):
    """A 16-lane block with a masked tail (other = 0) reduced to a rank-0 scalar."""
    rng = np.random.default_rng(15)
    out_dt = "i32" if kind.startswith("arg") else dt
    lines = [f"func @k(%a0: ptr<{dt}>, %o: ptr<{out_dt}>, %n: i32) {{",
             f"  %offs = arange {{end = {B}, start = 0}} : tensor<{B}xi32>",
             f"  %ns = splat %n : tensor<{B}xi32>",
             f"  %m = cmp %offs, %ns {{pred = \"lt\"}} : tensor<{B}xi1>",
             f"  %p0 = splat %a0 : tensor<{B}xptr<{dt}>>",
             f"  %q0 = addptr %p0, %offs : tensor<{B}xptr<{dt}>>",
             f"  %zc = constant {{value = 0}} : {dt}",
             f"  %z = splat %zc : tensor<{B}x{dt}>",
             f"  %x0 = load %q0, %m, %z : tensor<{B}x{dt}>",
             f"  %r = reduce %x0 {{axis = 0, op = \"{kind}\"}} : {out_dt}",
             "  store %o, %r", "  return", "}"]
    k = ir_kernel("\n".join(lines))
    for i in range(3):
        x = _sum_exact(values(dt, B, rng, small=(dt in FLOATS)))
        if i == 1:
            x = np.roll(x, 5)
        out = np.zeros(1, NP[out_dt])
        ref, npu = run_ref_npu(k, [x, out, N])
        assert_close(npu[-1], ref[-1], 0, f"reduce {kind} {dt} round {i}")


@pytest.mark.parametrize("dt", ["i1"])
def test_reduce_bool_is_rejected(dt):
    from tritonpu.errors import CompilationError
    lines = _prologue_2d(4, 16, "i1", "i1") + _operand_2d("full", "x", 4, 16, "i1")
    lines += ["  %res = reduce %x {axis = 1, op = \"max\"} : tensor<4xi1>",
              "  %po = splat %o : tensor<4xptr<i1>>", "  %qo = addptr %po, %r0 : tensor<4xptr<i1>>",
              "  store %qo, %res", "  return", "}"]
    k = ir_kernel("\n".join(lines))
    with pytest.raises(CompilationError, match="reductions of i1 blocks are not supported"):
        run_ref_npu(k, [np.zeros((4, 16), np.bool_), np.zeros(64, np.bool_), True, np.zeros(4, np.bool_), 4, 16])


@pytest.mark.parametrize("dt", REDUCE_DTS)
@pytest.mark.parametrize("axis", [0, 1, None], ids=["axis0", "axis1", "1d"])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan(dt, axis, reverse):
    """Inclusive cumsum (reverse: suffix sums); float data are multiples of 1/8 whose partial sums
    are exact, so any summation order gives the reference's bits."""
    R, C, nr, nc = 4, 16, 3, 13
    rng = np.random.default_rng(16)
    rev = ", reverse = true" if reverse else ""
    if axis is None:
        lines = [f"func @k(%a0: ptr<{dt}>, %o: ptr<{dt}>, %n: i32) {{",
                 f"  %offs = arange {{end = {B}, start = 0}} : tensor<{B}xi32>",
                 f"  %ns = splat %n : tensor<{B}xi32>",
                 f"  %m = cmp %offs, %ns {{pred = \"lt\"}} : tensor<{B}xi1>",
                 f"  %p0 = splat %a0 : tensor<{B}xptr<{dt}>>",
                 f"  %q0 = addptr %p0, %offs : tensor<{B}xptr<{dt}>>",
                 f"  %zc = constant {{value = 0}} : {dt}",
                 f"  %z = splat %zc : tensor<{B}x{dt}>",
                 f"  %x0 = load %q0, %m, %z : tensor<{B}x{dt}>",
                 f"  %r = scan %x0 {{axis = 0, op = \"sum\"{rev}}} : tensor<{B}x{dt}>",
                 f"  %po = splat %o : tensor<{B}xptr<{dt}>>",
                 f"  %qo = addptr %po, %offs : tensor<{B}xptr<{dt}>>",
                 "  store %qo, %r, %m", "  return", "}"]
        args = [_sum_exact(values(dt, B, rng, small=(dt in FLOATS))), np.zeros(B, NP[dt]), N]
    else:
        lines = _prologue_2d(R, C, dt, dt) + _operand_2d("full", "x", R, C, dt, other=0)
        lines += [f"  %res = scan %x {{axis = {axis}, op = \"sum\"{rev}}} : tensor<{R}x{C}x{dt}>"]
        lines += _store_2d(R, C, dt)
        a, b, s = _inputs_2d(dt, R, C, rng, small=(dt in FLOATS))
        args = [_sum_exact(a), b, s, np.zeros((R, C), NP[dt]), nr, nc]
    k = ir_kernel("\n".join(lines))
    ref, npu = run_ref_npu(k, args)
    assert_close(npu[-1], ref[-1], 0, f"cumsum {dt} axis {axis}")


def test_load_other_block_constant():
    """A masked load whose ``other`` is a block constant (what canonicalize makes of splat(const))."""
    text = "\n".join([
        "func @k(%a0: ptr<f32>, %o: ptr<f32>, %n: i32) {",
        f"  %offs = arange {{end = {B}, start = 0}} : tensor<{B}xi32>",
        f"  %ns = splat %n : tensor<{B}xi32>",
        f"  %m = cmp %offs, %ns {{pred = \"lt\"}} : tensor<{B}xi1>",
        f"  %p0 = splat %a0 : tensor<{B}xptr<f32>>",
        f"  %q0 = addptr %p0, %offs : tensor<{B}xptr<f32>>",
        f"  %z = constant {{value = -2.0}} : tensor<{B}xf32>",
        f"  %x0 = load %q0, %m, %z : tensor<{B}xf32>",
        f"  %po = splat %o : tensor<{B}xptr<f32>>",
        f"  %qo = addptr %po, %offs : tensor<{B}xptr<f32>>",
        "  store %qo, %x0", "  return", "}"])
    k = ir_kernel(text)
    x = np.arange(B, dtype=np.float32)
    ref, npu = run_ref_npu(k, [x, np.zeros(B, np.float32), N])
    assert_close(npu[-1], ref[-1], 0, "load other=constant block")


# ---------------------------------------------------------------------------------------------
# @jit kernels launched with backend="npu", against the same launch on backend="ref"
def _both(kernel, grid, arrays, *scalars, **meta):
    """Launch on ref and on npu with copies of ``arrays``; returns (ref arrays, npu arrays)."""
    ref = [a.copy() for a in arrays]
    npu = [a.copy() for a in arrays]
    kernel[grid](*ref, *scalars, backend="ref", **meta)
    kernel[grid](*npu, *scalars, backend="npu", **meta)
    return ref, npu


@tritonpu.jit
def _reduce2d_kernel(x_ptr, o0_ptr, o1_ptr, oall_ptr, R, C, OP: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr):
    r = tl.arange(0, BR)
    c = tl.arange(0, BC)
    m = (r[:, None] < R) & (c[None, :] < C)
    x = tl.load(x_ptr + r[:, None] * C + c[None, :], mask=m, other=0)
    if OP == "sum":
        a0, a1 = tl.sum(x, axis=0), tl.sum(x, axis=1)
        aa = tl.sum(tl.sum(x, axis=1), axis=0)
    elif OP == "max":
        a0, a1 = tl.max(x, axis=0), tl.max(x, axis=1)
        aa = tl.max(tl.max(x, axis=0), axis=0)
    elif OP == "min":
        a0, a1 = tl.min(x, axis=0), tl.min(x, axis=1)
        aa = tl.min(tl.min(x, axis=1), axis=0)
    elif OP == "argmax":
        a0, a1 = tl.argmax(x, axis=0), tl.argmax(x, axis=1)
        aa = tl.argmax(tl.max(x, axis=1), axis=0)
    else:
        a0, a1 = tl.argmin(x, axis=0), tl.argmin(x, axis=1)
        aa = tl.argmin(tl.min(x, axis=0), axis=0)
    tl.store(o0_ptr + c, a0, mask=c < C)
    tl.store(o1_ptr + r, a1, mask=r < R)
    tl.store(oall_ptr, aa)


@pytest.mark.parametrize("op", ["sum", "max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int8, np.uint16, np.int64])
@pytest.mark.parametrize("shape", [(5, 13, 8, 16), (16, 4, 16, 4), (1, 7, 2, 8)], ids=str)
def test_jit_reductions(op, dtype, shape):
    R, C, BR, BC = shape
    rng = np.random.default_rng(21)
    if np.dtype(dtype).kind == "f":
        x = (rng.integers(-64, 64, R * C) / 8).astype(dtype)        # exact sums in any order
    else:
        x = rng.integers(-50 if np.dtype(dtype).kind == "i" else 0, 50, R * C).astype(dtype)
    x[3 % x.size] = x[0]                                           # ties: arg* take the first
    odt = np.int32 if op.startswith("arg") else (np.float32 if dtype == np.float16 and op == "sum" else dtype)
    outs = [np.zeros(BC, odt), np.zeros(BR, odt), np.zeros(1, odt)]
    ref, npu = _both(_reduce2d_kernel, (1,), [x] + outs, R, C, OP=op, BR=BR, BC=BC)
    for i, (g, w) in enumerate(zip(npu, ref)):
        assert_close(g, w, 0, f"{op} {np.dtype(dtype)} output {i}")


@tritonpu.jit
def _reduce1d_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-1000.0)
    tl.store(o_ptr + 0, tl.sum(tl.where(offs < n, x, 0.0), axis=0))
    tl.store(o_ptr + 1, tl.max(x, axis=0))
    tl.store(o_ptr + 2, tl.min(tl.where(offs < n, x, 1000.0), axis=0))
    tl.store(o_ptr + 3, tl.argmax(x, axis=0).to(tl.float32))
    tl.store(o_ptr + 4, tl.argmin(tl.where(offs < n, x, 1000.0), axis=0).to(tl.float32))


@pytest.mark.parametrize("n", [1, 13, 64])
def test_jit_reductions_1d(n):
    x = (np.random.default_rng(n).integers(-64, 64, 64) / 4).astype(np.float32)
    ref, npu = _both(_reduce1d_kernel, (1,), [x, np.zeros(5, np.float32)], n, BLOCK=64)
    assert_close(npu[1], ref[1], 0, "1-D reductions")


@tritonpu.jit
def _cumsum_kernel(x_ptr, o_ptr, o0_ptr, o1_ptr, n, BLOCK: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(o_ptr + offs, tl.cumsum(x, axis=0), mask=offs < n)
    r = tl.arange(0, BR)
    c = tl.arange(0, BC)
    y = tl.load(x_ptr + r[:, None] * BC + c[None, :])
    tl.store(o0_ptr + r[:, None] * BC + c[None, :], tl.cumsum(y, axis=0))
    tl.store(o1_ptr + r[:, None] * BC + c[None, :], tl.cumsum(y, axis=1))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int16, np.uint8])
def test_jit_cumsum(dtype):
    rng = np.random.default_rng(22)
    x = (rng.integers(0, 40, 64) / (4 if np.dtype(dtype).kind == "f" else 1)).astype(dtype)
    outs = [np.zeros(64, dtype) for _ in range(3)]
    ref, npu = _both(_cumsum_kernel, (1,), [x] + outs, 50, BLOCK=64, BR=8, BC=8)
    for i in (1, 2, 3):
        assert_close(npu[i], ref[i], 0, f"cumsum {np.dtype(dtype)} output {i}")


@tritonpu.jit
def _where_cast_kernel(x_ptr, y_ptr, of_ptr, oi_ptr, ob_ptr, oh_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = tl.load(y_ptr + offs, mask=m, other=0)
    w = tl.where(x > 0.5, x, -x * 2.0)
    tl.store(of_ptr + offs, tl.where(y > 3, w, y.to(tl.float32)), mask=m)
    tl.store(oi_ptr + offs, x.to(tl.int32) + (x > 1.0).to(tl.int32) - y, mask=m)
    tl.store(ob_ptr + offs, (y & 1).to(tl.int1) | (x < -1.0), mask=m)
    tl.store(oh_ptr + offs, (x.to(tl.float16) + y.to(tl.float16)).to(tl.bfloat16).to(tl.float16), mask=m)


def test_jit_where_and_casts():
    rng = np.random.default_rng(23)
    n = 200
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    y = rng.integers(-20, 20, n).astype(np.int32)
    outs = [np.zeros(n, np.float32), np.zeros(n, np.int32), np.zeros(n, np.bool_), np.zeros(n, np.float16)]
    ref, npu = _both(_where_cast_kernel, (4,), [x, y] + outs, n, BLOCK=64)
    for i in range(2, 6):
        assert_close(npu[i], ref[i], 0, f"output {i}")


@tritonpu.jit
def _int_bits_kernel(a_ptr, b_ptr, o_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=1)
    b = tl.load(b_ptr + offs, mask=m, other=1)
    r0 = (a & b) ^ (a | 0x3C) ^ ~b
    r1 = (a << 3) + (b >> 2) - (a >> (b & 7))
    r2 = a // tl.where(b == 0, 1, b) + a % tl.where(b == 0, 7, b)
    r3 = tl.maximum(a, b) * 3 - tl.minimum(a, s) + tl.abs(a) - (-b)
    tl.store(o_ptr + offs, r0 + r1 * 5 + r2 - r3, mask=m)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.int16, np.uint8])
def test_jit_integer_and_bitwise(dtype):
    rng = np.random.default_rng(24)
    n = 150
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    a[:4] = [0, info.min, info.max, 5]
    b[:4] = [0, -1 if info.min < 0 else 3, 7, 0]
    ref, npu = _both(_int_bits_kernel, (3,), [a, b, np.zeros(n, dtype)], n, 9, BLOCK=64)
    assert_close(npu[2], ref[2], 0, f"int ops {np.dtype(dtype)}")


@tritonpu.jit
def _grid2d_kernel(x_ptr, col_ptr, o_ptr, rsum_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=m, other=0.0)
    cv = tl.load(col_ptr + rn, mask=rn < N, other=1.0)
    y = x * cv[None, :] + (pm * 100 + pn).to(tl.float32)
    y = tl.where(y > 0, y, y / 2.0)
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], y, mask=m)
    tl.store(rsum_ptr + pn * M + rm, tl.sum(tl.where(m, y, 0.0), axis=1), mask=rm < M)


@pytest.mark.parametrize("M,N,BM,BN", [(20, 30, 8, 16), (16, 16, 16, 8), (3, 50, 4, 32)])
def test_jit_2d_grid(M, N, BM, BN):
    rng = np.random.default_rng(25)
    x = (rng.integers(-32, 32, M * N) / 4).astype(np.float32)
    cv = (rng.integers(-8, 8, N) / 2).astype(np.float32)
    gn = -(-N // BN)
    outs = [np.zeros(M * N, np.float32), np.zeros(gn * M, np.float32)]
    ref, npu = _both(_grid2d_kernel, (-(-M // BM), gn), [x, cv] + outs, M, N, BM=BM, BN=BN)
    assert_close(npu[2], ref[2], 0, "2-D grid elementwise")
    assert_close(npu[3], ref[3], 0, "2-D grid row sums")


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("kinds", [("full", "row", "col"), ("col", "row", "splat"), ("splat", "full", "row"),
                                   ("row", "col", "full")], ids=lambda k: "-".join(k))
def test_cmp_select_cast_2d_broadcast(dt, kinds):
    """cmp of two broadcast operands, select between broadcast operands, cast of the result to
    f32 and to i1: every dtype."""
    R, C, nr, nc = 4, 16, 3, 13
    rng = np.random.default_rng(17)
    T = f"tensor<{R}x{C}x{{}}>"
    lines = _prologue_2d(R, C, dt, "f32")
    for k_, nm in zip(kinds, ("x", "y", "z")):
        lines += _operand_2d(k_, nm, R, C, dt)
    lines += [f"  %le = cmp %x, %y {{pred = \"le\"}} : {T.format('i1')}",
              f"  %ne = cmp %z, %y {{pred = \"ne\"}} : {T.format('i1')}",
              f"  %sel = select %le, %z, %x : {T.format(dt)}",
              f"  %bo = cast %sel : {T.format('i1')}" if dt != "i1" else f"  %bo = xor %sel, %ne : {T.format('i1')}",
              f"  %bb = and %bo, %ne : {T.format('i1')}",
              f"  %f = cast %sel : {T.format('f32')}",
              f"  %nf = neg %f : {T.format('f32')}",
              f"  %res = select %bb, %f, %nf : {T.format('f32')}"]
    a, b, s = _inputs_2d(dt, R, C, rng, small=True)
    b[:4] = a.ravel()[:4]                               # some equal lanes
    k = ir_kernel("\n".join(lines + _store_2d(R, C, "f32")))
    out = np.zeros((R, C), np.float32)
    ref, npu = run_ref_npu(k, [a, b, s, out, nr, nc])
    assert_close(npu[-1], ref[-1], 0, f"cmp/select/cast {dt} {kinds}")


@pytest.mark.parametrize("op,dt", [c for c in BIN_CASES if c[1] in ("f32", "bf16", "i8", "u32", "i64", "i1")])
@pytest.mark.parametrize("side", ["lhs", "rhs"])
@pytest.mark.parametrize("rank", RANKS)
def test_binary_with_constant(op, dt, side, rank):
    """One operand a compile-time constant (immediates in v*s forms / scalar instructions)."""
    c = {"i1": "true", "f32": "-2.5", "bf16": "0.75"}.get(dt, "3")
    if op in ("shl", "shr"):
        c = "2"
    if op in ("div", "rem") and side == "lhs" and dt not in FLOATS:
        c = "-100" if dt.startswith("i") else "100"
    t = f"tensor<{B}x{dt}>" if rank == "block" else dt
    cdef = [f"%cs = constant {{value = {c}}} : {dt}"] + ([f"%cb = splat %cs : {t}"] if rank == "block" else [])
    cv = "%cb" if rank == "block" else "%cs"
    ops = f"%x0, {cv}" if side == "rhs" else f"{cv}, %x0"
    text = WRAP[rank]([dt], dt, lambda _t: cdef + [f"%r = {op} {ops} : {t}"])
    rng = np.random.default_rng(18)
    x = values(dt, B, rng, small=True)
    if op in ("shl", "shr") and side == "lhs":
        x = (np.abs(x.astype(np.int64)) % 8).astype(NP[dt])
    for i in range(3 if rank == "scalar" else 1):
        _check(text, [np.roll(x, -i)], dt, 0, f"{op} {dt} const {side} {rank}")


WIDE_INT_TO_FLOAT = [(s, d) for s in ("i64", "u64", "u32", "i32") for d in FLOATS]


@pytest.mark.parametrize("src,dst", WIDE_INT_TO_FLOAT)
@pytest.mark.parametrize("rank", RANKS)
def test_cast_wide_int_to_float(src, dst, rank):
    """Large integers (beyond int64 for u64, beyond 2**24 / 2**53) round once to the float type."""
    info = np.iinfo(NP[src])
    vals = [info.max, info.min, info.max - 1, 1 << (info.bits - 2), (1 << 24) + 1, -(1 << 24) - 3]
    if info.bits == 64:
        vals += [(1 << 60) + (1 << 36) + 1, (1 << 53) + 1, (1 << 62) + (1 << 38) + (1 << 9) + 1,
                 -((1 << 60) + (1 << 36) + 1), (1 << 63) + (1 << 39) + 1]
    vals = [v for v in vals if info.min <= v <= info.max][:B]
    x = np.array(vals + [0] * (B - len(vals)), dtype=NP[src])
    text = WRAP[rank]([src], dst, lambda t: [f"%r = cast %x0 : {t.format(dst)}"])
    for i in range(len(vals) if rank == "scalar" else 1):
        _check(text, [np.roll(x, -i)], dst, 0, f"cast {src}->{dst} {rank} lane {i}")


@pytest.mark.parametrize("pred", ["lt", "le", "gt", "ge", "eq", "ne"])
@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("rank", RANKS)
def test_cmp_full_range(pred, dt, rank):
    """Integer compares over the whole range (u64 above 2**63, i64 extremes), also after an add
    that wraps."""
    rng = np.random.default_rng(19)
    text = WRAP[rank]([dt, dt], "i1", lambda t: [f"%s = add %x0, %x1 : {t.format(dt)}",
                                                 f"%r = cmp %s, %x1 {{pred = \"{pred}\"}} : {t.format('i1')}"])
    a, b = values(dt, B, rng), values(dt, B, rng)
    b[:3] = a[:3]
    for i in range(8 if rank == "scalar" else 1):
        _check(text, [np.roll(a, -i), np.roll(b, -i)], "i1", 0, f"cmp {pred} {dt} {rank} lane {i}")


@pytest.mark.parametrize("dt", ["f32", "f16", "i32", "u64", "i8"])
@pytest.mark.parametrize("kind", ["sum", "max", "argmin"])
def test_reduce_result_in_scalar_code(dt, kind):
    """A rank-0 reduce result (in UB) used by scalar ops: arithmetic with a scalar argument, a
    compare, a select and a cast."""
    out_dt = "i32" if kind.startswith("arg") else dt
    lines = [f"func @k(%a0: ptr<{dt}>, %o: ptr<f64>, %n: i32, %s: {out_dt}) {{",
             f"  %offs = arange {{end = {B}, start = 0}} : tensor<{B}xi32>",
             f"  %ns = splat %n : tensor<{B}xi32>",
             f"  %m = cmp %offs, %ns {{pred = \"lt\"}} : tensor<{B}xi1>",
             f"  %p0 = splat %a0 : tensor<{B}xptr<{dt}>>",
             f"  %q0 = addptr %p0, %offs : tensor<{B}xptr<{dt}>>",
             f"  %zc = constant {{value = 0}} : {dt}",
             f"  %z = splat %zc : tensor<{B}x{dt}>",
             f"  %x0 = load %q0, %m, %z : tensor<{B}x{dt}>",
             f"  %red = reduce %x0 {{axis = 0, op = \"{kind}\"}} : {out_dt}",
             f"  %t = mul %red, %s : {out_dt}",
             "  %c = cmp %t, %red {pred = \"gt\"} : i1",
             f"  %u = sub %t, %red : {out_dt}",
             f"  %v = select %c, %u, %t : {out_dt}",
             "  %r = cast %v : f64",
             "  store %o, %r", "  return", "}"]
    k = ir_kernel("\n".join(lines))
    rng = np.random.default_rng(20)
    for s in (3, -2, 0):
        if out_dt.startswith("u") and s < 0:
            continue
        x = _sum_exact(values(dt, B, rng, small=True))
        ref, npu = run_ref_npu(k, [x, np.zeros(1, np.float64), N, NP[out_dt](s)])
        assert_close(npu[-1], ref[-1], 0, f"{kind} {dt} s={s}")


SPECIAL = [np.inf, -np.inf, np.nan, -0.0, 1e-40, -1e-39, 6e4, -7e4, 3e38, 1e-7, 0.5, -2.5, 1e300, -1e-310, 7.0, -0.0]


@pytest.mark.parametrize("op", sorted(set(UNARY) - {"not"}))
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("rank", RANKS)
def test_unary_float_special_values(op, dt, rank):
    """inf, NaN, signed zeros, subnormals, values that overflow the narrower types."""
    with np.errstate(all="ignore"):
        x = np.array(SPECIAL, np.float64).astype(NP[dt])
    text = WRAP[rank]([dt], dt, lambda t: [f"%r = {op} %x0 : {t.format(dt)}"])
    for i in range(B if rank == "scalar" else 1):
        _check(text, [np.roll(x, -i)], dt, ULPS.get(op, 0), f"{op} {dt} {rank} lane {i}")


@pytest.mark.parametrize("src", FLOATS)
@pytest.mark.parametrize("dst", FLOATS + ("i1",))
@pytest.mark.parametrize("rank", RANKS)
def test_cast_float_special_values(src, dst, rank):
    if src == dst:
        pytest.skip("no-op")
    with np.errstate(all="ignore"):
        x = np.array(SPECIAL, np.float64).astype(NP[src])
    text = WRAP[rank]([src], dst, lambda t: [f"%r = cast %x0 : {t.format(dst)}"])
    for i in range(B if rank == "scalar" else 1):
        _check(text, [np.roll(x, -i)], dst, 0, f"cast {src}->{dst} {rank} lane {i}")


@pytest.mark.parametrize("op", [o for o in BINARY if o not in INT_ONLY])
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("rank", RANKS)
def test_binary_float_special_values(op, dt, rank):
    """inf - inf, 0 * inf, x / 0, fmod by 0 and inf, NaN operands, overflow to inf."""
    with np.errstate(all="ignore"):
        a = np.array(SPECIAL, np.float64).astype(NP[dt])
        b = np.array(SPECIAL[5:] + SPECIAL[:5], np.float64).astype(NP[dt])
    b[0], b[1] = 0.0, np.inf
    text = WRAP[rank]([dt, dt], dt, lambda t: [f"%r = {op} %x0, %x1 : {t.format(dt)}"])
    for i in range(B if rank == "scalar" else 1):
        _check(text, [np.roll(a, -i), np.roll(b, -i)], dt, 0, f"{op} {dt} {rank} lane {i}")
