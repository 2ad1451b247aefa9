"""One alerting rule of the PrometheusRule, and where its runbook is. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from k3deploy import __version__
from k3deploy.kobject import JsonObject

#: Where the runbooks live: the README of the release that rendered the rule, one anchor per alert.
RUNBOOK_BASE = f"https://github.com/k3deploy/k3deploy/blob/v{__version__}/README.md"


@dataclass(frozen=True)
class Alert:
    """One alerting rule; `keep_firing_for` holds a firing alert through brief dips of its condition."""

    name: str
    expr: str
    for_: str
    severity: str
    summary: str
    description: str
    keep_firing_for: str | None = None

    def rule(self) -> JsonObject:
        """The rule as the PrometheusRule CRD spells it."""
        rule: JsonObject = {"alert": self.name, "expr": self.expr, "for": self.for_}
        if self.keep_firing_for is not None:
            rule["keep_firing_for"] = self.keep_firing_for
        rule["labels"] = {"severity": self.severity}
        rule["annotations"] = {
            "summary": self.summary,
            "description": self.description,
            "runbook_url": f"{RUNBOOK_BASE}#{runbook_anchor(self.name)}",
        }
        return rule


def runbook_anchor(name: str) -> str:
    """The README anchor of an alert's runbook: GitHub's slug of the heading `Runbook: <name>`."""
    return f"runbook-{name.lower()}"
