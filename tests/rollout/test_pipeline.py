"""Stage order, exit codes and rollback decisions of `up`, on a scripted target (the pipeline works for any Target)."""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy import pipeline
from k3deploy.errors import CheckFailed, EnvironmentProblem
from k3deploy.profile import load_profile
from k3deploy.report.model import CheckResult, Status
from k3deploy.targets.base import ApplyOutcome, Revision


class ScriptedTarget:
    """Records each call; raises what the test scripted for a step."""

    name = "scripted"

    def __init__(self, fail: dict[str, BaseException] | None = None, previous: Revision | None = None) -> None:
        self.calls: list[str] = []
        self.fail = fail or {}
        self.previous = previous

    def _step(self, name: str) -> None:
        self.calls.append(name)
        if name in self.fail:
            raise self.fail[name]

    def preflight(self, profile: Any) -> list[CheckResult]:
        self._step("preflight")
        return [CheckResult(name="host", status=Status.PASS)]

    def current_revision(self, profile: Any) -> Revision | None:
        self._step("current_revision")
        return self.previous

    def apply(self, profile: Any) -> ApplyOutcome:
        self._step("apply")
        return ApplyOutcome(changed=True, summary="1 created")

    def wait_ready(self, profile: Any, timeout_s: float) -> None:
        self._step("wait_ready")

    def endpoint(self, profile: Any) -> str:
        return "http://127.0.0.1:9"

    def rollback(self, profile: Any, previous: Revision | None) -> str:
        self._step("rollback")
        return f"restored {previous.number}" if previous else "removed"

    def status(self, profile: Any) -> dict[str, Any]:
        return {}

    def down(self, profile: Any, purge: bool) -> str:
        return "gone"


@pytest.fixture
def profile() -> Any:
    return load_profile("local-cpu", [])


def test_stages_run_in_order_and_pass(profile: Any) -> None:
    target = ScriptedTarget()
    lines: list[str] = []
    summary = pipeline.up(profile, target, lines.append, smoke=False)
    assert target.calls == ["preflight", "current_revision", "apply", "wait_ready"]
    assert [(s.name, s.status) for s in summary.stages] == [
        ("preflight", Status.PASS), ("render", Status.PASS), ("apply", Status.PASS), ("wait", Status.PASS),
        ("smoke", Status.SKIP)]
    assert summary.exit_code == 0 and summary.rollback is None
    assert [line for line in lines if line.startswith("==>")][:4] == [
        "==> [1/5] preflight", "==> [2/5] render", "==> [3/5] apply", "==> [4/5] wait"]


def test_failed_wait_rolls_back_to_the_previous_revision_with_the_stage_exit_code(profile: Any) -> None:
    previous = Revision(target="scripted", number=4)
    target = ScriptedTarget({"wait_ready": EnvironmentProblem("deadline")}, previous)
    summary = pipeline.up(profile, target, lambda _: None, smoke=False, preflight=False)
    assert target.calls == ["current_revision", "apply", "wait_ready", "rollback"]
    assert summary.exit_code == 3 and summary.error == "deadline" and summary.rollback == "restored 4"


def test_no_rollback_leaves_it_and_says_so(profile: Any) -> None:
    target = ScriptedTarget({"wait_ready": CheckFailed("crash")})
    summary = pipeline.up(profile, target, lambda _: None, smoke=False, preflight=False, rollback=False)
    assert "rollback" not in target.calls
    assert summary.exit_code == 1 and summary.rollback.startswith("skipped (--no-rollback)")


def test_failed_preflight_stops_before_apply(profile: Any) -> None:
    target = ScriptedTarget({"preflight": CheckFailed("no GPUs", hint="h")})
    summary = pipeline.up(profile, target, lambda _: None, smoke=False)
    assert target.calls == ["preflight"]
    assert summary.exit_code == 1 and summary.hint == "h" and summary.rollback is None


def test_a_failed_apply_is_not_rolled_back(profile: Any) -> None:
    target = ScriptedTarget({"apply": CheckFailed("conflict")})
    summary = pipeline.up(profile, target, lambda _: None, smoke=False, preflight=False)
    assert target.calls == ["current_revision", "apply"] and summary.rollback is None


def test_ctrl_c_propagates_without_rollback(profile: Any) -> None:
    target = ScriptedTarget({"wait_ready": KeyboardInterrupt()})
    with pytest.raises(KeyboardInterrupt):
        pipeline.up(profile, target, lambda _: None, smoke=False, preflight=False)
    assert "rollback" not in target.calls
