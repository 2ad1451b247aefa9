"""The local target's process-identity rules pinned at their boundaries (survivors of tests/mutation/run on
targets/local/process.py): a pid is considered only from 2 to PID_MAX; a process whose environment or group cannot be
read proves nothing and stops no scan; the stop wait gives up exactly at its deadline and polls often; discovery
needs every mark (server module, port, state directory, a non-empty launch id, its own session). Part 2:
test_process_identity.py."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from k3deploy.errors import EnvironmentProblem
from k3deploy.targets.local import process
from k3deploy.targets.local.process import SERVER_ID_ENV, SERVER_MODULE, Identity
from k3deploy.targets.local.state import PID_MAX
from tests.ports import free_port
from tests.targets.local.sleepers import marks, sleeper

# --- pids from 2 to PID_MAX: 0 and 1 (init) are never ours, nor what the kernel cannot hand out -------------------


@pytest.mark.parametrize(("pid", "plausible"), [(1, False), (2, True), (PID_MAX, True), (PID_MAX + 1, False)])
def test_a_pid_is_considered_only_from_2_to_pid_max_because_init_and_impossible_pids_are_never_ours(
    monkeypatch: pytest.MonkeyPatch, pid: int, plausible: bool
) -> None:
    asked: list[str] = []
    monkeypatch.setattr(process, "_leader_gone", lambda p: asked.append("gone") or True)
    monkeypatch.setattr(process, "group_members", lambda p: asked.append("members") or [])
    monkeypatch.setattr(process, "_reap", lambda p: asked.append("reap"))
    ident = Identity(pid, 0.0, ("python3",), "id-1")
    assert process._orphans(ident) == []
    assert ("members" in asked) is plausible  # the leader is gone: a plausible pid's group is looked at
    asked.clear()
    assert process.identify(ident) is None
    assert ("reap" in asked) is plausible
    monkeypatch.setattr(process, "_leader_gone", lambda p: False)
    assert process.exists(pid) is plausible


@pytest.mark.parametrize(("pgid", "plausible"), [(1, False), (2, True), (PID_MAX, True), (PID_MAX + 1, False)])
def test_group_members_look_only_at_a_plausible_group(
    monkeypatch: pytest.MonkeyPatch, pgid: int, plausible: bool
) -> None:
    scanned: list[bool] = []
    monkeypatch.setattr(process.psutil, "process_iter", lambda attrs: scanned.append(True) or iter(()))
    assert process.group_members(pgid) == []
    assert bool(scanned) is plausible


def test_a_record_of_this_very_process_is_never_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    reaped: list[int] = []
    monkeypatch.setattr(process, "_reap", reaped.append)
    me = psutil.Process()
    assert process.identify(Identity(os.getpid(), me.create_time(), tuple(me.cmdline()), "id-1")) is None
    assert reaped == []  # refused before anything is looked at


def test_a_group_leader_that_does_not_lead_its_session_is_not_ours(tmp_path: Path) -> None:
    """k3deploy starts a server with start_new_session: a process that only leads its group (setpgid, as a shell
    job is) was not started by it, whatever its marks."""
    argv = [sys.executable, "-c", "import time; time.sleep(60)"]
    env = {**os.environ, SERVER_ID_ENV: "id-1"}
    for new_session, ours in ((False, False), (True, True)):
        kwargs: dict[str, Any] = {"start_new_session": True} if new_session else {"process_group": 0}
        proc = subprocess.Popen(argv, env=env, cwd=tmp_path, **kwargs)
        try:
            deadline = time.monotonic() + 20
            while psutil.Process(proc.pid).cmdline() != argv and time.monotonic() < deadline:
                time.sleep(0.02)
            assert os.getpgid(proc.pid) == proc.pid and (os.getsid(proc.pid) == proc.pid) is new_session
            ident = Identity(proc.pid, psutil.Process(proc.pid).create_time(), tuple(argv), "id-1")
            assert process.is_ours(ident) is ours
        finally:
            proc.kill()
            proc.wait(timeout=10)


def test_a_record_without_a_launch_id_reaches_no_orphans(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []
    monkeypatch.setattr(process, "_leader_gone", lambda p: True)
    monkeypatch.setattr(process, "group_members", lambda p: asked.append(p) or [])
    assert process._orphans(Identity(4242, 0.0, ("python3",), None)) == []
    assert asked == []
    assert process._orphans(Identity(4242, 0.0, ("python3",), "id-1")) == [] and asked == [4242]


def test_a_live_process_that_cannot_be_read_is_not_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(pid: int) -> psutil.Process:
        raise psutil.AccessDenied(pid)

    monkeypatch.setattr(process.psutil, "Process", denied)
    assert process._leader_gone(4242) is False and process.exists(4242) is True


class _Stuck:
    """A process that outlives SIGKILL (stuck in the kernel): wait_procs reports it alive whatever is sent."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.sent: list[str] = []

    def terminate(self) -> None:
        self.sent.append("TERM")

    def kill(self) -> None:
        self.sent.append("KILL")


