"""Old snapshots: only k3deploy's go, never the one in use, and within one only the files its record lists."""

from __future__ import annotations

import json
from pathlib import Path

from k3deploy.stage.prune import open_below, prune
from k3deploy.stage.run import StageOptions, stage
from k3deploy.stage.state import marker_path, record_path
from tests.stage.snapshot import hub_cache, tree

COMMITS = ["1" * 40, "2" * 40, "3" * 40]


def _staged(tmp_path: Path) -> Path:
    """DEST holding the first two commits (no pruning yet); the third's snapshot is returned to stage next."""
    dest = tmp_path / "dest"
    for i, commit in enumerate(COMMITS[:2]):
        stage(StageOptions(hub_cache(tmp_path / f"c{i}", "org/m", commit, seed=i), dest, prune=False))
    return hub_cache(tmp_path / "c2", "org/m", COMMITS[2], seed=2)


def test_a_new_snapshot_removes_the_old_ones_but_not_what_others_put_there(tmp_path: Path) -> None:
    newest = _staged(tmp_path)
    dest = tmp_path / "dest"
    (dest / COMMITS[0] / "notes.txt").write_text("an operator's")
    (dest / "someone-else").mkdir()
    result = stage(StageOptions(newest, dest))
    assert result.pruned == COMMITS[:2]
    assert tree(dest / COMMITS[0]) == {"notes.txt": b"an operator's"}  # the folder stays for the file it holds
    assert not (dest / COMMITS[1]).exists()
    for commit in COMMITS[:2]:
        assert not marker_path(dest, commit).exists() and not record_path(dest, commit).exists()
    assert (dest / "someone-else").is_dir() and tree(dest / COMMITS[2]) == tree(newest)


def test_the_snapshot_in_use_stays(tmp_path: Path) -> None:
    newest = _staged(tmp_path)
    dest = tmp_path / "dest"
    result = stage(StageOptions(newest, dest, in_use=(COMMITS[0],)))
    assert result.pruned == [COMMITS[1]]
    assert marker_path(dest, COMMITS[0]).exists() and (dest / COMMITS[0]).is_dir()


def test_a_snapshot_with_an_open_file_stays(tmp_path: Path) -> None:
    _staged(tmp_path)
    dest = tmp_path / "dest"
    with (dest / COMMITS[1] / "config.json").open("rb"):
        assert open_below(dest / COMMITS[1])
        assert prune(dest, set()) == [COMMITS[0]]
    assert not open_below(dest / COMMITS[1])
    assert prune(dest, set()) == [COMMITS[1]]


def test_a_marker_or_record_not_k3deploys_is_left(tmp_path: Path) -> None:
    _staged(tmp_path)
    dest = tmp_path / "dest"
    marker = json.loads(marker_path(dest, COMMITS[0]).read_text())
    marker_path(dest, COMMITS[0]).write_text(json.dumps({**marker, "generator": "another-tool"}))
    record = json.loads(record_path(dest, COMMITS[1]).read_text())
    record_path(dest, COMMITS[1]).write_text(json.dumps({**record, "generator": "another-tool"}))
    assert prune(dest, set()) == []
    assert tree(dest / COMMITS[0]) and tree(dest / COMMITS[1])
