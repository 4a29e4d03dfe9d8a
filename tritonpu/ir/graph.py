"""A networkx view of a function's dataflow graph, for analyses.

Nodes are ops (keyed by the op object) with attributes ``name`` and ``loc``; an edge ``a -> b``
means a result of ``a`` is an operand of ``b`` (attribute ``value``: the Value). Function and
region arguments appear as nodes of kind ``arg``. Ops inside regions are included; an op that
uses a value from an enclosing scope gets the edge as well, and each region op has an edge from
its parent (``kind="region"``), so reachability follows control nesting too.
"""
from __future__ import annotations

import networkx as nx

from tritonpu.ir.core import Function, Op, Value


def dataflow_graph(fn: Function) -> nx.MultiDiGraph:
    g = nx.MultiDiGraph()
    producer: dict[int, object] = {}

    def add_arg(v: Value):
        node = ("arg", id(v))
        g.add_node(node, name="arg", value=v)
        producer[id(v)] = node

    for a in fn.args:
        add_arg(a)
    for op in fn.walk():
        g.add_node(op, name=op.name, loc=op.loc)
        for region in op.regions:
            for a in region.args:
                add_arg(a)
                g.add_edge(op, producer[id(a)], kind="region")
        for v in op.operands:
            g.add_edge(producer[id(v)], op, value=v, kind="data")
        for r in op.results:
            producer[id(r)] = op
        if op.parent is not None and op.parent.parent is not None:
            g.add_edge(op.parent.parent, op, kind="region")
    return g


def users(fn: Function) -> dict[int, list[Op]]:
    """id(value) -> ops that use it, in program order."""
    out: dict[int, list[Op]] = {}
    for op in fn.walk():
        for v in op.operands:
            out.setdefault(id(v), []).append(op)
    return out
