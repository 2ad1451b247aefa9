"""SOURCE as a Hub repo at a commit (`org/name@<commit>`): fetched through the client the prefetch uses
(huggingface_hub: `HfApi().model_info(..., files_metadata=True)` for the sha256 the Hub lists for each LFS file,
`snapshot_download` into the Hub cache, HF_HOME or HF_HUB_CACHE as the client reads them), then staged from that
snapshot like any folder, each LFS file checked against the Hub's sha256 and the small git files hashed while copied.

Only a commit: a branch or tag moves, and what is staged must be the pinned snapshot (`k3deploy pin` resolves one).
"""

from __future__ import annotations

import re
from pathlib import Path

from k3deploy.errors import CheckFailed, EnvironmentProblem, K3DeployError, UsageError
from k3deploy.stage.plan import SourceFile
from k3deploy.stage.record import FileEntry, Record, safe_relative
from k3deploy.stage.source import Source, scan

_SPEC = re.compile(r"^(?:hf:/{1,2})?(?P<repo>[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)@(?P<revision>[^/@\s]+)$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
#: Seconds the Hub's metadata call may take (the downloads use the client's own timeouts, HF_HUB_DOWNLOAD_TIMEOUT).
METADATA_TIMEOUT_S = 60


def hub_spec(text: str) -> tuple[str, str] | None:
    """(repo, revision) of `org/name@revision` (or `hf://org/name@revision`, which a Path folds to `hf:/`); None for
    anything else."""
    found = _SPEC.match(text)
    return (found["repo"], found["revision"]) if found else None


def _listed(info: object) -> list[SourceFile]:
    """Each file of the Hub's answer (ModelInfo.siblings: rfilename, size, lfs.sha256 for an LFS file)."""
    files = []
    for sibling in getattr(info, "siblings", None) or []:
        name, size, lfs = str(sibling.rfilename), sibling.size, getattr(sibling, "lfs", None)
        if not isinstance(size, int):
            raise CheckFailed(f"the Hub lists no size for {name}", "try again; the Hub's answer was partial")
        files.append(SourceFile(safe_relative(name), size, str(lfs.sha256) if lfs else None))
    return sorted(files, key=lambda f: f.path)


def hub_source(repo: str, revision: str) -> Source:
    """Fetch repo@revision (a commit) into the Hub cache; the snapshot with the Hub's sha256 list as its record."""
    if not _COMMIT.match(revision):
        raise UsageError(
            f"{repo}@{revision} names no commit: a branch or tag moves, and a staged copy must be one snapshot",
            "give the 40-hex commit (`k3deploy pin` writes it into the profile's model.revision)",
        )
    try:
        # The Hub client loads only for a Hub SOURCE: a folder SOURCE needs none.
        from huggingface_hub import HfApi, snapshot_download

        info = HfApi().model_info(repo, revision=revision, files_metadata=True, timeout=METADATA_TIMEOUT_S)
        folder = Path(snapshot_download(repo_id=repo, revision=revision))
    except ImportError:
        raise EnvironmentProblem(
            "staging from the Hub needs huggingface_hub", "install it (pip install huggingface_hub) or stage a folder"
        ) from None
    except K3DeployError:
        raise
    except Exception as exc:  # the client's errors have no common base across its versions
        raise EnvironmentProblem(
            f"the Hub did not give {repo}@{revision}: {type(exc).__name__}: {exc}",
            "check the repo and commit, HF_TOKEN for a gated repo, HF_ENDPOINT and the proxy, then run again",
        ) from None
    files = _listed(info)
    present = scan(folder)
    for entry in files:
        if present.get(entry.path) != entry.size:
            raise CheckFailed(
                f"the Hub cache's {entry.path} is {present.get(entry.path)} bytes where the Hub lists {entry.size}",
                "the download is incomplete or damaged: run again (the client fetches what is missing)",
            )
    record = Record(repo, revision, tuple(FileEntry(f.path, f.size, f.sha256) for f in files if f.sha256))
    return Source(folder, tuple(files), record, None)
