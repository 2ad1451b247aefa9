"""Durations: the one parser every seconds-taking flag uses; non-finite, negative and zero values are usage errors."""

from __future__ import annotations

import pytest

from k3deploy.duration import parse_duration
from k3deploy.errors import UsageError
from tests.conftest import run_cli


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90.0),
        ("90s", 90.0),
        ("15m", 900.0),
        ("3h", 10800.0),
        ("1h30m", 5400.0),
        ("0.5s", 0.5),
        ("500ms", 0.5),
        (" 2m30s ", 150.0),
        ("1e3", 1000.0),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "text",
    [
        "",
        "soon",
        "5d",
        "-3",
        "0",
        "0s",
        "nan",
        "NaN",
        "inf",
        "-inf",
        "Infinity",
        "1e400",
        "-5m",
        "1h-30m",
        "8d",
        "1000000",
        "s",
        "1.s",
    ],
)
def test_bad_durations_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        parse_duration(text)


def test_the_error_names_the_flag() -> None:
    with pytest.raises(UsageError) as exc:
        parse_duration("nan", "--overall-timeout")
    assert exc.value.message == "--overall-timeout 'nan' is not a finite duration"


@pytest.mark.parametrize(
    ("args", "first_line"),
    [
        (["apply", "-p", "kimi-k3-gb300-tp16", "--timeout", "nan"], "error: --timeout 'nan' is not a finite duration"),
        (["up", "-p", "kimi-k3-gb300-tp16", "--timeout", "inf"], "error: --timeout 'inf' is not a finite duration"),
        (["down", "-p", "kimi-k3-gb300-tp16", "--yes", "--timeout", "-5m"], "error: --timeout '-5m' is not a duration"),
        (["down", "-p", "local-cpu", "--yes", "--timeout", "0"], "error: --timeout '0' must be positive"),
        (
            ["smoke", "--endpoint", "http://127.0.0.1:1", "--overall-timeout", "nan"],
            "error: --overall-timeout 'nan' is not a finite duration",
        ),
        (
            ["smoke", "--endpoint", "http://127.0.0.1:1", "--request-timeout", "inf"],
            "error: --request-timeout 'inf' is not a finite duration",
        ),
    ],
)
def test_cli_refuses_non_finite_and_non_positive_durations(args: list[str], first_line: str) -> None:
    result = run_cli(*args, timeout=60)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == first_line and lines[1].startswith("hint: ") and len(lines) == 2


@pytest.mark.parametrize(
    "override",
    [
        "smoke.overall_timeout_s=inf",
        "smoke.request_timeout_s=nan",
        "targets.peak_decode_tok_s=inf",
        "targets.decode_tok_s=inf",
    ],
)
def test_profile_numbers_must_be_finite(override: str) -> None:
    result = run_cli("smoke", "--endpoint", "http://127.0.0.1:1", "--set", override, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
