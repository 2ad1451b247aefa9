"""A staging run on real folders: a copy equal to SOURCE with its record and marker, a copy resumed where it
stopped, a corrupted byte caught, a marker of another revision not taken for this one."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import threading
from pathlib import Path

import pytest

from k3deploy.errors import CheckFailed
from k3deploy.stage import copy as copy_module
from k3deploy.stage import direct as direct_module
from k3deploy.stage import state
from k3deploy.stage.copy import PART_PREFIX, Copier
from k3deploy.stage.plan import SourceFile
from k3deploy.stage.record import FileEntry
from k3deploy.stage.run import StageOptions, stage
from k3deploy.stage.state import journal_path, marker_path, read_marker, record_path
from k3deploy.stage.throttle import Throttle
from tests.stage.snapshot import hub_cache, make_files, tree

COMMIT_A = "a" * 40
COMMIT_B = "b" * 40


def test_a_folder_without_a_record_is_copied_hashed_and_marked(tmp_path: Path) -> None:
    contents = make_files(tmp_path / "src")
    result = stage(StageOptions(tmp_path / "src", tmp_path / "dest"))
    assert tree(tmp_path / "dest" / "src") == contents
    record = json.loads(record_path(tmp_path / "dest", "src").read_text())
    assert record["files"] == {
        rel: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()} for rel, data in contents.items()
    }
    marker = read_marker(tmp_path / "dest", "src")
    assert marker is not None and marker.revision == record["revision"] == result.revision
    assert (result.files, result.bytes, result.files_copied, result.bytes_copied) == (
        4, sum(map(len, contents.values())), 4, sum(map(len, contents.values())),
    )  # fmt: skip
    assert result.checked_against.startswith("nothing: every file hashed")
    again = stage(StageOptions(tmp_path / "src", tmp_path / "dest"))
    assert again.already_staged and again.bytes_copied == 0


def test_the_prefetch_record_is_found_and_names_the_copy(tmp_path: Path) -> None:
    snapshot = hub_cache(tmp_path / "cache", "org/model", COMMIT_A)
    result = stage(StageOptions(snapshot, tmp_path / "dest"))
    assert (result.name, result.repo, result.revision, result.verified) == (COMMIT_A, "org/model", COMMIT_A, True)
    assert result.checked_against == str(tmp_path / "cache" / ".k3deploy" / f"prefetch-{COMMIT_A[:8]}.done.sha256.json")
    assert tree(tmp_path / "dest" / COMMIT_A) == tree(snapshot)
    # The staged copy is itself a source with a record (beside it): a second tray copies from it, checked.
    second = stage(StageOptions(tmp_path / "dest" / COMMIT_A, tmp_path / "dest2"))
    assert second.revision == COMMIT_A and second.repo == "org/model"


def test_a_hub_cache_snapshot_without_a_prefetch_record_is_checked_against_its_blob_names(tmp_path: Path) -> None:
    """The LFS files' blobs are named by the sha256 the Hub lists: a flipped byte is caught with no record at all;
    the small git file (its blob named by git's id) is hashed while copied and recorded."""
    snapshot = hub_cache(tmp_path / "cache", "org/model", COMMIT_A, prefetch_record=False)
    result = stage(StageOptions(snapshot, tmp_path / "dest"))
    assert (result.repo, result.revision) == ("org/model", COMMIT_A)
    assert result.checked_against.startswith("the Hub cache's blob names")
    record = json.loads(record_path(tmp_path / "dest", COMMIT_A).read_text())
    config = (snapshot / "config.json").read_bytes()
    assert record["files"]["config.json"]["sha256"] == hashlib.sha256(config).hexdigest()
    _flip_a_byte((snapshot / "model-00001-of-00003.safetensors").resolve())
    with pytest.raises(CheckFailed, match="sha256"):
        stage(StageOptions(snapshot, tmp_path / "dest2"))


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_source_that_differs_from_its_record_fails_and_leaves_nothing_complete(tmp_path: Path) -> None:
    snapshot = hub_cache(tmp_path / "cache", "org/model", COMMIT_A)
    _flip_a_byte((snapshot / "model-00002-of-00003.safetensors").resolve())
    with pytest.raises(CheckFailed, match=r"model-00002-of-00003\.safetensors: sha256"):
        stage(StageOptions(snapshot, tmp_path / "dest", jobs=1))
    dest = tmp_path / "dest"
    assert read_marker(dest, COMMIT_A) is None and not marker_path(dest, COMMIT_A).exists()
    names = {p.name for p in (dest / COMMIT_A).rglob("*")}
    assert "model-00002-of-00003.safetensors" not in names
    assert not [n for n in names if n.startswith(PART_PREFIX)]


def test_a_byte_corrupted_in_flight_is_caught_and_the_file_copied_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first read of one file comes back with a flipped byte (a flaky volume); its copy is refused by the
    sha256 and made again from a second read."""
    snapshot = hub_cache(tmp_path / "cache", "org/model", COMMIT_A)
    target = os.stat(snapshot / "sub" / "model-00003-of-00003.safetensors").st_ino
    real_preadv, spoilt = os.preadv, []

    def flaky_preadv(fd: int, buffers: list[memoryview], offset: int) -> int:
        n = real_preadv(fd, buffers, offset)
        if not spoilt and n and os.fstat(fd).st_ino == target:
            buffers[0][0] ^= 0xFF
            spoilt.append(fd)
        return n

    monkeypatch.setattr(direct_module.os, "preadv", flaky_preadv)
    stage(StageOptions(snapshot, tmp_path / "dest", jobs=1))
    assert spoilt  # the fault did happen
    assert tree(tmp_path / "dest" / COMMIT_A) == tree(snapshot)


def test_a_killed_run_resumes_from_its_journal(tmp_path: Path) -> None:
    """What a kill after one file leaves: that file renamed and journalled, another's part, no record, no marker."""
    snapshot = hub_cache(tmp_path / "cache", "org/model", COMMIT_A)
    dest = tmp_path / "dest"
    stage(StageOptions(snapshot, dest))
    journal = journal_path(dest, COMMIT_A).read_text().splitlines()
    kept = json.loads(journal[0])["path"]
    journal_path(dest, COMMIT_A).write_text(journal[0] + "\n" + journal[1][:10])  # the next line cut by the kill
    marker_path(dest, COMMIT_A).unlink()
    record_path(dest, COMMIT_A).unlink()
    for rel in tree(snapshot):
        if rel != kept:
            path = dest / COMMIT_A / rel
            path.rename(path.with_name(PART_PREFIX + path.name))
    result = stage(StageOptions(snapshot, dest))
    assert (result.files_resumed, result.files_copied) == (1, 3)
    assert tree(dest / COMMIT_A) == tree(snapshot)  # no part left behind
    assert read_marker(dest, COMMIT_A) is not None


def test_a_journalled_file_of_another_size_is_copied_again(tmp_path: Path) -> None:
    contents = make_files(tmp_path / "src")
    dest = tmp_path / "dest"
    stage(StageOptions(tmp_path / "src", dest))
    marker_path(dest, "src").unlink()
    (dest / "src" / "config.json").write_bytes(b"{}")
    result = stage(StageOptions(tmp_path / "src", dest))
    assert (result.files_resumed, result.files_copied) == (3, 1)
    assert tree(dest / "src") == contents


def test_recheck_finds_a_staged_file_corrupted_since_and_copies_it_again(tmp_path: Path) -> None:
    snapshot = hub_cache(tmp_path / "cache", "org/model", COMMIT_A)
    dest = tmp_path / "dest"
    stage(StageOptions(snapshot, dest))
    _flip_a_byte(dest / COMMIT_A / "model-00001-of-00003.safetensors")
    assert stage(StageOptions(snapshot, dest)).already_staged  # the marker alone is trusted without --recheck
    result = stage(StageOptions(snapshot, dest, recheck=True))
    assert (result.files_copied, result.files_resumed) == (1, 3)
    assert tree(dest / COMMIT_A) == tree(snapshot)


def test_a_marker_of_another_revision_is_not_taken_for_this_one(tmp_path: Path) -> None:
    """Revision A staged under a name; revision B staged under the same name is copied in full (A's marker and
    its files are not B's), and a file only A had is removed."""
    dest = tmp_path / "dest"
    old = hub_cache(tmp_path / "a", "org/model", COMMIT_A, sizes={"x.safetensors": 1000, "only-a.json": 10})
    stage(StageOptions(old, dest, name="current"))
    new = hub_cache(tmp_path / "b", "org/model", COMMIT_B, seed=1, sizes={"x.safetensors": 1000})
    result = stage(StageOptions(new, dest, name="current"))
    assert not result.already_staged and (result.files_copied, result.files_resumed) == (1, 0)
    assert tree(dest / "current") == tree(new)
    marker = read_marker(dest, "current")
    assert marker is not None and marker.revision == COMMIT_B


def test_every_byte_copied_passes_the_cap(tmp_path: Path) -> None:
    """The copier asks the shared throttle for each chunk, hashed or copied by the kernel (the cap's waits are
    tests/stage/test_throttle.py's)."""
    contents = make_files(tmp_path / "src", {"a": 9_000_000, "b": 1})
    asked: list[int] = []

    class Recording(Throttle):
        def take(self, nbytes: int, now: float) -> float:
            asked.append(nbytes)
            return super().take(nbytes, now)

    for verify in (True, False):
        asked.clear()
        copier = Copier(Recording(1e12, 0.0), lambda n: None, threading.Event(), verify=verify)
        for rel, data in contents.items():
            copier.copy(
                tmp_path / "src",
                tmp_path / f"dest-{verify}",
                SourceFile(rel, len(data), hashlib.sha256(data).hexdigest()),
            )
        assert sum(asked) == 9_000_001 and len(asked) == 3  # two chunks of a, one of b
        assert tree(tmp_path / f"dest-{verify}") == contents


def test_each_file_is_journalled_as_it_lands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With one copier, the next file's copy waits until the journal holds every file already in place: it does
    when each is journalled as it lands (a run journalled at its end would never get there, and fail here)."""
    make_files(tmp_path / "src")
    dest = tmp_path / "dest"
    journalled = threading.Semaphore(0)
    real_append, real_copy = state.append_journal, Copier.copy
    copies: list[str] = []

    def append(dest_: Path, name: str, entry: FileEntry) -> None:
        real_append(dest_, name, entry)
        journalled.release()

    def copy(self: Copier, source: Path, folder: Path, entry: SourceFile) -> str | None:
        if copies:
            assert journalled.acquire(timeout=30), f"{copies[-1]} was not journalled before the next copy"
        copies.append(entry.path)
        return real_copy(self, source, folder, entry)

    monkeypatch.setattr(state, "append_journal", append)
    monkeypatch.setattr(Copier, "copy", copy)
    result = stage(StageOptions(tmp_path / "src", dest, jobs=1))
    assert result.files_copied == len(copies) == 4
    assert len(journal_path(dest, "src").read_text().splitlines()) == 4


def test_a_kernel_copy_between_filesystems_copy_file_range_refuses_goes_on_with_sendfile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--no-verify from the weight volume (NFS) onto a tray's disk, where one of them takes no direct I/O (direct=False
    here): Linux 5.19+ answers copy_file_range between two kinds of filesystem with EXDEV, as it is made to here."""
    contents = make_files(tmp_path / "src", {"a": 9_000_000, "b": 1})
    tried: list[int] = []

    def refuse(*args: object) -> int:
        tried.append(1)
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(copy_module.os, "copy_file_range", refuse)
    copier = Copier(Throttle(None, 0.0), lambda n: None, threading.Event(), verify=False, direct=False)
    for rel, data in contents.items():
        copier.copy(tmp_path / "src", tmp_path / "dest", SourceFile(rel, len(data), hashlib.sha256(data).hexdigest()))
    assert tree(tmp_path / "dest") == contents and len(tried) == 2  # once per file, then sendfile
