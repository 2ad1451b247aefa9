"""Processes for the process-identity tests: a sleeping python with a chosen command line, environment and session."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil

from k3deploy.targets.local.process import SERVER_ID_ENV, STATE_DIR_ENV


@contextlib.contextmanager
def sleeper(tmp_path: Path, *extra: str, new_session: bool = True, env: dict[str, str] | None = None) -> Iterator[int]:
    """A sleeping python whose command line ends with `extra`; its pid."""
    argv = [sys.executable, "-c", "import time; time.sleep(60)", *extra]
    proc = subprocess.Popen(argv, env={**os.environ, **(env or {})}, start_new_session=new_session, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 20
        while psutil.Process(proc.pid).cmdline() != argv and time.monotonic() < deadline:  # until it has exec'd
            time.sleep(0.02)
        yield proc.pid
    finally:
        proc.kill()
        proc.wait(timeout=10)


def marks(state: Path, server_id: str = "id-1") -> dict[str, str]:
    """The environment marks k3deploy gives a server it starts: its state directory and launch id."""
    return {STATE_DIR_ENV: str(state), SERVER_ID_ENV: server_id}
