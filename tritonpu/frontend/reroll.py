"""Re-rolling an unrolled ``tl.static_range`` loop whose trips load memory into one ``for`` op.

Triton unrolls ``tl.static_range``: the frontend generates the body once per trip, the loop
variable a constexpr.  Straight-line trips that load tiles lose what the compiler does for loops
-- double buffering, the next trip's loads issued during this trip's work, L1 panels -- and
their tiles, each dead after its trip, share one buffer, so every load waits for the previous
trip's tile to be read (a static_range K loop of a matmul: 1.47x the cycles of ``range``).

When the trips are copies of one another the unrolled code *is* a loop: every trip generated
the same ops (names, attributes, result types, nested regions), and each operand is, in every
trip, the same value from outside the trips, the op at the same place in its own trip, or -- a
carried value -- the first trip reads a value from outside where each later trip reads one op
of the trip before.  The only differences allowed are integer constants ``c0 + t*d`` (``t`` the
trip): the loop computes them from its variable.  :func:`reroll` then builds the body of a
``for`` over the same range from the first trip's ops.

Guarantee: the loop runs exactly the unrolled ops, trip after trip, on the same values (an
integer constant recomputed in its own type is the same integer), so every backend computes
bit for bit what the unrolled code computed.  Anything else -- trips that differ in structure
(the loop variable used as a constexpr), a float constant that differs, a value of an earlier
trip than the one before, a value a trip makes that is read after the loop and is not carried,
a trip without a load (straight-line arithmetic gains nothing from a loop) -- returns None and
the unrolled code stays.
"""
from __future__ import annotations

from dataclasses import dataclass

from tritonpu.ir import Op, Region, Value


@dataclass
class Rolled:
    body: Region        # region args: the loop variable, then one per carried value
    inits: list         # each carried value's value before the loop
    results: dict       # a value of the last trip read after the loop -> index of the loop result


def _numbered(trip: list[Op]) -> tuple[list[Op], dict]:
    """The trip's ops in program order (nested ones too), and each value it defines -> a key
    that names its place in the trip."""
    flat = [op for top in trip for op in top.walk()]
    keys = {}
    for j, op in enumerate(flat):
        for r in op.results:
            keys[r] = (j, r.index)
        for ri, region in enumerate(op.regions):
            for ai, a in enumerate(region.args):
                keys[a] = (j, "arg", ri, ai)
    return flat, keys


def _alike(a: Op, b: Op) -> bool:
    """Whether two ops are the same op up to their operands and a constant's value."""
    if a.name != b.name or len(a.operands) != len(b.operands) or len(a.regions) != len(b.regions):
        return False
    if [r.type for r in a.results] != [r.type for r in b.results]:
        return False
    if any([x.type for x in ra.args] != [x.type for x in rb.args] or len(ra.ops) != len(rb.ops)
           for ra, rb in zip(a.regions, b.regions)):
        return False
    if a.name == "constant":
        return set(a.attrs) == set(b.attrs) and all(a.attrs[k] == b.attrs[k] for k in a.attrs if k != "value")
    return a.attrs == b.attrs


