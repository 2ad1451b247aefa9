"""`up` on the local target shows the plan's KV tokens beside those the server logged at start-up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from k3deploy import pipeline
from k3deploy.profile import load_profile
from tests.profile.test_plan_check import CPU_LINE
from tests.rollout.test_pipeline import ScriptedTarget


class LoggingTarget(ScriptedTarget):
    """A scripted target whose status names a server log, as the local target's does."""

    def __init__(self, log: Path) -> None:
        super().__init__()
        self.log = log

    def status(self, profile: Any) -> dict[str, Any]:
        return {"log": str(self.log)}


def _wait_detail(profile: Any, target: ScriptedTarget) -> str:
    summary = pipeline.up(profile, target, lambda line: None, preflight=False, smoke=False)
    return next(stage.detail for stage in summary.stages if stage.name == "wait")


def test_wait_reports_plan_and_server_side_by_side(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(f"INFO starting\n{CPU_LINE}\nINFO Application startup complete.\n", encoding="utf-8")
    detail = _wait_detail(load_profile("local-cpu"), LoggingTarget(log))
    assert detail == "ready; KV tokens: plan 524,288, server 524,288 (+0.0%)"


def test_a_plan_the_server_contradicts_is_flagged(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(CPU_LINE + "\n", encoding="utf-8")
    detail = _wait_detail(load_profile("local-cpu", ["speculative.draft_kv_layers=0"]), LoggingTarget(log))
    assert detail == "ready; KV tokens: plan 1,048,576, server 524,288 (+100.0%, off by more than 5%)"


def test_no_log_yet(tmp_path: Path) -> None:
    detail = _wait_detail(load_profile("local-cpu"), LoggingTarget(tmp_path / "missing.log"))
    assert detail == "ready; KV tokens: plan 524,288, server not reported"


def test_kubernetes_wait_detail_is_unchanged() -> None:
    profile = load_profile("kimi-k3-gb300-tp16")
    assert pipeline._kv_capacity(ScriptedTarget(), profile) == ""
