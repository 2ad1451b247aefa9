"""The PrometheusRule's alerts of a deployment: each a `observe.promql` expression against the profile's targets,
with a summary, a description and a link to its runbook section (observe.runbook_base_url). Pure.

Here the serving alerts (speculation, decode speed, KV cache, queue, restarts, smoke); the availability, latency and
GPU health alerts are in observe/alerts_health.py.
"""

from __future__ import annotations

from k3deploy.kobject import JsonObject
from k3deploy.observe import promql
from k3deploy.observe import promql_health as health
from k3deploy.observe.alert_rule import Alert, runbook_anchor
from k3deploy.observe.alerts_health import availability_alerts, gpu_alerts, guard_alerts, latency_alerts
from k3deploy.observe.canary_rules import canary_group
from k3deploy.observe.dashboard import KV_CACHE_LIMIT
from k3deploy.observe.scope import profile_scope
from k3deploy.profile.model import Profile

__all__ = ["Alert", "alerts", "rule_groups", "runbook_anchor"]

#: Judging windows: long enough that one slow request or a scrape gap does not page anyone.
SLOW_WINDOW = "15m"
QUEUE_WINDOW = "10m"
#: Acceptance is judged over an hour of traffic, so a mix of easy and hard prompts averages out instead of crossing
#: the minimum back and forth; once firing, a dip back over it for less than ACCEPTANCE_HOLD does not resolve it.
ACCEPTANCE_WINDOW = "1h"
ACCEPTANCE_FOR = "30m"
ACCEPTANCE_HOLD = "15m"
#: Decode speed is a batch-1 target: judged only over windows whose busiest server averaged at most this many
#: running requests.
BS1_MAX_RUNNING = 1.5


def alerts(profile: Profile) -> list[Alert]:
    """Every alert the profile's targets call for, in a stable order."""
    scope, targets, name = profile_scope(profile), profile.targets, profile.name
    out: list[Alert] = [*availability_alerts(profile, scope), *latency_alerts(profile, scope)]
    if targets.min_acceptance_length is not None and profile.speculative is not None:
        out.append(
            Alert(
                "K3DeployAcceptanceLengthLow",
                f"{promql.mean_acceptance_length(scope, ACCEPTANCE_WINDOW)} < {targets.min_acceptance_length:g}",
                ACCEPTANCE_FOR,
                "warning",
                f"{name}: the draft stopped helping (mean acceptance length below {targets.min_acceptance_length:g})",
                f'Mean acceptance length over {ACCEPTANCE_WINDOW} is {{{{ $value | printf "%.2f" }}}}, below the '
                f"profile's minimum {targets.min_acceptance_length:g}: a wrong draft revision, or traffic unlike the "
                "draft's training.",
                keep_firing_for=ACCEPTANCE_HOLD,
            )
        )
    if targets.decode_tok_s is not None:
        out.append(
            Alert(
                "K3DeployDecodeSlow",
                f"({promql.decode_tok_s(scope, SLOW_WINDOW)} < {targets.decode_tok_s:g})"
                f" and on () ({health.busiest_mean_running(scope, SLOW_WINDOW)} <= {BS1_MAX_RUNNING:g})",
                SLOW_WINDOW,
                "warning",
                f"{name}: per-request decode below {targets.decode_tok_s:g} tok/s at batch 1",
                f'Per-request decode speed over {SLOW_WINDOW} is {{{{ $value | printf "%.0f" }}}} tok/s, below the '
                f"batch-1 target {targets.decode_tok_s:g}, while no server averaged more than {BS1_MAX_RUNNING:g} "
                "running requests.",
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
    return out + gpu_alerts(profile, scope) + guard_alerts(profile, scope)


def rule_groups(profile: Profile) -> list[JsonObject]:
    """spec.groups of the PrometheusRule: the serving alerts, then the canary's rules when it is on."""
    base = str(profile.observe.runbook_base_url)
    groups = [{"name": f"k3deploy.{profile.name}", "rules": [alert.rule(base) for alert in alerts(profile)]}]
    canary = canary_group(profile)
    return groups if canary is None else [*groups, canary]
