"""The local target's process rules pinned at their boundaries, part 2 (part 1: test_process_boundaries.py; survivors
of tests/mutation/run on targets/local/process.py): signals are held for a block and the first one acted on after it;
a log is read from its last 64 KiB only; a process proves it is the server by its session, group, start time (within
the clock tick psutil reads) and launch id or state directory."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from k3deploy.targets.local import process
from k3deploy.targets.local.process import SERVER_ID_ENV, SERVER_MODULE, Identity
from tests.ports import free_port
from tests.targets.local.sleepers import marks, sleeper

# --- signals held for a block -----------------------------------------------------------------------------------------


@pytest.fixture
def handlers() -> Iterator[list[int]]:
    """Our own SIGINT/SIGTERM handlers for the test (whatever the inherited disposition), restored after."""
    got: list[int] = []
    previous = {sig: signal.signal(sig, lambda s, _f: got.append(s)) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield got
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@pytest.mark.parametrize("first", [signal.SIGINT, signal.SIGTERM])
def test_signals_in_a_deferred_block_wait_for_its_end_and_the_first_is_acted_on(
    handlers: list[int], first: signal.Signals
) -> None:
    second = signal.SIGTERM if first == signal.SIGINT else signal.SIGINT
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    with process.signals_deferred():
        signal.raise_signal(first)
        signal.raise_signal(second)
        assert handlers == []  # held: the block finishes (a started server is recorded)
    assert handlers == [first]
    assert {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)} == before


def test_a_deferred_block_without_a_signal_raises_none(handlers: list[int]) -> None:
    with process.signals_deferred():
        pass
    assert handlers == []


def test_outside_the_main_thread_a_deferred_block_runs_as_is(handlers: list[int]) -> None:
    outcome: list[Any] = []

    def body() -> None:
        try:
            with process.signals_deferred():
                outcome.append("ran")
        except Exception as exc:  # signal.signal outside the main thread raises ValueError
            outcome.append(exc)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join(timeout=10)
    assert outcome == ["ran"]


# --- the log tail: the last 64 KiB only -------------------------------------------------------------------------------


def test_the_log_tail_reads_exactly_the_last_64_kib_so_a_huge_log_costs_no_more(tmp_path: Path) -> None:
    rows = [f"L{i:05d}".ljust(63, ".") + "\n" for i in range(1024)]  # 1024 lines of 64 bytes: exactly 64 KiB
    log = tmp_path / "vllm.log"
    log.write_text("early" + "".join(rows))  # no newline before the window: one byte more or less shows
    tail = process.log_tail(log, lines=5000)
    assert tail == [r.rstrip() for r in rows]  # exactly the last 64 KiB, nothing before it


def test_the_log_tail_shows_twelve_lines_unless_told_otherwise(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text("".join(f"line {i}\n" for i in range(30)))
    assert process.log_tail(log) == [f"line {i}" for i in range(18, 30)]


# --- the proof, judged on a process whose every mark is set by the test ---------------------------------------------


class _Fake:
    """A process with the given marks (what psutil would read from /proc), for the proof's limits."""

    def __init__(self, pid: int, created: float, argv: tuple[str, ...], env: dict[str, str], cwd: str = "/") -> None:
        self.pid, self.created, self.argv, self.env, self._cwd = pid, created, argv, env, cwd

    def status(self) -> str:
        return psutil.STATUS_SLEEPING

    def create_time(self) -> float:
        return self.created

    def cmdline(self) -> list[str]:
        return list(self.argv)

    def environ(self) -> dict[str, str]:
        return self.env

    def cwd(self) -> str:
        if self._cwd == "unreadable":
            raise PermissionError(13, "Permission denied")
        return self._cwd


ARGV = ("/venv/bin/python", "-m", SERVER_MODULE)


@pytest.fixture
def session_of(monkeypatch: pytest.MonkeyPatch) -> dict[int, tuple[int, int]]:
    """pid -> (session id, group id) the proof reads; every pid leads its own by default."""
    ids: dict[int, tuple[int, int]] = {}
    monkeypatch.setattr(process.os, "getsid", lambda pid: ids.get(pid, (pid, pid))[0])
    monkeypatch.setattr(process.os, "getpgid", lambda pid: ids.get(pid, (pid, pid))[1])
    monkeypatch.setattr(process, "_reap", lambda pid: None)
    return ids


