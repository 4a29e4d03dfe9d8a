"""Trip extents: a ``minimum``/``maximum`` in a loop that picks the same operand on every trip
becomes that operand.

Guarantees: in a ``for`` loop with a positive constant step, a scalar signed-integer
``minimum(x, y)`` or ``maximum(x, y)`` in the body (also under its ``if``s, not in a nested loop)
whose operands are *affine in the induction variable* k -- computed from k, constants and values
defined outside the loop by ``add``, ``sub``, ``mul`` by a constant and widening integer ``cast`` --
is replaced by the operand it picks on every trip (the values and arithmetic of the chains 32-bit
at most, their coefficients bounded, so that the check below in 64 bits is exact), when the
launch's scalar arguments decide that it does (:func:`specialize.decide`: a guard is recorded, as Triton specializes on argument values;
without them nothing changes).  The check is exact: x - y is evaluated in 64-bit at the first and
the last trip (it is monotone in k in between), and so is every narrower value the two chains
compute (in its type's range at both ends, it wraps on no trip).  The loop must run at least once.
Results are unchanged.  Ops are visited in program order, so ``minimum(maximum(x, 0), F)`` goes
in two steps.

This is the K loop's tail mask of Triton's matmul idiom (``mask=offs_k[None, :] < K - k * BLOCK_K``):
memory analysis makes it the valid extent ``min(max(K - k*BK, 0), BK)``, which is BK on every trip
when BK divides K; the loop then computes no extent, pads nothing and issues no zero fill per trip.
"""
from __future__ import annotations

from tritonpu.codegen.homes import const_value
from tritonpu.ir import Function, Op
from tritonpu.ir import types as T
from tritonpu.passes.affine import Builder
from tritonpu.passes.manager import Pass, register
from tritonpu.passes.rewrite import replace_all_uses
from tritonpu.passes.specialize import decide, launch_value


class _Affine:
    """``c + k_coef * k + sum(coef * v)`` over loop-invariant values ``v`` (exact integers)."""

    def __init__(self, c=0, k=0, terms=None):
        self.c, self.k, self.terms = c, k, dict(terms or {})      # id(v) -> (v, coef)

    def scaled(self, f: int) -> "_Affine":
        return _Affine(self.c * f, self.k * f, {i: (v, a * f) for i, (v, a) in self.terms.items()})

    def plus(self, other: "_Affine") -> "_Affine":
        terms = dict(self.terms)
        for i, (v, a) in other.terms.items():
            terms[i] = (v, terms.get(i, (v, 0))[1] + a)
        return _Affine(self.c + other.c, self.k + other.k, terms)


# Bounds on a form's coefficients, so that evaluating it in 64 bits is exact: its terms are 32-bit
# values, at most _MAX_TERMS of them, each times at most _BIG_COEF, plus a constant under _BIG_CONST
_BIG_COEF, _BIG_CONST, _MAX_TERMS = 1 << 24, 1 << 40, 8


def _small(f: "_Affine") -> bool:
    return abs(f.c) < _BIG_CONST and abs(f.k) < _BIG_COEF and len(f.terms) <= _MAX_TERMS and \
        all(abs(a) < _BIG_COEF for _, a in f.terms.values())


def _signed_int(ty) -> bool:
    s = ty.scalar
    return not ty.is_block and s.is_int and not s.is_bool and s.is_signed


