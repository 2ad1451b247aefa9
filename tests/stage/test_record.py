"""The record and marker formats: a round trip, and what a reader refuses or ignores."""

from __future__ import annotations

import json

import pytest

from k3deploy.errors import CheckFailed
from k3deploy.stage.record import (
    FileEntry,
    Marker,
    Record,
    marker_data,
    marker_from_text,
    record_data,
    records_from_text,
)

SHA = "ab" * 32


def test_a_record_round_trips_one_or_a_list() -> None:
    record = Record("org/m", "c0ffee", (FileEntry("a/b.safetensors", 5, SHA), FileEntry("c.json", 1, SHA)))
    assert records_from_text(json.dumps(record_data(record))) == [record]
    assert records_from_text(json.dumps([record_data(record)] * 2)) == [record, record]
    assert record.total_bytes == 6 and set(record.by_path()) == {"a/b.safetensors", "c.json"}


@pytest.mark.parametrize("path", ["../etc/passwd", "/abs", "a//b", "a/./b", ""])
def test_a_path_outside_the_snapshot_is_refused(path: str) -> None:
    data = {"format": 1, "repo": "r", "revision": "v", "files": {path: {"size": 1, "sha256": SHA}}}
    with pytest.raises(CheckFailed, match="outside its snapshot"):
        records_from_text(json.dumps(data))


@pytest.mark.parametrize(
    "data",
    [
        {"format": 2, "repo": "r", "revision": "v", "files": {}},
        {"format": 1, "repo": "r", "files": {}},
        {"format": 1, "repo": "r", "revision": "v", "files": {"a": {"size": 1, "sha256": "AB" * 32}}},
        {"format": 1, "repo": "r", "revision": "v", "files": {"a": {"size": -1, "sha256": SHA}}},
    ],
)
def test_a_damaged_record_is_refused(data: dict[str, object]) -> None:
    with pytest.raises(CheckFailed):
        records_from_text(json.dumps(data))


def test_not_json_is_refused() -> None:
    with pytest.raises(CheckFailed, match="not JSON"):
        records_from_text("{")


def test_a_marker_round_trips_and_anything_else_is_no_marker() -> None:
    marker = Marker("c0ffee", "org/m", "c0ffee", 2, 6, 1.5, 4.0)
    assert marker_from_text(json.dumps(marker_data(marker))) == marker
    assert marker_from_text(json.dumps({**marker_data(marker), "generator": "someone"})) is None
    assert marker_from_text(json.dumps({**marker_data(marker), "format": 9})) is None
    assert marker_from_text(json.dumps({k: v for k, v in marker_data(marker).items() if k != "bytes"})) is None
    assert marker_from_text('{"format": 1, "gen') is None
