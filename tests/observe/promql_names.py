"""Metric names a PromQL expression reads, from the AST of PyPI promql-parser (a port of the Prometheus parser)."""

from __future__ import annotations

import promql_parser


def parse(expr: str) -> promql_parser.Expr:
    """The expression's AST; promql-parser raises ValueError on anything Prometheus would refuse."""
    return promql_parser.parse(expr)


def metric_names(expr: str) -> set[str]:
    """Every metric name a vector selector of `expr` names (matrix selectors included)."""
    names: set[str] = set()

    def visit(node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector) and node.name:
            names.add(node.name)

    promql_parser.walk(parse(expr), pre_visit=visit)
    return names


def family(name: str) -> str:
    """The metric family of an exposed series name: a histogram's _bucket/_sum/_count series are its own."""
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name
