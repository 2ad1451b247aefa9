"""The headless ranks' liveness script (k3deploy/pod_scripts/worker_alive.py), run as the probe runs it (`python3 -c
<the rendered text> N`) against real processes titled as vLLM titles its workers, under a prefix of this test's own
(VLLM_PROCESS_NAME_PREFIX, which vLLM reads too) so no other process on the machine counts; and its judgements."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from k3deploy.pod_scripts.worker_alive import state, verdict
from k3deploy.render.worker_probe import script_text


@pytest.fixture
def prefix() -> str:
    return f"K3TEST{os.getpid()}"


@pytest.fixture
def workers(prefix: str) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Four processes titled `<prefix>::Worker_TP<i>` (argv[0], what /proc/PID/cmdline starts with, as setproctitle
    makes it), children of this test, ended and reaped after it."""
    procs = [
        subprocess.Popen([f"{prefix}::Worker_TP{i}", "-c", "import time; time.sleep(120)"], executable=sys.executable)
        for i in range(4)
    ]
    try:
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)


def probe(prefix: str, expected: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VLLM_PROCESS_NAME_PREFIX": prefix}
    return subprocess.run(
        [sys.executable, "-c", script_text(), str(expected)],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        check=False,
    )


def test_alive_while_every_worker_runs_and_not_once_one_is_gone(
    prefix: str, workers: list[subprocess.Popen[bytes]]
) -> None:
    alive = probe(prefix, 4)
    assert (alive.returncode, alive.stdout.strip()) == (0, "4 vLLM worker processes alive")
    short = probe(prefix, 5)
    assert (short.returncode, short.stdout.strip()) == (1, "4 of 5 vLLM worker processes alive")

    os.kill(workers[2].pid, signal.SIGKILL)  # our own child: a zombie (no cmdline left) until reaped
    zombie = probe(prefix, 4)
    assert (zombie.returncode, zombie.stdout.strip()) == (
        1,
        "3 of 4 vLLM worker processes alive",
    )
    workers[2].wait(timeout=30)
    gone = probe(prefix, 4)
    assert (gone.returncode, gone.stdout.strip()) == (1, "3 of 4 vLLM worker processes alive")


def test_no_workers_under_another_prefix_count(prefix: str, workers: list[subprocess.Popen[bytes]]) -> None:
    other = probe(prefix + "X", 1)
    assert other.returncode == 1 and other.stdout.startswith("0 of 1")


def test_the_state_is_read_after_the_command_whatever_it_holds() -> None:
    assert state("4242 (VLLM::Worker_TP0) S 1 4242 4242 0 -1") == "S"
    assert state("77 (a) b) (c) D 1 77 77 0 -1") == "D"


def test_a_worker_in_uninterruptible_sleep_is_not_alive_and_running_or_sleeping_ones_are() -> None:
    assert verdict({10: "S", 11: "R", 12: "S", 13: "S"}, 4) is None
    assert verdict({10: "S", 11: "D", 12: "S", 13: "D"}, 4) == (
        "vLLM worker process(es) 11, 13 in uninterruptible sleep (D)"
    )
    assert verdict({10: "S", 11: "X", 12: "S", 13: "S"}, 4) == ("3 of 4 vLLM worker processes alive")
