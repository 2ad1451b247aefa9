"""The local target's ownership rules pinned (survivors of tests/mutation/run on targets/local/ownership.py): a
folder is k3deploy's only when it is a real directory of this user whose marker holds the id the registry
recorded for it; ids are 128-bit; the marker is private; a registry past 1 MiB is not read; a partial removal is
reported, not raised; folders removed by hand leave the registry."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from k3deploy.targets.local import ownership
from k3deploy.targets.local.ownership import MARKER, REGISTRY, create, forget_missing, is_owned, remove


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _registry(state: Path) -> dict[str, str]:
    return json.loads((state / REGISTRY).read_text())


def test_a_created_folder_is_ours_with_a_128_bit_id_and_a_private_marker(tmp_path: Path, umask: None) -> None:
    folder = tmp_path / "model"
    assert create(tmp_path, folder) is True and is_owned(tmp_path, folder) is True
    token = _registry(tmp_path)[str(folder)]
    assert len(token) == 32 and int(token, 16) >= 0
    assert (folder / MARKER).stat().st_mode & 0o777 == 0o600
    assert folder.stat().st_mode & 0o777 == 0o755
    assert create(tmp_path, folder) is False  # it exists: nothing is marked again


def test_a_symlink_to_a_folder_of_ours_is_not_ours(tmp_path: Path) -> None:
    folder, link = tmp_path / "model", tmp_path / "link"
    create(tmp_path, folder)
    link.symlink_to(folder, target_is_directory=True)
    registry = _registry(tmp_path)
    registry[str(link)] = registry[str(folder)]  # even a registry entry that names the link
    (tmp_path / REGISTRY).write_text(json.dumps(registry))
    assert is_owned(tmp_path, link) is False
    assert ownership._is_real_dir(link) is False and ownership._is_real_dir(folder) is True


def test_a_folder_with_a_copied_marker_but_no_registry_entry_is_not_ours(tmp_path: Path) -> None:
    folder, other = tmp_path / "model", tmp_path / "other"
    create(tmp_path, folder)
    other.mkdir()
    shutil.copy(folder / MARKER, other / MARKER)
    assert is_owned(tmp_path, other) is False


def test_a_recorded_folder_without_its_marker_or_gone_is_not_ours(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    create(tmp_path, folder)
    (folder / MARKER).unlink()
    assert is_owned(tmp_path, folder) is False
    shutil.rmtree(folder)
    assert is_owned(tmp_path, folder) is False and ownership._is_real_dir(folder) is False


def test_a_registry_up_to_one_mib_is_read_and_a_larger_one_is_not(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    create(tmp_path, folder)
    token = _registry(tmp_path)[str(folder)]

    def padded(size: int) -> None:
        entries = {str(folder): token}
        filler = size - len(json.dumps(entries)) - 20
        entries["/pad"] = "x" * filler
        (tmp_path / REGISTRY).write_text(json.dumps(entries))

    padded(700 * 1024)  # over 512 KiB, under 1 MiB
    assert is_owned(tmp_path, folder) is True
    padded(int(1.5 * 1024 * 1024))  # over 1 MiB, under 2 MiB
    assert is_owned(tmp_path, folder) is False


def test_saving_an_empty_registry_that_is_already_gone_is_no_error(tmp_path: Path) -> None:
    ownership._save(tmp_path, {})
    assert not (tmp_path / REGISTRY).exists()


def test_a_partial_removal_is_reported_not_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rmtree's errors are ignored on purpose: what is left is named in one line (root cannot be denied here, so
    the removal is made to fail as a read-only file system would make it)."""
    folder = tmp_path / "model"
    create(tmp_path, folder)

    def fails(path: str | Path, ignore_errors: bool = False) -> None:
        if not ignore_errors:
            raise OSError(30, "Read-only file system")

    monkeypatch.setattr(shutil, "rmtree", fails)
    assert remove(tmp_path, folder) == f"could not remove all of {folder}"
    assert str(folder) in _registry(tmp_path)  # still recorded: a later purge may finish it


def test_folders_removed_by_hand_leave_the_registry_and_the_others_stay(tmp_path: Path) -> None:
    kept, gone = tmp_path / "kept", tmp_path / "gone"
    create(tmp_path, kept)
    create(tmp_path, gone)
    shutil.rmtree(gone)
    forget_missing(tmp_path)
    assert list(_registry(tmp_path)) == [str(kept)]
