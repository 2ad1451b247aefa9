"""`guard` flag checking through the real CLI: bad input is one error line and one hint, before any cluster call."""

from __future__ import annotations

from tests.conftest import run_cli


def test_a_local_profile_is_refused() -> None:
    result = run_cli("guard", "-p", "local-cpu", "--once")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "error: profile local-cpu does not run on Kubernetes: guard watches a release's serving groups on a cluster",
        "hint: pass a Kubernetes profile, e.g. -p kimi-k3-gb300-tp16",
    ]


def test_an_interval_that_is_not_a_duration_exits_2() -> None:
    result = run_cli("guard", "-p", "kimi-k3-gb300-tp16", "--interval", "banana")
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == "error: --interval 'banana' is not a duration"


def test_a_metrics_port_with_once_is_refused() -> None:
    result = run_cli("guard", "-p", "kimi-k3-gb300-tp16", "--once", "--metrics-port", "9100")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "error: --metrics-port is a port (1-65535) of the loop",
        "hint: drop --once to run the loop",
    ]


def test_a_negative_rate_limit_is_a_profile_error() -> None:
    result = run_cli("guard", "-p", "kimi-k3-gb300-tp16", "--once", "--set", "guard.max_cordons_per_hour=-1")
    assert result.returncode == 2
    assert "guard.max_cordons_per_hour" in result.stderr.splitlines()[0]


def test_a_group_endpoint_that_is_no_url_template_is_refused_before_any_cluster_call() -> None:
    result = run_cli("guard", "-p", "kimi-k3-gb300-tp16", "--once", "--group-endpoint", "http://{nope}:8000")
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: --group-endpoint ") and lines[1].startswith("hint: ")
