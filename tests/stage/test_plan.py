"""The arithmetic of a staging run: what is left, the space it needs, the copiers, the rates."""

from __future__ import annotations

import pytest

from k3deploy.stage.plan import FREE_MARGIN_BYTES, MAX_JOBS, SourceFile, jobs_for, make_plan, mb_per_s, seconds_at

FILES = [SourceFile("a", 100, None), SourceFile("b", 300, None), SourceFile("c", 50, None)]


def test_nothing_done_copies_everything_largest_first() -> None:
    plan = make_plan(FILES, {})
    assert [f.path for f in plan.todo] == ["b", "a", "c"]
    assert (plan.total_files, plan.total_bytes, plan.done_bytes, plan.remaining_bytes) == (3, 450, 0, 450)
    assert plan.space_needed == 450 + FREE_MARGIN_BYTES


def test_done_files_are_left_and_one_of_another_size_is_copied_again() -> None:
    plan = make_plan(FILES, {"a": 100, "b": 299})
    assert [f.path for f in plan.todo] == ["b", "c"]
    assert (plan.done_bytes, plan.remaining_bytes) == (100, 350)


def test_all_done_needs_no_space() -> None:
    plan = make_plan(FILES, {"a": 100, "b": 300, "c": 50})
    assert plan.todo == () and plan.space_needed == 0 and plan.remaining_bytes == 0


def test_copiers_are_bounded_by_the_files_left_and_the_maximum() -> None:
    plan = make_plan(FILES, {})
    assert jobs_for(plan, None) == 3
    assert jobs_for(plan, 2) == 2
    many = make_plan([SourceFile(str(i), 1, None) for i in range(40)], {})
    assert jobs_for(many, None) == 8
    assert jobs_for(many, 64) == MAX_JOBS
    assert jobs_for(make_plan(FILES, {"a": 100, "b": 300, "c": 50}), None) == 1


def test_rates_and_times() -> None:
    assert mb_per_s(3_000_000_000, 2.0) == 1500.0
    assert mb_per_s(10, 0.0) == 0.0
    # A GB300 tray's ~1.56 TB at the ~3250 MB/s an 8-minute NVMe load implies: 480 s.
    assert seconds_at(1_560_000_000_000, 3250) == pytest.approx(480.0)
    with pytest.raises(ValueError):
        seconds_at(1, 0)
