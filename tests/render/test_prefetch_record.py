"""The prefetch's sha256 record: its script (the rendered Job's, run here with a stand-in Hub client,
tests/render/hub_stand_in) writes `<marker>.sha256.json` listing every file it fetched, which `k3deploy stage`
finds above the snapshot and checks each copy against."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from k3deploy.errors import CheckFailed
from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.stage.measured import BY_PREFETCH, measured_rate
from k3deploy.stage.record import records_from_text
from k3deploy.stage.run import StageOptions, stage

K3 = "kimi-k3-gb300-tp16"
STAND_IN = Path(__file__).resolve().parent / "hub_stand_in"
COMMIT = "c" * 40


def _container() -> dict[str, Any]:
    job = next(
        m.obj for m in build(load_profile(K3, ["production=false"])) if m.kind == "Job" and "-prefetch-" in m.name
    )
    return dict(job["spec"]["template"]["spec"]["containers"][0])


def _python_part(script: str) -> str:
    """The script's Python: between `<<'PY'` and its closing `PY` line."""
    start = script.index("<<'PY'\n") + len("<<'PY'\n")
    return script[start : script.index("\nPY\n", start)]


def _fetch(tmp_path: Path, hub: dict[str, Any]) -> Path:
    """Run the prefetch's Python against `hub`; the weight cache it filled."""
    container, cache = _container(), tmp_path / "cache"
    env_of = {e["name"]: e.get("value") for e in container["env"]}
    repos = json.loads(env_of["K3DEPLOY_PREFETCH"])
    (tmp_path / "hub.json").write_text(json.dumps({repo: hub for repo, _ in repos}))
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(STAND_IN),
        "HF_HOME": str(cache / "hf"),
        "K3DEPLOY_PREFETCH": env_of["K3DEPLOY_PREFETCH"],
        "K3DEPLOY_PREFETCH_MARKER": str(cache / ".k3deploy" / Path(env_of["K3DEPLOY_PREFETCH_MARKER"]).name),
        "K3DEPLOY_TEST_HUB": str(tmp_path / "hub.json"),
    }
    done = subprocess.run(
        [sys.executable, "-"], input=_python_part(container["args"][0]), env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return cache


FILES = {"model-00001-of-00002.safetensors": os.urandom(5000), "model-00002-of-00002.safetensors": os.urandom(3000),
         "config.json": b'{"architectures": ["KimiK3"]}'}  # fmt: skip


def test_the_record_lists_every_file_of_every_repo_and_stage_checks_against_it(tmp_path: Path) -> None:
    """Both repos at one commit here: stage tells their records apart by the repo the cache folder names."""
    cache = _fetch(tmp_path, {"commit": COMMIT, "files": {k: v.hex() for k, v in FILES.items()}})
    records = list((cache / ".k3deploy").glob("*.sha256.json"))
    assert len(records) == 1 and records[0].name.startswith("prefetch-")
    parsed = records_from_text(records[0].read_text())
    assert {r.repo for r in parsed} == {"moonshotai/Kimi-K3", "Inferact/Kimi-K3-DSpark"}
    for record in parsed:
        assert record.revision == COMMIT
        assert {e.path: e.sha256 for e in record.files} == {k: hashlib.sha256(v).hexdigest() for k, v in FILES.items()}
    snapshot = cache / "hf" / "hub" / "models--moonshotai--Kimi-K3" / "snapshots" / COMMIT
    result = stage(StageOptions(snapshot, tmp_path / "nvme"))
    assert (result.repo, result.revision, result.files) == ("moonshotai/Kimi-K3", COMMIT, 3)


def test_the_record_keeps_each_downloads_time_and_plan_reads_the_rate_back(tmp_path: Path) -> None:
    cache = _fetch(tmp_path, {"commit": COMMIT, "files": {k: v.hex() for k, v in FILES.items()}})
    text = next((cache / ".k3deploy").glob("*.sha256.json")).read_text()
    seconds = [r["seconds"] for r in json.loads(text)]
    assert len(seconds) == 2 and all(s > 0 for s in seconds)
    rate = measured_rate(text)
    size = sum(len(v) for v in FILES.values())
    assert rate is not None and rate.source == BY_PREFETCH
    assert rate.mb_s == pytest.approx(2 * size / 1e6 / sum(seconds), abs=0.1)


def test_a_small_file_changed_after_the_fetch_is_caught_by_the_record(tmp_path: Path) -> None:
    """config.json's sha256 is the prefetch's own hash (the Hub lists none for a git file): a later change fails."""
    cache = _fetch(tmp_path, {"commit": COMMIT, "files": {k: v.hex() for k, v in FILES.items()}})
    snapshot = cache / "hf" / "hub" / "models--moonshotai--Kimi-K3" / "snapshots" / COMMIT
    (snapshot / "config.json").resolve().write_bytes(b'{"architectures": ["KimiK4"]}')
    with pytest.raises(CheckFailed, match="config"):
        stage(StageOptions(snapshot, tmp_path / "nvme"))
