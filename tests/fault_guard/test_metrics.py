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
    m.held_faults.set(1)
    got = samples(m)
    assert got[("k3deploy_guard_actions_total", (("action", "cordon"), ("reason", "TrayUnhealthy")))] == 2
    assert got[("k3deploy_guard_actions_total", (("action", "wait"), ("reason", "NoCliqueWithRoom")))] == 1
    assert got[("k3deploy_guard_unhealthy_trays", ())] == 3
    assert got[("k3deploy_guard_held_faults", ())] == 1


def test_each_guard_has_its_own_registry() -> None:
    a, b = GuardMetrics(), GuardMetrics()
    a.count("cordon", "TrayUnhealthy")
    assert ("k3deploy_guard_actions_total", (("action", "cordon"), ("reason", "TrayUnhealthy"))) not in samples(b)
