"""apply / up flag checking through the real CLI: a bad --timeout is a usage error before anything is touched."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli


@pytest.mark.parametrize("command", ["apply", "up"])
@pytest.mark.parametrize("profile", ["kimi-k3-gb300-tp16", "local-cpu"])
def test_a_timeout_that_is_not_a_duration_exits_2(command: str, profile: str) -> None:
    result = run_cli(command, "-p", profile, "--timeout", "banana")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "error: --timeout 'banana' is not a duration",
        "hint: use seconds or a Go-style duration: 90s, 15m, 2h30m",
    ]
