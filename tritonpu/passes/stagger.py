"""Software pipelining of dot -> vector -> dot loops: a trip's second half overlaps the next trip's first.

Guarantees: a ``for`` loop with a positive step whose top-level body (no nested regions) splits
into two stages is rewritten so that each pass of the new loop runs stage 0 of trip i+1 and then
stage 1 of trip i.  Stage 1 is the recurrence of one carried block value X (the ops that depend
on X's region argument: FlashAttention's ``acc = acc * alpha + dot(p, v)``) together with the
dots, tile loads, views and scalar ops whose only uses are in stage 1; stage 0 is the rest, and
nothing in it may depend on stage 1.  The split is used only when each stage holds a dot and
stage 0 holds block work for the vector unit, so the cube computes trip i+1's scores while the
vector unit still works on trip i.  Values stage 0 of a trip makes for stage 1 of the same trip
(``p``, ``alpha``; the trip's carried scalars) are carried one pass further.  Every trip still
computes exactly what it did, in the same order per value (results are bitwise unchanged): the
prologue runs stage 0 of the first trip, each pass stage 0 of trip i+1 and stage 1 of trip i, the
epilogue stage 1 of the last trip; a loop that runs no trip runs nothing.  When the carried
values do not fit on chip the loop is left as it was and marked ``{stagger = "off: ..."}``.
"""
from __future__ import annotations

from tritonpu.errors import CompilationError
from tritonpu.ir import Function, Op, Region, Value
from tritonpu.ir import types as T
from tritonpu.ir.ops import TILE_LOADS
from tritonpu.passes.manager import Pass, register
from tritonpu.passes.rewrite import clone, clone_op, positive_step, replace_all_uses

_VIEWS = ("expand_dims", "broadcast", "reshape", "permute", "splat")


def _split(body: Region, x: int):
    """(stage-0 ops, stage-1 ops, cross values) when carried value ``x`` (index into the iter
    args) heads a recurrence that splits the body into two stages; else None."""
    ops = body.ops[:-1]
    term = body.terminator
    arg = body.args[1 + x]
    if not arg.type.is_block or any(o.regions for o in ops):
        return None
    stage1, seen = [], {id(arg)}
    for o in ops:                        # the forward slice of X
        if any(id(v) in seen for v in o.operands):
            stage1.append(o)
            seen.update(id(r) for r in o.results)
    if not stage1 or any(o.opdef.effects for o in stage1):
        return None
    in1 = {id(o) for o in stage1}
    users: dict = {}
    for o in ops + [term]:
        for i, v in enumerate(o.operands):
            users.setdefault(id(v), []).append((o, i))
    # nothing outside the slice may read it, but X's own yield
    for o in stage1:
        for r in o.results:
            for u, i in users.get(id(r), []):
                if id(u) not in in1 and not (u is term and i == x):
                    return None
    # pull in what only stage 1 reads: its dots, tile loads, views and scalar arithmetic
    changed = True
    while changed:
        changed = False
        for o in reversed(ops):
            if id(o) in in1 or not o.results:
                continue
            pullable = o.name == "dot" or o.name in TILE_LOADS or o.name in _VIEWS or \
                (not o.results[0].type.is_block and not o.opdef.effects and o.name not in ("program_id",
                                                                                       "num_programs"))
            uses = [u for r in o.results for u, _ in users.get(id(r), [])]
            if pullable and uses and all(id(u) in in1 for u in uses):
                in1.add(id(o))
                changed = True
    stage1 = [o for o in ops if id(o) in in1]
    stage0 = [o for o in ops if id(o) not in in1]
    if not any(o.name == "dot" for o in stage1) or not any(o.name == "dot" for o in stage0) or \
            not any(o.results and o.results[0].type.is_block and o.name not in TILE_LOADS + ("dot",) + _VIEWS
                    for o in stage0):
        return None
    made0 = {id(r) for o in stage0 for r in o.results}
    cross: list = []
    for o in stage1:
        for v in o.operands:
            crosses = id(v) in made0 or (v.owner is None and any(v is a for a in body.args[1:]) and v is not arg)
            if crosses and all(v is not c for c in cross):
                cross.append(v)
    # stage 0 must not read stage 1, nor X
    made1 = {id(r) for o in stage1 for r in o.results} | {id(arg)}
    if any(id(v) in made1 for o in stage0 for v in o.operands):
        return None
    if any(id(v) in made1 for i, v in enumerate(term.operands) if i != x):
        return None
    return stage0, stage1, cross


