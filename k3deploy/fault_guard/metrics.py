"""The guard's metrics, in a registry of each guard's own (prometheus_client): what it did and what it sees.

- `k3deploy_guard_actions_total{action,reason}`: evidence, cordon, delete_pods and wait, by decide.py's reason;
- `k3deploy_guard_unhealthy_trays`: sick trays under the release's groups at the last pass;
- `k3deploy_guard_held_faults`: groups with a fault guard holds and cannot act on (rate limit, no room): the alert's.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest


class GuardMetrics:
    """The three metrics of one guard."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.actions = Counter(
            "k3deploy_guard_actions",
            "Actions of k3deploy guard, by action and reason.",
            ["action", "reason"],
            registry=self.registry,
        )
        self.unhealthy_trays = Gauge(
            "k3deploy_guard_unhealthy_trays", "Sick trays under the release's serving groups.", registry=self.registry
        )
        self.held_faults = Gauge(
            "k3deploy_guard_held_faults",
            "Groups with a fault guard holds and cannot act on (rate limit, no clique with room).",
            registry=self.registry,
        )

    def count(self, action: str, reason: str) -> None:
        """One more `action` for `reason`."""
        self.actions.labels(action=action, reason=reason).inc()

    def exposition(self) -> str:
        """The metrics in Prometheus' text format."""
        return generate_latest(self.registry).decode()
