"""The bounded revision history (pure part)."""

from __future__ import annotations

from k3deploy.targets.kubernetes.history import HISTORY_LIMIT, bounded


def test_first_revision_is_one_and_an_identical_set_adds_none() -> None:
    entries, number = bounded([], [{"kind": "A"}], "t1")
    assert number == 1 and [e["revision"] for e in entries] == [1]
    again, same_number = bounded(entries, [{"kind": "A"}], "t2")
    assert again is entries and same_number == 1


def test_history_is_cut_to_the_limit_keeping_the_newest() -> None:
    entries: list[dict] = []
    for i in range(HISTORY_LIMIT + 3):
        entries, number = bounded(entries, [{"kind": "A", "n": i}], f"t{i}")
    assert number == HISTORY_LIMIT + 3
    assert [e["revision"] for e in entries] == list(range(4, HISTORY_LIMIT + 4))