@register
class Stagger(Pass):
    name = "stagger"

    def run(self, fn: Function) -> None:
        for op in reversed([o for o in fn.walk() if o.name == "for"]):
            if op.attrs.get("stagger") or not positive_step(op.operands[2]):
                continue
            body = op.regions[0]
            for x in range(len(body.args) - 1):
                split = _split(body, x)
                if split is not None:
                    self._apply(fn, op, x, *split)
                    break

    def _apply(self, fn: Function, op: Op, x: int, stage0: list, stage1: list, cross: list) -> None:
        from tritonpu.passes.buffer_planning import trial_plan
        region = op.parent
        saved = list(region.ops)
        prelude, new = self._rewrite(op, x, stage0, stage1, cross)
        replace_all_uses(fn, op.results, new.results)
        i = region.ops.index(op)
        region.ops[i:i + 1] = prelude + [new]
        for o in region.ops:
            o.parent = region
        try:
            trial_plan(fn)
        except CompilationError as e:
            region.ops = saved
            replace_all_uses(fn, new.results, op.results)
            reason = str(e).split("error: ", 1)[-1].split(" at once")[0]
            op.attrs["stagger"] = f"off: {reason} with the stages' values carried"

    def _rewrite(self, op: Op, x: int, stage0: list, stage1: list, cross: list) -> tuple:
        """(ops before it, the `if` that replaces the loop)."""
        lb, ub, step = op.operands[:3]
        inits = op.operands[3:]
        body = op.regions[0]
        iv, *iters = body.args
        term = body.terminator
        loc = op.loc
        n = len(iters)
        rest = [i for i in range(n) if i != x]

        def mk(name, operands, ty, into, **attrs):
            o = Op(name, operands, [ty], attrs, loc=loc)
            into.append(o)
            return o.result

        def run0(at, vals, into):
            """Stage 0 of trip ``at`` with carried values ``vals``: (next carried values but X, cross values)."""
            m = {id(iv): at, **{id(a): v for a, v in zip(iters, vals)}}
            clone(stage0, m, into)
            return [m.get(id(term.operands[i]), term.operands[i]) for i in rest], \
                [m.get(id(c), c) for c in cross]

        def run1(at, xv, crossv, into):
            """Stage 1 of trip ``at``: X's next value."""
            m = {id(iv): at, id(iters[x]): xv, **{id(c): v for c, v in zip(cross, crossv)}}
            clone(stage1, m, into)
            y = term.operands[x]
            return m.get(id(y), y)

        prelude: list = []
        ok = mk("cmp", [lb, ub], T.i1, prelude, pred="lt")
        # then-branch: prologue, the staggered loop, epilogue
        then: list = []
        # a splatted constant that starts X is made again next to the loop, so that the loop
        # builds its carried tile in place (and the branch with no trip makes its own)
        starts = list(inits)
        for j, v in enumerate(inits):
            if v.type.is_block and v.owner is not None and v.owner.name in ("splat", "constant"):
                c = clone_op(v.owner, {})
                then.append(c)
                starts[j] = c.result
        nxt0, cross0 = run0(lb, starts, then)
        last = mk("sub", [ub, step], ub.type, then)
        liv = Value(iv.type, iv.name)
        lrest = [Value(iters[i].type, iters[i].name) for i in rest]
        lx = Value(iters[x].type, iters[x].name)
        lcross = [Value(c.type, c.name) for c in cross]
        lbody: list = []
        at1 = mk("add", [liv, step], liv.type, lbody)
        vals = [None] * n
        for i, v in zip(rest, lrest):
            vals[i] = v
        vals[x] = lx
        nrest, ncross = run0(at1, vals, lbody)
        nx = run1(liv, lx, lcross, lbody)
        lbody.append(Op("yield", nrest + [nx] + ncross, [], loc=loc))
        lregion = Region([liv] + lrest + [lx] + lcross, lbody)
        for o in lbody:
            o.parent = lregion
        loop = Op("for", [lb, last, step] + nxt0 + [starts[x]] + cross0,
                  [v.type for v in lrest] + [lx.type] + [c.type for c in lcross], dict(op.attrs), [lregion], loc)
        loop.attrs["stagger"] = "on"
        then.append(loop)
        # the last trip's stage 1: iv = lb + (trips - 1) * step
        span = mk("sub", [ub, lb], lb.type, then)
        one = mk("constant", [], lb.type, then, value=1)
        trips = mk("div", [mk("add", [span, mk("sub", [step, one], lb.type, then)], lb.type, then), step],
                   lb.type, then)
        at_last = mk("add", [lb, mk("mul", [mk("sub", [trips, one], lb.type, then), step], lb.type, then)],
                     lb.type, then)
        r_rest = loop.results[:len(rest)]
        r_x = loop.results[len(rest)]
        r_cross = loop.results[len(rest) + 1:]
        fx = run1(at_last, r_x, list(r_cross), then)
        outs = [None] * n
        for i, v in zip(rest, r_rest):
            outs[i] = v
        outs[x] = fx
        then.append(Op("yield", outs, [], loc=loc))
        # no trip: the initial values -- a splatted constant made again in the branch, so that
        # the loop can build its carried tile in place from the original
        orelse: list = []
        fallback = []
        for v in inits:
            if v.type.is_block and v.owner is not None and v.owner.name in ("splat", "constant") and \
                    not v.owner.regions:
                v = clone_op(v.owner, {})
                orelse.append(v)
                v = v.result
            fallback.append(v)
        regions = [Region([], then), Region([], orelse + [Op("yield", fallback, [], loc=loc)])]
        for r in regions:
            for o in r.ops:
                o.parent = r
        guard = Op("if", [ok], [a.type for a in iters], regions=regions, loc=loc)
        for a, b in zip(op.results, guard.results):
            b.name = a.name
        return prelude, guard
