"""The make-before-break handover is kept in the state directory from the apply that begins it to the wait that ends
it (targets/local/handover.py): found from the state directory alone, cleared when it ends either way. Real files;
the processes are a real child of this test."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

from k3deploy.targets.local import handover as h
from k3deploy.targets.local.process import SERVER_ID_ENV
from k3deploy.targets.local.state import ServerRecord, read_record, write_record
from tests.targets.local.test_state_files import RECORD


def _running(tmp_path: Path) -> tuple[subprocess.Popen[bytes], ServerRecord]:
    # As k3deploy starts a server: its own session and process group, its id in the environment (process.py).
    env = {**os.environ, SERVER_ID_ENV: RECORD.server_id}
    argv = [sys.executable, "-c", "import time; time.sleep(60)"]
    child = subprocess.Popen(argv, start_new_session=True, env=env)
    proc = psutil.Process(child.pid)
    # Between fork and exec the child still shows this test's command line: record it once it runs its own, as
    # k3deploy records a server it started.
    deadline = time.monotonic() + 10
    while proc.cmdline()[1:] != argv[1:] and time.monotonic() < deadline:
        time.sleep(0.01)
    record = RECORD.model_copy(update={"pid": child.pid, "create_time": proc.create_time(), "argv": proc.cmdline()})
    return child, record


class _Waited:
    wait = True


def test_a_begun_handover_is_found_from_the_state_directory_and_cleared_when_it_ends(tmp_path: Path) -> None:
    record_path = tmp_path / "server.json"
    assert h.pending(record_path) is None
    child, old = _running(tmp_path)
    try:
        begun = h.handover_for(old, old.port + 1, _Waited(), record_path)
        assert begun is not None and (tmp_path / h.HANDOVER_FILE).exists()
        found = h.pending(record_path)  # what another call (another target) reads
        assert found is not None and found.old == old
        found.abandon(None)
        assert h.pending(record_path) is None
        assert read_record(record_path) == old  # the old server's record put back: it never stopped serving
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


def test_no_handover_on_the_same_port_clears_a_stale_one(tmp_path: Path) -> None:
    record_path = tmp_path / "server.json"
    write_record(tmp_path / h.HANDOVER_FILE, RECORD)
    assert h.handover_for(RECORD, RECORD.port, _Waited(), record_path) is None
    assert h.pending(record_path) is None
