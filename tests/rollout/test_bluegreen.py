"""`up --strategy blue-green` where no cluster is involved: refused on the local target. The strategy itself runs on
the real plane (tests/realk8s/rollout/test_bluegreen.py)."""

from __future__ import annotations

from tests.conftest import run_cli


def test_blue_green_is_refused_on_the_local_target() -> None:
    result = run_cli("up", "-p", "local-cpu", "--strategy", "blue-green", "--skip-preflight", timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-2:] == [
        "error: --strategy blue-green needs a cluster; profile 'local-cpu' runs on target 'local'",
        "hint: drop --strategy: the local target runs one server",
    ]
