"""K3DeployGuardHoldsFault (observe/alerts_health.py guard_alerts): rendered with the in-cluster guard only, reading
the very series the guard exports, and evaluated by `promtool test rules`: a fault held over four passes fires it
(with its reason), one the next pass resolves and another release's guard stay quiet."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from k3deploy.fault_guard.metrics import GuardMetrics
from k3deploy.observe.alerts import alerts, rule_groups
from k3deploy.observe.alerts_health import guard_alerts
from k3deploy.observe.scope import profile_scope
from k3deploy.profile.load import load_profile
from tests.observe.promql_names import metric_names
from tests.observe.promtool import K3, NS, Case, Fired, check_rules, run_rule_tests

ON = ("kubernetes.guard=true",)
ALERT = "K3DeployGuardHoldsFault"
#: The PodMonitor's target labels on the guard pod's series.
GUARD_POD = f'{NS},pod="{K3}-guard-7d9f8c6b5-x2x4q",job="kimi-k3/{K3}-guard",endpoint="metrics"'


def held(reason: str) -> str:
    return f'k3deploy_guard_held_faults{{{GUARD_POD},reason="{reason}"}}'


CASES = (
    Case(
        "a fault held by the rate limit over 2m fires, naming the reason",
        ALERT,
        {held("RateLimited"): "0x3 1x20", held("NoCliqueWithRoom"): "0x23"},
        {"4m": [], "6m": [Fired(labels={"namespace": "kimi-k3", "reason": "RateLimited"}, value="1")]},
        sets=ON,
    ),
    Case(
        "a wait the next pass ends, and another release's guard, stay quiet",
        ALERT,
        {
            held("NoCliqueWithRoom"): "0x3 1 0x20",
            f'k3deploy_guard_held_faults{{{NS},pod="other-guard-5f6d-abcde",reason="RateLimited"}}': "1x23",
        },
        {"4m": [], "6m": [], "20m": []},
        sets=ON,
    ),
)


def test_the_alert_is_rendered_with_the_in_cluster_guard_only() -> None:
    assert ALERT not in {a.name for a in alerts(load_profile(K3))}
    assert ALERT in {a.name for a in alerts(load_profile(K3, list(ON)))}


def test_the_alert_reads_the_series_the_guard_exports() -> None:
    profile = load_profile(K3, list(ON))
    [alert] = guard_alerts(profile, profile_scope(profile))
    exported = {f.name for f in text_string_to_metric_families(GuardMetrics().exposition())}
    assert metric_names(alert.expr) == {"k3deploy_guard_held_faults"} <= exported


def test_promtool_accepts_the_rule_set_with_the_guard(tmp_path: Path) -> None:
    result = check_rules(rule_groups(load_profile(K3, list(ON))), tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_alert_fires_when_a_fault_is_held_and_only_then(tmp_path: Path) -> None:
    result = run_rule_tests(rule_groups(load_profile(K3, list(ON))), list(CASES), tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