def test_an_orphan_that_outlives_sigkill_is_an_environment_problem_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr(process.psutil, "wait_procs", lambda procs, timeout: waits.append(timeout) or ([], procs))
    stuck = [_Stuck(4242), _Stuck(4343)]
    with pytest.raises(EnvironmentProblem) as info:
        process._stop_orphans(stuck, 3.0)  # type: ignore[arg-type]
    assert [p.sent for p in stuck] == [["TERM", "KILL"]] * 2 and waits == [3.0, process.KILL_WAIT_S]
    assert info.value.message == "vLLM process 4242 survived SIGKILL"
    assert "ps -p 4242" in (info.value.hint or "")


def test_a_group_that_outlives_sigkill_is_an_environment_problem_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[int, int]] = []
    waits: list[float] = []
    monkeypatch.setattr(process, "identify", lambda ident: object())
    monkeypatch.setattr(process.os, "killpg", lambda pgid, sig: sent.append((pgid, sig)))
    monkeypatch.setattr(process, "_wait_group_gone", lambda pgid, timeout: waits.append(timeout) or False)
    with pytest.raises(EnvironmentProblem) as info:
        process.stop(Identity(4242, 0.0, ("python3",), "id-1"), grace_s=3.0)
    assert sent == [(4242, signal.SIGTERM), (4242, signal.SIGKILL)] and waits == [3.0, process.KILL_WAIT_S]
    assert info.value.message == "vLLM process group 4242 survived SIGKILL"
    assert "ps -g 4242" in (info.value.hint or "")


def test_a_group_gone_after_sigterm_gets_no_sigkill(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[int] = []
    monkeypatch.setattr(process, "identify", lambda ident: object())
    monkeypatch.setattr(process.os, "killpg", lambda pgid, sig: sent.append(sig))
    monkeypatch.setattr(process, "_wait_group_gone", lambda pgid, timeout: True)
    assert process.stop(Identity(4242, 0.0, ("python3",), "id-1")) is True
    assert sent == [signal.SIGTERM]


def test_stop_waits_twenty_seconds_for_sigterm_and_ten_more_after_sigkill_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[float] = []
    monkeypatch.setattr(process, "identify", lambda ident: object())
    monkeypatch.setattr(process.os, "killpg", lambda pgid, sig: None)
    monkeypatch.setattr(process, "_wait_group_gone", lambda pgid, timeout: waits.append(timeout) or len(waits) > 1)
    assert process.stop(Identity(4242, 0.0, ("python3",), "id-1")) is True
    assert waits == [20.0, 10.0]


# --- what cannot be read proves nothing, and stops no scan ---------------------------------------------------------


class _Unreadable:
    """A process whose environment the kernel refuses (a plain OSError, as /proc/PID/environ gives another user's)."""

    pid = 12345

    def environ(self) -> dict[str, str]:
        raise PermissionError(13, "Permission denied")


def test_an_unreadable_environment_is_empty_rather_than_an_error() -> None:
    assert process.environ_of(_Unreadable()) == {}  # type: ignore[arg-type]


@pytest.mark.parametrize("error", [ProcessLookupError, PermissionError])
def test_a_member_that_vanishes_or_is_hidden_mid_scan_is_skipped_and_the_scan_goes_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, error: type[OSError]
) -> None:
    with sleeper(tmp_path) as first, sleeper(tmp_path) as second:
        real = os.getpgid

        def getpgid(pid: int) -> int:
            if pid == min(first, second):
                raise error(3, "gone or hidden")  # it exited between the listing and the look, or is not ours to see
            return real(pid)

        monkeypatch.setattr(os, "getpgid", getpgid)
        assert process.group_members(max(first, second)) == [max(first, second)]


def test_a_command_line_without_the_interpreter_does_not_run_the_argv() -> None:
    argv = ("/venv/bin/python", "-m", "vllm.x", "--port", "1")
    assert process.cmdline_matches(["-m", "vllm.x", "--port", "1"], argv) is False
    assert process.cmdline_matches(["vllm.x", "--port", "1"], argv) is False
    assert process.cmdline_matches(["/venv/bin/python"], ("/venv/bin/python",)) is True
    assert process.cmdline_matches(["/venv/bin/python"], ()) is False


#: A leader whose child ignores SIGTERM (an engine core stuck in a collective): only SIGKILL stops it.
STUBBORN_CHILD = """
import subprocess, sys, time
code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(120)"
child = subprocess.Popen([sys.executable, "-c", code])
print("child", child.pid, flush=True)
time.sleep(120)
"""


