"""The managed server process: start it in its own session with a log file, prove it is ours, stop its group.

Nothing read from disk is trusted to pick a process to signal. A process is the server only while all of
these hold: its pid is a plausible pid, it is alive (not a zombie), it started at the recorded time, its
command line is the recorded argv, its environment carries the random id this launch put there
(K3DEPLOY_SERVER_ID), and it leads its own session and process group (it was started with
start_new_session, so the group is the server's alone). Only then is its group signalled.

Children left behind by a dead leader (vLLM's `VLLM::EngineCore` after the API server was SIGKILLed) are
signalled one by one, each only when it proves itself: it is in the dead leader's session and process group, it
started no earlier than the recorded leader, and either its environment carries the launch id or it runs in the
state directory the leader was started in (its working directory: vLLM's process-title change overwrites the
environment the id was in, not the cwd). While such a member lives, the kernel lets no other process take that
session or group id (setsid fails with EPERM while any process has the pid as its group), so a reused pid cannot
have put another program there.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import psutil

from k3deploy.console import safe_text
from k3deploy.errors import EnvironmentProblem
from k3deploy.targets.local.state import PID_MAX

STOP_GRACE_S = 20.0
KILL_WAIT_S = 10.0
_POLL_S = 0.2
SERVER_ID_ENV = "K3DEPLOY_SERVER_ID"
STATE_DIR_ENV = "K3DEPLOY_STATE_DIR"
#: The module every local server runs (see render.argv.serve_command, role 'local').
SERVER_MODULE = "vllm.entrypoints.openai.api_server"


@dataclass(frozen=True)
class Identity:
    """What proves a process is the server k3deploy started: pid, start time, argv and the launch's random id."""

    pid: int
    create_time: float
    argv: tuple[str, ...]
    server_id: str | None
    #: The state directory the server was started in (its cwd, inherited by its children); None: unknown.
    cwd: str | None = None


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back for the block, then act on them: a started server is always recorded.

    Only the main thread can handle signals; elsewhere the block runs as is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {
        sig: signal.signal(sig, lambda signum, _frame: caught.append(signum)) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if caught:
            signal.raise_signal(caught[0])


def start(argv: list[str], env: dict[str, str], log_path: Path, cwd: Path, server_id: str) -> tuple[int, float]:
    """Start `argv` detached in a new session (so its pid is its group id); returns (pid, start time).

    The environment gets `server_id` and the state directory (`cwd`), the marks `stop` and discovery check.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    if log_path.exists():  # keep the previous run's log beside the new one, for a rollback's diagnosis
        os.replace(log_path, log_path.with_name(log_path.name + ".prev"))
    marks = {SERVER_ID_ENV: server_id, STATE_DIR_ENV: str(cwd)}
    try:
        with log_path.open("wb") as sink:
            proc = subprocess.Popen(
                argv,
                stdout=sink,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **env, **marks},
                cwd=cwd,
                start_new_session=True,
            )
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot start {argv[0]}: {exc.strerror}",
            hint="set local.python (or K3DEPLOY_VLLM_PYTHON) to an interpreter with vLLM",
        ) from exc
    try:
        created = psutil.Process(proc.pid).create_time()
    except psutil.NoSuchProcess:
        created = time.time()  # it already exited: any start time will do, the process is gone
    return proc.pid, created


def _reap(pid: int) -> None:
    """Collect the exit status of our own child, so it does not linger as a zombie (others are init's)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def cmdline_matches(cmdline: list[str], argv: tuple[str, ...] | list[str]) -> bool:
    """True when `cmdline` runs `argv`: the same arguments after the interpreter.

    The interpreter part may differ in one way: a wrapper script (a shebang line, a version manager's shim)
    shows up as `INTERPRETER [OPTIONS] WRAPPER` or is replaced by the program it executed.
    """
    if not argv:
        return False
    rest = list(argv[1:])
    if len(cmdline) < len(rest) + 1 or cmdline[len(cmdline) - len(rest) :] != rest:
        return False
    head = cmdline[: len(cmdline) - len(rest)]
    return len(head) == 1 or head[-1] == argv[0]


def _environ(proc: psutil.Process) -> dict[str, str]:
    try:
        return proc.environ()
    except (psutil.Error, OSError):
        return {}


def _recorded(ident: Identity) -> psutil.Process | None:
    """The live (not zombie) process with the recorded pid and start time, whatever it now runs; else None."""
    if ident.server_id is None or not 2 <= ident.pid <= PID_MAX or ident.pid == os.getpid():
        return None  # a record without a launch id (forged, or older than ids) proves nothing
    _reap(ident.pid)
    try:
        proc = psutil.Process(ident.pid)
        if proc.status() == psutil.STATUS_ZOMBIE or abs(proc.create_time() - ident.create_time) >= 0.01:
            return None
    except (psutil.Error, OSError):
        return None
    return proc


def identify(ident: Identity) -> psutil.Process | None:
    """The live process `ident` describes, or None when any part of the proof fails."""
    proc = _recorded(ident)
    if proc is None:
        return None
    try:
        if not cmdline_matches(proc.cmdline(), ident.argv):
            return None
        if _environ(proc).get(SERVER_ID_ENV) != ident.server_id:
            return None
        if os.getsid(ident.pid) != ident.pid or os.getpgid(ident.pid) != ident.pid:
            return None
    except (psutil.Error, OSError):
        return None
    return proc


def exists(pid: int) -> bool:
    """True when some live process has this pid (whoever it is)."""
    return 2 <= pid <= PID_MAX and not _leader_gone(pid)


def is_ours(ident: Identity) -> bool:
    """True while the server `ident` describes runs."""
    return identify(ident) is not None


def group_members(pgid: int) -> list[int]:
    """Pids of the live (not zombie) processes in process group `pgid`."""
    if not 2 <= pgid <= PID_MAX:
        return []
    members = []
    for proc in psutil.process_iter(["status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(proc.pid) == pgid:
                members.append(proc.pid)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return members


def _leader_gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:
        return False


def _proves_itself(proc: psutil.Process, ident: Identity) -> bool:
    """A member of the dead leader's group that is the server's child (see the module docstring)."""
    try:
        if os.getsid(proc.pid) != ident.pid or os.getpgid(proc.pid) != ident.pid:
            return False
        if proc.create_time() < ident.create_time - 0.01:
            return False
        if _environ(proc).get(SERVER_ID_ENV) == ident.server_id:
            return True
        return ident.cwd is not None and os.path.realpath(proc.cwd()) == os.path.realpath(ident.cwd)
    except (psutil.Error, OSError):
        return False


def _orphans(ident: Identity) -> list[psutil.Process]:
    """Live members of the dead server's group that prove they are its children (`_proves_itself`).

    Only when the leader is gone: a live process with that pid leads the group, and it did not prove itself.
    """
    if ident.server_id is None or not 2 <= ident.pid <= PID_MAX or not _leader_gone(ident.pid):
        return []
    out = []
    for pid in group_members(ident.pid):
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            if _proves_itself(proc, ident):
                out.append(proc)
    return out


def survivors(ident: Identity) -> list[int]:
    """Pids of the server's children that outlived its leader (what `down` stops); [] while the leader runs."""
    return sorted(proc.pid for proc in _orphans(ident))


def _until(done: Callable[[], bool], timeout_s: float) -> bool:
    """Poll `done` every _POLL_S until it holds (True) or `timeout_s` has passed (False); asked at least once."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)
    return True


def _group_gone(pgid: int) -> bool:
    _reap(pgid)
    return not group_members(pgid)


def _wait_group_gone(pgid: int, timeout_s: float) -> bool:
    return _until(lambda: _group_gone(pgid), timeout_s)


def _exiting(ident: Identity) -> bool:
    """True while the recorded leader itself is exiting: same start time, not yet a zombie, its memory gone.

    An exiting process no longer proves itself (its command line reads empty once its memory is released),
    yet it still holds its group, so its children cannot be told from another program's yet: wait for it.
    """
    proc = _recorded(ident)
    try:
        return proc is not None and not proc.cmdline()
    except (psutil.Error, OSError):
        return False


def _stop_orphans(orphans: list[psutil.Process], grace_s: float) -> None:
    for proc in orphans:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(orphans, timeout=grace_s)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    _, alive = psutil.wait_procs(alive, timeout=KILL_WAIT_S)
    if alive:
        raise EnvironmentProblem(
            f"vLLM process {alive[0].pid} survived SIGKILL",
            hint=f"inspect it with `ps -p {alive[0].pid}` and stop it by hand",
        )


def stop(ident: Identity, grace_s: float = STOP_GRACE_S) -> bool:
    """SIGTERM the server's process group, SIGKILL what outlives `grace_s`; True when something was stopped.

    A process that does not prove itself the server is never signalled (see the module docstring).
    """
    leader = identify(ident)
    if leader is None:
        _until(lambda: not _exiting(ident), KILL_WAIT_S)
        orphans = _orphans(ident)
        if orphans:
            _stop_orphans(orphans, grace_s)
        _reap(ident.pid)
        return bool(orphans)
    pgid = ident.pid  # identify() proved the leader leads its own session and group
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    if not _wait_group_gone(pgid, grace_s):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        if not _wait_group_gone(pgid, KILL_WAIT_S):
            raise EnvironmentProblem(
                f"vLLM process group {pgid} survived SIGKILL",
                hint=f"inspect it with `ps -g {pgid}` and stop it by hand",
            )
    return True


def listening_ports(pgid: int) -> set[int]:
    """TCP ports the processes of group `pgid` listen on."""
    ports: set[int] = set()
    for pid in group_members(pgid):
        with contextlib.suppress(psutil.Error):
            for conn in psutil.Process(pid).net_connections(kind="tcp"):
                if conn.status == psutil.CONN_LISTEN and conn.laddr:
                    ports.add(conn.laddr.port)
    return ports


def find_servers(state_dir: Path, port: int) -> list[psutil.Process]:
    """k3deploy's servers for `state_dir` on `port`, found without a record: by command line and environment.

    A match runs the vLLM server module with `--port PORT`, leads its own session, and its environment names
    this state directory and carries a server id: only a server k3deploy started has all of that.
    """
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            cmd = proc.info["cmdline"] or []
            if proc.info["status"] == psutil.STATUS_ZOMBIE or SERVER_MODULE not in cmd:
                continue
            if not any(a == "--port" and b == str(port) for a, b in pairwise(cmd)):
                continue
            env = _environ(proc)
            if env.get(STATE_DIR_ENV) != str(state_dir) or not env.get(SERVER_ID_ENV):
                continue
            if os.getsid(proc.pid) != proc.pid:
                continue
            found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def environ_of(proc: psutil.Process) -> dict[str, str]:
    """A process's environment ({} when it cannot be read)."""
    return _environ(proc)


def log_tail(path: Path, lines: int = 12) -> list[str]:
    """The last non-empty lines of a log file ([] when there is none), terminal controls shown as escapes: the
    lines are printed (`up`'s failure block, its start-up phase), and a log holds whatever the server wrote."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64 * 1024))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return [safe_text(line.rstrip()) for line in text.splitlines() if line.strip()][-lines:]
