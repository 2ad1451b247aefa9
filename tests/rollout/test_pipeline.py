"""Stage order, exit codes and rollback decisions of `up`, on a scripted target (the pipeline works for any Target)."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from k3deploy import pipeline
from k3deploy.errors import CheckFailed, EnvironmentProblem
from k3deploy.profile import load_profile
from k3deploy.report.model import CheckResult, Status
from k3deploy.reporter import Reporter
from k3deploy.smoke.headline import REHEARSAL_LABEL, headline_lines
from k3deploy.targets.base import Rendering, Revision, TargetStatus
from k3deploy.targets.one_go import ApplyOutcome, OneGoTarget, WaitOutcome
from tests.smoke.scripted_server import Script, scripted_server


class ScriptedTarget(OneGoTarget):
    """Records each call; raises what the test scripted for a step."""

    name = "scripted"

    def __init__(self, fail: dict[str, BaseException] | None = None, previous: Revision | None = None) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.verdicts: list[dict[str, Any]] = []
        self.fail = fail or {}
        self.previous = previous

    def _step(self, name: str) -> None:
        self.calls.append(name)
        if name in self.fail:
            raise self.fail[name]

    def render(self, profile: Any) -> Rendering:
        return Rendering(files=lambda: {"scripted.yaml": "x: 1\n"}, stream=lambda: "x: 1\n", what="one file")

    def preflight(self, profile: Any, objects: Any) -> list[CheckResult]:
        self._step("preflight")
        return [CheckResult(name="host", status=Status.PASS)]

    def current_revision(self, profile: Any) -> Revision | None:
        self._step("current_revision")
        return self.previous

    def apply(self, profile: Any) -> ApplyOutcome:
        self._step("apply")
        return ApplyOutcome(changed=True, summary="1 created")

    def wait_ready(self, profile: Any, timeout_s: float) -> WaitOutcome:
        self._step("wait_ready")
        return WaitOutcome()

    def endpoint(self, profile: Any) -> str:
        return "http://127.0.0.1:9"

    def rollback(self, profile: Any, previous: Revision | None) -> str:
        self._step("rollback")
        return f"restored {previous.number}" if previous else "removed"

    def record_smoke(self, profile: Any, verdict: dict[str, Any]) -> None:
        self.verdicts.append(verdict)

    def status(self, profile: Any) -> TargetStatus:
        return TargetStatus(target=self.name, deployed=False, ready=False, report={"target": self.name})

    def down(self, profile: Any, purge: bool, objects: Any) -> str:
        return "gone"


@pytest.fixture
def profile() -> Any:
    return load_profile("local-cpu", [])


def test_stages_run_in_order_and_pass(profile: Any, capsys: pytest.CaptureFixture[str]) -> None:
    target = ScriptedTarget()
    summary = pipeline.up(profile, target, Reporter(interactive=False), smoke=False)
    lines = capsys.readouterr().err.splitlines()
    assert target.calls == ["preflight", "current_revision", "apply", "wait_ready"]
    assert [(s.name, s.status) for s in summary.stages] == [
        ("preflight", Status.PASS),
        ("render", Status.PASS),
        ("apply", Status.PASS),
        ("wait", Status.PASS),
        ("smoke", Status.SKIP),
    ]
    assert summary.exit_code == 0 and summary.rollback is None
    assert [line for line in lines if line.startswith("==>")][:4] == [
        "==> [1/5] preflight",
        "==> [2/5] render",
        "==> [3/5] apply",
        "==> [4/5] wait",
    ]


def test_failed_wait_rolls_back_to_the_previous_revision_with_the_stage_exit_code(profile: Any) -> None:
    previous = Revision(target="scripted", number=4)
    target = ScriptedTarget({"wait_ready": EnvironmentProblem("deadline")}, previous)
    summary = pipeline.up(profile, target, Reporter(quiet=True), smoke=False, preflight=False)
    assert target.calls == ["current_revision", "apply", "wait_ready", "rollback"]
    assert summary.exit_code == 3 and summary.error == "deadline" and summary.rollback == "restored 4"


def test_no_rollback_leaves_it_and_says_so(profile: Any) -> None:
    target = ScriptedTarget({"wait_ready": CheckFailed("crash")})
    summary = pipeline.up(profile, target, Reporter(quiet=True), smoke=False, preflight=False, rollback=False)
    assert "rollback" not in target.calls
    assert summary.exit_code == 1 and summary.rollback.startswith("skipped (--no-rollback)")


def test_failed_preflight_stops_before_apply(profile: Any) -> None:
    target = ScriptedTarget({"preflight": CheckFailed("no GPUs", hint="h")})
    summary = pipeline.up(profile, target, Reporter(quiet=True), smoke=False)
    assert target.calls == ["preflight"]
    assert summary.exit_code == 1 and summary.hint == "h" and summary.rollback is None


def test_a_failed_apply_is_not_rolled_back(profile: Any) -> None:
    target = ScriptedTarget({"apply": CheckFailed("conflict")})
    summary = pipeline.up(profile, target, Reporter(quiet=True), smoke=False, preflight=False)
    assert target.calls == ["current_revision", "apply"] and summary.rollback is None


def test_ctrl_c_propagates_without_rollback(profile: Any) -> None:
    target = ScriptedTarget({"wait_ready": KeyboardInterrupt()})
    with pytest.raises(KeyboardInterrupt):
        pipeline.up(profile, target, Reporter(quiet=True), smoke=False, preflight=False)
    assert "rollback" not in target.calls


class EndpointTarget(ScriptedTarget):
    """A ScriptedTarget whose endpoint is a real (scripted) server on 127.0.0.1."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url

    def endpoint(self, profile: Any) -> str:
        return self.url


