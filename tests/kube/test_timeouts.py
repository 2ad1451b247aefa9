"""A Kubernetes API that accepts the connection and never answers: every command ends, exit 3, naming the server.

The real CLI (in this process), a kubeconfig pointing at a real socket on 127.0.0.1 that accepts and then stays
silent (or sends half an answer and stalls); the assertions are on the exit code and the message. The per-request
default (10 s connect, 30 s read; its value is tested in test_deadline.py) is shortened here to 2 s / 6 s, far enough apart
so the message still shows which of the two bounds fired, and the grace past a deadline (10 s) to 2 s.

Why no Kubernetes API server here: what is under test is the client's own timer (the per-request bound, the
command's deadline, the TLS handshake, a trickled answer, an exec credential plugin), which a real server never
exercises because it answers. The peer is therefore a socket that does not answer (tests/kube/stalling_server.py,
tests/trickling_server.py), not an imitation of a server. A request that hangs after a real server answered the
discovery, and 429/5xx/dropped watches, run against the real plane behind the fault proxy (tests/realk8s/test_faults.py).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
import yaml

from k3deploy.kube import deadline
from tests.conftest import run_cli
from tests.kube.stalling_server import stalling_server
from tests.support.kubeconfig import write_kubeconfig

PROFILE = "kimi-k3-gb300-tp16"
HINT = (
    "hint: check that the API server is up and healthy (`kubectl get --raw /readyz`) and the network path to it; "
    "--timeout bounds the whole command"
)


@pytest.fixture(autouse=True)
def short_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each API request without a deadline gets 2 s to connect and 6 s to read; 2 s of grace past a deadline."""
    monkeypatch.setattr(deadline, "DEFAULT_REQUEST_TIMEOUT", (2.0, 6.0))
    monkeypatch.setattr(deadline, "GRACE_S", 2.0)


def _run(tmp_path: Path, url: str, *args: str) -> list[str]:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", url)
    result = run_cli(*args, "-p", PROFILE, "--kubeconfig", str(kubeconfig), timeout=150)
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr.splitlines()


@pytest.mark.parametrize(
    "args",
    [
        ["status", "--timeout", "3s"],
        ["apply", "--timeout", "4s"],
        ["down", "--yes", "--timeout", "4s"],
        ["up", "--timeout", "4s"],
    ],
    ids=["status", "apply", "down", "up"],
)
def test_a_silent_api_ends_the_command_at_its_timeout(tmp_path: Path, args: list[str]) -> None:
    with stalling_server("silent") as url:
        lines = _run(tmp_path, url, *args)
    seconds = args[-1].removesuffix("s")
    assert (
        f"error: the Kubernetes API at {url} did not answer within the command's deadline of {seconds}s (GET /version)"
        in lines
    )
    assert lines[-1] == HINT


def test_without_a_timeout_each_request_has_its_own(tmp_path: Path) -> None:
    with stalling_server("silent") as url:
        lines = _run(tmp_path, url, "status")
    assert lines == [f"error: the Kubernetes API at {url} did not answer within 6s (GET /version)", HINT]


def test_an_answer_that_stalls_half_way_is_cut_off_too(tmp_path: Path) -> None:
    with stalling_server("stall") as url:
        lines = _run(tmp_path, url, "status", "--timeout", "3s")
    assert lines == [
        f"error: the Kubernetes API at {url} did not answer within the command's deadline of 3s (GET /version)",
        HINT,
    ]


