"""A stand-in for the two calls of huggingface_hub the prefetch script and `k3deploy stage org/name@<commit>` make,
so they run here without the Hub: `snapshot_download` and `HfApi().model_info(..., files_metadata=True)`.

Imitates huggingface_hub 2.4.0 (the prefetch's pinned client): `_snapshot_download.py` (the snapshot folder
`$HF_HOME/hub/models--<org>--<name>/snapshots/<commit>`, each file a link to `../../blobs/<etag>`, the etag an LFS
file's sha256 or a git file's blob id) and `hf_api.py` (`ModelInfo.sha`, `.siblings` of `RepoSibling(rfilename,
size, blob_id, lfs)`, `BlobLfsInfo(size, sha256, pointer_size)`). Stricter than the real one: a call without a
revision or without a timeout raises. What the "Hub" holds is the JSON file named by
K3DEPLOY_TEST_HUB: {repo: {"commit": sha, "files": {name: hex of the bytes}}}, a file of 1 KB or more kept in LFS;
an optional "damaged": [name, ...] is downloaded with its first byte flipped, still under its true ETag's blob name (a
transfer that went wrong: the real client names the blob by the ETag it was told, not by what arrived). A repo not
in the file, or a revision other than its commit, raises as the Hub's 404 does.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

LFS_FROM = 1024


@dataclass
class BlobLfsInfo:
    """hf_api.BlobLfsInfo."""

    size: int
    sha256: str
    pointer_size: int


@dataclass
class RepoSibling:
    """hf_api.RepoSibling."""

    rfilename: str
    size: int | None = None
    blob_id: str | None = None
    lfs: BlobLfsInfo | None = None


@dataclass
class ModelInfo:
    """hf_api.ModelInfo, the two fields the prefetch reads."""

    sha: str
    siblings: list[RepoSibling]


class RepositoryNotFoundError(Exception):
    """errors.RepositoryNotFoundError, what the Hub's 404 for a repo or revision raises."""


def _repo(repo_id: str) -> dict:
    repos = json.loads(Path(os.environ["K3DEPLOY_TEST_HUB"]).read_text())
    if repo_id not in repos:
        raise RepositoryNotFoundError(f"404 Client Error: Repository Not Found for url: .../api/models/{repo_id}")
    return dict(repos[repo_id])


def _hub(repo_id: str, revision: str | None = None) -> tuple[str, dict[str, bytes]]:
    repo = _repo(repo_id)
    if revision is not None and revision not in (repo["commit"], "main"):
        raise RepositoryNotFoundError(
            f"404 Client Error: Revision Not Found for url: .../{repo_id}/revision/{revision}"
        )
    return repo["commit"], {name: bytes.fromhex(data) for name, data in repo["files"].items()}


def _git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def snapshot_download(repo_id: str, *, revision: str | None = None) -> str:
    """Write the repo's files into the Hub cache layout; the snapshot folder."""
    if revision is None:
        raise TypeError("the prefetch pins a revision")
    commit, files = _hub(repo_id, revision)
    damaged = set(_repo(repo_id).get("damaged", []))
    repo_dir = Path(os.environ["HF_HOME"]) / "hub" / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / commit
    for name, data in files.items():
        etag = hashlib.sha256(data).hexdigest() if len(data) >= LFS_FROM else _git_blob_id(data)
        blob = repo_dir / "blobs" / etag
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(bytes([data[0] ^ 1]) + data[1:] if name in damaged else data)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():
            link.symlink_to(os.path.relpath(blob, link.parent))
    return str(snapshot)


class HfApi:
    """hf_api.HfApi, model_info only."""

    def model_info(
        self, repo_id: str, *, revision: str | None = None, timeout: float | None = None, files_metadata: bool = False
    ) -> ModelInfo:
        """The commit and, with `files_metadata`, every file's size, git blob id and (LFS files) sha256; without
        it only the names (as hf_api.py, which asks the Hub for blobs only when files_metadata is set)."""
        if revision is None or timeout is None:
            raise TypeError("the prefetch asks for a revision with a timeout")
        commit, files = _hub(repo_id, revision)
        if not files_metadata:
            return ModelInfo(commit, [RepoSibling(name) for name in sorted(files)])
        siblings = [
            RepoSibling(
                name,
                len(data),
                _git_blob_id(data),
                BlobLfsInfo(len(data), hashlib.sha256(data).hexdigest(), 134) if len(data) >= LFS_FROM else None,
            )
            for name, data in sorted(files.items())
        ]
        return ModelInfo(commit, siblings)
