"""One alerting rule of the PrometheusRule, and where its runbook is. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from k3deploy.kobject import JsonObject


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

    def rule(self, runbook_base_url: str) -> JsonObject:
        """The rule as the PrometheusRule CRD spells it; its runbook is `runbook_base_url` at the alert's anchor (the
        profile's observe.runbook_base_url: the documentation site's runbook page, or a mirror of it)."""
        rule: JsonObject = {"alert": self.name, "expr": self.expr, "for": self.for_}
        if self.keep_firing_for is not None:
            rule["keep_firing_for"] = self.keep_firing_for
        rule["labels"] = {"severity": self.severity}
        rule["annotations"] = {
            "summary": self.summary,
            "description": self.description,
            "runbook_url": f"{runbook_base_url}#{runbook_anchor(self.name)}",
        }
        return rule


def runbook_anchor(name: str) -> str:
    """The anchor of an alert's runbook on the runbook page: the site's slug of its heading `Runbook: <name>`."""
    return f"runbook-{name.lower()}"
