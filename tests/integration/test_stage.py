"""`k3deploy stage` for real: a run killed by SIGKILL (a subprocess this test started) resumes and leaves nothing
that looks complete and is not, and vLLM (the local target's server command) loads the staged copy of the
rehearsal model."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from k3deploy.stage.copy import PART_PREFIX
from k3deploy.stage.state import journal_path, marker_path
from tests.conftest import REPO_ROOT, cli_env, run_cli
from tests.integration.vllm_server import start_vllm_logged
from tests.stage.snapshot import make_files, tree

pytestmark = pytest.mark.integration

#: Eight 4 MB shards at 8 MB/s with one copier: about four seconds, time enough to kill it after its first shard.
SHARDS = {f"model-{i:05d}-of-00008.safetensors": 4_000_000 for i in range(1, 9)}


def _first_file_journalled(dest: Path, proc: subprocess.Popen[Any], bound_s: float = 60.0) -> None:
    journal = journal_path(dest, "src")
    end = time.monotonic() + bound_s
    while time.monotonic() < end and proc.poll() is None:
        if journal.is_file() and journal.read_text().endswith("\n"):
            return
        time.sleep(0.05)
    raise AssertionError(f"no file finished before the kill (exit {proc.poll()})")


def test_a_killed_stage_resumes(tmp_path: Path) -> None:
    contents = make_files(tmp_path / "src", SHARDS)
    dest = tmp_path / "dest"
    argv = [sys.executable, "-m", "k3deploy", "stage", str(tmp_path / "src"), str(dest), "-j", "1", "--max-mb-s", "8"]
    proc = subprocess.Popen(argv, env=cli_env(), cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _first_file_journalled(dest, proc)
    finally:
        proc.kill()  # SIGKILL: no handler, no cleanup runs
        proc.wait(timeout=30)
        assert proc.stderr is not None
        proc.stderr.close()
    assert proc.returncode == -9
    assert not marker_path(dest, "src").exists()
    left = tree(dest / "src")
    complete = {rel: data for rel, data in left.items() if not rel.split("/")[-1].startswith(PART_PREFIX)}
    assert complete and all(
        contents[rel] == data for rel, data in complete.items()
    )  # nothing complete-looking is partial
    assert len(complete) < len(SHARDS)
    result = run_cli("stage", str(tmp_path / "src"), str(dest), "-o", "json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (
        summary["files_resumed"] >= len(complete) and summary["files_copied"] == len(SHARDS) - summary["files_resumed"]
    )
    assert tree(dest / "src") == contents and marker_path(dest, "src").exists()


def test_vllm_loads_the_staged_rehearsal_model(rehearsal_model_dir: Path, _vllm_slot: Any, tmp_path: Path) -> None:
    _vllm_slot.close()  # one server at a time
    result = run_cli("stage", str(rehearsal_model_dir), str(tmp_path / "local-disk"), "--name", "staged", "-o", "json")
    assert result.returncode == 0, result.stderr
    staged = tmp_path / "local-disk" / "staged"
    assert json.loads(result.stdout)["folder"] == str(staged)
    with start_vllm_logged(staged, speculative=None) as (url, log):
        served = httpx.get(f"{url}/v1/models", timeout=30).json()["data"][0]
        text = log.read_text(encoding="utf-8", errors="replace")
    assert served["root"] == str(staged)
    assert f"model='{staged}'" in text and str(rehearsal_model_dir) not in text
