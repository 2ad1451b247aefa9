"""The managed process: its own group, found by pid + start time, stopped whole, never someone else's."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from k3deploy.errors import EnvironmentProblem
from k3deploy.targets.local import process
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


def start_group(script: str, tmp_path: Path) -> tuple[int, float, int]:
    """Start `script` as a managed server; wait for its child; return (pid, start time, child pid)."""
    log = tmp_path / "server.log"
    pid, created = process.start([sys.executable, "-c", script], {"MARK": "1"}, log, tmp_path / "cwd")
    deadline = time.monotonic() + 30
    while "child" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(log.read_text().split()[1])
    return pid, created, child


def test_started_server_leads_its_own_group_and_stop_ends_all_of_it(tmp_path: Path) -> None:
    pid, created, child = start_group(LEADER, tmp_path)
    try:
        assert os.getpgid(pid) == pid and os.getpgid(child) == pid
        assert os.getpgid(pid) != os.getpgid(os.getpid())
        assert process.is_ours(pid, created)
        assert sorted(process.group_members(pid)) == sorted([pid, child])
        assert process.stop(pid, created) is True
        assert not alive(pid) and not alive(child)
        assert process.group_members(pid) == []
        assert not process.is_ours(pid, created)
        assert process.stop(pid, created) is False  # stopping again is a no-op
    finally:
        process.stop(pid, created, grace_s=0.5)


def test_what_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    pid, created, child = start_group(STUBBORN, tmp_path)
    try:
        assert process.stop(pid, created, grace_s=0.5) is True
        assert not alive(pid) and not alive(child)
    finally:
        process.stop(pid, created, grace_s=0.1)


def test_a_pid_with_another_start_time_is_not_ours_and_is_left_alone(tmp_path: Path) -> None:
    pid, created, child = start_group(LEADER, tmp_path)
    try:
        assert not process.is_ours(pid, created - 100.0)
        assert process.stop(pid, created - 100.0) is False
        assert alive(pid) and alive(child)
    finally:
        process.stop(pid, created, grace_s=0.5)


def test_orphans_of_a_dead_leader_are_still_stopped(tmp_path: Path) -> None:
    pid, created, child = start_group(LEADER, tmp_path)
    try:
        os.kill(pid, 9)
        deadline = time.monotonic() + 10
        while process.is_ours(pid, created) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not process.is_ours(pid, created)
        assert process.group_members(pid) == [child]
        process.stop(pid, created, grace_s=2)
        assert not alive(child)
    finally:
        process.stop(pid, created, grace_s=0.1)


def test_start_passes_env_rotates_the_previous_log_and_reports_a_missing_interpreter(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("old run\n")
    pid, created = process.start([sys.executable, "-c", "import os; print(os.environ['MARK'])"], {"MARK": "here"},
                                 log, tmp_path / "cwd")
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(pid).wait(timeout=30)
    assert process.log_tail(log) == ["here"]
    assert (tmp_path / "server.log.prev").read_text() == "old run\n"
    with pytest.raises(EnvironmentProblem, match="cannot start /nonexistent/python"):
        process.start(["/nonexistent/python"], {}, log, tmp_path / "cwd")


def test_log_tail_keeps_the_last_non_empty_lines(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("".join(f"line {i}\n\n" for i in range(30)))
    assert process.log_tail(log, 3) == ["line 27", "line 28", "line 29"]
    assert process.log_tail(tmp_path / "missing.log") == []
