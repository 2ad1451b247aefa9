"""Figures of the rehearsal model are labelled as such wherever they are shown; Kimi K3's are not."""

from __future__ import annotations

from k3deploy.smoke.headline import REHEARSAL_LABEL
from tests.conftest import run_cli
from tests.integration.vllm_server import free_port

NOTE = f"note: rehearsal-llama-tiny is a {REHEARSAL_LABEL}"


def test_plan_of_the_rehearsal_profile_is_labelled() -> None:
    rehearsal = run_cli("plan", "-p", "local-cpu")
    assert rehearsal.returncode == 0, rehearsal.stderr
    assert rehearsal.stderr.splitlines() == [NOTE]
    kimi = run_cli("plan", "-p", "kimi-k3-gb300-tp16")
    assert kimi.returncode == 0 and "REHEARSAL" not in kimi.stderr + kimi.stdout


def test_smoke_of_the_rehearsal_profile_is_labelled() -> None:
    result = run_cli("smoke", "-p", "local-cpu", "--endpoint", f"http://127.0.0.1:{free_port()}")
    assert result.returncode == 3
    assert NOTE in result.stderr.splitlines()
