"""What Grafana does to a dashboard's queries before it sends them: the textbox variables' defaults substituted.

The tests run the dashboard's queries on a real Prometheus (tests/integration) and read their metric names; Grafana
itself does not run here, so this is its substitution of `$name` and `${name}` (VARIABLE_REGEX in Grafana's
public/app/features/variables/utils.ts matches `$var`, `[[var]]` and `${var}` with an optional format; k3deploy's
dashboard writes only the two plain forms, and a reference to a variable the dashboard does not define is left as it
is, as Grafana leaves it).
"""

from __future__ import annotations

import re
from typing import Any

_VARIABLE_REF = re.compile(r"\$\{(\w+)\}|\$(\w+)")


def interpolate(expr: str, values: dict[str, str]) -> str:
    """`$name` and `${name}` replaced by the variables' values, as Grafana does before it queries."""
    return _VARIABLE_REF.sub(lambda m: values.get(m.group(1) or m.group(2), m.group(0)), expr)


def variable_defaults(data: dict[str, Any]) -> dict[str, str]:
    """The textbox variables of a dashboard and their default values."""
    return {v["name"]: v["query"] for v in data.get("templating", {}).get("list", []) if v.get("type") == "textbox"}


def raw_panel_queries(data: dict[str, Any]) -> list[str]:
    """Every PromQL expression of a dashboard's panels, variables and all."""
    return [target["expr"] for panel in data.get("panels", []) for target in panel.get("targets", [])]


def panel_queries(data: dict[str, Any]) -> list[str]:
    """Every PromQL expression of a dashboard's panels as Grafana sends it with the variables at their defaults."""
    values = variable_defaults(data)
    return [interpolate(expr, values) for expr in raw_panel_queries(data)]
