"""The guard's metrics, in a registry of each guard's own (prometheus_client): what it did and what it sees.

- `k3deploy_guard_actions_total{action,reason}`: evidence, cordon, delete_pods and wait, by decide.py's reason, and
  gate_leader by LeaderGated or LeaderGateFailed (the re-gate, loop.py);
- `k3deploy_guard_unhealthy_trays`: sick trays under the release's groups at the last pass;
- `k3deploy_guard_held_faults{reason}`: groups with a fault guard holds and cannot act on, by decide.py's reason
  (RateLimited, NoCliqueWithRoom; 0 when none): what K3DeployGuardHoldsFault reads (observe/alerts_health.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from k3deploy.fault_guard.decide import REASON_NO_ROOM, REASON_RATE

#: The reasons a fault is held (decide.py): each exported from the start, at 0, so the alert's series exist.
HELD_REASONS = (REASON_RATE, REASON_NO_ROOM)


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
            "Groups with a fault guard holds and cannot act on, by reason (rate limit, no clique with room).",
            ["reason"],
            registry=self.registry,
        )
        for reason in HELD_REASONS:
            self.held_faults.labels(reason=reason).set(0)

    def held(self, reasons: Iterable[str]) -> None:
        """The faults held at this pass, one reason each: every reason's gauge set (0 where none)."""
        listed = list(reasons)
        for reason in sorted({*HELD_REASONS, *listed}):
            self.held_faults.labels(reason=reason).set(listed.count(reason))

    def count(self, action: str, reason: str) -> None:
        """One more `action` for `reason`."""
        self.actions.labels(action=action, reason=reason).inc()

    def exposition(self) -> str:
        """The metrics in Prometheus' text format."""
        return generate_latest(self.registry).decode()
