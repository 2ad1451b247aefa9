"""What SOURCE holds: its files (a Hub cache snapshot's links followed to their blobs) and the sha256 record that
lists them, found beside it (a staged copy's), next to the prefetch's marker above it, or read off the Hub cache.

The Hub cache (huggingface_hub's file_download.py) names each blob by the ETag the Hub served for it, which for a
Git LFS file is the sha256 the Hub lists for that file: a snapshot's links are a record of the big files, written
by the Hub client itself. A small (non-LFS) file's blob is named by its git blob id instead; it is hashed while
copied and its sha256 recorded at DEST.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from k3deploy.errors import CheckFailed, UsageError
from k3deploy.fileio.read import read_text_capped
from k3deploy.stage.copy import PART_PREFIX
from k3deploy.stage.plan import SourceFile
from k3deploy.stage.record import FileEntry, Record, records_from_text

#: Where the prefetch keeps its marker and records, below the weight cache's root (render/manifests.py `marker`).
PREFETCH_STATE = ".k3deploy"
#: The suffix of a record: the prefetch's `<marker>.sha256.json`, stage's `<name>.sha256.json` beside the copy.
RECORD_SUFFIX = ".sha256.json"
_RECORD_CAP = 64 * 1024 * 1024
_LFS_BLOB = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Source:
    """SOURCE's files and, when one was found, the record they must match (and where it was)."""

    folder: Path
    files: tuple[SourceFile, ...]
    record: Record | None
    record_path: Path | None

    @property
    def checked_against(self) -> str:
        """Where the sha256s come from, for the summary."""
        if self.record is None:
            return "nothing: every file hashed while copied, its sha256 recorded at DEST"
        if self.record_path == self.folder:
            return "the Hub cache's blob names (LFS files); the others hashed while copied"
        if self.record_path is None:
            return "the sha256 the Hub lists (LFS files); the others hashed while copied"
        return str(self.record_path)


def scan(folder: Path) -> dict[str, int]:
    """Relative path -> size of every regular file below `folder` (links to files followed: the Hub cache's
    snapshot links its blobs); a leftover part of an interrupted copy is left out."""
    found: dict[str, int] = {}
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        for name in names:
            if name.startswith(PART_PREFIX):
                continue
            path = Path(root) / name
            info = path.stat()
            if not stat.S_ISREG(info.st_mode):
                raise CheckFailed(f"{path} is not a regular file", "SOURCE must hold the snapshot's files only")
            found[path.relative_to(folder).as_posix()] = info.st_size
    return found


def _records_in(path: Path) -> list[Record]:
    return records_from_text(read_text_capped(path, _RECORD_CAP, what="sha256 record"))


def find_record(folder: Path, explicit: Path | None, revision: str | None) -> tuple[Record | None, Path | None]:
    """The record for `folder`: `explicit` (--record), else stage's beside it, else the prefetch's next to its marker
    in an ancestor's `.k3deploy/` whose revision is `revision` or the folder's name (a Hub snapshot's commit)."""
    wanted = revision or folder.name
    if explicit is not None:
        candidates = [explicit]
    else:
        beside = folder.parent / (folder.name + RECORD_SUFFIX)
        candidates = [beside] if beside.is_file() else []
        for ancestor in folder.parents:
            state = ancestor / PREFETCH_STATE
            if state.is_dir():
                candidates += sorted(state.glob("*" + RECORD_SUFFIX))
    repo = hub_repo(folder)
    for path in candidates:
        matches = [r for r in _records_in(path) if explicit is not None or r.revision == wanted]
        if revision is not None:
            matches = [r for r in matches if r.revision == revision]
        if repo is not None:
            matches = [r for r in matches if r.repo == repo]
        if len(matches) == 1:
            return matches[0], path
        if explicit is not None:
            raise UsageError(
                f"{explicit} holds {len(matches)} records for revision {wanted}",
                "name the revision with --revision",
            )
    return None, None


def hub_repo(folder: Path) -> str | None:
    """The repo of a Hub cache snapshot's folder (`models--<org>--<name>/snapshots/<commit>`), else None."""
    repo_dir = folder.parent.parent
    if folder.parent.name != "snapshots" or not repo_dir.name.startswith("models--"):
        return None
    return repo_dir.name.removeprefix("models--").replace("--", "/")


def hub_cache_record(folder: Path, present: dict[str, int]) -> Record | None:
    """The record a Hub cache snapshot carries in its links: the sha256 of each LFS file (its blob's name); None
    for any other folder, or one with no LFS file."""
    repo = hub_repo(folder)
    if repo is None:
        return None
    entries = []
    for rel, size in present.items():
        link = folder / rel
        blob = Path(os.readlink(link)).name if link.is_symlink() else ""
        if _LFS_BLOB.match(blob):
            entries.append(FileEntry(rel, size, blob))
    if not entries:
        return None
    return Record(repo, folder.name, tuple(sorted(entries, key=lambda e: e.path)))


def load_source(folder: Path, explicit_record: Path | None, revision: str | None) -> Source:
    """SOURCE's files to stage: the record's, each present at its size; or, with no record, every file found."""
    if not folder.is_dir():
        raise UsageError(f"SOURCE {folder} is not a folder", "give the snapshot's folder (the weight PVC's copy)")
    if explicit_record is not None and not explicit_record.is_file():
        raise UsageError(f"--record {explicit_record} is not a file", "name the prefetch's .sha256.json record")
    present = scan(folder)
    record, where = find_record(folder, explicit_record, revision)
    if record is None and (record := hub_cache_record(folder, present)) is not None:
        # The links list the big files only: the small ones are hashed while copied.
        listed = record.by_path()
        files = tuple(
            SourceFile(path, size, listed[path].sha256 if path in listed else None)
            for path, size in sorted(present.items())
        )
        return Source(folder, files, record, folder)
    if record is None:
        files = tuple(SourceFile(path, size, None) for path, size in sorted(present.items()))
        return Source(folder, files, None, None)
    for entry in record.files:
        if entry.path not in present:
            raise CheckFailed(
                f"SOURCE lacks {entry.path}, which the record of {record.repo}@{record.revision} lists",
                "the snapshot is incomplete: run the prefetch again",
            )
        if present[entry.path] != entry.size:
            raise CheckFailed(
                f"{entry.path} is {present[entry.path]} bytes where the record lists {entry.size}",
                "the snapshot is damaged or partial: run the prefetch again",
            )
    files = tuple(SourceFile(e.path, e.size, e.sha256) for e in record.files)
    return Source(folder, files, record, where)
