"""The kernel generator: an int seed -> a :class:`Case` (kernel source + argument recipe).

Three families: elementwise kernels (typed expression trees over masked 1-D/2-D blocks of
fp32/fp16/int32/int8/uint8, casts and bitcasts, reductions and scans both directions,
``program_id`` arithmetic, a runtime loop and a runtime ``if``, ``tl.where``, broadcasting,
``tl.rand``/``tl.randint``), dots (fp16/int8 ``tl.dot`` over a K loop), and integer atomics
(``tl.atomic_add/max/min/and/or/xor`` on distinct or colliding addresses: with integer data every
order of the programs gives the same bits).  ``Case.meta`` is the argument recipe;
:func:`make_args` turns it into arrays, scalars and constexprs, deterministically.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from .exprs import ExprGen
from .typerules import BITS, FLOATS, TLNAME, E, is_float, is_int

HEADER = "import numpy as np\nimport tritonpu\nimport tritonpu.language as tl\n\n"


DT_IN = ("fp32", "fp16", "int32", "int8", "uint8")


def build_elementwise(seed):
    """An elementwise/reduction/scan kernel over a masked 1-D or 2-D block: (source, meta)."""
    g = ExprGen(seed)
    r = g.r
    two_d = r.random() < 0.45
    g.two_d = two_d
    G = r.randint(1, 4)
    if two_d:
        BM = r.choice([16, 16, 32, 32, 64, 128])
        BN = r.choice([16, 16, 32, 32, 64, 128, 256])
        while BM * BN > 8192:
            BN //= 2
        BN = max(BN, 16)
        m = r.choice([BN, r.randint(1, BN)])
        stride = BN + r.choice([0, 0, 3, 8])
        rows_alloc = G * BM
    else:
        BM = r.choice([16, 32, 64, 128, 256])
        BN = None
        m, stride = None, None
        rows_alloc = G * BM
    n = r.choice([G * BM, r.randint(max(2, (G - 1) * BM + 1), G * BM)])
    n = max(n, 2)
    nin = r.randint(1, 3)
    in_dts = [r.choice(DT_IN) for _ in range(nin)]
    s_val = r.randint(-5, 9)
    if s_val == 1:
        s_val = 2
    f_val = r.choice([0.75, -2.5, 3.0, 1e-2, 100.0])
    t_val = r.randint(0, 5)
    if t_val == 1:
        t_val = 2
    L = g.lines
    FSH = "[BM, BN]" if two_d else "[BM]"
    L.append("    pid = tl.program_id(0)")
    if two_d:
        L.append("    rows = pid * BM + tl.arange(0, BM)")
        L.append("    cols = tl.arange(0, BN)")
        L.append("    offs = rows[:, None] * stride + cols[None, :]")
        L.append("    mask = (rows[:, None] < n) & (cols[None, :] < m)")
    else:
        L.append("    offs = pid * BM + tl.arange(0, BM)")
        L.append("    mask = offs < n")
    L.append(f"    sc = pid * {r.randint(2, 9)} + s")
    feats = []
    for i, d in enumerate(in_dts):
        if is_float(d):
            oth = r.choice(["0.0", "1.0", "-3.5", "float('inf')"]) if d == "fp32" else r.choice(["0.0", "2.0", "-1.0"])
        else:
            oth = r.choice(["0", "1", "7"])
        if r.random() < 0.15 and n == rows_alloc and (not two_d or (m == BN)):
            L.append(f"    x{i} = tl.load(x{i}_ptr + offs)")
        else:
            L.append(f"    x{i} = tl.load(x{i}_ptr + offs, mask=mask, other={oth})")
        g.vars.setdefault("F", []).append(E(f"x{i}", d, "F"))
    g.vars.setdefault("S", []).extend([E("pid", "int32", "S"), E("s", "int32", "S"), E("sc", "int32", "S"),
                                       E("f", "fp32", "S")])
    if r.random() < 0.15:
        feats.append("rand")
        if r.random() < 0.6:
            L.append("    rnd = tl.rand(s, offs)")
            g.vars["F"].append(E("rnd", "fp32", "F"))
        else:
            L.append("    rnd = tl.randint(s, offs).to(tl.int32, bitcast=True)")
            g.vars["F"].append(E("rnd", "int32", "F"))
    if two_d:
        g.vars.setdefault("R", []).append(E("rows", "int32", "R"))
        g.vars.setdefault("C", []).append(E("cols", "int32", "C"))
    else:
        g.vars["F"].append(E("offs", "int32", "F"))
    depth = r.randint(2, 4)
    nst = r.randint(2, 8)
    for _ in range(nst):
        k = r.random()
        if k < 0.45:
            e = g.expr("F", depth)
            g.newvar(e)
        elif k < 0.7:
            feats.append("reduce")
            reduce_stmt(g, two_d)
        elif k < 0.82:
            feats.append("scan")
            scan_stmt(g, two_d)
        else:
            e = g.expr(r.choice(["R", "S"]) if two_d else "S", depth)
            g.newvar(e)
    if r.random() < 0.35:
        feats.append("loop")
        D = r.choice(["fp32", "int32", "int8", "fp16", "uint8"])
        g.lines.append(f"    acc = tl.zeros({FSH}, dtype={TLNAME[D]})")
        g.lines.append("    for i in range(0, t):")
        g.vars["S"].append(E("i", "int32", "S"))
        if r.random() < 0.5:
            j = r.randrange(nin)
            tot = "n * stride" if two_d else "n"
            g.lines.append(f"        xl = tl.load(x{j}_ptr + (offs + i) % ({tot}))")
            g.vars["F"].append(E("xl", in_dts[j], "F"))
        e = g.expr("F", depth, allow_approx=is_float(D))
        upd = r.choice(["add", "add", "max", "xor"] if is_int(D) else ["add", "add", "max", "mul"])
        ec = g.cast(e, D).code
        if upd == "add":
            g.lines.append(f"        acc = acc + {ec}")
        elif upd == "max":
            g.lines.append(f"        acc = tl.maximum(acc, {ec})")
        elif upd == "xor":
            g.lines.append(f"        acc = acc ^ {ec}")
        else:
            g.lines.append(f"        acc = acc * 0.5 + {ec}")
            if D == "fp16":
                g.lines[-1] = f"        acc = (acc * 0.5 + {ec}).to(tl.float16)"
        g.vars["S"] = [v for v in g.vars["S"] if v.code != "i"]
        g.vars["F"] = [v for v in g.vars["F"] if v.code != "xl"]
        g.vars["F"].append(E("acc", D, "F", max(e.approx, 1 if (upd in ("add", "mul") and False) else 0)))
    if r.random() < 0.35:
        feats.append("if")
        cond = r.choice(["s > 3", "pid % 2 == 0", "(pid + s) > 2", "f > 0.5", "sc < 4"])
        a = g.expr("F", depth)
        b = g.expr("F", depth, allow_approx=is_float(a.dt))
        if a.lit:
            a = g.cast(E(f"tl.full({FSH}, {a.code}, {TLNAME[a.dt]})", a.dt, "F"), a.dt)
        ac = f"tl.broadcast_to({a.code}, {FSH})"
        bc = g.cast(b, a.dt).code
        if b.lit:
            bc = f"tl.full({FSH}, {b.code}, {TLNAME[a.dt]})"
        else:
            bc = f"tl.broadcast_to({bc}, {FSH})"
        if a.shape != "F" and not a.lit:
            pass
        ap = max(a.approx, b.approx if is_float(a.dt) else 0)
        g.lines.append(f"    if {cond}:")
        g.lines.append(f"        w = {ac}")
        g.lines.append("    else:")
        g.lines.append(f"        w = {bc}")
        g.vars["F"].append(E("w", a.dt, "F", ap))
    # outputs
    outs = []
    L = g.lines
    cands = [v for v in g.vars["F"] if not v.code.startswith("x") or r.random() < 0.1]
    # prefer recent
    nout = r.randint(1, 2)
    fexprs = []
    for _ in range(nout):
        e = g.expr("F", depth) if r.random() < 0.4 or not cands else r.choice(cands[-4:])
        fexprs.append(e)
    for e in fexprs:
        oi = len(outs)
        od = e.dt if e.dt != "bool" else "int8"
        if not e.approx and r.random() < 0.2:
            od = r.choice(DT_IN)
        elif e.approx and r.random() < 0.2:
            od = r.choice(FLOATS)
        val = g.cast(e, "int8").code if e.dt == "bool" else e.code
        if e.shape == "S" and r.random() < 0.5:
            val = f"tl.broadcast_to({val}, {FSH})"
        msk = "mask"
        if r.random() < 0.2:
            cc = g.compare_where("F", 1, False)
            if cc is not None and cc.dt == "bool" and not cc.code.startswith("tl.where"):
                msk = f"mask & {cc.code}"
        L.append(f"    tl.store(o{oi}_ptr + offs, {val}, mask={msk})")
        ap = e.approx
        if od == "fp16" and ap:
            ap = 2
        outs.append(dict(kind="F", dt=od, approx=ap))
    for sh in (["R", "C", "S"] if two_d else ["S"]):
        vs = g.vars.get(sh, [])
        vs = [v for v in vs if v.code not in ("rows", "cols", "pid", "s", "sc", "f")]
        if vs and r.random() < 0.8:
            e = r.choice(vs)
            oi = len(outs)
            od = e.dt if e.dt != "bool" else "int8"
            val = e.code if e.dt != "bool" else f"({e.code}).to(tl.int8)"
            if sh == "R":
                L.append(f"    tl.store(o{oi}_ptr + rows, {val}, mask=rows < n)")
            elif sh == "C":
                L.append(f"    tl.store(o{oi}_ptr + pid * BN + cols, {val}, mask=cols < m)")
            else:
                L.append(f"    tl.store(o{oi}_ptr + pid, {val})")
            outs.append(dict(kind=sh, dt=od, approx=e.approx if od != "fp16" or not e.approx else 2))
    params = [f"x{i}_ptr" for i in range(nin)] + [f"o{i}_ptr" for i in range(len(outs))]
    params += ["n", "m", "stride", "s", "f", "t", "BM: tl.constexpr", "BN: tl.constexpr"]
    src = "@tritonpu.jit\ndef kern(" + ", ".join(params) + "):\n" + "\n".join(L) + "\n"
    meta = dict(seed=seed, two_d=two_d, G=G, BM=BM, BN=BN if two_d else 1, n=n, m=m if two_d else 1,
                stride=stride if two_d else 1, rows_alloc=rows_alloc, in_dts=in_dts, outs=outs,
                s=s_val, f=f_val, t=t_val, feats=feats, ops=g.ops)
    return src, meta


def reduce_stmt(g, two_d):
    """A reduction (sum, max, min, argmax) of a block along an axis, as a new variable."""
    r = g.r
    srcs = [v for v in g.vars["F"]]
    v = r.choice(srcs)
    if r.random() < 0.3:
        v = g.expr("F", 2)
        if v.shape != "F":
            return
    kind = r.choice(["sum", "max", "min", "argmax", "sum"])
    ax = r.choice([0, 1]) if two_d else 0
    shp = ("C" if ax == 0 else "R") if two_d else "S"
    code = v.code
    dt = v.dt
    if dt == "bool":
        code, dt = f"{code}.to(tl.int32)", "int32"
    if kind == "argmax":
        if v.approx:
            return
        if is_float(dt):
            code = f"tl.where({code} != {code}, 0.0, {code})"
        g.newvar(E(f"tl.argmax({code}, axis={ax})", "int32", shp))
        return
    if kind == "sum":
        od = {"int8": "int32", "int16": "int32", "uint8": "uint32"}.get(dt, dt)
        c = f"tl.sum({code}, axis={ax})"
        if od == "uint32":
            c, od = f"{c}.to(tl.int32)", "int32"
        g.newvar(E(c, od, shp, 1 if is_float(dt) else 0) if not v.approx else E(c, od, shp, max(1, v.approx)))
        return
    od = dt
    if BITS[dt] < 32:
        od = "fp32" if is_float(dt) else "int32"
    g.newvar(E(f"tl.{kind}({code}, axis={ax})", od, shp, v.approx))


def scan_stmt(g, two_d):
    """A cumsum or cumprod of a block, either direction, as a new variable."""
    r = g.r
    v = r.choice(g.vars["F"])
    kind = r.choice(["cumsum", "cumprod"])
    ax = r.choice([0, 1]) if two_d else 0
    rev = r.choice([False, True])
    code, dt = v.code, v.dt
    if dt == "bool":
        code, dt = f"{code}.to(tl.int32)", "int32"
    if kind == "cumprod" and is_float(dt):
        # keep magnitudes near 1 so products stay finite-ish
        code = f"(tl.minimum(tl.abs({code}), 1.5) + 0.5)" if r.random() < 0.8 else code
    od = dt
    if kind == "cumsum":
        od = {"int8": "int32", "int16": "int32", "uint8": "uint32"}.get(dt, dt)
    c = f"tl.{kind}({code}, axis={ax}, reverse={rev})"
    if od == "uint32":
        c, od = f"{c}.to(tl.int32)", "int32"
    g.newvar(E(c, od, "F", max(v.approx, 1) if is_float(dt) else 0))


def build_dot(seed):
    """A K-looped fp16 or int8 ``tl.dot`` with fp32/int32 accumulation and an epilogue."""
    r = random.Random(seed)
    BM = r.choice([16, 32, 64])
    BN = r.choice([16, 32, 64])
    BK = r.choice([16, 32, 64])
    G = r.randint(1, 3)
    M = r.choice([G * BM, r.randint((G - 1) * BM + 1, G * BM)])
    N = r.choice([BN, r.randint(2, BN)])
    nk = r.randint(1, 3)
    K = r.choice([nk * BK, r.randint((nk - 1) * BK + 1, nk * BK)])
    if K == 1:
        K = 2
    dt = r.choice(["fp16", "fp16", "fp16", "int8"])
    acc_dt = "int32" if dt == "int8" else "fp32"
    L = []
    L.append("    pid = tl.program_id(0)")
    L.append("    rm = pid * BM + tl.arange(0, BM)")
    L.append("    rn = tl.arange(0, BN)")
    L.append("    rk = tl.arange(0, BK)")
    L.append(f"    acc = tl.zeros([BM, BN], dtype={TLNAME[acc_dt]})")
    L.append("    for k in range(0, K, BK):")
    oth = "0.0" if dt == "fp16" else "0"
    L.append(f"        a = tl.load(a_ptr + rm[:, None] * sa + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other={oth})")
    L.append(f"        b = tl.load(b_ptr + (k + rk)[:, None] * sb + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other={oth})")
    pre = r.choice(["", "", "a = a * 2", "b = tl.abs(b)", "a = (a + s).to(%s)" % TLNAME[dt]])
    if pre:
        L.append("        " + pre)
    form = r.choice(["acc += tl.dot(a, b)", "acc = tl.dot(a, b, acc)", "acc = acc + tl.dot(a, b)"])
    L.append("        " + form)
    post = r.choice(["", "acc = tl.maximum(acc, 0)", "acc = acc * s", "acc = acc + rn[None, :]"])
    if post:
        L.append("    " + post)
    od = r.choice([acc_dt, acc_dt, "fp16" if dt == "fp16" else "int8"])
    L.append(f"    tl.store(c_ptr + rm[:, None] * sc + rn[None, :], acc.to({TLNAME[od]}), mask=(rm[:, None] < M) & (rn[None, :] < N))")
    src = ("@tritonpu.jit\ndef kern(a_ptr, b_ptr, c_ptr, M, N, K, sa, sb, sc, s, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):\n"
           + "\n".join(L) + "\n")
    meta = dict(seed=seed, dot=True, G=G, BM=BM, BN=BN, BK=BK, M=M, N=N, K=K, dt=dt, od=od,
                s=r.choice([2, 3, -1]), feats=["dot"], ops=4,
                outs=[dict(kind="D", dt=od, approx=(2 if od == "fp16" else 1) if dt == "fp16" else 0)])
    return src, meta


ATOMIC_OPS = ("add", "add", "max", "min", "and", "or", "xor")


def build_atomic(seed):
    """Integer atomics from every program into a shared array: distinct addresses (the old values
    are then the array's initial ones and are stored too), addresses that collide across
    programs (``offs % K``), or one address for a whole block or a reduced scalar."""
    g = ExprGen(seed)
    r = g.r
    G = r.randint(1, 6)
    BM = r.choice([16, 32, 64, 128])
    n = r.choice([G * BM, r.randint(max(2, (G - 1) * BM + 1), G * BM)])
    in_dts = [r.choice(("int32", "int8", "uint8", "int32")) for _ in range(r.randint(1, 2))]
    L = g.lines
    L.append("    pid = tl.program_id(0)")
    L.append("    offs = pid * BM + tl.arange(0, BM)")
    L.append("    mask = offs < n")
    L.append(f"    sc = pid * {r.randint(2, 9)} + s")
    for i, d in enumerate(in_dts):
        L.append(f"    x{i} = tl.load(x{i}_ptr + offs, mask=mask, other={r.choice(['0', '1', '7'])})")
    g.vars["F"] = [E(f"x{i}", d, "F") for i, d in enumerate(in_dts)] + [E("offs", "int32", "F")]
    g.vars["S"] = [E("pid", "int32", "S"), E("s", "int32", "S"), E("sc", "int32", "S"), E("f", "fp32", "S")]
    for _ in range(r.randint(0, 3)):
        g.newvar(g.expr("F", r.randint(1, 3), want=list(("int32", "int8", "uint8")), allow_approx=False))
    val = g.expr("F", 2, want=["int32"], allow_approx=False)
    if val.shape != "F":
        val = E(f"tl.broadcast_to({val.code}, [BM])", "int32", "F")
    op = r.choice(ATOMIC_OPS)
    where = r.choice(["distinct", "collide", "same", "scalar"])
    K = min(r.choice([1, 3, 8, 16, 40]), G * BM)
    outs = [dict(kind="A", dt="int32", approx=0)]
    if where == "distinct":
        L.append(f"    old = tl.atomic_{op}(acc_ptr + offs, {val.code}, mask=mask)")
        L.append("    tl.store(o1_ptr + offs, old, mask=mask)")
        outs.append(dict(kind="F", dt="int32", approx=0))
    elif where == "collide":
        L.append(f"    tl.atomic_{op}(acc_ptr + offs % K, {val.code}, mask=mask)")
    elif where == "same":
        L.append(f"    tl.atomic_{op}(acc_ptr + offs * 0 + pid % K, {val.code}, mask=mask)")
    else:
        red = {"add": "tl.sum", "max": "tl.max", "min": "tl.min"}.get(op, "tl.sum")
        L.append(f"    tot = {red}(tl.where(mask, {val.code}, 0), axis=0)")
        L.append(f"    tl.atomic_{op}(acc_ptr + pid % K, tot)")
    params = [f"x{i}_ptr" for i in range(len(in_dts))] + ["acc_ptr"] + (["o1_ptr"] if len(outs) > 1 else [])
    params += ["n", "s", "f", "K", "BM: tl.constexpr"]
    src = "@tritonpu.jit\ndef kern(" + ", ".join(params) + "):\n" + "\n".join(L) + "\n"
    meta = dict(seed=seed, atomic=True, G=G, BM=BM, n=n, K=K, s=r.randint(-5, 9), f=r.choice([0.75, -2.5, 3.0]),
                in_dts=in_dts,
                outs=outs, feats=["atomic", where, op], ops=g.ops)
    return src, meta


@dataclass
class Case:
    """One generated kernel: ``source`` (the ``@tritonpu.jit`` function ``kern``) and ``meta``
    (the argument recipe: grid, sizes, scalar values, input and output dtypes)."""
    seed: int
    source: str
    meta: dict = field(default_factory=dict)

    def file_text(self) -> str:
        """A standalone script: running it checks the case again and prints the verdict."""
        return (HEADER + self.source + "\n\nMETA = " + repr(self.meta) + "\n\n"
                "if __name__ == '__main__':\n"
                "    from tritonpu.fuzz.differential import check_case\n"
                "    from tritonpu.fuzz.generate import Case\n"
                "    print(check_case(Case.from_file_text(open(__file__).read())).report())\n")

    @staticmethod
    def from_file_text(text: str) -> "Case":
        """The case a :meth:`file_text` script holds (its kernel source and recipe)."""
        import ast
        body = text[len(HEADER):] if text.startswith(HEADER) else text
        src = body[:body.index("\n\nMETA = ")] + "\n" if "\n\nMETA = " in body else body
        meta_line = text[text.index("META = ") + 7:].split("\n")[0]
        meta = ast.literal_eval(meta_line)
        return Case(meta.get("seed", 0), src, meta)


def generate(seed: int) -> Case:
    """The case for ``seed``: mostly elementwise kernels, one in ten a dot, one in ten atomics."""
    kind = seed % 10
    if kind == 9:
        src, meta = build_dot(seed)
    elif kind == 4:
        src, meta = build_atomic(seed)
    else:
        src, meta = build_elementwise(seed)
    return Case(seed, src, meta)


NP = {"fp32": np.float32, "fp16": np.float16, "int32": np.int32, "int8": np.int8, "uint8": np.uint8,
      "int16": np.int16}
SPECIALS = (0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 1e-7)


def rand_array(rng, dt, size, specials):
    """Random data of dtype ``dt``: floats at several scales (with infinities, NaNs, signed zeros
    and fp16's extremes when ``specials``), integers over their whole range or near zero."""
    if dt in FLOATS:
        k = rng.integers(0, 4)
        if k == 0:
            a = rng.standard_normal(size) * rng.choice([1.0, 100.0, 1e-3])
        elif k == 1:
            a = rng.integers(-20, 20, size).astype(np.float64)
        elif k == 2:
            a = rng.uniform(-4, 4, size)
        else:
            a = rng.standard_normal(size) * np.exp(rng.uniform(-8, 8, size))
        a = a.astype(NP[dt])
        if specials:
            idx = rng.integers(0, size, max(1, size // 16))
            a[idx] = rng.choice(np.array(SPECIALS, dtype=NP[dt]), len(idx))
        return a
    info = np.iinfo(NP[dt])
    if rng.random() < 0.5:
        return rng.integers(info.min, info.max + 1, size, dtype=np.int64).astype(NP[dt])
    return rng.integers(max(info.min, -10), 11, size).astype(NP[dt])


def make_args(meta):
    """``(arrays, scalars, constexprs, output indices, grid)`` for a case, the same every call."""
    rng = np.random.default_rng(meta["seed"] + 12345)
    specials = rng.random() < 0.2
    grid = (meta["G"],)
    if meta.get("dot"):
        G, BM, BN, M, N, K = (meta[k] for k in ("G", "BM", "BN", "M", "N", "K"))
        sa = K + int(rng.choice([0, 8]))
        sb = BN + int(rng.choice([0, 8]))
        sc = BN + int(rng.choice([0, 4]))
        if meta["dt"] == "fp16":
            a = rng.standard_normal(G * BM * sa).astype(np.float16)
            b = rng.standard_normal(K * sb).astype(np.float16)
        else:
            a = rng.integers(-128, 128, G * BM * sa).astype(np.int8)
            b = rng.integers(-128, 128, K * sb).astype(np.int8)
        if meta["od"] in ("int8", "int32"):
            c = rng.integers(-100, 100, G * BM * sc).astype(NP[meta["od"]])
        else:
            c = rng.standard_normal(G * BM * sc).astype(NP[meta["od"]])
        return [a, b, c], [M, N, K, sa, sb, sc, meta["s"]], dict(BM=BM, BN=BN, BK=meta["BK"]), [2], grid
    if meta.get("atomic"):
        size = meta["G"] * meta["BM"]
        ins = [rand_array(rng, d, size, False) for d in meta["in_dts"]]
        acc = rand_array(rng, "int32", size, False)
        outs = [acc] + [np.full(size, -7, np.int32) for _ in meta["outs"][1:]]
        first = len(ins)
        return (ins + outs, [meta["n"], meta["s"], meta["f"], meta["K"]], dict(BM=meta["BM"]),
                list(range(first, first + len(outs))), grid)
    size = meta["rows_alloc"] * meta["stride"]
    ins = [rand_array(rng, d, size, specials) for d in meta["in_dts"]]
    outs = []
    for o in meta["outs"]:
        sz = {"F": size, "R": meta["rows_alloc"], "C": meta["G"] * meta["BN"], "S": meta["G"]}[o["kind"]]
        outs.append(rand_array(rng, o["dt"], sz, False))
    scal = [meta["n"], meta["m"], meta["stride"], meta["s"], meta["f"], meta["t"]]
    first = len(ins)
    return ins + outs, scal, dict(BM=meta["BM"], BN=meta["BN"]), list(range(first, first + len(outs))), grid