@register
class TripExtents(Pass):
    name = "trip-extents"

    def run(self, fn: Function) -> None:
        for loop in [o for o in fn.walk() if o.name == "for"]:
            self._loop(fn, loop)

    def _loop(self, fn: Function, loop: Op) -> None:
        lb, ub, step = loop.operands[:3]
        s = const_value(step)
        if not isinstance(s, int) or isinstance(s, bool) or s <= 0:
            return
        body = loop.regions[0]
        if not _signed_int(body.args[0].type) or body.args[0].type.scalar.bits > 32:
            return
        ops = list(_body_ops(body.ops))
        defs = {id(r): o for o in ops for r in o.results}
        decided: dict = {}          # the conditions asked already (the versions of one mask): answers
        for op in ops:
            if op.name not in ("minimum", "maximum") or not _signed_int(op.result.type):
                continue
            checks: list = []
            x, y = (self._form(v, body, defs, checks) for v in op.operands)
            if x is None or y is None:
                continue
            diff = x.plus(y.scaled(-1))
            if not _small(diff):
                continue
            # minimum picks y where x - y >= 0 on every trip, x where it is <= 0; maximum the other
            for sign, keep in ((1, 1), (-1, 0)):
                if op.name == "maximum":
                    keep = 1 - keep
                key = (_key(diff.scaled(sign)), tuple((_key(f), bits) for f, bits in checks))
                if key not in decided:
                    b = Builder(loop)
                    cond = self._everywhere(b, lb, ub, s, diff.scaled(sign), checks)
                    decided[key] = bool(launch_value(fn, b.ops, cond)) and bool(decide(fn, b.ops, cond))
                if decided[key]:
                    replace_all_uses(fn, [op.result], [op.operands[keep]])
                    break

    def _form(self, v, body, defs, checks):
        """``v`` as an :class:`_Affine` of the loop's induction variable, or None; the narrower
        values its chain computes go to ``checks`` as (form, bits)."""
        if v is body.args[0]:
            return _Affine(k=1)
        o = defs.get(id(v))
        if o is None:
            if any(v is a for a in body.args) or not _signed_int(v.type) or v.type.scalar.bits > 32:
                return None             # a carried value, not a signed integer, or a 64-bit one
            return _Affine(terms={id(v): (v, 1)})
        if len(o.results) != 1 or not _signed_int(v.type):
            return None                 # (one of an ``if``'s or a loop's results: not affine here)
        if o.name == "constant":
            c = o.attrs["value"]
            return _Affine(c) if isinstance(c, int) and not isinstance(c, bool) and abs(c) < _BIG_CONST else None
        if o.name == "cast":
            src = o.operands[0]
            if not _signed_int(src.type) or src.type.scalar.bits > o.result.type.scalar.bits:
                return None
            return self._form(src, body, defs, checks)
        if o.result.type.scalar.bits > 32:
            return None                 # 64-bit arithmetic: checked in 64 bits, it could wrap unseen
        if o.name in ("add", "sub"):
            a, b = (self._form(w, body, defs, checks) for w in o.operands)
            if a is None or b is None:
                return None
            out = a.plus(b if o.name == "add" else b.scaled(-1))
        elif o.name == "mul":
            consts = [const_value(w) for w in o.operands]
            k = next((i for i, c in enumerate(consts) if isinstance(c, int) and not isinstance(c, bool)), None)
            if k is None:
                return None
            a = self._form(o.operands[1 - k], body, defs, checks)
            if a is None:
                return None
            out = a.scaled(consts[k])
        else:
            return None
        if not _small(out):
            return None
        checks.append((out, o.result.type.scalar.bits))
        return out

    @staticmethod
    def _everywhere(b: Builder, lb, ub, step: int, form: _Affine, checks):
        """An i1: the loop runs, ``form >= 0`` at its first and last trip, and every checked
        value is in its type's range there (64-bit arithmetic: exact for 32-bit values)."""
        def i64(v):
            return b.cast(v, T.i64)

        def at(f: _Affine, k):
            out = b.add(b.mul(k, f.k), f.c)
            for v, a in f.terms.values():
                out = b.add(out, b.mul(i64(v), a))
            return b.cast(out, T.i64)

        def cmp(a, pred, c):
            return b.op("cmp", [a, b.value(c, T.i64)], T.i1, pred=pred)

        first, last_ub = i64(lb), i64(ub)
        trips = b.op("div", [b.sub(b.sub(last_ub, first), 1), b.value(step, T.i64)], T.i64)
        last = b.add(first, b.mul(trips, step))
        cond = b.op("cmp", [first, last_ub], T.i1, pred="lt")
        for k in (first, last):
            cond = b.op("and", [cond, cmp(at(form, k), "ge", 0)], T.i1)
            for f, bits in checks:
                v = at(f, k)
                cond = b.op("and", [cond, cmp(v, "ge", -(1 << (bits - 1)))], T.i1)
                cond = b.op("and", [cond, cmp(v, "le", (1 << (bits - 1)) - 1)], T.i1)
        return cond


def _key(f: _Affine) -> tuple:
    return f.c, f.k, tuple(sorted((i, a) for i, (_, a) in f.terms.items() if a))


def _body_ops(ops):
    """The ops of a loop body in program order, into ``if``s, not into nested loops."""
    for o in ops:
        yield o
        if o.name == "if":
            for r in o.regions:
                yield from _body_ops(r.ops)
