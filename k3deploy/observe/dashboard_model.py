"""The dashboard's panel model: a panel's queries and a target line. Pure; shared by dashboard.py and its canary row."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from k3deploy.observe.promql import Scope


@dataclass(frozen=True)
class PanelSpec:
    """One panel: its title, unit (a Grafana unit id) and (legend, expression) queries for a scope and window."""

    key: str
    title: str
    unit: str
    queries: Callable[[Scope, str], list[tuple[str, str]]]


@dataclass(frozen=True)
class Threshold:
    """A target line on a panel: `value`, and whether figures below it (else above it) are bad."""

    value: float
    below_is_bad: bool
