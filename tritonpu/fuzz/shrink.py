"""Shrinking a failing case to a small kernel that still fails the same way.

``shrink(case, run, category)`` keeps a candidate when checking it on the reference and on ``run``
alone still gives ``category`` on ``run`` (``"mismatch"``, ``"internal"``, ...).  Three kinds of
step, repeated until none helps or the time budget is spent:

1. delete a statement (outputs no longer stored are dropped from the signature and the recipe);
2. replace an expression by one of its operands (never inside the addressing, the masks, a
   denominator or a shift amount: that is what keeps the kernel free of undefined behaviour);
3. make the recipe smaller: fewer programs, smaller blocks, unit loop trip counts, no padding.
"""
from __future__ import annotations

import ast
import re
import time

from .differential import BASE_RUNS, REF, VARIANTS, check_case
from .generate import Case

_KEEP_NAMES = ("pid", "rows", "cols", "offs", "mask", "rm", "rn", "rk")


def still_fails(case: Case, run, category: str) -> bool:
    """Whether ``case`` fails with ``category`` on ``run`` (the reference must run it)."""
    try:
        v = check_case(case, runs=[run], timeout=60)
    except Exception:               # noqa: BLE001 - a candidate that breaks the checker is no use
        return False
    if v.rejected or any(o.run == REF.name for o in v.outcomes):
        return False
    return any(o.run == run.name and o.category == category for o in v.outcomes)


def _drop_unused_outputs(tree, meta):
    """Remove ``o{i}_ptr`` parameters no statement stores to any more (elementwise cases)."""
    if meta.get("dot") or meta.get("atomic"):
        return tree, meta
    fn = tree.body[0]
    body = "\n".join(ast.unparse(s) for s in fn.body)
    used = [i for i in range(len(meta["outs"])) if re.search(rf"\bo{i}_ptr\b", body)]
    if len(used) == len(meta["outs"]) or not used:
        return tree, meta
    meta = dict(meta, outs=[meta["outs"][i] for i in used])
    ren = {f"o{i}_ptr": f"o{j}_ptr" for j, i in enumerate(used)}

    class Rename(ast.NodeTransformer):
        def visit_Name(self, n):
            n.id = ren.get(n.id, n.id)
            return n
    fn.args.args = [a for a in fn.args.args if not re.fullmatch(r"o\d+_ptr", a.arg) or a.arg in ren]
    for a in fn.args.args:
        a.arg = ren.get(a.arg, a.arg)
    Rename().visit(fn)
    return tree, meta


def _protected(fn) -> set:
    """ids of the nodes step 2 must leave alone."""
    ids = set()

    def keep(node):
        ids.update(id(m) for m in ast.walk(node))
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id in _KEEP_NAMES for t in n.targets):
            keep(n.value)
        elif isinstance(n, ast.BinOp) and isinstance(n.op, (ast.LShift, ast.RShift, ast.FloorDiv, ast.Mod)):
            keep(n.right)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr in ("load", "store") or n.func.attr.startswith("atomic_"):
                if n.args:
                    keep(n.args[0])
                for kw in n.keywords:
                    if kw.arg == "mask":
                        keep(kw.value)
            elif n.func.attr in ("rand", "randint", "full", "zeros", "arange"):
                keep(n)
            elif n.func.attr == "broadcast_to":       # the shape stays, the value may shrink
                for a in n.args[1:]:
                    keep(a)
        elif isinstance(n, ast.For):
            keep(n.iter)
    return ids


def _stmt_lists(fn) -> list:
    out = [fn.body]
    for n in ast.walk(fn):
        for f in ("body", "orelse"):
            lst = getattr(n, f, None)
            if n is not fn and isinstance(lst, list) and lst:
                out.append(lst)
    return out


def _src(tree) -> str:
    return ast.unparse(tree) + "\n"


def _delete_statements(best: Case, ok, deadline) -> Case:
    fn = ast.parse(best.source).body[0]
    spots = [(li, j) for li, lst in enumerate(_stmt_lists(fn)) for j in range(len(lst))]
    for li, j in reversed(spots):
        if time.monotonic() > deadline:
            break
        tree = ast.parse(best.source)
        lists = _stmt_lists(tree.body[0])
        if li >= len(lists) or j >= len(lists[li]) or len(lists[li]) == 1:
            continue
        del lists[li][j]
        tree, meta = _drop_unused_outputs(tree, best.meta)
        cand = Case(best.seed, _src(tree), meta)
        if ok(cand):
            best = cand
    return best


