"""`apply --dry-run[=none|client|server]`, spelt as kubectl spells it: what each kind touches, and how it parses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from k3deploy.cli import _dry_run_args
from tests.conftest import EXAMPLE_SETS, run_cli

PROFILE = "kimi-k3-gb300-tp16"


@pytest.mark.parametrize(
    ("given", "spelt"),
    [
        (["apply", "--dry-run"], ["apply", "--dry-run=server"]),
        (["apply", "--dry-run", "--kubeconfig", "k"], ["apply", "--dry-run=server", "--kubeconfig", "k"]),
        (["apply", "--dry-run", "client", "-o", "json"], ["apply", "--dry-run=client", "-o", "json"]),
        (["apply", "--dry-run=none"], ["apply", "--dry-run=none"]),
        (["apply", "--dry-run", "-p", "client"], ["apply", "--dry-run=server", "-p", "client"]),
        (["apply", "--", "--dry-run"], ["apply", "--", "--dry-run"]),
        # guard's --dry-run is a plain flag: left as it is.
        (["guard", "--dry-run", "--once"], ["guard", "--dry-run", "--once"]),
    ],
)
def test_a_bare_dry_run_means_server_and_never_swallows_the_next_option(given: list[str], spelt: list[str]) -> None:
    assert _dry_run_args(given) == spelt


def test_client_dry_run_renders_the_set_and_sends_nothing(tmp_path: Path) -> None:
    """No kubeconfig that works, yet exit 0: the client kind never reaches for the API server."""
    missing = tmp_path / "no-such-kubeconfig"
    done = run_cli(
        "apply", "-p", PROFILE, *EXAMPLE_SETS, "--kubeconfig", str(missing), "--dry-run", "client", "-o", "json"
    )
    assert done.returncode == 0, done.stderr
    sent = json.loads(done.stdout)
    rendered = run_cli("render", "-p", PROFILE, *EXAMPLE_SETS, "-o", "-")
    assert rendered.returncode == 0, rendered.stderr
    assert sent == [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]
    assert f"dry run (client): {len(sent)} objects rendered, nothing sent to the API server" in done.stderr
    assert not missing.exists()


def test_server_dry_run_needs_the_server(tmp_path: Path) -> None:
    """The server kind (and a bare --dry-run) asks the API server, so without one it is an environment error."""
    for flag in (["--dry-run"], ["--dry-run=server"]):
        done = run_cli("apply", "-p", PROFILE, "--kubeconfig", str(tmp_path / "none"), *flag)
        assert done.returncode == 3, done.stderr
        assert "FAIL apply: no usable Kubernetes configuration" in done.stderr, done.stderr
        assert "dry run (client)" not in done.stderr


def test_an_unknown_kind_is_a_usage_error() -> None:
    done = run_cli("apply", "-p", PROFILE, "--dry-run=maybe")
    assert done.returncode == 2
    assert "'maybe' is not one of 'none', 'client', 'server'" in done.stderr and "hint:" in done.stderr
