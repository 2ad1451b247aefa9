"""The load time `plan` prints: each tray's bytes over the shared volume's rate (storage.read_mb_s, the start-up
budget's figure too, or one measured) and over the local disk's; preflight's check of the budget against it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from k3deploy.preflight.load_time import load_note, load_time, measured_budget_check
from k3deploy.profile import load_profile
from k3deploy.report.model import Status
from k3deploy.stage.measured import BY_STAGE, Measured
from tests.conftest import run_cli
from tests.stage.snapshot import make_files

K3 = "kimi-k3-gb300-tp16"


def test_the_builtin_figures_give_the_reported_times() -> None:
    """~1.56 TB: ~95 min over NFS and ~8 min from local NVMe, the report the profile's two rates come from."""
    profile = load_profile(K3, [])
    result = load_time(profile)
    assert result is not None
    snapshot = profile.model.checkpoint_bytes + profile.speculative.draft_bytes  # type: ignore[union-attr]
    assert result.bytes_per_tray == snapshot
    assert result.shared_s == pytest.approx(snapshot / 270e6, abs=0.1)
    assert result.local_s == pytest.approx(snapshot / 3250e6, abs=0.1)
    assert 90 * 60 < result.shared_s < 100 * 60 and 7 * 60 < result.local_s < 9 * 60  # type: ignore[operator]


def test_the_shared_rate_is_the_start_up_budgets_one_field() -> None:
    """One figure for the shared volume: the load time and the budget both move with storage.read_mb_s."""
    profile = load_profile(K3, ["storage.read_mb_s=540"])
    result = load_time(profile)
    assert result is not None and (result.shared_mb_s, result.shared_source) == (540, "storage.read_mb_s")
    assert result.shared_s == pytest.approx(profile.startup_budget.read_s, abs=1)


def test_a_measured_rate_wins_and_an_unset_local_rate_is_not_planned() -> None:
    profile = load_profile(K3, ["hardware.local_disk_read_mb_s=null"])
    result = load_time(profile)
    assert result is not None and result.local_s is None
    assert "from local disk - at - MB/s (not set)" in load_note(result)
    measured = load_time(profile, Measured(1000.0, BY_STAGE))
    assert measured is not None and measured.shared_source == "measured by stage"
    assert measured.shared_s == pytest.approx(measured.bytes_per_tray / 1e9, abs=0.1)


def test_preflight_warns_when_the_measured_load_outlasts_the_rendered_budget() -> None:
    profile = load_profile(K3, [])
    slow = measured_budget_check(profile, Measured(100.0, BY_STAGE))
    assert slow.status is Status.WARN and "storage.read_mb_s=100" in (slow.hint or "")
    assert "from the shared volume 261.2 min at 100.0 MB/s (measured by stage)" in slow.detail
    assert measured_budget_check(profile, Measured(3000.0, BY_STAGE)).status is Status.PASS


def test_the_local_target_has_no_load_time() -> None:
    assert load_time(load_profile("local-cpu", [])) is None


def test_plan_takes_the_rate_of_a_stage_marker(tmp_path: Path) -> None:
    make_files(tmp_path / "src")
    assert run_cli("stage", str(tmp_path / "src"), str(tmp_path / "dest")).returncode == 0
    marker = tmp_path / "dest" / "src.k3deploy-staged.json"
    measured = json.loads(marker.read_text())["mb_s"]
    result = run_cli("plan", "-p", K3, "-o", "json", "--measured", str(marker))
    assert result.returncode in (0, 1), result.stderr
    payload = json.loads(result.stdout)
    loading, budget = payload["load_time"], payload["startup_budget"]
    assert (loading["shared_mb_s"], loading["shared_source"]) == (measured, "measured by stage")
    assert (budget["read_mb_s"], budget["read_source"]) == (measured, "measured by stage")
    refused = run_cli(
        "plan", "-p", K3, "--measured", str(tmp_path / "dest" / "src.sha256.json")
    )  # stage's own record holds no time
    assert refused.returncode == 2 and "is not a marker" in refused.stderr, refused.stderr
