"""The canary's schedule read as the CronJob controller reads it: the longest gap between runs, and the faults it
refuses (robfig/cron/v3's standard parser)."""

from __future__ import annotations

import pytest

from k3deploy.profile.cron import longest_gap_s


@pytest.mark.parametrize(
    ("schedule", "hours"),
    [
        ("17 */6 * * *", 6),
        ("@hourly", 1),
        ("@daily", 24),
        ("*/15 * * * *", 0.25),
        ("0 9,17 * * 1-5", 64),  # Friday 17:00 to Monday 09:00
        ("0 0 * * sun", 168),
        ("0 0 * * 7", 168),  # 7 is Sunday too
        ("0 0 1 * *", 31 * 24),
        ("0 0 1,15 * mon", 24 * 7),  # both day fields restricted: either matches (cron's OR)
        ("0 12 * jan-mar *", (365 - 90 + 1) * 24),  # 31 March 12:00 to 1 January 12:00 (2024 is a leap year)
    ],
)
def test_the_longest_gap_between_two_runs(schedule: str, hours: float) -> None:
    assert longest_gap_s(schedule) == hours * 3600


@pytest.mark.parametrize(
    ("schedule", "why"),
    [
        ("* * * *", "five fields"),
        ("60 * * * *", "outside 0-59"),
        ("*/0 * * * *", "step must be at least 1"),
        ("0 0 * foo *", "not a number"),
        ("TZ=UTC 0 0 * * *", "spec.timeZone"),
        ("0 0 30 2 *", "fewer than twice"),
    ],
)
def test_a_schedule_the_controller_refuses_is_refused(schedule: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        longest_gap_s(schedule)
