"""The managed process: its own group, found by pid + start time, stopped whole, never someone else's."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from k3deploy.errors import EnvironmentProblem
from k3deploy.targets.local import process
from k3deploy.targets.local.process import Identity
from tests.integration.vllm_server import alive

#: A leader that starts a child in its own group (like vLLM's API server and engine core) and waits.
LEADER = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
print("child", child.pid, flush=True)
time.sleep(120)
"""
#: The same, but both ignore SIGTERM: only SIGKILL stops them.
STUBBORN = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"])
print("child", child.pid, flush=True)
time.sleep(120)
"""


def start_group(script: str, tmp_path: Path, server_id: str = "id-1") -> tuple[Identity, int]:
    """Start `script` as a managed server; wait for its child; return (its identity, child pid)."""
    log = tmp_path / "server.log"
    argv = [sys.executable, "-c", script]
    pid, created = process.start(argv, {"MARK": "1"}, log, tmp_path / "cwd", server_id)
    deadline = time.monotonic() + 30
    while "child" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(log.read_text().split()[1])
    return Identity(pid, created, tuple(argv), server_id), child


def test_started_server_leads_its_own_group_and_stop_ends_all_of_it(tmp_path: Path) -> None:
    ident, child = start_group(LEADER, tmp_path)
    pid = ident.pid
    try:
        assert os.getpgid(pid) == pid and os.getpgid(child) == pid and os.getsid(pid) == pid
        assert os.getpgid(pid) != os.getpgid(os.getpid())
        assert process.is_ours(ident)
        assert psutil.Process(pid).environ()[process.SERVER_ID_ENV] == "id-1"
        assert psutil.Process(pid).environ()[process.STATE_DIR_ENV] == str(tmp_path / "cwd")
        assert sorted(process.group_members(pid)) == sorted([pid, child])
        assert process.stop(ident) is True
        assert not alive(pid) and not alive(child)
        assert process.group_members(pid) == []
        assert not process.is_ours(ident)
        assert process.stop(ident) is False  # stopping again is a no-op
    finally:
        process.stop(ident, grace_s=0.5)


def test_what_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    ident, child = start_group(STUBBORN, tmp_path)
    try:
        assert process.stop(ident, grace_s=0.5) is True
        assert not alive(ident.pid) and not alive(child)
    finally:
        process.stop(ident, grace_s=0.1)


@pytest.mark.parametrize(
    "change",
    [
        {"create_time": -100.0},  # another start time: the pid was reused
        {"argv": ("python3", "-m", "something.else")},  # another command line
        {"server_id": "id-forged"},  # another launch's id
        {"server_id": None},  # no id at all
    ],
)
def test_a_process_that_does_not_match_every_mark_is_not_ours_and_is_left_alone(tmp_path: Path, change: dict) -> None:
    ident, child = start_group(LEADER, tmp_path)
    forged = replace(ident, **{k: (ident.create_time + v if k == "create_time" else v) for k, v in change.items()})
    try:
        assert not process.is_ours(forged)
        assert process.stop(forged, grace_s=0.5) is False
        assert alive(ident.pid) and alive(child)
    finally:
        process.stop(ident, grace_s=0.5)


def test_orphans_of_a_dead_leader_are_still_stopped(tmp_path: Path) -> None:
    ident, child = start_group(LEADER, tmp_path)
    pid = ident.pid
    try:
        os.kill(pid, 9)
        deadline = time.monotonic() + 10
        while process.is_ours(ident) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not process.is_ours(ident)
        assert process.group_members(pid) == [child]
        # A record with another launch's id does not reach the orphans; the right one does.
        assert process.stop(replace(ident, server_id="id-forged"), grace_s=2) is False and alive(child)
        assert process.stop(ident, grace_s=2) is True
        assert not alive(child)
    finally:
        process.stop(ident, grace_s=0.1)


def test_children_of_a_leader_caught_while_exiting_are_stopped_once_it_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A leader in the middle of its exit reads an empty command line (its memory is gone) but still holds its
    # group: stop must wait for it to go and then stop its children, not report "had exited" and leave them.
    ident, child = start_group(LEADER, tmp_path)
    real_cmdline = psutil.Process.cmdline
    monkeypatch.setattr(psutil.Process, "cmdline", lambda self: [] if self.pid == ident.pid else real_cmdline(self))
    try:
        assert process._exiting(ident) and not process.is_ours(ident)
        threading.Timer(0.5, os.kill, (ident.pid, 9)).start()
        assert process.stop(ident, grace_s=2) is True
        assert not alive(child) and process.group_members(ident.pid) == []
        assert not process._exiting(ident)
    finally:
        monkeypatch.undo()
        process.stop(ident, grace_s=0.1)


def test_a_running_leader_or_another_start_time_is_not_taken_for_an_exiting_one(tmp_path: Path) -> None:
    ident, _ = start_group(LEADER, tmp_path)
    try:
        assert not process._exiting(ident)  # its command line reads: it is running
        assert not process._exiting(replace(ident, create_time=ident.create_time - 100))
        assert not process._exiting(replace(ident, server_id=None))
    finally:
        process.stop(ident, grace_s=0.5)
    assert not process._exiting(ident)  # gone


@pytest.mark.parametrize(
    ("cmdline", "ok"),
    [
        (["/venv/bin/python", "-m", "vllm.x", "--port", "1"], True),  # as started
        (["/usr/bin/python3.11", "-m", "vllm.x", "--port", "1"], True),  # a shim that executed the real interpreter
        (["/usr/bin/python3", "-I", "/venv/bin/python", "-m", "vllm.x", "--port", "1"], True),  # a shebang wrapper
        (["/usr/bin/python3", "/other/wrapper", "-m", "vllm.x", "--port", "1"], False),
        (["/venv/bin/python", "-m", "vllm.x", "--port", "2"], False),
        (["/venv/bin/python", "-m", "vllm.x"], False),
        ([], False),
    ],
)
def test_command_line_matching(cmdline: list[str], ok: bool) -> None:
    assert process.cmdline_matches(cmdline, ("/venv/bin/python", "-m", "vllm.x", "--port", "1")) is ok


def test_start_passes_env_rotates_the_previous_log_and_reports_a_missing_interpreter(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("old run\n")
    pid, _created = process.start(
        [sys.executable, "-c", "import os; print(os.environ['MARK'])"], {"MARK": "here"}, log, tmp_path / "cwd", "id-1"
    )
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(pid).wait(timeout=30)
    assert process.log_tail(log) == ["here"]
    assert (tmp_path / "server.log.prev").read_text() == "old run\n"
    with pytest.raises(EnvironmentProblem, match="cannot start /nonexistent/python"):
        process.start(["/nonexistent/python"], {}, log, tmp_path / "cwd", "id-1")


def test_log_tail_keeps_the_last_non_empty_lines(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("".join(f"line {i}\n\n" for i in range(30)))
    assert process.log_tail(log, 3) == ["line 27", "line 28", "line 29"]
    assert process.log_tail(tmp_path / "missing.log") == []


#: A leader whose child rewrites its own process title and environment, as vLLM's engine core does
#: (setproctitle("VLLM::EngineCore") overwrites the environment block): after the exec the launch id is gone.
RETITLED = """
import subprocess, sys, time
code = "import os, sys; os.execve(sys.executable, ['VLLM::EngineCore', '-c', 'import time; time.sleep(120)'], {})"
child = subprocess.Popen([sys.executable, "-c", code])
print("child", child.pid, flush=True)
time.sleep(120)
"""


def test_a_retitled_child_of_a_killed_leader_is_found_by_session_start_time_and_cwd(tmp_path: Path) -> None:
    """Before: the child's environment no longer carried the id, so `down` left it running (and said it stopped
    nothing). Its session, group, start time and working directory (the state directory) prove it ours."""
    ident, child = start_group(RETITLED, tmp_path)
    try:
        deadline = time.monotonic() + 10
        while psutil.Process(child).cmdline()[:1] != ["VLLM::EngineCore"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.SERVER_ID_ENV not in psutil.Process(child).environ()
        os.kill(ident.pid, 9)
        while process.is_ours(ident) and time.monotonic() < deadline:
            time.sleep(0.05)
        with_cwd = replace(ident, cwd=str(tmp_path / "cwd"))
        # Without the state directory, or with another one, nothing proves it ours: it is left alone.
        assert process.survivors(ident) == [] and process.stop(ident, grace_s=2) is False and alive(child)
        other = replace(ident, cwd=str(tmp_path))
        assert process.survivors(other) == [] and process.stop(other, grace_s=2) is False and alive(child)
        # Started before the recorded leader: not its child (a record naming an older group).
        older = replace(with_cwd, create_time=ident.create_time + 60)
        assert process.survivors(older) == [] and alive(child)
        assert process.survivors(with_cwd) == [child]
        assert process.stop(with_cwd, grace_s=2) is True
        assert not alive(child)
    finally:
        with contextlib.suppress(ProcessLookupError):
            if alive(child):
                os.kill(child, 9)


def test_status_reports_the_survivors_and_down_stops_them(tmp_path: Path) -> None:
    from k3deploy.targets.local.state import ServerRecord, write_record
    from tests.conftest import run_cli

    state = tmp_path / "state"
    log = state / "vllm.log"
    argv = [sys.executable, "-c", RETITLED]
    server_id = "id-status"
    pid, created = process.start(argv, {}, log, state, server_id)
    deadline = time.monotonic() + 30
    while "child" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(log.read_text().split()[1])
    record = ServerRecord(
        profile="local-cpu",
        pid=pid,
        create_time=created,
        host="127.0.0.1",
        port=18431,
        argv=argv,
        env={},
        argv_hash="h",
        log_path=str(log),
        model_path="m",
        rehearsal=True,
        started_at="t",
        server_id=server_id,
    )
    write_record(state / "server.json", record)
    try:
        os.kill(pid, 9)
        while process.exists(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        status = run_cli("status", "-p", "local-cpu", "--set", f"local.state_dir={state}")
        assert f"1 process(es) it started still run (pid {child})" in status.stdout, status.stdout + status.stderr
        down = run_cli("down", "-p", "local-cpu", "--yes", "--set", f"local.state_dir={state}")
        assert down.returncode == 0, down.stderr
        assert not alive(child)
    finally:
        with contextlib.suppress(ProcessLookupError):
            if alive(child):
                os.kill(child, 9)
