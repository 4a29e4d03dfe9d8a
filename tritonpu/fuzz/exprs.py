"""Random typed expression trees (the body of a generated kernel).

``ExprGen.expr(shape, depth, want=..., allow_approx=...)`` returns an :class:`E` whose code is a
Triton expression over the variables defined so far (``self.vars``, by shape) and literals.
Undefined behaviour is avoided by construction: ``//`` and ``%`` get a denominator that is never
0 or -1 (``tl.where``-guarded), shift amounts are masked into ``[0, bits)``, integer literals
fit the type they meet, float-to-int conversions are defined (they saturate, NaN -> 0, on every
backend).  Integer ``+ - *`` wrap, as in Triton.  ``approx`` marks values computed with
transcendentals or reordered float sums: compared with a tolerance, never bit for bit, and never
fed into comparisons, integer ops or casts to integers (where a 1-ulp difference would flip bits).
"""
from __future__ import annotations

import random

from .typerules import BITS, INTS, TLNAME, E, bshape, comp_type, is_float, is_int, is_uns

class ExprGen:
    """Expression generator state: the random stream, the kernel lines so far, the variables."""

    def __init__(self, seed, cfg=None):
        self.r = random.Random(seed)
        self.seed = seed
        self.cfg = cfg or {}
        self.lines = []
        self.vars = {}   # shape -> list of E
        self.nvar = 0
        self.ops = 0
        self.two_d = False

    def ch(self, *xs):
        return self.r.choice(xs)

    # ---------------------------------------------------------------- leaves
    def leaf(self, shape, want=None, allow_approx=True):
        r = self.r
        cands = []
        for sh in ([shape, "S"] if shape != "S" else ["S"]) + (["R", "C"] if shape == "F" and self.two_d else []):
            for v in self.vars.get(sh, []):
                if sh in ("R", "C") and shape == "F":
                    v = E(v.code + ("[:, None]" if sh == "R" else "[None, :]"), v.dt, "F", v.approx)
                if want and v.dt not in want:
                    continue
                if v.approx and not allow_approx:
                    continue
                cands.append(v)
        if cands and r.random() < 0.85:
            exact = [c for c in cands if c.shape == shape]
            if exact and r.random() < 0.7:
                return r.choice(exact)
            return r.choice(cands)
        # literal
        dts = want or ["int32", "fp32"]
        d = r.choice(dts)
        if is_float(d) or (want and all(is_float(x) for x in want)):
            v = r.choice([0.5, 1.0, 2.0, -1.5, 3.0, 0.25, 10.0, 0.0, 1e-3, 7.0])
            return E(repr(v), "fp32", "S", lit=True, val=v)
        if d == "bool":
            return E(r.choice(["True", "False"]), "bool", "S", lit=True)
        v = r.choice([0, 1, 2, 3, 5, 7, 13, 100, 127])
        if not is_uns(d) and r.random() < 0.3:
            v = -v
        return E(str(v), "int32", "S", lit=True, val=v)

    # ---------------------------------------------------------------- expressions
    def expr(self, shape, depth, want=None, allow_approx=True):
        """Random expression of shape `shape` (or broadcastable scalar). want: allowed dtypes."""
        r = self.r
        if depth <= 0 or r.random() < 0.15:
            e = self.leaf(shape, want, allow_approx)
            if want and e.dt not in want:
                e = self.cast(e, r.choice(want))
            return e
        for _ in range(20):
            e = self._expr(shape, depth, allow_approx)
            if e is None:
                continue
            if want and e.dt not in want:
                e = self.cast(e, r.choice(want))
            return e
        return self.leaf(shape, want, allow_approx)

    def cast(self, e, d):
        if e.dt == d:
            return e
        if e.lit and not is_float(d):
            if e.dt == "bool":
                v = 1 if e.code == "True" else 0
            else:
                v = int(e.val)
            if d == "bool":
                return E(f"tl.full([], {bool(v)}, tl.int1)", "bool", "S")
            lo, hi = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}.get(d, (-2**31, 2**31 - 1))
            v = (v - lo) % (hi - lo + 1) + lo
            return E(f"tl.full([], {v}, {TLNAME[d]})", d, "S")
        if e.lit:
            if is_float(d):
                return E(f"{float(e.val if e.val is not None else 1)!r}", "fp32", "S", lit=True,
                         val=float(e.val if e.val is not None else 1)) if d == "fp32" else \
                    E(f"tl.full([], {float(e.val or 0)!r}, tl.float16)", "fp16", "S")
        return E(f"({e.code}).to({TLNAME[d]})", d, e.shape, e.approx)

    def _expr(self, shape, depth, allow_approx):
        r = self.r
        k = r.random()
        self.ops += 1
        if k < 0.34:
            return self.binop(shape, depth, allow_approx)
        if k < 0.42:
            return self.compare_where(shape, depth, allow_approx)
        if k < 0.50:
            return self.minmax(shape, depth, allow_approx)
        if k < 0.60:
            return self.castop(shape, depth, allow_approx)
        if k < 0.68:
            return self.unary(shape, depth, allow_approx)
        if k < 0.74 and allow_approx:
            return self.mathop(shape, depth)
        if k < 0.80:
            return self.fmaop(shape, depth, allow_approx)
        if k < 0.86:
            return self.bitcast(shape, depth)
        if k < 0.90:
            return self.scalar_mix(shape, depth, allow_approx)
        return self.binop(shape, depth, allow_approx)

    def scalar_mix(self, shape, depth, allow_approx):
        # block combined with a pid/scalar expression
        s = self.ch("pid", "s", "sc", "f", "(pid * 3 + s)", "(s - pid)", "(pid + 1) * f")
        dt = {"f": "fp32", "(pid + 1) * f": "fp32"}.get(s, "int32")
        a = self.expr(shape, depth - 1, allow_approx=allow_approx)
        if a.dt == "bool":
            a = self.cast(a, "int8")
        op = self.ch("+", "-", "*")
        t = comp_type(a.dt, a.lit, dt, False)
        return E(f"({a.code} {op} {s})", t, a.shape, a.approx)

    def binop(self, shape, depth, allow_approx):
        op = self.ch("+", "-", "*", "+", "*", "/", "//", "%", "&", "|", "^", "<<", ">>")
        disc = op in ("//", "%", "&", "|", "^", "<<", ">>")
        aa = allow_approx and not disc
        if op in ("&", "|", "^", "<<", ">>", "//", "%"):
            a = self.expr(shape, depth - 1, want=list(INTS) + (["bool"] if op in "&|^" else []), allow_approx=False)
            b = self.expr(shape, depth - 1, want=list(INTS) + (["bool"] if op in "&|^" else []), allow_approx=False)
            if op in "&|^" and ((a.dt == "bool") != (b.dt == "bool")):
                b = self.cast(b, a.dt) if a.dt != "bool" or not b.lit else b
                if (a.dt == "bool") != (b.dt == "bool"):
                    return None
        else:
            a = self.expr(shape, depth - 1, allow_approx=aa)
            b = self.expr(shape, depth - 1, allow_approx=aa)
            if a.dt == "bool":
                a = self.cast(a, self.ch("int32", "int8", "fp32"))
            if b.dt == "bool":
                b = self.cast(b, self.ch("int32", "uint8", "fp16"))
        if a.lit and b.lit:
            b = self.leaf(shape, None, aa)
            if b.lit:
                return None
            if b.dt == "bool":
                return None
            if op in ("&", "|", "^", "<<", ">>", "//", "%") and not is_int(b.dt):
                return None
        dm = op in ("/", "//", "%")
        t = comp_type(a.dt, a.lit, b.dt, b.lit, dm)
        if t is None:
            return None
        for x in (a, b):
            if x.lit and is_int(t) and x.val is not None:
                if x.val < 0 and is_uns(t):
                    return None
                lo, hi = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}.get(t, (-2**31, 2**31 - 1))
                if not lo <= x.val <= hi:
                    return None
        shp = bshape(a.shape, b.shape)
        ac = max(a.approx, b.approx)
        if op == "/":
            rt = "fp32" if is_int(t) else t
            return E(f"({a.code} / {b.code})", rt, shp, ac)
        if op in ("//", "%"):
            if not is_int(t):
                return None
            # safe denominator: never 0, never -1 (INT_MIN // -1)
            if b.lit:
                if b.val in (0, -1):
                    return None
                den = b.code
            elif is_uns(t) or is_uns(b.dt):
                den = f"tl.where({b.code} == 0, 7, {b.code})"
            else:
                den = f"tl.where(({b.code} == 0) | ({b.code} == -1), 7, {b.code})"
            return E(f"({a.code} {op} {den})", t, shp)
        if op in ("<<", ">>"):
            if t == "bool":
                return None
            bits = BITS[t]
            if b.lit:
                if not 0 <= b.val < bits:
                    return None
                amt = b.code
            else:
                if is_uns(b.dt) or BITS[b.dt] >= 8:
                    amt = f"({b.code} & {bits - 1})"
                else:
                    return None
            return E(f"({a.code} {op} {amt})", t, shp)
        if op in ("&", "|", "^"):
            return E(f"({a.code} {op} {b.code})", t, shp)
        return E(f"({a.code} {op} {b.code})", t, shp, ac)

    def compare_where(self, shape, depth, allow_approx):
        op = self.ch("<", "<=", ">", ">=", "==", "!=")
        a = self.expr(shape, depth - 1, allow_approx=False)
        b = self.expr(shape, depth - 1, allow_approx=False)
        if a.dt == "bool" or b.dt == "bool":
            return None
        if a.lit and b.lit:
            return None
        t = comp_type(a.dt, a.lit, b.dt, b.lit)
        for x in (a, b):
            if x.lit and is_int(t) and x.val is not None and (x.val < 0 and is_uns(t) or abs(x.val) > 127 and BITS[t] == 8):
                return None
        c = E(f"({a.code} {op} {b.code})", "bool", bshape(a.shape, b.shape))
        if self.r.random() < 0.3:
            return c
        x = self.expr(shape, depth - 1, allow_approx=allow_approx)
        y = self.expr(shape, depth - 1, allow_approx=allow_approx)
        if x.lit and y.lit:
            return None
        t2 = comp_type(x.dt, x.lit, y.dt, y.lit)
        for z in (x, y):
            if z.lit and is_int(t2) and z.val is not None and (z.val < 0 and is_uns(t2) or abs(z.val) > 127 and BITS[t2] == 8):
                return None
        return E(f"tl.where({c.code}, {x.code}, {y.code})", t2, bshape(c.shape, bshape(x.shape, y.shape)),
                 max(x.approx, y.approx))

    def minmax(self, shape, depth, allow_approx):
        f = self.ch("tl.maximum", "tl.minimum")
        a = self.expr(shape, depth - 1, allow_approx=allow_approx)
        b = self.expr(shape, depth - 1, allow_approx=allow_approx)
        if a.lit and b.lit or a.dt == "bool" or b.dt == "bool":
            return None
        t = comp_type(a.dt, a.lit, b.dt, b.lit)
        for z in (a, b):
            if z.lit and is_int(t) and z.val is not None and (z.val < 0 and is_uns(t) or abs(z.val) > 127 and BITS[t] == 8):
                return None
        pn = ""
        if is_float(t) and self.r.random() < 0.2:
            pn = ", propagate_nan=tl.PropagateNan.ALL"
        return E(f"{f}({a.code}, {b.code}{pn})", t, bshape(a.shape, b.shape), max(a.approx, b.approx))

    def castop(self, shape, depth, allow_approx):
        d = self.ch("fp32", "fp16", "int32", "int8", "uint8", "int16")
        a = self.expr(shape, depth - 1, allow_approx=allow_approx and is_float(d))
        if a.lit:
            return None
        return E(f"{a.code}.to({TLNAME[d]})", d, a.shape, a.approx)

    def bitcast(self, shape, depth):
        pairs = {"fp32": "int32", "int32": "fp32", "fp16": "int16", "int16": "fp16", "int8": "uint8", "uint8": "int8"}
        a = self.expr(shape, depth - 1, allow_approx=False)
        if a.lit or a.dt not in pairs:
            return None
        d = pairs[a.dt]
        code = a.code
        if is_float(a.dt):
            # a NaN's sign and payload are unspecified (0/0 folded at compile time or computed at
            # run time differ), and so is the sign of a zero out of max/min: bitcasting would
            # expose them, so NaNs and zeros become +0 first
            code = f"tl.where(({code} != {code}) | ({code} == 0), 0.0, {code})"
        return E(f"{code}.to({TLNAME[d]}, bitcast=True)", d, a.shape)

    def unary(self, shape, depth, allow_approx):
        a = self.expr(shape, depth - 1, allow_approx=allow_approx)
        if a.lit or a.dt == "bool":
            return None
        k = self.r.random()
        if k < 0.5:
            return E(f"tl.abs({a.code})", a.dt, a.shape, a.approx)
        if k < 0.8:
            return E(f"(-{a.code})", a.dt, a.shape, a.approx)
        if is_int(a.dt):
            return E(f"(~{a.code})", a.dt, a.shape)
        return E(f"tl.sqrt(tl.abs({a.code}.to(tl.float32)))", "fp32", a.shape, a.approx)

    def mathop(self, shape, depth):
        a = self.expr(shape, depth - 1)
        if a.lit or a.dt == "bool":
            return None
        x = a.code if a.dt == "fp32" else f"{a.code}.to(tl.float32)"
        f = self.ch("exp", "log", "sqrt")
        if f == "exp":
            c = f"tl.exp(tl.minimum({x}, 30.0))"
        elif f == "log":
            c = f"tl.log(tl.abs({x}) + 0.5)"
        else:
            return E(f"tl.sqrt(tl.abs({x}))", "fp32", a.shape, a.approx)
        return E(c, "fp32", a.shape, True)

    def fmaop(self, shape, depth, allow_approx):
        d = self.ch("fp32", "fp16", "fp32")
        xs = [self.expr(shape, depth - 1, want=[d], allow_approx=allow_approx) for _ in range(3)]
        if all(x.lit for x in xs):
            return None
        # literals: make tensors of d
        cs = []
        for x in xs:
            if x.lit:
                cs.append(f"tl.full([], {float(x.val or 0)!r}, {TLNAME[d]})")
            else:
                cs.append(x.code)
        shp = "S"
        for x in xs:
            shp = bshape(shp, x.shape)
        return E(f"tl.fma({', '.join(cs)})", d, shp, max(x.approx for x in xs))

    # ---------------------------------------------------------------- statements
    def newvar(self, e, prefix="v"):
        """A statement ``v<i> = <e>``; the variable joins the pool (a literal becomes a typed
        ``tl.full`` scalar: a Python number has no ``.to``)."""
        name = f"{prefix}{self.nvar}"
        self.nvar += 1
        code = e.code
        if e.lit:
            code = f"tl.full([], {e.code}, {TLNAME[e.dt]})"
        self.lines.append(f"    {name} = {code}")
        ne = E(name, e.dt, e.shape, e.approx)
        self.vars.setdefault(e.shape, []).append(ne)
        return ne

