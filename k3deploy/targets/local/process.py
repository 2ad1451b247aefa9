"""The managed server process: start it in its own process group with a log file, find it, stop the group.

A pid alone can be reused by another program; a process is ours only while its pid *and* start time match
the record. vLLM runs its engine core as a child in the same group, so stopping signals the whole group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import psutil

from k3deploy.errors import EnvironmentProblem

STOP_GRACE_S = 20.0
KILL_WAIT_S = 10.0
_POLL_S = 0.2


def start(argv: list[str], env: dict[str, str], log_path: Path, cwd: Path) -> tuple[int, float]:
    """Start `argv` detached in a new session (so its pid is its group id); returns (pid, start time)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    if log_path.exists():  # keep the previous run's log beside the new one, for a rollback's diagnosis
        os.replace(log_path, log_path.with_name(log_path.name + ".prev"))
    try:
        with log_path.open("wb") as sink:
            proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env={**os.environ, **env}, cwd=cwd, start_new_session=True)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot start {argv[0]}: {exc.strerror}",
                                 hint="set local.python (or K3DEPLOY_VLLM_PYTHON) to an interpreter with vLLM") from exc
    try:
        created = psutil.Process(proc.pid).create_time()
    except psutil.NoSuchProcess:
        created = 0.0
    return proc.pid, created


def _reap(pid: int) -> None:
    """Collect the exit status of our own child, so it does not linger as a zombie (others are init's)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def is_ours(pid: int, create_time: float) -> bool:
    """True while `pid` is the live (not zombie) process started at `create_time`."""
    _reap(pid)
    try:
        proc = psutil.Process(pid)
        return abs(proc.create_time() - create_time) < 0.01 and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def group_members(pgid: int) -> list[int]:
    """Pids of the live (not zombie) processes in process group `pgid`."""
    members = []
    for proc in psutil.process_iter(["status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(proc.pid) == pgid:
                members.append(proc.pid)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return members


def _wait_group_gone(pgid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        _reap(pgid)
        if not group_members(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)


def stop(pid: int, create_time: float, grace_s: float = STOP_GRACE_S) -> bool:
    """SIGTERM the server's process group, SIGKILL what outlives `grace_s`; True when something was stopped.

    A pid now held by another program is left alone: while the group exists its id cannot be reused, so a
    live leader with another start time means the group is gone.
    """
    leader_ours = is_ours(pid, create_time)
    if not leader_ours:
        with contextlib.suppress(psutil.Error):
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return False  # the pid belongs to someone else now
    if not group_members(pid):
        _reap(pid)
        return leader_ours
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    if not _wait_group_gone(pid, grace_s):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        if not _wait_group_gone(pid, KILL_WAIT_S):
            raise EnvironmentProblem(f"vLLM process group {pid} survived SIGKILL",
                                     hint=f"inspect it with `ps -g {pid}` and stop it by hand")
    return True


def log_tail(path: Path, lines: int = 12) -> list[str]:
    """The last non-empty lines of a log file ([] when there is none)."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64 * 1024))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return [line.rstrip() for line in text.splitlines() if line.strip()][-lines:]
