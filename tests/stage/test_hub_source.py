"""`k3deploy stage org/name@<commit> DEST`: the snapshot fetched through huggingface_hub (here its stand-in,
tests/render/hub_stand_in, as the prefetch's own test uses; never the network) and staged, each LFS file checked
against the sha256 the Hub lists."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from tests.conftest import REPO_ROOT, run_cli_process
from tests.render.test_prefetch_record import STAND_IN

REPO, COMMIT = "moonshotai/Kimi-K3", "a" * 40
FILES = {
    "model-00001-of-00002.safetensors": os.urandom(6000),
    "model-00002-of-00002.safetensors": os.urandom(4000),
    "config.json": b'{"architectures": ["KimiK3"]}',
}


def _stage(tmp_path: Path, *args: str, damaged: tuple[str, ...] = ()) -> tuple[int, str, str]:
    hub = {REPO: {"commit": COMMIT, "files": {k: v.hex() for k, v in FILES.items()}, "damaged": list(damaged)}}
    (tmp_path / "hub.json").write_text(json.dumps(hub))
    env = {
        "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{STAND_IN}",
        "HF_HOME": str(tmp_path / "hf"),
        "K3DEPLOY_TEST_HUB": str(tmp_path / "hub.json"),
    }
    done = run_cli_process("stage", *args, str(tmp_path / "nvme"), "-o", "json", env=env)
    return done.returncode, done.stdout, done.stderr


def test_a_commit_is_fetched_and_staged_checked_against_the_hubs_sha256(tmp_path: Path) -> None:
    code, out, err = _stage(tmp_path, f"{REPO}@{COMMIT}")
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["repo"], summary["revision"], summary["files"]) == (REPO, COMMIT, 3)
    assert summary["checked_against"] == "the sha256 the Hub lists (LFS files); the others hashed while copied"
    staged = tmp_path / "nvme" / COMMIT
    for name, data in FILES.items():
        assert (staged / name).read_bytes() == data and not (staged / name).is_symlink()
    record = json.loads((tmp_path / "nvme" / f"{COMMIT}.sha256.json").read_text())
    assert {k: v["sha256"] for k, v in record["files"].items()} == {
        k: hashlib.sha256(v).hexdigest() for k, v in FILES.items()
    }
    # Run again: the marker names this commit of this repo, nothing is copied.
    code, out, _ = _stage(tmp_path, f"hf://{REPO}@{COMMIT}")
    assert code == 0 and json.loads(out)["already_staged"] is True


def test_a_download_that_does_not_match_the_hubs_sha256_fails_and_leaves_no_copy(tmp_path: Path) -> None:
    code, _, err = _stage(tmp_path, f"{REPO}@{COMMIT}", damaged=("model-00002-of-00002.safetensors",))
    assert code == 1, err
    assert "model-00002-of-00002.safetensors: sha256" in err and "Traceback" not in err
    assert not (tmp_path / "nvme" / "model-00002-of-00002.safetensors").exists()
    assert not list((tmp_path / "nvme").glob("*.k3deploy-staged.json"))


def test_a_branch_is_refused_and_an_unknown_repo_is_the_environments_error(tmp_path: Path) -> None:
    code, _, err = _stage(tmp_path, f"{REPO}@main")
    assert code == 2 and "names no commit" in err
    assert [line.split(":")[0] for line in err.strip().splitlines()] == ["error", "hint"]
    code, _, err = _stage(tmp_path, f"moonshotai/Kimi-K4@{COMMIT}")
    assert code == 3 and "RepositoryNotFoundError" in err and "Traceback" not in err, err
    code, _, err = _stage(tmp_path, f"{REPO}@{COMMIT}", "--record", str(tmp_path / "hub.json"))
    assert code == 2 and "drop them" in err
