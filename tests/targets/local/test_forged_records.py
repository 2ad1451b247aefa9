"""A state file is not trusted to pick a process to signal: forged, corrupt or stale records stop nothing else.

Driven through the real CLI over real processes: a bystander process must outlive every `down`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.integration.vllm_server import alive
from tests.targets.local.conftest import FakeLocal, wait_for


def write_record(state_dir: Path, **fields: object) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    record = {
        "profile": "local-cpu",
        "pid": 2,
        "create_time": 1.0,
        "host": "127.0.0.1",
        "port": 1,
        "argv": ["python3"],
        "env": {},
        "argv_hash": "0",
        "log_path": str(state_dir / "server.log"),
        "model_path": "m",
        "rehearsal": False,
        "started_at": "2026-01-01T00:00:00+00:00",
        **fields,
    }
    (state_dir / "server.json").write_text(json.dumps(record))


def no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout, done.stderr


@pytest.fixture
def bystander() -> Iterator[psutil.Process]:
    """Someone else's long-running process, leading its own session (as a server would)."""
    argv = [sys.executable, "-c", "import time; time.sleep(120)"]
    proc = subprocess.Popen(argv, start_new_session=True)
    found = psutil.Process(proc.pid)
    assert wait_for(lambda: found.cmdline() == argv, 10)  # exec'd, not the fork before it
    yield found
    proc.kill()
    proc.wait()


def test_pid_zero_does_not_signal_the_callers_own_group(fake_local: FakeLocal) -> None:
    write_record(fake_local.state_dir, pid=0)
    # The CLI shares a process group with a sibling, as in a user's script; os.killpg(0) would reach both.
    script = (
        f"{sys.executable} -c 'import time; time.sleep(60)' >/dev/null 2>&1 & echo $!; "
        f"{sys.executable} -m k3deploy {' '.join(repr(a) for a in fake_local.args('down', extra=('--yes',)))}; "
        "echo rc=$?"
    )
    from tests.conftest import cli_env

    done = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(fake_local.env()),
        start_new_session=True,
    )
    sibling = int(done.stdout.split()[0])
    try:
        assert "rc=0" in done.stdout, done.stderr
        assert alive(sibling)
        assert "down: nothing is running for local-cpu" in done.stderr
        no_traceback(done)
    finally:
        psutil.Process(sibling).kill()


@pytest.mark.parametrize("pid", [-1, 0, 1, 2**63, 2**22 + 1])
def test_an_impossible_pid_is_an_unreadable_record_for_status_and_down(fake_local: FakeLocal, pid: int) -> None:
    write_record(fake_local.state_dir, pid=pid)
    code, report, stderr = fake_local.json("status")
    assert code == 0, stderr
    assert report["running"] is False
    assert report["detail"].startswith(f"not running: {fake_local.state_dir / 'server.json'} is not a valid record (")
    assert report["detail"].endswith(f"no k3deploy server runs on port {fake_local.port}")
    done = fake_local.run("down", extra=("--yes",))
    assert (done.returncode, done.stderr.strip()) == (0, "down: nothing is running for local-cpu")
    no_traceback(done)


def test_a_record_forged_from_another_process_does_not_stop_it(
    fake_local: FakeLocal, bystander: psutil.Process
) -> None:
    # Everything /proc tells about the bystander: its pid, start time and exact command line.
    write_record(
        fake_local.state_dir,
        pid=bystander.pid,
        create_time=bystander.create_time(),
        argv=bystander.cmdline(),
        server_id="f" * 32,
    )
    code, report, _ = fake_local.json("status")
    assert (code, report["running"]) == (0, False)
    assert (
        report["detail"] == f"not running (pid {bystander.pid} is not the recorded server: another process, left alone)"
    )
    done = fake_local.run("down", extra=("--yes",))
    assert (done.returncode, done.stderr.strip()) == (0, "down: nothing is running for local-cpu")
    time.sleep(0.5)
    assert bystander.is_running() and bystander.status() != psutil.STATUS_ZOMBIE


def test_a_record_that_does_not_match_the_server_is_not_used_to_signal_it(
    fake_local: FakeLocal, bystander: psutil.Process
) -> None:
    assert fake_local.run("up").returncode == 0
    record = fake_local.record()
    pid = record["pid"]
    # Another command line for the server's pid: not proof; the server is found by port and command line instead.
    (fake_local.state_dir / "server.json").write_text(json.dumps({**record, "argv": [*record["argv"], "--extra"]}))
    _code, report, _ = fake_local.json("status")
    assert (report["running"], report["pid"]) == (True, pid)
    assert report["found_by"] == (
        f"the record does not prove pid {pid} is the server; found k3deploy's server "
        f"(pid {pid}) by its port and command line"
    )
    # The bystander's pid with the server's id and argv: the bystander is left alone, the server is stopped.
    forged = {**record, "pid": bystander.pid, "create_time": bystander.create_time()}
    (fake_local.state_dir / "server.json").write_text(json.dumps(forged))
    done = fake_local.run("down", extra=("--yes",))
    assert done.stderr.strip() == f"down: stopped vLLM (pid {pid}) found by its port and command line"
    assert wait_for(lambda: not alive(pid), 10)
    assert bystander.is_running() and bystander.status() != psutil.STATUS_ZOMBIE


def test_a_truncated_record_is_recovered_by_port_and_command_line(fake_local: FakeLocal) -> None:
    assert fake_local.run("up").returncode == 0
    pid = fake_local.record()["pid"]
    path = fake_local.state_dir / "server.json"
    path.write_bytes(path.read_bytes()[:57])
    code, report, _ = fake_local.json("status")
    assert (code, report["running"], report["pid"], report["healthy"], report["matches_profile"]) == (
        0,
        True,
        pid,
        True,
        True,
    )
    assert report["found_by"].startswith(f"{path} is not a valid record (")
    assert report["found_by"].endswith(f"found k3deploy's server (pid {pid}) by its port and command line")
    # `up` reuses it and writes the record again; `down` stops it.
    code, summary, stderr = fake_local.json("up")
    assert code == 0, stderr
    assert next(s for s in summary["stages"] if s["name"] == "apply")["detail"].startswith(
        f"already running (pid {pid})"
    )
    assert fake_local.record()["pid"] == pid
    path.write_text("{")
    done = fake_local.run("down", extra=("--yes",))
    assert done.stderr.strip() == f"down: stopped vLLM (pid {pid}) found by its port and command line"
    assert wait_for(lambda: not alive(pid), 10)
    assert not path.exists()


def test_a_lost_record_does_not_lose_the_server(fake_local: FakeLocal) -> None:
    assert fake_local.run("up").returncode == 0
    pid = fake_local.record()["pid"]
    (fake_local.state_dir / "server.json").unlink()
    _code, report, _ = fake_local.json("status")
    assert (report["running"], report["pid"]) == (True, pid)
    assert report["found_by"] == f"no record; found k3deploy's server (pid {pid}) by its port and command line"
    done = fake_local.run("down", extra=("--yes",))
    assert done.stderr.strip() == f"down: stopped vLLM (pid {pid}) found by its port and command line"
