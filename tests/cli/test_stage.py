"""`k3deploy stage` at the command line: its JSON summary, and one `error:` and one `hint:` line with the exit code
of each failure."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import CliCall
from tests.stage.snapshot import hub_cache, make_files


def test_the_json_summary(cli: CliCall, tmp_path: Path) -> None:
    contents = make_files(tmp_path / "src")
    result = cli("stage", str(tmp_path / "src"), str(tmp_path / "dest"), "-o", "json", "--max-mb-s", "1000")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["bytes"] == summary["bytes_copied"] == sum(map(len, contents.values()))
    assert summary["files"] == 4 and summary["seconds"] >= 0 and summary["mb_s"] >= 0
    assert summary["folder"] == str(tmp_path / "dest" / "src") and summary["verified"] is True


def test_off_a_terminal_the_summary_is_one_line(cli: CliCall, tmp_path: Path) -> None:
    make_files(tmp_path / "src")
    result = cli("stage", str(tmp_path / "src"), str(tmp_path / "dest"))
    assert result.returncode == 0 and result.stdout == ""
    assert result.stderr.startswith("staged src@sha256:") and result.stderr.count("\n") == 1


def _error(result: object) -> list[str]:
    lines = result.stderr.splitlines()  # type: ignore[attr-defined]
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("hint: "), lines
    return lines


def test_a_mismatch_exits_1(cli: CliCall, tmp_path: Path) -> None:
    snapshot = hub_cache(tmp_path / "cache", "org/m", "c" * 40)
    blob = (snapshot / "config.json").resolve()
    blob.write_bytes(blob.read_bytes()[::-1])
    result = cli("stage", str(snapshot), str(tmp_path / "dest"))
    assert result.returncode == 1
    assert "config.json: sha256" in _error(result)[0]


def test_usage_exits_2_and_no_space_exits_3(cli: CliCall, tmp_path: Path) -> None:
    result = cli("stage", str(tmp_path / "nope"), str(tmp_path / "dest"))
    assert result.returncode == 2 and "is not a folder" in _error(result)[0]
    make_files(tmp_path / "src")
    result = cli("stage", str(tmp_path / "src"), str(tmp_path / "dest"), "--max-mb-s", "-1")
    assert result.returncode == 2 and "--max-mb-s" in _error(result)[0]
    with (tmp_path / "src" / "huge").open("wb") as handle:
        handle.truncate(8 << 40)
    result = cli("stage", str(tmp_path / "src"), str(tmp_path / "dest"))
    assert result.returncode == 3 and "MB free" in _error(result)[0]
