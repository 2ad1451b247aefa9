"""The guard's metrics (k3deploy/fault_guard/metrics.py), read back through prometheus_client's own text parser."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from k3deploy.fault_guard.metrics import GuardMetrics


def samples(m: GuardMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(m.exposition())
        for s in family.samples
        if not s.name.endswith("_created")
    }


def test_actions_are_counted_by_action_and_reason_and_the_gauges_hold_the_last_value() -> None:
    m = GuardMetrics()
    m.count("cordon", "TrayUnhealthy")
    m.count("cordon", "TrayUnhealthy")
    m.count("wait", "NoCliqueWithRoom")
    m.unhealthy_trays.set(3)
    m.held(["NoCliqueWithRoom"])
    got = samples(m)
    assert got[("k3deploy_guard_actions_total", (("action", "cordon"), ("reason", "TrayUnhealthy")))] == 2
    assert got[("k3deploy_guard_actions_total", (("action", "wait"), ("reason", "NoCliqueWithRoom")))] == 1
    assert got[("k3deploy_guard_unhealthy_trays", ())] == 3
    assert got[("k3deploy_guard_held_faults", (("reason", "NoCliqueWithRoom"),))] == 1
    assert got[("k3deploy_guard_held_faults", (("reason", "RateLimited"),))] == 0


def test_held_faults_start_at_zero_for_every_reason_and_follow_each_pass() -> None:
    m = GuardMetrics()
    assert {k: v for k, v in samples(m).items() if k[0] == "k3deploy_guard_held_faults"} == {
        ("k3deploy_guard_held_faults", (("reason", "NoCliqueWithRoom"),)): 0,
        ("k3deploy_guard_held_faults", (("reason", "RateLimited"),)): 0,
    }
    m.held(["RateLimited", "RateLimited"])
    assert samples(m)[("k3deploy_guard_held_faults", (("reason", "RateLimited"),))] == 2
    m.held([])
    assert samples(m)[("k3deploy_guard_held_faults", (("reason", "RateLimited"),))] == 0


def test_each_guard_has_its_own_registry() -> None:
    a, b = GuardMetrics(), GuardMetrics()
    a.count("cordon", "TrayUnhealthy")
    assert ("k3deploy_guard_actions_total", (("action", "cordon"), ("reason", "TrayUnhealthy"))) not in samples(b)
