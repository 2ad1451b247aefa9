"""`down --purge` deletes only what k3deploy created and marked, never a user's model, never through a symlink.

Driven through the real CLI with the fake vLLM interpreter, over real folders.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from tests.targets.local.conftest import FakeLocal


def tree(folder: Path) -> dict[str, str]:
    """Every file under `folder` (links not followed) with its content hash."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def user_weights(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    (folder / "model.safetensors").write_bytes(b"\x00user weights\x01" * 1000)
    return folder


def test_purge_keeps_a_users_model_in_the_state_dirs_model_folder(fake_local: FakeLocal) -> None:
    # The single-GPU recipe of docs/guide/local-rehearsal.md invites this layout: the weights in <state_dir>/model,
    # rehearsal off.
    fake_local.model = user_weights(fake_local.state_dir / "model")
    before = tree(fake_local.model)
    assert fake_local.run("up").returncode == 0
    done = fake_local.run("down", extra=("--purge", "--yes"))
    assert done.returncode == 0, done.stderr
    assert tree(fake_local.model) == before
    assert f"kept {fake_local.state_dir / 'model'}: the profile names {fake_local.model} as a model" in done.stderr
    # The cache k3deploy created for the server is gone: purge still does its job.
    assert not (fake_local.state_dir / "vllm-cache").exists()
    assert "removed vLLM's cache" in done.stderr


def test_purge_keeps_folders_k3deploy_did_not_create(fake_local: FakeLocal) -> None:
    model = user_weights(fake_local.state_dir / "model")  # not named by the profile this time
    cache = fake_local.state_dir / "vllm-cache"
    cache.mkdir()
    (cache / "compiled.bin").write_bytes(b"user cache")
    before = tree(fake_local.state_dir)
    done = fake_local.run("down", extra=("--purge", "--yes"))
    assert done.returncode == 0, done.stderr
    assert tree(fake_local.state_dir) == before
    assert f"kept {model}: k3deploy did not create it" in done.stderr
    assert f"kept {cache}: k3deploy did not create it" in done.stderr


def test_a_copied_marker_or_a_symlink_does_not_make_a_folder_k3deploys(fake_local: FakeLocal) -> None:
    assert fake_local.run("up").returncode == 0
    assert fake_local.run("down", extra=("--yes",)).returncode == 0
    cache = fake_local.state_dir / "vllm-cache"
    registry = json.loads((fake_local.state_dir / "owned.json").read_text())
    assert registry[str(cache)] == (cache / ".k3deploy-owned").read_text().strip()
    # The user swaps k3deploy's cache for a symlink to their own folder, marker copied in.
    elsewhere = user_weights(fake_local.root / "elsewhere")
    (elsewhere / ".k3deploy-owned").write_text((cache / ".k3deploy-owned").read_text())
    for child in cache.iterdir():
        child.unlink()
    cache.rmdir()
    cache.symlink_to(elsewhere)
    before = tree(elsewhere)
    done = fake_local.run("down", extra=("--purge", "--yes"))
    assert done.returncode == 0, done.stderr
    assert cache.is_symlink() and tree(elsewhere) == before
    assert f"kept {cache}: k3deploy did not create it" in done.stderr
    # A real folder with a marker whose id the registry does not hold is not ours either.
    cache.unlink()
    cache.mkdir()
    (cache / ".k3deploy-owned").write_text("0" * 32 + "\n")
    assert fake_local.run("down", extra=("--purge", "--yes")).returncode == 0
    assert (cache / ".k3deploy-owned").exists()


def test_purge_removes_what_k3deploy_made_and_down_removes_the_scratch_folder(fake_local: FakeLocal) -> None:
    assert fake_local.run("up").returncode == 0
    scratch = [p for p in fake_local.tmp.iterdir() if p.name.startswith("k3deploy-")]
    assert len(scratch) == 1 and (scratch[0] / ".k3deploy-owned").is_file()
    assert fake_local.run("down", extra=("--purge", "--yes")).returncode == 0
    assert list(fake_local.tmp.iterdir()) == []
    assert sorted(os.listdir(fake_local.state_dir)) == ["server.log"]
