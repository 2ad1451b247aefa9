"""--timeout parsing."""

from __future__ import annotations

import pytest

from k3deploy.cli.rollout import parse_duration
from k3deploy.errors import UsageError


@pytest.mark.parametrize(("text", "seconds"), [("90", 90.0), ("90s", 90.0), ("15m", 900.0), ("3h", 10800.0), ("1h30m", 5400.0), ("0.5s", 0.5)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "5d", "-3", "0"])
def test_bad_durations_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        parse_duration(text)
