"""What one k3deploy command costs on a real plane: the API requests it made, by (verb, resource), as the server's
audit log records them for the command's own user (tests/realk8s/audit.py: only its requests, not the controllers'),
its wall time, and the CPU time and peak RSS of its process (`python -m k3deploy ...`, reaped by `os.wait4`, so the
figures are that one child's)."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import cli_env
from tests.realk8s import audit
from tests.realk8s.binaries import REPO_ROOT
from tests.realk8s.plane import Plane

#: The user a measured command runs as: in system:masters (no RBAC to grant), audited alone.
USER = "realk8s-bench"


@dataclass
class Cost:
    """One command's figures: `requests` by (verb, resource), `wall_s`, `cpu_s` (user + system), `rss_mib` (peak),
    its exit code and output."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    cpu_s: float
    rss_mib: float
    requests: Counter[tuple[str, str]] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        """Every request the command made."""
        return sum(self.requests.values())

    def by_verb(self) -> Counter[str]:
        """Requests per verb."""
        verbs: Counter[str] = Counter()
        for (verb, _), n in self.requests.items():
            verbs[verb] += n
        return verbs

    def of(self, verb: str, resource: str) -> int:
        """Requests of one verb on one resource."""
        return self.requests[(verb, resource)]


def _reap(pid: int, timeout_s: float) -> tuple[int, resource.struct_rusage]:
    deadline = time.monotonic() + timeout_s
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), usage
        if time.monotonic() > deadline:
            # The child this function started and has not reaped: its pid is still ours.
            os.kill(pid, signal.SIGKILL)
            os.wait4(pid, 0)
            raise subprocess.TimeoutExpired(["k3deploy"], timeout_s)
        time.sleep(0.05)


def kubeconfig(plane: Plane, directory: Path) -> Path:
    """A kubeconfig of the measured user (written once per directory)."""
    path = directory / f"{USER}.kubeconfig"
    return path if path.exists() else plane.kubeconfig(path, USER)


def measure(plane: Plane, *args: str, timeout_s: float = 600, env: dict[str, str] | None = None) -> Cost:
    """Run `python -m k3deploy ARGS` (with this checkout first on the path) and return what it cost.

    The plane must have been started with `audit_users` holding `USER`, and ARGS must use `kubeconfig(plane, ...)`.
    """
    log = audit.log_path(plane.dir)
    start = audit.offset(log)
    argv = [sys.executable, "-m", "k3deploy", *args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        began = time.monotonic()
        child = subprocess.Popen(
            argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=cli_env(env), cwd=REPO_ROOT
        )
        code, usage = _reap(child.pid, timeout_s)
        wall = time.monotonic() - began
        child.returncode = code  # reaped above, so Popen does not wait for it again
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    return Cost(
        argv=list(args),
        returncode=code,
        stdout=stdout,
        stderr=stderr,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        # ru_maxrss is in KiB on Linux.
        rss_mib=usage.ru_maxrss / 1024,
        requests=audit.count(log, start, USER),
    )
