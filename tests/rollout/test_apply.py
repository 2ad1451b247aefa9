"""`k3deploy apply` where no cluster behaviour is needed (no configuration, no server); order, idempotence, dry run,
diff, conflicts run on the real plane (tests/realk8s/rollout/test_apply.py), and 429/500 retried against the real
server behind the fault proxy (tests/realk8s/test_faults.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.integration.vllm_server import free_port
from tests.rollout.conftest import PROFILE
from tests.support.kubeconfig import write_kubeconfig

pytestmark = pytest.mark.timeout(180)


def applied_lines(stderr: str) -> list[str]:
    """The per-object lines of an apply: `<key> <action>`."""
    return [
        line.strip()
        for line in stderr.splitlines()
        if re.fullmatch(r"  \S+/\S+ (created|configured|unchanged|replaced)( \(server dry run\))?", line)
    ]


def test_no_config_and_no_server_are_environment_errors(tmp_path: Any) -> None:
    missing = run_cli("status", "-p", PROFILE, "--kubeconfig", str(tmp_path / "nope"))
    assert missing.returncode == 3
    assert missing.stderr.startswith("error: no usable Kubernetes configuration")
    dead = write_kubeconfig(tmp_path / "dead", f"http://127.0.0.1:{free_port()}")
    unreachable = run_cli("apply", "-p", PROFILE, "--kubeconfig", str(dead))
    assert unreachable.returncode == 3, unreachable.stderr
    assert (
        "Kubernetes API unreachable" in unreachable.stderr
        and "hint: check --kubeconfig/--context" in unreachable.stderr
    )
    assert "Traceback" not in unreachable.stderr