def test_up_ends_with_the_smoke_figures_labelled_as_a_rehearsal() -> None:
    # Per request: a first token, then chunks of 4, 3, 4, ... (28 tokens): 8 drafts of 4 tokens, 20 accepted.
    rehearsal = load_profile("local-cpu", ["smoke.requests=2", "smoke.output_tokens=29", "targets.decode_tok_s=1"])
    with scripted_server(Script(tokens_per_chunk=[4, 3], num_speculative_tokens=4)) as endpoint:
        summary = pipeline.up(rehearsal, EndpointTarget(endpoint.url), Reporter(quiet=True), preflight=False)
    assert summary.exit_code == 0, summary.error
    figures = summary.to_dict()["smoke"]["figures"]
    median = figures["decode_tok_s"].pop("median")
    assert figures == {
        "model": "rehearsal-llama-tiny",
        "rehearsal": True,
        "label": REHEARSAL_LABEL,
        "decode_tok_s": {"target": 1.0, "published_peak": None, "published_baseline": None, "status": "pass"},
        "acceptance_length": {"mean": 3.5, "minimum": 2.0, "status": "pass"},
        "acceptance_rate": 0.625,
        "drafts": 16.0,
        "failed_checks": [],
    }
    # The very figure the decode-target check judged, not a recomputation.
    decode_check = next(c for c in summary.extra["smoke"]["checks"] if c["name"] == "decode target")
    assert f"{median:.2f} >= 1" in decode_check["detail"]

    lines = headline_lines({**figures, "decode_tok_s": {**figures["decode_tok_s"], "median": median}})
    assert lines[0] == f"  smoke figures (rehearsal-llama-tiny) - {REHEARSAL_LABEL}:"
    assert "not Kimi K3" in lines[0]
    assert lines[1] == f"    decode tok/s       {median:.1f} median at bs=1 vs target 1 [pass]"
    assert lines[2:] == [
        "    acceptance length  3.50 mean vs minimum 2 [pass]",
        "    acceptance rate    0.625 over 16 drafts",
        "    result             targets met",
    ]


def test_a_missed_target_is_said_in_the_figures() -> None:
    figures = {
        "model": "moonshotai/Kimi-K3",
        "rehearsal": False,
        "label": None,
        "decode_tok_s": {
            "median": 301.25,
            "target": 370.0,
            "published_peak": 464.0,
            "published_baseline": 118.0,
            "status": "fail",
        },
        "acceptance_length": {"mean": 3.42, "minimum": 3.0, "status": "pass"},
        "acceptance_rate": 0.61,
        "drafts": 1200.0,
    }
    assert headline_lines(figures) == [
        "  smoke figures (moonshotai/Kimi-K3):",
        "    decode tok/s       301.2 median at bs=1 vs target 370, 464 tok/s published peak, "
        "118 tok/s published without speculation [fail]",
        "    acceptance length  3.42 mean vs minimum 3 [pass]",
        "    acceptance rate    0.610 over 1,200 drafts",
        "    result             targets NOT met: decode tok/s",
    ]


def test_a_failed_smoke_is_never_summed_up_as_targets_met() -> None:
    figures = {
        "model": "moonshotai/Kimi-K3",
        "rehearsal": False,
        "label": None,
        "decode_tok_s": {
            "median": 400.0,
            "target": 370.0,
            "published_peak": None,
            "published_baseline": None,
            "status": "pass",
        },
        "acceptance_length": {"mean": 3.42, "minimum": 3.0, "status": "pass"},
        "acceptance_rate": 0.61,
        "drafts": 1200.0,
        "failed_checks": ["correctness"],
    }
    assert headline_lines(figures)[-1] == (
        "    result             smoke FAILED: correctness (decode tok/s and acceptance length passed)"
    )
    missed = {**figures, "decode_tok_s": {**figures["decode_tok_s"], "status": "fail"}}
    assert headline_lines(missed)[-1] == (
        "    result             targets NOT met: decode tok/s; smoke also FAILED: correctness"
    )


def test_a_failed_correctness_check_in_a_real_smoke_is_in_the_figures() -> None:
    # The scripted server knows no answer to the correctness prompts (they fail); its speed passes the targets.
    prof = load_profile(
        "kimi-k3-gb300-tp16",
        ["smoke.requests=2", "smoke.output_tokens=29", "targets.decode_tok_s=1", "targets.min_acceptance_length=1"],
    )
    script = Script(models=["moonshotai/Kimi-K3"], tokens_per_chunk=[4, 3], num_speculative_tokens=4)
    with scripted_server(script) as endpoint:
        summary = pipeline.up(prof, EndpointTarget(endpoint.url), Reporter(quiet=True), preflight=False)
    figures = summary.to_dict()["smoke"]["figures"]
    assert summary.exit_code == 1 and "correctness" in figures["failed_checks"]
    assert headline_lines(figures)[-1].startswith("    result             smoke FAILED: correctness")


