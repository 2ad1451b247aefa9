"""The PrometheusRule's alerts of a deployment: each a `observe.promql` expression against the profile's targets,
with a summary, a description and a link to its runbook paragraph in the README. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from k3deploy import __version__
from k3deploy.observe import promql
from k3deploy.observe.dashboard import KV_CACHE_LIMIT
from k3deploy.observe.scope import profile_scope
from k3deploy.profile.model import Profile

#: Where the runbooks live: the README of the release that rendered the rule, one anchor per alert.
RUNBOOK_BASE = f"https://github.com/k3deploy/k3deploy/blob/v{__version__}/README.md"
#: Judging windows: long enough that one slow request or a scrape gap does not page anyone.
SLOW_WINDOW = "15m"
QUEUE_WINDOW = "10m"


@dataclass(frozen=True)
class Alert:
    """One alerting rule."""

    name: str
    expr: str
    for_: str
    severity: str
    summary: str
    description: str

    def rule(self) -> dict[str, Any]:
        """The rule as the PrometheusRule CRD spells it."""
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": self.for_,
            "labels": {"severity": self.severity},
            "annotations": {
                "summary": self.summary,
                "description": self.description,
                "runbook_url": f"{RUNBOOK_BASE}#{runbook_anchor(self.name)}",
            },
        }


def runbook_anchor(name: str) -> str:
    """The README anchor of an alert's runbook: GitHub's slug of the heading `Runbook: <name>`."""
    return f"runbook-{name.lower()}"


def alerts(profile: Profile) -> list[Alert]:
    """Every alert the profile's targets call for, in a stable order."""
    scope, targets, name = profile_scope(profile), profile.targets, profile.name
    out: list[Alert] = []
    if targets.min_acceptance_length is not None and profile.speculative is not None:
        out.append(
            Alert(
                "K3DeployAcceptanceLengthLow",
                f"{promql.mean_acceptance_length(scope, SLOW_WINDOW)} < {targets.min_acceptance_length:g}",
                SLOW_WINDOW,
                "warning",
                f"{name}: the draft stopped helping (mean acceptance length below {targets.min_acceptance_length:g})",
                f'Mean acceptance length over {SLOW_WINDOW} is {{{{ $value | printf "%.2f" }}}}, below the profile\'s '
                f"minimum {targets.min_acceptance_length:g}: a wrong draft revision, or traffic unlike the draft's training.",
            )
        )
    if targets.decode_tok_s is not None:
        out.append(
            Alert(
                "K3DeployDecodeSlow",
                f"{promql.decode_tok_s(scope, SLOW_WINDOW)} < {targets.decode_tok_s:g}",
                SLOW_WINDOW,
                "warning",
                f"{name}: per-request decode below {targets.decode_tok_s:g} tok/s",
                f'Per-request decode speed over {SLOW_WINDOW} is {{{{ $value | printf "%.0f" }}}} tok/s, below the '
                f"target {targets.decode_tok_s:g} (a batch-1 figure: heavy concurrent load lowers it too).",
            )
        )
    out.append(
        Alert(
            "K3DeployKVCacheFull",
            f"{promql.kv_cache_usage(scope)} > {KV_CACHE_LIMIT:g}",
            "5m",
            "warning",
            f"{name}: KV cache above {KV_CACHE_LIMIT:.0%}",
            "KV-cache usage is {{ $value | humanizePercentage }}: new requests wait and running ones may be preempted.",
        )
    )
    out.append(
        Alert(
            "K3DeployWaitingRequestsGrowing",
            f"{promql.waiting_growth(scope, QUEUE_WINDOW)} > 0 and {promql.waiting_requests(scope)} > 0",
            QUEUE_WINDOW,
            "warning",
            f"{name}: the request queue keeps growing",
            f'Waiting requests (growing {{{{ $value | printf "%.3g" }}}}/s) have grown for {QUEUE_WINDOW}: arrivals outpace the group.',
        )
    )
    out.append(
        Alert(
            "K3DeployGroupRestarted",
            f"({promql.pod_restarts(scope, SLOW_WINDOW)} > 0) or ({promql.recreated_leaders(scope, SLOW_WINDOW)})",
            "0m",
            "warning",
            f"{name}: a serving pod restarted or the group was recreated",
            f"A container of the group restarted, or a leader pod was recreated, in the last {SLOW_WINDOW}: "
            "LeaderWorkerSet recreates the whole group, so the model reloads (tens of minutes without service).",
        )
    )
    out.append(
        Alert(
            "K3DeploySmokeJobFailed",
            f"{promql.smoke_job_failed(scope)} > 0",
            "0m",
            "critical",
            f"{name}: the in-cluster smoke Job failed",
            f"Job {scope.smoke_job} failed: the deployment did not reach its targets, or did not serve at all.",
        )
    )
    return out


def rule_groups(profile: Profile) -> list[dict[str, Any]]:
    """spec.groups of the PrometheusRule."""
    return [{"name": f"k3deploy.{profile.name}", "rules": [alert.rule() for alert in alerts(profile)]}]
