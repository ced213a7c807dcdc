"""The order nvFuser walks a fusion in: ``Fusion::exprs()``, which is ``StmtSort`` over
``IterVisitor::traverseBetween`` (``csrc/iter_visitor.cpp``): a depth-first walk from the
terminating outputs (in order), each expr after its inputs (left to right), each val after
its definition. nvFuser's printer writes a definition in this order (``frontend.translate``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from fusecli.ir.nodes import Expr, Fusion, Val, Vector
from fusecli.ir.optype import OpType

Node = TypeVar("Node")


def post_order(roots: Iterable[Node], children: Callable[[Node], Sequence[Node]]) -> list[Node]:
    """Every node reachable from ``roots``, each after its children (left to right); without
    recursion, for fusions thousands of exprs deep."""
    visited: set[int] = set()
    order: list[Node] = []
    for root in roots:
        if id(root) in visited:
            continue
        stack = [(root, iter(children(root)))]
        while stack:
            node, pending = stack[-1]
            child = next((c for c in pending if id(c) not in visited), None)
            if child is not None:
                stack.append((child, iter(children(child))))
                continue
            stack.pop()
            if id(node) not in visited:
                visited.add(id(node))
                order.append(node)
    return order


def operands(expr: Expr) -> list[Val]:
    """An expr's inputs, a vector standing for its elements."""
    found: list[Val] = []
    for value in expr.inputs:
        found.extend(value.elements if isinstance(value, Vector) else [value])
    return found


def terminating_outputs(fusion: Fusion) -> list[Val]:
    """Outputs that no other output depends on (``Fusion::getTerminatingOutputs``)."""
    outputs = {id(v) for v in fusion.output_values}
    feeds_output: set[int] = set()
    for expr in reversed(fusion.exprs):
        if any(id(o) in outputs or id(o) in feeds_output for o in expr.outputs):
            feeds_output.update(id(v) for v in operands(expr))
    found: dict[int, Val] = {}
    for value in fusion.output_values:
        if id(value) not in feeds_output:
            found.setdefault(id(value), value)
    return list(found.values())


def walk_positions(fusion: Fusion) -> dict[int, int]:
    """Each expr's place (by uid) in nvFuser's ``Fusion::exprs()`` order (above), where its
    segmenter makes its first groups and their edges in. A ``size`` reads no tensor in this
    walk: in nvFuser it is an extent, the input's, not an op on the tensor it was asked of.
    Exprs no output needs are not placed."""
    definition = {id(out): e for e in fusion.exprs for out in e.outputs}

    def children(node: Expr | Val) -> Sequence[Expr | Val]:
        if isinstance(node, Expr):
            return [] if node.op is OpType.size else operands(node)
        found = definition.get(id(node))
        return [found] if found is not None else []

    walked = post_order(terminating_outputs(fusion), children)
    exprs = [node for node in walked if isinstance(node, Expr)]
    return {expr.uid: index for index, expr in enumerate(exprs)}


def in_dependency_order(exprs: Sequence[Expr]) -> tuple[Expr, ...]:
    """``exprs`` in their order, except that each comes after the exprs among them that make
    what it reads: a producer found later is moved to just before its first reader (a rewrite
    that rewires a reader to a value made further down)."""
    produced_by = {out.uid: e for e in exprs for out in e.outputs}

    def producers(expr: Expr) -> list[Expr]:
        return [produced_by[v.uid] for v in expr.inputs if v.uid in produced_by]

    return tuple(post_order(exprs, producers))
