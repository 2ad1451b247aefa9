"""A new target is a Target subclass and one registry line: `up`, `status`, `render` and `down` drive it unchanged.

The target here lives only in this test: it "deploys" by pointing at a scripted OpenAI server, and the CLI's
own entry point (`k3deploy.cli.main`, in-process) runs the whole pipeline on it, smoke included.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from k3deploy import cli, targets
from k3deploy.profile import load_profile
from k3deploy.profile.model import Profile
from k3deploy.report.model import CheckResult, Status
from k3deploy.targets.base import Rendering, Revision, TargetStatus
from k3deploy.targets.one_go import ApplyOutcome, OneGoTarget, WaitOutcome
from tests.smoke.scripted_server import Script, scripted_server

#: The toy target's live state, shared by every instance (each CLI command builds its own).
LIVE: dict[str, Any] = {}
PROFILE = [
    "-p",
    "local-cpu",
    "--set",
    "target=toy",
    "--set",
    "smoke.requests=2",
    "--set",
    "smoke.output_tokens=29",
    "--set",
    "targets.decode_tok_s=1",
]


class ToyTarget(OneGoTarget):
    """Deploys nothing: `apply` remembers the profile, the endpoint is a scripted server the test started."""

    name = "toy"

    def render(self, profile: Profile) -> Rendering:
        text = f"toy: {profile.name}\n"
        return Rendering(
            files=lambda: {"toy.yaml": text}, stream=lambda: text, what="the toy's one file", summary="1 toy file"
        )

    def preflight(self, profile: Profile, objects: Sequence[dict[str, Any]]) -> list[CheckResult]:
        return [CheckResult(name="toy.ready", status=Status.PASS, detail="always")]

    def current_revision(self, profile: Profile) -> Revision | None:
        return Revision(target=self.name, number=LIVE["revision"]) if LIVE.get("revision") else None

    def apply(self, profile: Profile) -> ApplyOutcome:
        LIVE["revision"] = LIVE.get("revision", 0) + 1
        return ApplyOutcome(
            changed=True, summary=f"toy revision {LIVE['revision']}", applied=[{"object": "toy", "action": "created"}]
        )

    def wait_ready(self, profile: Profile, timeout_s: float) -> WaitOutcome:
        LIVE["waited_s"] = timeout_s
        return WaitOutcome(detail="toy ready")

    def endpoint(self, profile: Profile) -> str:
        return str(LIVE["url"])

    def record_smoke(self, profile: Profile, verdict: dict[str, Any]) -> None:
        LIVE["smoke"] = verdict

    def rollback(self, profile: Profile, previous: Revision | None) -> str:
        raise AssertionError("a passing up does not roll back")

    def status(self, profile: Profile) -> TargetStatus:
        deployed = bool(LIVE.get("revision"))
        report = {
            "target": self.name,
            "deployed": deployed,
            "revision": LIVE.get("revision"),
            "smoke": (LIVE.get("smoke") or {}).get("status"),
        }
        return TargetStatus(target=self.name, deployed=deployed, ready=deployed, report=report)

    def down(self, profile: Profile, purge: bool, objects: Sequence[dict[str, Any]]) -> str:
        removed = LIVE.pop("revision", None)
        return f"removed toy revision {removed}" if removed else "nothing to remove"


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(targets.REGISTRY, "toy", ToyTarget)  # the one registry line
    sigterm = signal.getsignal(signal.SIGTERM)  # cli.main installs its own handler
    LIVE.clear()
    with scripted_server(Script(tokens_per_chunk=[4, 3], num_speculative_tokens=4)) as server:
        LIVE["url"] = server.url
        yield
    signal.signal(signal.SIGTERM, sigterm)
    LIVE.clear()


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as ended:
        cli.main(list(args))
    captured = capsys.readouterr()
    return int(ended.value.code or 0), captured.out, captured.err


def test_up_status_down_drive_a_target_registered_by_the_test(toy: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "up", *PROFILE, "-o", "json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["target"] == "toy" and summary["exit_code"] == 0
    assert [(s["name"], s["status"], s["detail"]) for s in summary["stages"]][:4] == [
        ("preflight", "pass", "1 checks, pass"),
        ("render", "pass", "capacity plan fits; 1 toy file"),
        ("apply", "pass", "toy revision 1"),
        ("wait", "pass", "toy ready"),
    ]
    assert summary["stages"][4]["name"] == "smoke"
    assert summary["stages"][4]["status"] == "pass" and summary["endpoint"] == LIVE["url"]
    assert LIVE["smoke"]["status"] == "pass"  # the verdict went to the target's record_smoke
    assert LIVE["waited_s"] == load_profile("local-cpu").kubernetes.rollout_timeout_s  # the contract's default deadline

    code, out, _ = _run(capsys, "status", *PROFILE, "-o", "json")
    assert (code, json.loads(out)) == (0, {"target": "toy", "deployed": True, "revision": 1, "smoke": "pass"})
    code, out, _ = _run(capsys, "status", *PROFILE)
    assert code == 0 and "revision" in out and "deployed" in out  # the contract's default key/value table

    code, out, _ = _run(capsys, "render", *PROFILE, "-o", "-")
    assert (code, out) == (0, "toy: local-cpu\n")

    code, _, err = _run(capsys, "down", *PROFILE, "--yes")
    assert code == 0 and "down: removed toy revision 1" in err
    code, out, _ = _run(capsys, "status", *PROFILE, "-o", "json")
    assert json.loads(out)["deployed"] is False


def test_an_unregistered_target_is_a_profile_error(capsys: pytest.CaptureFixture[str]) -> None:
    sigterm = signal.getsignal(signal.SIGTERM)
    try:
        code, _, err = _run(capsys, "status", "-p", "local-cpu", "--set", "target=toy")
    finally:
        signal.signal(signal.SIGTERM, sigterm)
    assert code == 2
    assert (
        err == "error: profile 'local-cpu' has an unknown target 'toy'\nhint: set target to one of: kubernetes, local\n"
    )
