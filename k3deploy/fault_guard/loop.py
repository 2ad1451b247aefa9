"""One pass of `k3deploy guard` (`--once`), and the loop of passes: read, decide, read again, act, report.

After the faults, a pass runs the guard's other duty when it has one: the re-gate of leaders out of traffic
(targets/kubernetes/regate.py, wired by the command), whose outcomes it reports, counts and says in Events.

A pass is level-triggered: it reads the whole state each time (Nodes, Pods, ComputeDomains) and keeps nothing
between passes but the Events it already sent, so a restarted guard picks up where the cluster is. The rate limit's
memory is on the nodes themselves (guard's cordon annotation). A poll, not a watch: the official client's watch
would save reads, but a pass needs every object of three kinds at once and the decision must see them together;
every `guard.confirm_after_s` the state is read again anyway. kopf would bring a framework for one loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from k3deploy.errors import CheckFailed, K3DeployError, ScrapeError
from k3deploy.fault_guard.act import cordon, delete_group, event, keep_evidence
from k3deploy.fault_guard.decide import Decision, confirm, decide, unhealthy_trays
from k3deploy.fault_guard.evidence_configmap import CONFIGMAP_MAX_BYTES, write_configmap
from k3deploy.fault_guard.evidence_file import write_new
from k3deploy.fault_guard.metrics import GuardMetrics
from k3deploy.fault_guard.prometheus_signal import faults_from, queries
from k3deploy.fault_guard.snapshot import Observed, read
from k3deploy.kobject import KubeObject
from k3deploy.kube.api import KubeApi
from k3deploy.lws import API_VERSION as LWS_API
from k3deploy.observe.watch_sources import PrometheusSource
from k3deploy.profile.model import Profile
from k3deploy.traffic_gate import COPIED, FAILED, LABELLED, WOULD, Regated

#: The re-gate duty (targets/kubernetes/regate.py Regate): called with (dry_run, leading) once per pass.
Regate = Callable[[bool, Callable[[], bool]], list[Regated]]
#: The Events of the re-gate's outcomes on the LeaderWorkerSet (reason, and whether a Warning).
GATE_EVENTS = {LABELLED: ("LeaderGated", False), COPIED: ("LeaderGated", False), FAILED: ("LeaderGateFailed", True)}

#: Seconds one query of the Prometheus signal may take (the server's own evaluation timeout too).
PROMETHEUS_TIMEOUT_S = 10.0


@dataclass
class PassReport:
    """What one pass saw and did."""

    seen: list[Decision] = field(default_factory=list)
    decided: list[Decision] = field(default_factory=list)
    cordoned: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    unhealthy_trays: int = 0
    dry_run: bool = False
    #: What the re-gate did with each Ready leader out of traffic.
    gates: list[Regated] = field(default_factory=list)

    @property
    def held(self) -> list[Decision]:
        """Faults guard holds and cannot act on."""
        return [d for d in self.decided if d.verdict == "wait"]

    @property
    def out_of_traffic(self) -> list[Regated]:
        """Ready leaders the re-gate left out of traffic (their smoke failed, or failed before and waits)."""
        return [g for g in self.gates if not g.marked and g.outcome != WOULD]

    def raise_for_status(self) -> None:
        """`--once`'s exit: CheckFailed (1) when a fault is held or a Ready leader stays out of traffic."""
        if self.held:
            raise CheckFailed(
                f"guard holds {len(self.held)} fault(s) it cannot act on",
                hint="see the runbook K3DeployGuardHoldsFault (docs/operations/runbooks.md): free a clique or raise guard.max_cordons_per_hour",
            )
        if self.out_of_traffic:
            raise CheckFailed(
                f"{len(self.out_of_traffic)} Ready leader(s) stay out of traffic: their gate did not pass",
                hint="each gate's line (-o json: gates) says why; a guard outside the cluster reaches leaders only "
                "with --group-endpoint",
            )

    def to_dict(self) -> KubeObject:
        """The report as `-o json` prints it."""

        def one(d: Decision) -> KubeObject:
            return {
                "group": d.group,
                "verdict": d.verdict,
                "reason": d.reason,
                "summary": d.describe(),
                "sick": {t: list(w) for t, w in d.sick.items()},
                "cordon": list(d.cordon),
                "waiting": d.why_waiting,
            }

        return {
            "dry_run": self.dry_run,
            "unhealthy_trays": self.unhealthy_trays,
            "seen": [one(d) for d in self.seen],
            "decisions": [one(d) for d in self.decided],
            "cordoned": self.cordoned,
            "deleted_pods": self.deleted,
            "evidence": self.evidence,
            "gates": [{"pod": g.pod, "outcome": g.outcome, "detail": g.detail} for g in self.gates],
        }