def _affine(values: list) -> tuple[int, int] | None:
    """(c0, d) when the trips' values are c0 + t*d, integers (not bools)."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return None
    c0, d = values[0], values[1] - values[0]
    return (c0, d) if all(v == c0 + t * d for t, v in enumerate(values)) else None


def reroll(trips: list[list[Op]], start: int, step: int, iv: Value, live_out: list) -> Rolled | None:
    """The body of a loop over ``range(start, ..., step)`` (``step`` > 0, variable ``iv``) that runs
    the unrolled ``trips`` (the top-level ops each trip generated, in order), or None.
    ``live_out``: the values read after the loop; those a trip defines must be carried values of
    the last trip."""
    n = len(trips)
    if n < 2 or step <= 0:
        return None
    numbered = [_numbered(t) for t in trips]
    flats = [f for f, _ in numbered]
    keys = [k for _, k in numbered]
    first = flats[0]
    if any(len(f) != len(first) for f in flats) or not any(op.name == "load" for op in first):
        return None
    tops = {id(op) for op in trips[0]}
    top = {j for j, op in enumerate(first) if id(op) in tops}
    varying = {}                        # place of a constant that differs per trip -> (c0, d)
    for j, op in enumerate(first):
        if not all(_alike(op, f[j]) for f in flats[1:]):
            return None
        if op.name == "constant":
            values = [f[j].attrs["value"] for f in flats]
            if any(v != values[0] or type(v) is not type(values[0]) for v in values[1:]):
                ty = op.results[0].type
                cd = _affine(values)
                if cd is None or ty.is_block or ty.is_ptr or not ty.is_int or ty.is_bool or not ty.is_signed:
                    return None
                varying[j] = cd
    carries: dict = {}                  # (initial value, key of the yielded value) -> index
    slots = []                          # (op of the first trip, operand index, carry index)
    for j, op in enumerate(first):
        for i, v0 in enumerate(op.operands):
            vs = [f[j].operands[i] for f in flats]
            k0 = keys[0].get(v0)
            if k0 is not None:          # made in its own trip, in every trip at the same place
                if any(keys[t].get(v) != k0 for t, v in enumerate(vs)):
                    return None
                continue
            if all(v is v0 for v in vs):
                continue                # the same value from outside in every trip
            k = keys[0].get(vs[1])      # carried: each later trip reads one op of the trip before
            if k is None or k[1] == "arg" or k[0] not in top or \
                    any(keys[t - 1].get(vs[t]) != k for t in range(1, n)) or first[k[0]].results[k[1]].type != v0.type:
                return None
            slots.append((op, i, carries.setdefault((v0, k), len(carries))))
    last = keys[-1]
    results = {}
    for v in live_out:
        if any(v in k for k in keys[:-1]):
            return None
        if v in last:
            idx = next((c for (_, k), c in carries.items() if k == last[v]), None)
            if idx is None:
                return None
            results[v] = idx
    # build: the first trip's ops, carried operands read the region's arguments
    order = sorted(carries, key=carries.get)
    args = [Value(v0.type, v0.name) for v0, _ in order]
    body = Region([iv] + args)
    for op, i, c in slots:
        op.operands[i] = args[c]
    body.ops = list(trips[0])
    for op in body.ops:
        op.parent = body
    for j, (c0, d) in varying.items():
        _from_iv(first[j], c0, d, start, step, iv)
    loc = trips[0][-1].loc
    yielded = [first[k[0]].results[k[1]] for _, k in order]
    term = Op("yield", yielded, [], loc=loc)
    term.parent = body
    body.ops.append(term)
    return Rolled(body, [v0 for v0, _ in order], results)


def _from_iv(const: Op, c0: int, d: int, start: int, step: int, iv: Value) -> None:
    """Replace the constant ``const`` of trip t (value ``c0 + t*d``) by ops computing it from the
    loop variable ``iv`` = start + t*step: ``iv*m + b`` when step divides d, else
    ``c0 + (iv - start) / step * d``; in the wider of the two types, converted to the constant's."""
    region, ty, loc = const.parent, const.results[0].type, const.loc
    ops: list[Op] = []

    def emit(name, operands, t, **attrs):
        op = Op(name, operands, [t], attrs, loc=loc)
        op.parent = region
        ops.append(op)
        return op.results[0]

    wide = ty if ty.bits > iv.type.bits else iv.type
    x = iv if iv.type == wide else emit("cast", [iv], wide)
    if d % step == 0:
        m, b = d // step, c0 - start * (d // step)
        if m != 1:
            x = emit("mul", [x, emit("constant", [], wide, value=m)], wide)
        if b != 0:
            x = emit("add", [x, emit("constant", [], wide, value=b)], wide)
    else:
        if start != 0:
            x = emit("sub", [x, emit("constant", [], wide, value=start)], wide)
        x = emit("div", [x, emit("constant", [], wide, value=step)], wide)
        x = emit("mul", [x, emit("constant", [], wide, value=d)], wide)
        if c0 != 0:
            x = emit("add", [x, emit("constant", [], wide, value=c0)], wide)
    if x.type != ty:
        x = emit("cast", [x], ty)
    at = region.ops.index(const)
    region.ops[at:at + 1] = ops
    old = const.results[0]
    for op in region.ops[at + len(ops):]:
        for o in op.walk():
            o.operands = [x if v is old else v for v in o.operands]