@pytest.mark.parametrize("stage", ["wait_ready", "apply"])
def test_an_unexpected_exception_in_a_stage_still_ends_with_summary_and_rollback(profile: Any, stage: str) -> None:
    target = ScriptedTarget(
        fail={stage: TypeError("unsupported format string passed to NoneType.__format__")},
        previous=Revision(target="scripted", number=4),
    )
    summary = pipeline.up(profile, target, Reporter(quiet=True), smoke=False)
    name = {"wait_ready": "wait", "apply": "apply"}[stage]
    assert (summary.stages[-1].name, summary.stages[-1].status, summary.exit_code) == (name, Status.FAIL, 3)
    assert summary.error == f"unexpected TypeError in {name}: unsupported format string passed to NoneType.__format__"
    assert summary.hint == "re-run with --debug for the traceback and report it"
    assert target.calls[-1] == "rollback" and summary.rollback == "restored 4"
    assert summary.to_dict()["error"] == summary.error  # the JSON report says it too


def test_an_unexpected_exception_in_smoke_rolls_back_with_the_report(profile: Any) -> None:
    class BrokenEndpoint(ScriptedTarget):
        def endpoint(self, profile: Any) -> str:
            raise ValueError("no endpoint")

    target = BrokenEndpoint()
    summary = pipeline.up(profile, target, Reporter(quiet=True))
    assert [(s.name, s.status) for s in summary.stages][-1] == ("smoke", Status.FAIL)
    assert (summary.exit_code, summary.error) == (3, "unexpected ValueError in smoke: no endpoint")
    assert summary.rollback == "removed" and target.calls[-1] == "rollback"


def test_a_rollback_that_raises_anything_is_reported_as_failed(profile: Any) -> None:
    class BadRollback(ScriptedTarget):
        def rollback(self, profile: Any, previous: Revision | None) -> str:
            raise KeyError("pid")

    summary = pipeline.up(
        profile, BadRollback(fail={"wait_ready": CheckFailed("not ready")}), Reporter(quiet=True), smoke=False
    )
    assert summary.exit_code == 1
    assert summary.rollback == "rollback failed: unexpected KeyError in rollback: 'pid'"


def test_a_target_lock_is_held_for_the_whole_command(profile: Any) -> None:
    import contextlib

    class Locking(ScriptedTarget):
        @contextlib.contextmanager
        def locked(self, profile: Any, what: str, objects: Any):  # type: ignore[no-untyped-def]
            self.calls.append(f"lock {what}")
            try:
                yield
            finally:
                self.calls.append("unlock")

    target = Locking(fail={"wait_ready": CheckFailed("not ready")})
    pipeline.up(profile, target, Reporter(quiet=True), smoke=False)
    assert target.calls == ["lock up", "preflight", "current_revision", "apply", "wait_ready", "rollback", "unlock"]
    target = Locking()
    assert pipeline.down(profile, target, purge=False) == "gone" and target.calls == ["lock down", "unlock"]
    # What bench --ab puts back when it ends: the target's own rollback plan, under the lock.
    target = Locking()
    assert pipeline.restore(profile, target, Revision(target="scripted", number=4)) == "restored 4"
    assert target.calls == ["lock rollback", "rollback", "unlock"]


def _closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_a_smoke_that_cannot_reach_the_server_keeps_a_first_install() -> None:
    quick = load_profile("local-cpu", ["smoke.requests=1", "smoke.output_tokens=8", "smoke.ready_timeout_s=null"])
    target = EndpointTarget(_closed_port())
    summary = pipeline.up(quick, target, Reporter(quiet=True), preflight=False)
    assert summary.exit_code == 3, summary.error
    assert "rollback" not in target.calls
    assert summary.rollback == "not rolled back: the smoke could not test the server; the install is kept"
    assert "connection refused" in (summary.error or "")
    assert (summary.hint or "").startswith("nothing was rolled back (the smoke never reached the server's checks)")
    assert summary.to_dict()["smoke"]["via"] == {"kind": "direct", "target": target.url, "url": target.url}


def test_a_smoke_that_reached_the_server_and_failed_rolls_a_first_install_back() -> None:
    strict = load_profile("local-cpu", ["smoke.requests=1", "smoke.output_tokens=8", "targets.decode_tok_s=1e9"])
    with scripted_server(Script(tokens_per_chunk=[4, 3], num_speculative_tokens=4)) as endpoint:
        target = EndpointTarget(endpoint.url)
        summary = pipeline.up(strict, target, Reporter(quiet=True), preflight=False)
    assert summary.exit_code == 1, summary.error
    assert target.calls[-1] == "rollback" and summary.rollback == "removed"
    assert "decode target" in (summary.error or "")