#: A leader whose child ends on SIGTERM and leaves a mark: an orphan is asked to stop before it is killed.
GRACEFUL_CHILD = """
import subprocess, sys, time
code = (
    "import signal, sys, time\\n"
    "def bye(*_):\\n    open('terminated', 'w').close(); sys.exit(0)\\n"
    "signal.signal(signal.SIGTERM, bye); print('ready', flush=True); time.sleep(120)"
)
child = subprocess.Popen([sys.executable, "-c", code])
print("child", child.pid, flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("script", [STUBBORN_CHILD, GRACEFUL_CHILD], ids=["ignores-sigterm", "ends-on-sigterm"])
def test_an_orphan_is_sent_sigterm_first_and_killed_only_after_the_grace(tmp_path: Path, script: str) -> None:
    log = tmp_path / "server.log"
    argv = [sys.executable, "-c", script]
    pid, created = process.start(argv, {}, log, tmp_path / "cwd", "id-stubborn")
    ident = Identity(pid, created, tuple(argv), "id-stubborn")
    deadline = time.monotonic() + 30
    while not {"ready", "child"} <= set(log.read_text().split()) and time.monotonic() < deadline:
        time.sleep(0.05)  # the child ignores SIGTERM from here on
    words = log.read_text().split()
    child = int(words[words.index("child") + 1])
    try:
        os.kill(pid, signal.SIGKILL)
        while process.survivors(ident) != [child] and time.monotonic() < deadline:
            time.sleep(0.05)  # until the leader is gone (reaped) and the child is left in its group
        assert process.survivors(ident) == [child]
        assert process.stop(ident, grace_s=0.3 if script is STUBBORN_CHILD else 30) is True
        assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE
        assert (tmp_path / "cwd" / "terminated").exists() is (script is GRACEFUL_CHILD)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


# --- discovery without a record: every mark -------------------------------------------------------------------------


def test_find_servers_needs_the_module_the_port_the_state_dir_a_launch_id_and_its_own_session(tmp_path: Path) -> None:
    state, port = tmp_path / "state", free_port()
    args = (SERVER_MODULE, "--port", str(port))
    with sleeper(tmp_path, *args, env=marks(state)) as server:
        assert [p.pid for p in process.find_servers(state, port)] == [server]
        assert process.find_servers(state, port + 1) == []
        assert process.find_servers(tmp_path / "other", port) == []
    with sleeper(tmp_path, *args, env=marks(state, server_id="")):
        assert process.find_servers(state, port) == []  # an empty launch id is no launch id
    with sleeper(tmp_path, *args, env=marks(state), new_session=False):
        assert process.find_servers(state, port) == []  # not a session leader: not started by k3deploy
    with sleeper(tmp_path, "other.module", "--port", str(port), env=marks(state)):
        assert process.find_servers(state, port) == []
    with sleeper(tmp_path, SERVER_MODULE, "--port", f"{port}0", env=marks(state)):
        assert process.find_servers(state, port) == []
    with sleeper(tmp_path, SERVER_MODULE, "--seed", str(port), env=marks(state)):
        assert process.find_servers(state, port) == []  # the port must follow --port


def test_find_servers_skips_a_process_that_vanishes_mid_scan_and_goes_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    state, port = tmp_path / "state", free_port()
    args = (SERVER_MODULE, "--port", str(port))
    with sleeper(tmp_path, *args, env=marks(state)) as first, sleeper(tmp_path, *args, env=marks(state)) as second:
        real = os.getsid

        def getsid(pid: int) -> int:
            if pid == min(first, second):
                raise ProcessLookupError(3, "No such process")
            return real(pid)

        monkeypatch.setattr(os, "getsid", getsid)
        assert [p.pid for p in process.find_servers(state, port)] == [max(first, second)]


def test_listening_ports_are_the_groups_listening_sockets(tmp_path: Path) -> None:
    code = (
        "import socket, sys, time\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
        "c = socket.create_connection(s.getsockname()); a, _ = s.accept()\n"  # connected sockets are no listeners
        "print(s.getsockname()[1], flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True, cwd=tmp_path
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        assert process.listening_ports(proc.pid) == {port}
        assert process.listening_ports(1) == set()
    finally:
        proc.kill()
        proc.wait(timeout=10)


# --- the stop wait: gives up at its deadline, polls often ------------------------------------------------------------


def test_the_group_wait_gives_up_exactly_at_its_deadline_rather_than_one_poll_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def sleep(seconds: float) -> None:
        raise AssertionError(f"slept {seconds} s past the deadline")

    monkeypatch.setattr(process.time, "monotonic", lambda: 100.0)  # a frozen clock: the deadline is now
    monkeypatch.setattr(process.time, "sleep", sleep)
    monkeypatch.setattr(process, "group_members", lambda pgid: [pgid])
    monkeypatch.setattr(process, "_reap", lambda pid: None)
    assert process._wait_group_gone(4242, 0.0) is False


def test_the_group_wait_polls_every_fifth_of_a_second_so_stop_returns_soon_after_the_group_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slept: list[float] = []
    members = iter([[4242], [4242], []])

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        assert len(slept) <= 2, "polled on after the group was gone"

    monkeypatch.setattr(process.time, "sleep", sleep)
    monkeypatch.setattr(process, "group_members", lambda pgid: next(members))
    monkeypatch.setattr(process, "_reap", lambda pid: None)
    assert process._wait_group_gone(4242, 3600.0) is True
    assert slept == [0.2, 0.2]