@dataclass
class Guard:
    """One release's guard: its connection, settings, metrics, and the waits it already announced."""

    api: KubeApi
    profile: Profile
    namespace: str
    evidence_dir: Path
    dry_run: bool = False
    metrics: GuardMetrics = field(default_factory=GuardMetrics)
    say: Callable[[str], None] = print
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    announced: dict[int, str] = field(default_factory=dict)
    #: Keep bundles in new ConfigMaps of the namespace (the in-cluster guard) instead of files under evidence_dir.
    evidence_configmap: bool = False
    #: Whether this guard still leads (holds the release's guard Lease): checked again just before it acts.
    leading: Callable[[], bool] = lambda: True
    #: The re-gate of leaders out of traffic (smoke.gate_traffic), run after the faults each pass; None: no such duty.
    regate: Regate | None = None

    def _store(self, name: str, data: bytes) -> str:
        if self.evidence_configmap:
            return write_configmap(self.api, self.namespace, self.profile.name, name, data)
        return str(write_new(self.evidence_dir, name, data))

    def run_pass(self) -> PassReport:
        """Read, decide; when something is to be done, wait `confirm_after_s`, read again and do what still holds."""
        guard = self.profile.guard
        first = read(self.api, self.profile, self.namespace, self.clock(), self._prometheus_faults())
        report = PassReport(dry_run=self.dry_run, unhealthy_trays=unhealthy_trays(first.snapshot))
        report.seen = decide(first.snapshot, guard.max_cordons_per_hour)
        self.metrics.unhealthy_trays.set(report.unhealthy_trays)
        observed, decided = first, report.seen
        if any(d.verdict == "act" for d in report.seen):
            for d in report.seen:
                self.say(f"seen: {d.describe()}")
            self.say(f"reading again in {guard.confirm_after_s:g}s before acting")
            self.sleep(guard.confirm_after_s)
            observed = read(self.api, self.profile, self.namespace, self.clock(), self._prometheus_faults())
            decided = confirm(report.seen, decide(observed.snapshot, guard.max_cordons_per_hour))
            if not any(d.verdict == "act" for d in decided):
                self.say("no action: the fault cleared before guard acted")
        if any(d.verdict == "act" for d in decided) and not self.dry_run and not self.leading():
            self.say("no action: another guard took the lease over meanwhile")
            decided = [d for d in decided if d.verdict == "wait"]
        report.decided = decided
        self.metrics.held(d.reason for d in report.held)
        lws = None if self.dry_run else self.api.get(LWS_API, "LeaderWorkerSet", self.profile.name, self.namespace)
        for decision in decided:
            if decision.verdict == "wait":
                self._wait(decision, lws)
            else:
                self._act(decision, observed, lws, report)
        self.announced = {g: m for g, m in self.announced.items() if g in {d.group for d in report.held}}
        if self.regate is not None:
            report.gates = self.regate(self.dry_run, self.leading)
            for gate in report.gates:
                self._gated(gate, lws)
        return report

    def _gated(self, gate: Regated, lws: KubeObject | None) -> None:
        """Count a re-gate's outcome and say it in an Event (a label, or a failure that keeps a leader out)."""
        if gate.outcome not in GATE_EVENTS:
            return
        reason, warning = GATE_EVENTS[gate.outcome]
        self.metrics.count("gate_leader", reason)
        event(
            self.api,
            lws,
            self.namespace,
            self.profile.name,
            reason=reason,
            message=gate.describe(),
            warning=warning,
            now=self.clock(),
        )

    def _prometheus_faults(self) -> dict[str, list[str]]:
        """The Prometheus signal's faults by tray (guard.prometheus; none when it is unset or cannot be read)."""
        url = self.profile.guard.prometheus
        if url is None:
            return {}
        source = PrometheusSource(str(url), {}, timeout_s=PROMETHEUS_TIMEOUT_S)
        try:
            answers = {name: source.query(expr) for name, expr in queries(self.profile).items()}
        except ScrapeError as exc:
            self.say(f"Prometheus signal not read this pass: {exc.message}")
            return {}
        finally:
            source.close()
        return faults_from(answers, self.profile)

    def _wait(self, decision: Decision, lws: KubeObject | None) -> None:
        message = decision.describe()
        self.say(("would alert: " if self.dry_run else "alert: ") + message)
        if self.dry_run or self.announced.get(decision.group) == message:
            return
        self.metrics.count("wait", decision.reason)
        event(
            self.api,
            lws,
            self.namespace,
            self.profile.name,
            reason=decision.reason,
            message=message,
            warning=True,
            now=self.clock(),
        )
        self.announced[decision.group] = message

    def _act(self, decision: Decision, observed: Observed, lws: KubeObject | None, report: PassReport) -> None:
        guard = self.profile.guard
        if self.dry_run:
            self.say(f"would: {decision.describe()}")
            return
        path = keep_evidence(
            self.api,
            observed,
            decision,
            release=self.profile.name,
            namespace=self.namespace,
            store=self._store,
            tail_lines=guard.log_tail_lines,
            max_bytes=min(guard.evidence_max_bytes, CONFIGMAP_MAX_BYTES)
            if self.evidence_configmap
            else guard.evidence_max_bytes,
        )
        report.evidence.append(path)
        self.metrics.count("evidence", decision.reason)
        self.say(f"evidence of group {decision.group}: {path}")
        by = f"k3deploy guard of {self.namespace}/{self.profile.name}"
        now = self.clock()
        for tray in decision.cordon:
            why = f"group {decision.group}: " + ", ".join(decision.sick.get(tray, ()))
            if cordon(self.api, tray, why, by, now):
                report.cordoned.append(tray)
                self.metrics.count("cordon", decision.reason)
                self.say(f"cordoned {tray}: {why}")
        gone = delete_group(self.api, self.namespace, observed.pods.get(decision.group, []))
        report.deleted += gone
        self.metrics.count("delete_pods", decision.reason)
        self.say(f"deleted the pods of group {decision.group}: {', '.join(gone) or 'none left'}")
        message = f"{decision.describe()} (evidence: {path.rpartition('/')[2]})"
        event(
            self.api,
            lws,
            self.namespace,
            self.profile.name,
            reason=decision.reason,
            message=message,
            warning=True,
            now=now,
        )


def run_forever(g: Guard, interval_s: float, done: Callable[[], bool]) -> None:
    """Passes every `interval_s` until interrupted or `done()` (the command's --timeout passed); a pass that fails on
    the API is said and the next one tries again (a controller outlives a restarting API server)."""
    while not done():
        try:
            g.run_pass()
        except K3DeployError as exc:
            g.say(f"pass failed: {exc}")
        if not done():
            g.sleep(interval_s)