def test_a_tls_handshake_that_never_completes_is_bounded_by_the_connect_timeout(tmp_path: Path) -> None:
    with stalling_server("silent") as url:
        https = url.replace("http://", "https://")
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", https)
        config = yaml.safe_load(kubeconfig.read_text())
        config["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
        kubeconfig.write_text(yaml.safe_dump(config))
        result = run_cli("status", "-p", PROFILE, "--kubeconfig", str(kubeconfig), timeout=150)
    assert result.returncode == 3, result.stderr
    assert result.stderr.splitlines() == [
        f"error: the Kubernetes API at {https} did not answer within 2s (GET /version)",
        HINT,
    ]


def test_a_trickling_api_ends_the_command_at_its_timeout(tmp_path: Path) -> None:
    """One byte every 0.2 s keeps each `recv` inside urllib3's read timeout; the whole answer is still bounded: the
    command ends at its 3 s deadline having read a few bytes of the 4 KiB answer (before: 800 s, per request)."""
    from tests.trickling_server import Trickle, trickling_server

    trickle = Trickle(interval_s=0.2)
    with trickling_server(trickle) as url:
        lines = _run(tmp_path, url, "status", "--timeout", "3s")
    assert any(
        line.startswith(
            f"error: the Kubernetes API at {url} was still sending its answer after the command's deadline of 3s (GET /version"
        )
        for line in lines
    ), lines
    assert trickle.sent < len(trickle.body) // 4


def test_a_hanging_exec_credential_plugin_ends_the_command_at_its_timeout(tmp_path: Path) -> None:
    """The plugin (a real process) writes its pid and sleeps; `status --timeout 3s` ends with exit 3 at the
    deadline (before: never) and the plugin it started is gone."""
    import os
    import sys

    pid_file = tmp_path / "plugin.pid"
    plugin = tmp_path / "plugin.py"
    plugin.write_text(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n")
    with stalling_server("silent") as url:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", url)
        config = yaml.safe_load(kubeconfig.read_text())
        config["users"][0]["user"] = {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": sys.executable,
                "args": [str(plugin)],
            }
        }
        kubeconfig.write_text(yaml.safe_dump(config))
        result = run_cli("status", "-p", PROFILE, "--kubeconfig", str(kubeconfig), "--timeout", "3s", timeout=60)
    assert result.returncode == 3, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == (
        f"error: the kubeconfig's exec credential plugin {sys.executable!r} did not finish within the command's "
        "deadline of 3s; it was ended with every process it started"
    ), lines
    assert len(lines) == 2 and lines[1].startswith("hint: ")
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        pass  # killed and reaped, as it should be
    else:
        raise AssertionError(f"plugin {pid} still runs")


def test_an_exec_plugin_whose_child_keeps_running_ends_with_its_whole_group(tmp_path: Path) -> None:
    """A bash plugin that starts `sleep 300` (which inherits its stdout) and waits: before, killing bash alone left
    the sleep holding the pipe and `up --timeout 10s` returned after ~300 s; now the plugin's process group is ended
    at the deadline, the child with it, and the error says so."""
    import os
    import signal

    child_pid = tmp_path / "child.pid"
    plugin = tmp_path / "plugin.sh"
    plugin.write_text(f"#!/bin/bash\nsleep 300 &\necho $! > {child_pid}\nwait\n")
    plugin.chmod(0o755)
    try:
        with stalling_server("silent") as url:
            kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", url)
            config = yaml.safe_load(kubeconfig.read_text())
            config["users"][0]["user"] = {
                "exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(plugin)}
            }
            kubeconfig.write_text(yaml.safe_dump(config))
            # run_cli's own bound (60 s) fails the test long before the 300 s the unbounded wait took.
            result = run_cli("up", "-p", PROFILE, "--kubeconfig", str(kubeconfig), "--timeout", "10s", timeout=60)
        assert result.returncode == 3, result.stderr
        lines = result.stderr.splitlines()
        assert lines[0] == (
            f"error: the kubeconfig's exec credential plugin {str(plugin)!r} did not finish within the command's "
            "deadline of 10s; it was ended with every process it started"
        ), lines
        stat = Path(f"/proc/{int(child_pid.read_text())}/stat")
        # The plugin's child ended with its group: gone, or a zombie left for whoever reaps orphans here.
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    finally:
        # Should the fix regress: the sleep the test's own plugin started (its pid written by it) is ended here.
        if child_pid.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(child_pid.read_text()), signal.SIGKILL)


@pytest.mark.parametrize("args", [["preflight", "--cluster"], ["plan", "--cluster"]], ids=["preflight", "plan"])
def test_a_hint_never_promises_a_timeout_flag_the_command_lacks(tmp_path: Path, args: list[str]) -> None:
    """Before: `preflight --cluster` and `plan --cluster` (no --timeout) hinted "--timeout bounds the whole command"."""
    with stalling_server("silent") as url:
        lines = _run(tmp_path, url, *args)
    assert lines[-1].startswith("hint: ") and "--timeout" not in lines[-1], lines
