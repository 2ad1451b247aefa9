"""`watch --groups` refuses a profile that runs on no cluster (exit 2, one error and one hint line); what it shows
on a cluster is tests/realk8s/test_status_groups.py's."""

from __future__ import annotations

from tests.conftest import run_cli


def test_groups_of_a_local_profile_is_a_usage_error() -> None:
    result = run_cli("watch", "-p", "local-cpu", "--groups", "--endpoint", "http://127.0.0.1:9", "--count", "1")
    assert result.returncode == 2
    error, hint = result.stderr.strip().splitlines()
    assert error == (
        "error: --groups reads a release's groups on a cluster; profile local-cpu does not run on Kubernetes"
    )
    assert hint == "hint: drop --groups, or pass a Kubernetes profile"