@pytest.mark.parametrize(("created", "ours"), [(0.0, True), (0.005, True), (0.01, False), (-0.01, False)])
def test_the_start_time_must_match_within_10_ms_the_clock_tick_psutil_reads(
    monkeypatch: pytest.MonkeyPatch, session_of: dict[int, tuple[int, int]], created: float, ours: bool
) -> None:
    fake = _Fake(4242, created, ARGV, {SERVER_ID_ENV: "id-1"})
    monkeypatch.setattr(process.psutil, "Process", lambda pid: fake)
    assert (process.identify(Identity(4242, 0.0, ARGV, "id-1")) is fake) is ours


@pytest.mark.parametrize(
    ("ids", "created", "env", "cwd", "ident_cwd", "proves"),
    [
        ((4242, 4242), 0.0, {SERVER_ID_ENV: "id-1"}, "/", None, True),  # the launch id
        ((4242, 4242), 0.0, {}, "/state", "/state", True),  # retitled: its cwd is the state directory
        ((4242, 4242), 0.0, {}, "/elsewhere", "/state", False),
        ((4242, 4242), 0.0, {}, "/state", None, False),  # no recorded state directory: nothing to compare
        ((4242, 4242), 0.0, {}, "unreadable", "/state", False),  # its cwd cannot be read: no proof
        ((4242, 4242), 5.0, {SERVER_ID_ENV: "id-1"}, "/", None, True),  # started after the leader
        ((4242, 4242), 4.99, {SERVER_ID_ENV: "id-1"}, "/", None, True),  # within the 10 ms tick
        ((4242, 4242), 4.98, {SERVER_ID_ENV: "id-1"}, "/", None, False),  # before the leader: not its child
        ((1, 4242), 5.0, {SERVER_ID_ENV: "id-1"}, "/", None, False),  # another session
        ((4242, 1), 5.0, {SERVER_ID_ENV: "id-1"}, "/", None, False),  # another group
    ],
)
def test_an_orphan_proves_itself_by_session_group_start_time_and_id_or_state_directory(
    session_of: dict[int, tuple[int, int]],
    ids: tuple[int, int],
    created: float,
    env: dict[str, str],
    cwd: str,
    ident_cwd: str | None,
    proves: bool,
) -> None:
    session_of[777] = ids
    orphan = _Fake(777, created, ("VLLM::EngineCore",), env, cwd)
    ident = Identity(4242, 5.0 if created >= 4 else 0.0, ARGV, "id-1", ident_cwd)
    assert process._proves_itself(orphan, ident) is proves  # type: ignore[arg-type]


def test_start_makes_the_log_and_state_folders_with_their_parents(tmp_path: Path) -> None:
    log, cwd = tmp_path / "a" / "b" / "vllm.log", tmp_path / "c" / "d"
    pid, _ = process.start([sys.executable, "-c", "print('up')"], {}, log, cwd, "id-1")
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(pid).wait(timeout=30)
    assert cwd.is_dir() and process.log_tail(log) == ["up"]


def test_find_servers_looks_past_a_decoy_with_another_state_dir_or_no_session_of_its_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    state, port = tmp_path / "state", free_port()
    args = (SERVER_MODULE, "--port", str(port))
    real = psutil.process_iter
    for decoy_env, decoy_session in ((marks(tmp_path / "other"), True), (marks(state), False)):
        with (
            sleeper(tmp_path, *args, env=decoy_env, new_session=decoy_session) as decoy,
            sleeper(tmp_path, *args, env=marks(state)) as server,
        ):
            # the decoy comes first, whatever the pids
            def decoy_first(attrs: list[str], first: int = decoy) -> list[psutil.Process]:
                return sorted(real(attrs), key=lambda proc: proc.pid != first)

            monkeypatch.setattr(process.psutil, "process_iter", decoy_first)
            assert [p.pid for p in process.find_servers(state, port)] == [server]


def test_a_server_gone_before_its_start_time_is_read_still_gets_a_start_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def gone(pid: int) -> psutil.Process:
        raise psutil.NoSuchProcess(pid)

    monkeypatch.setattr(process.psutil, "Process", gone)
    monkeypatch.setattr(process.time, "time", lambda: 1234.5)
    pid, created = process.start([sys.executable, "-c", "pass"], {}, tmp_path / "vllm.log", tmp_path / "cwd", "id-1")
    assert pid > 1 and created == 1234.5
    os.waitpid(pid, 0)
