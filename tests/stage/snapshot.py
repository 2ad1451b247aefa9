"""Generated snapshots for the stage tests: files of random bytes, and the sha256 record the prefetch writes for
them (hashed here with hashlib, independently of k3deploy), laid out as the Hub cache and the prefetch lay them out:
`<cache>/hf/hub/models--<org>--<name>/snapshots/<commit>/<file>` linking `../../blobs/<sha256>`, and the record
next to the marker, `<cache>/.k3deploy/prefetch-<id>.done.sha256.json`."""

from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path

SIZES = {"model-00001-of-00003.safetensors": 3_000_000, "model-00002-of-00003.safetensors": 2_500_000,
         "sub/model-00003-of-00003.safetensors": 1_000_001, "config.json": 120}  # fmt: skip


def make_files(folder: Path, sizes: dict[str, int] | None = None, seed: int = 0) -> dict[str, bytes]:
    """Write random files below `folder`; their contents by relative path."""
    contents = {}
    for i, (rel, size) in enumerate(sorted((sizes or SIZES).items())):
        data = random.Random(f"{seed}-{i}").randbytes(size)
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        contents[rel] = data
    return contents


def record_of(repo: str, revision: str, contents: dict[str, bytes]) -> dict[str, object]:
    """The record (format 1) listing `contents`."""
    files = {rel: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()} for rel, data in contents.items()}
    return {"format": 1, "generator": "k3deploy", "repo": repo, "revision": revision, "files": files}


#: Below this a file is kept in git, not LFS (the Hub's rule is 10 MB; small here to keep the tests fast).
LFS_FROM = 1000


def hub_cache(
    cache: Path,
    repo: str,
    commit: str,
    seed: int = 0,
    sizes: dict[str, int] | None = None,
    *,
    prefetch_record: bool = True,
) -> Path:
    """A prefetched weight cache holding one snapshot of `repo` (blobs named as huggingface_hub names them: an LFS
    file's by its sha256, a git file's by its git blob id) and, with `prefetch_record`, the prefetch's record; the
    snapshot's folder."""
    staging = cache / "gen"
    contents = make_files(staging, sizes, seed)
    repo_dir = cache / "hf" / "hub" / ("models--" + repo.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / commit
    for rel, data in contents.items():
        if len(data) >= LFS_FROM:
            name = hashlib.sha256(data).hexdigest()
        else:
            name = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        blob = repo_dir / "blobs" / name
        blob.parent.mkdir(parents=True, exist_ok=True)
        (staging / rel).replace(blob)
        link = snapshot / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(blob, link.parent), link)
    if not prefetch_record:
        return snapshot
    state = cache / ".k3deploy"
    state.mkdir(exist_ok=True)
    record = state / f"prefetch-{commit[:8]}.done.sha256.json"
    records = json.loads(record.read_text()) if record.exists() else []
    record.write_text(json.dumps([*records, record_of(repo, commit, contents)]))
    (state / f"prefetch-{commit[:8]}.done").touch()
    return snapshot


def tree(folder: Path) -> dict[str, bytes]:
    """Every file below `folder` (relative path -> bytes), hidden ones included."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
