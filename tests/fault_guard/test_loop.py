"""The guard's loop (k3deploy/fault_guard/loop.py run_forever): a failed pass is said and the next one runs; the
loop ends when the command's deadline passes. A pass runs the re-gate duty after the faults, and says each label
and each failed gate in an Event and a metric (the duty itself: tests/targets/kubernetes/test_regate.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from k3deploy.errors import CheckFailed, K3DeployError
from k3deploy.fault_guard.loop import Guard, PassReport, run_forever
from k3deploy.profile import load_profile
from k3deploy.traffic_gate import COPIED, DEFERRED, FAILED, LABELLED, WOULD, Regated


class CountedGuard(Guard):
    """A Guard whose passes are counted instead of run (the first one fails as an unreachable API server would)."""

    def run_pass(self) -> PassReport:
        self.passes = getattr(self, "passes", 0) + 1
        if self.passes == 1:
            raise K3DeployError("cannot reach the API server")
        return PassReport()


def test_a_failed_pass_is_said_and_the_loop_goes_on_until_its_deadline() -> None:
    said: list[str] = []
    slept: list[float] = []
    g: Any = CountedGuard(
        api=None,
        profile=None,
        namespace="ns",
        evidence_dir=Path("."),
        say=said.append,  # type: ignore[arg-type]
        sleep=slept.append,
    )
    run_forever(g, 30.0, lambda: g.passes >= 3 if hasattr(g, "passes") else False)
    assert g.passes == 3
    assert said == ["pass failed: cannot reach the API server"]
    assert slept == [30.0, 30.0]


class Quiet:
    """A cluster with no node and no pod (no fault to act on) behind the calls a pass makes (k3deploy/kube/api.py
    KubeApi: list, served, get, create); it records the Events created."""

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []

    def list(self, api_version: str, kind: str, namespace: str | None = None, **_: Any) -> tuple[list[Any], str]:
        return [], "1"

    def served(self, api_version: str, kind: str) -> bool:
        return False

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return {"metadata": {"name": name, "uid": "lws-uid"}} if kind == "LeaderWorkerSet" else None

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.created.append(obj)
        return obj


def _regated(*outcomes: str) -> Any:
    calls: list[tuple[bool, bool]] = []

    def regate(dry_run: bool, leading: Any) -> list[Regated]:
        calls.append((dry_run, leading()))
        return [Regated("kimi", f"kimi-{i}", o, f"{o} it") for i, o in enumerate(outcomes)]

    regate.calls = calls  # type: ignore[attr-defined]
    return regate


def test_a_pass_runs_the_re_gate_after_the_faults_and_says_each_label_and_failure_in_an_event() -> None:
    api = Quiet()
    regate = _regated(LABELLED, COPIED, FAILED, DEFERRED)
    g = Guard(
        api=api, profile=load_profile("kimi-k3-gb300-tp16"), namespace="ns", evidence_dir=Path("."), regate=regate
    )  # type: ignore[arg-type]
    g.leading = lambda: True
    report = g.run_pass()
    assert regate.calls == [(False, True)]
    assert [g.pod for g in report.out_of_traffic] == ["kimi-2", "kimi-3"]
    assert [(e["reason"], e["type"], e["message"]) for e in api.created] == [
        ("LeaderGated", "Normal", "leader kimi-0: labelled it"),
        ("LeaderGated", "Normal", "leader kimi-1: copied it"),
        ("LeaderGateFailed", "Warning", "leader kimi-2: failed it"),
    ]
    assert all(e["involvedObject"]["uid"] == "lws-uid" for e in api.created)
    exposition = g.metrics.exposition()
    assert 'k3deploy_guard_actions_total{action="gate_leader",reason="LeaderGated"} 2.0' in exposition
    assert 'k3deploy_guard_actions_total{action="gate_leader",reason="LeaderGateFailed"} 1.0' in exposition
    assert report.to_dict()["gates"][2] == {"pod": "kimi-2", "outcome": FAILED, "detail": "failed it"}


def test_a_dry_run_pass_asks_the_re_gate_to_look_only_and_sends_no_event() -> None:
    api = Quiet()
    regate = _regated(WOULD)
    g = Guard(
        api=api,
        profile=load_profile("kimi-k3-gb300-tp16"),
        namespace="ns",
        evidence_dir=Path("."),
        dry_run=True,
        regate=regate,
    )  # type: ignore[arg-type]
    report = g.run_pass()
    assert regate.calls == [(True, True)] and api.created == [] and report.out_of_traffic == []


def test_once_fails_when_a_ready_leader_stays_out_of_traffic_and_not_for_one_labelled_or_a_dry_run() -> None:
    passed = PassReport(gates=[Regated("kimi", "kimi-0", LABELLED, "l"), Regated("kimi", "kimi-1", WOULD, "w")])
    passed.raise_for_status()
    out = PassReport(gates=[Regated("kimi", "kimi-0", COPIED, "c"), Regated("kimi", "kimi-1", FAILED, "f")])
    with pytest.raises(CheckFailed) as caught:
        out.raise_for_status()
    assert caught.value.exit_code == 1
    assert caught.value.message == "1 Ready leader(s) stay out of traffic: their gate did not pass"
    assert "--group-endpoint" in (caught.value.hint or "")
