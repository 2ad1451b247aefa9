"""The sha256 record of a snapshot and the marker of a staged copy: their JSON forms, parsed strictly.

A record lists every file of one snapshot (relative path -> size and sha256). The prefetch writes one per repo
next to its marker (`<marker>.sha256.json`, a list of records); `stage` writes one at DEST for a source that had
none (hashed while copying). A marker (`<name>.k3deploy-staged.json` beside the staged folder) is written last:
it says the folder holds exactly the record's files, each checked. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from k3deploy.errors import CheckFailed

GENERATOR = "k3deploy"
#: The format's version: a reader refuses a record or marker of another.
FORMAT = 1
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class FileEntry:
    """One file of a snapshot: its path relative to the snapshot folder, its size and its sha256 (hex)."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Record:
    """The files of one snapshot of `repo` at `revision` (a Hub commit, or a content id for a plain folder)."""

    repo: str
    revision: str
    files: tuple[FileEntry, ...]

    @property
    def total_bytes(self) -> int:
        """The snapshot's size."""
        return sum(entry.size for entry in self.files)

    def by_path(self) -> dict[str, FileEntry]:
        """The entries keyed by relative path."""
        return {entry.path: entry for entry in self.files}


@dataclass(frozen=True)
class Marker:
    """What a complete staged copy says about itself: the snapshot, its bytes, and the rate the copy achieved."""

    name: str
    repo: str
    revision: str
    files: int
    bytes: int
    seconds: float
    mb_s: float


def safe_relative(path: str) -> str:
    """`path` when it is a plain relative path inside a snapshot (no `..`, not absolute, no empty part)."""
    pure = PurePosixPath(path)
    if not path or pure.is_absolute() or any(part in ("", ".", "..") for part in path.split("/")) or "\x00" in path:
        raise CheckFailed(
            f"the record names a file outside its snapshot: {path!r}", "the record is damaged: fetch again"
        )
    return path


def _entry(path: str, value: Any) -> FileEntry:
    if not isinstance(value, dict) or not isinstance(value.get("size"), int) or value["size"] < 0:
        raise CheckFailed(f"the record's entry for {path!r} has no size", "the record is damaged: fetch again")
    sha = value.get("sha256")
    if not isinstance(sha, str) or not _SHA256.match(sha):
        raise CheckFailed(f"the record's entry for {path!r} has no sha256", "the record is damaged: fetch again")
    return FileEntry(safe_relative(path), value["size"], sha)


def record_from_data(data: Any) -> Record:
    """A record from its decoded JSON; anything else is refused (exit 1)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("files"), dict):
        raise CheckFailed("not a k3deploy sha256 record (format 1)", "the record is damaged or newer: fetch again")
    repo, revision = data.get("repo"), data.get("revision")
    if not isinstance(repo, str) or not isinstance(revision, str) or not revision:
        raise CheckFailed("the sha256 record names no repo and revision", "the record is damaged: fetch again")
    files = tuple(sorted((_entry(path, value) for path, value in data["files"].items()), key=lambda e: e.path))
    return Record(repo, revision, files)


def records_from_text(text: str) -> list[Record]:
    """The records of a record file: one record, or a list of them (the prefetch writes one per repo)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CheckFailed(f"the sha256 record is not JSON: {exc}", "the record is damaged: fetch again") from None
    return [record_from_data(item) for item in (data if isinstance(data, list) else [data])]


def record_data(record: Record) -> dict[str, Any]:
    """The JSON form of a record (files sorted by path)."""
    return {
        "format": FORMAT,
        "generator": GENERATOR,
        "repo": record.repo,
        "revision": record.revision,
        "files": {e.path: {"size": e.size, "sha256": e.sha256} for e in sorted(record.files, key=lambda e: e.path)},
    }


def marker_data(marker: Marker) -> dict[str, Any]:
    """The JSON form of a marker."""
    return {"format": FORMAT, "generator": GENERATOR, **marker.__dict__}


def marker_from_text(text: str) -> Marker | None:
    """The marker in `text`, or None when it is not a complete k3deploy marker (then the copy is not complete)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("generator") != GENERATOR:
        return None
    try:
        return Marker(
            name=str(data["name"]),
            repo=str(data["repo"]),
            revision=str(data["revision"]),
            files=int(data["files"]),
            bytes=int(data["bytes"]),
            seconds=float(data["seconds"]),
            mb_s=float(data["mb_s"]),
        )
    except (KeyError, TypeError, ValueError):
        return None
