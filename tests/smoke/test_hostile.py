"""A hostile endpoint cannot make smoke outlive its overall timeout or grow without bound.

The real CLI in a subprocess against the scripted server's flood modes: a stream that never ends (token
chunks, error events, one endless line) and a 300 MB /v1/models. The child's peak memory comes from the kernel
(`os.wait4` in a small launcher), the report's size from the file; the kill timer is only the net that keeps a hang from hanging the
suite, not a timed assertion.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, cli_env
from tests.smoke.scripted_server import Script, scripted_server

#: The flags of the report this reproduces: a 3 s request timeout and a 15 s overall timeout.
FLAGS = ["--request-timeout", "3", "--overall-timeout", "15", "--requests", "2", "--output-tokens", "64"]
#: Far above the ~50 MB a smoke run needs, far below the gigabytes an unbounded read reaches.
PEAK_RSS_LIMIT = 250 * 1024 * 1024
REPORT_LIMIT = 2 * 1024 * 1024


@dataclass
class Finished:
    returncode: int
    stderr: str
    peak_rss: int
    killed: bool


#: Runs the CLI as its own child and reports that child's peak RSS. Linux carries a process's high-water RSS across
#: fork and exec, so a CLI forked straight from a large pytest process would report pytest's size; forked from this
#: small launcher, it starts from the launcher's few MiB.
_LAUNCHER = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as fh:
    fh.write(str(usage.ru_maxrss * 1024))  # ru_maxrss is in KiB on Linux
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(*args: str, net_s: float = 120) -> Finished:
    """Run the CLI; its exit code, stderr and peak resident memory (bytes), killed if it outlives `net_s`."""
    with tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory() as tmp:
        rss_file = Path(tmp) / "peak_rss"
        proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, str(rss_file), sys.executable, "-m", "k3deploy", *args],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=cli_env(),
            cwd=REPO_ROOT,
            start_new_session=True,
        )
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            os.killpg(proc.pid, signal.SIGKILL)  # the launcher leads its own group: this test started it

        timer = threading.Timer(net_s, kill)
        timer.start()
        try:
            proc.wait()
        finally:
            timer.cancel()
        err.seek(0)
        peak = int(rss_file.read_text()) if rss_file.exists() else 0
        return Finished(proc.returncode, err.read().decode(), peak, killed.is_set())


@pytest.mark.parametrize(
    ("script", "needle"),
    [
        (Script(flood="chunks"), "far more than a vLLM server sends: stopped reading it"),
        (Script(flood="errors"), "far more than a vLLM server sends: stopped reading it"),
        (Script(flood="line"), "far more than a vLLM server sends: stopped reading it"),
        (Script(huge={"/v1/models": 300_000_000}), "/v1/models answered more than 4096 KiB; smoke reads at most that"),
        (Script(huge={"/metrics": 300_000_000}), "/metrics answered more than 8192 KiB; smoke reads at most that"),
    ],
    ids=["flood-chunks", "flood-errors", "flood-line", "huge-models", "huge-metrics"],
)
def test_a_flooding_endpoint_is_cut_off(tmp_path: Path, script: Script, needle: str) -> None:
    report_path = tmp_path / "report.json"
    with scripted_server(script) as srv:
        done = run_measured("smoke", "--endpoint", srv.url, *FLAGS, "--report", str(report_path))
    assert not done.killed, "smoke outlived its overall timeout by far"
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.peak_rss < PEAK_RSS_LIMIT, f"peak RSS {done.peak_rss / 2**20:.0f} MiB"
    assert report_path.stat().st_size < REPORT_LIMIT
    assert needle in report_path.read_text()


def test_the_overall_timeout_is_a_hard_deadline(tmp_path: Path) -> None:
    """Slow chunks that never trip a request's byte bound: the run stops at the overall timeout, in flight or not."""
    report_path = tmp_path / "report.json"
    with scripted_server(Script(chunk_delay_s=0.2)) as srv:
        done = run_measured(
            "smoke",
            "--endpoint",
            srv.url,
            "--request-timeout",
            "60",
            "--overall-timeout",
            "2",
            "--requests",
            "50",
            "--output-tokens",
            "400",
            "--report",
            str(report_path),
            net_s=60,
        )
    assert not done.killed and done.returncode == 1, done.stderr
    report = json.loads(report_path.read_text())
    stop = next(c for c in report["checks"] if c["name"] == "overall timeout")
    assert stop["detail"] == "the run passed smoke.overall_timeout_s (2 s) and was stopped"
