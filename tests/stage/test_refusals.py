"""What `stage` refuses, each with its exit code: bad usage (2), a folder k3deploy did not make (2), too little
space or another run on DEST (3), files the snapshot does not list (1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from k3deploy.errors import CheckFailed, EnvironmentProblem, UsageError
from k3deploy.stage.run import StageOptions, stage
from k3deploy.stage.state import locked, marker_path
from tests.stage.snapshot import make_files, tree


def test_a_missing_source_or_record_is_usage(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not a folder"):
        stage(StageOptions(tmp_path / "nope", tmp_path / "dest"))
    make_files(tmp_path / "src")
    with pytest.raises(UsageError, match="--record"):
        stage(StageOptions(tmp_path / "src", tmp_path / "dest", record=tmp_path / "missing.json"))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_mb_s": 0.0}, "--max-mb-s"),
        ({"jobs": 0}, "--jobs"),
        ({"name": "../up"}, "cannot name"),
        ({"name": ".hidden"}, "cannot name"),
    ],
)
def test_bad_options_are_usage(tmp_path: Path, options: dict[str, object], message: str) -> None:
    make_files(tmp_path / "src")
    with pytest.raises(UsageError, match=message):
        stage(StageOptions(tmp_path / "src", tmp_path / "dest", **options))  # type: ignore[arg-type]


def test_a_folder_k3deploy_did_not_make_is_left_alone(tmp_path: Path) -> None:
    make_files(tmp_path / "src")
    theirs = tmp_path / "dest" / "src"
    theirs.mkdir(parents=True)
    (theirs / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="k3deploy did not stage it"):
        stage(StageOptions(tmp_path / "src", tmp_path / "dest"))
    assert tree(theirs) == {"notes.txt": b"mine"}


def test_dest_inside_source_is_refused(tmp_path: Path) -> None:
    make_files(tmp_path / "src")
    with pytest.raises(UsageError, match="overlap"):
        stage(StageOptions(tmp_path / "src", tmp_path / "src" / "sub", name="sub2"))
    with pytest.raises(UsageError, match="overlap"):
        stage(StageOptions(tmp_path / "src", tmp_path, name="src"))


def test_too_little_free_space_is_refused_before_a_byte_is_copied(tmp_path: Path) -> None:
    """A sparse 8 TiB file: its size counts, as a real shard's would, though it takes no blocks."""
    make_files(tmp_path / "src")
    with (tmp_path / "src" / "huge.safetensors").open("wb") as handle:
        handle.truncate(8 << 40)
    with pytest.raises(EnvironmentProblem, match="MB free; the copy needs"):
        stage(StageOptions(tmp_path / "src", tmp_path / "dest"))
    assert tree(tmp_path / "dest" / "src") == {}


def test_a_second_run_on_the_same_dest_is_refused(tmp_path: Path) -> None:
    make_files(tmp_path / "src")
    (tmp_path / "dest").mkdir()
    with locked(tmp_path / "dest"), pytest.raises(EnvironmentProblem, match="another `k3deploy stage`"):
        stage(StageOptions(tmp_path / "src", tmp_path / "dest"))


def test_a_file_the_snapshot_does_not_list_fails_the_run_and_stays(tmp_path: Path) -> None:
    make_files(tmp_path / "src")
    dest = tmp_path / "dest"
    stage(StageOptions(tmp_path / "src", dest))
    os.unlink(marker_path(dest, "src"))
    (dest / "src" / "extra.safetensors").write_bytes(b"someone's")
    with pytest.raises(CheckFailed, match=r"extra\.safetensors"):
        stage(StageOptions(tmp_path / "src", dest))
    assert (dest / "src" / "extra.safetensors").read_bytes() == b"someone's"
    assert not marker_path(dest, "src").exists()