def _hoist_operands(best: Case, ok, deadline) -> Case:
    k = 0
    while time.monotonic() < deadline:
        tree = ast.parse(best.source)
        nodes = [n for n in ast.walk(tree.body[0]) if isinstance(n, ast.expr)]
        if k >= len(nodes):
            break
        node, prot = nodes[k], _protected(tree.body[0])
        k += 1
        if id(node) in prot:
            continue
        kids = list(node.args) if isinstance(node, ast.Call) else [
            c for c in ast.iter_child_nodes(node)
            if isinstance(c, ast.expr) and not isinstance(c, ast.Attribute)
            and not (isinstance(c, ast.Name) and c.id == "tl")]
        for c in kids:
            t2 = ast.parse(best.source)
            all2 = [n for n in ast.walk(t2.body[0]) if isinstance(n, ast.expr)]
            target, repl = all2[k - 1], all2[nodes.index(c)]

            class Replace(ast.NodeTransformer):
                def visit(self, n):
                    return repl if n is target else super().visit(n)
            cand = Case(best.seed, _src(Replace().visit(t2)), best.meta)
            if cand.source != best.source and ok(cand):
                best, k = cand, 0
                break
    return best


def _smaller_recipes(meta: dict):
    """Candidate recipes, each one step smaller than ``meta``."""
    if meta.get("dot"):
        for key, vals in (("G", [1]), ("BM", [16]), ("BN", [16]), ("BK", [16])):
            for v in vals:
                if meta[key] > v:
                    m = dict(meta, **{key: v})
                    m["M"] = min(m["M"], m["G"] * m["BM"])
                    m["N"] = min(m["N"], m["BN"])
                    yield m
        return
    if meta.get("atomic"):
        for v in (1, 2):
            if meta["G"] > v:
                yield dict(meta, G=v, n=min(meta["n"], v * meta["BM"]))
        if meta["BM"] > 16:
            yield dict(meta, BM=16, n=min(meta["n"], meta["G"] * 16), K=min(meta["K"], meta["G"] * 16))
        return
    for key, vals in (("G", [1, 2]), ("BM", [16, 32, 64]), ("BN", [16, 32, 64]), ("t", [0, 2])):
        for v in vals:
            if key in meta and meta[key] is not None and meta[key] > v and not (key == "BN" and not meta["two_d"]):
                m = dict(meta, **{key: v})
                m["rows_alloc"] = m["G"] * m["BM"]
                m["n"] = max(min(m["n"], m["rows_alloc"]), min(2, m["rows_alloc"]))
                if m["two_d"]:
                    m["m"] = min(m["m"], m["BN"])
                    m["stride"] = max(m["BN"], min(m["stride"], m["BN"] + 8))
                yield m
    if meta["two_d"] and meta["stride"] != meta["BN"]:
        yield dict(meta, stride=meta["BN"])
    if meta["n"] != meta["rows_alloc"]:
        yield dict(meta, n=meta["rows_alloc"])


def shrink(case: Case, run_name: str, category: str, budget: float = 300.0, log=None) -> Case:
    """The smallest variant of ``case`` found within ``budget`` seconds that still fails with
    ``category`` on the run named ``run_name`` (``case`` itself if nothing smaller fails)."""
    run = next(r for r in BASE_RUNS + VARIANTS if r.name == run_name)
    deadline = time.monotonic() + budget

    def ok(c):
        return still_fails(c, run, category)
    if not ok(case):
        return case
    best = case
    while time.monotonic() < deadline:
        before = (best.source, repr(best.meta))
        best = _delete_statements(best, ok, deadline)
        best = _hoist_operands(best, ok, deadline)
        for meta in _smaller_recipes(best.meta):
            if time.monotonic() > deadline:
                break
            cand = Case(best.seed, best.source, meta)
            if ok(cand):
                best = cand
                break
        if log:
            log(f"shrink: {len(best.source.splitlines())} lines")
        if (best.source, repr(best.meta)) == before:
            break
    return best
