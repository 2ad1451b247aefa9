"""Liveness of a headless vLLM rank: the worker pods' livenessProbe (`python3 -c <this file> N`, render/worker_probe.py).

vLLM 0.32 runs a worker pod as `vllm serve --headless`. On a node past the first of its data-parallel rank
(vllm/entrypoints/cli/serve.py run_headless) that is a MultiprocExecutor with one worker process per local GPU,
each titled `<VLLM_PROCESS_NAME_PREFIX>::Worker...` (default prefix `VLLM`, e.g. `VLLM::Worker_TP5`: setproctitle,
vllm/utils/system_utils.py set_process_title, called by v1/executor/multiproc_executor.py
setup_proc_title_and_log_prefix; setproctitle is one of vLLM's requirements), and the main process blocks in
`start_worker_monitor(inline=True)` until a worker dies, then shuts the executor down and exits. It serves nothing
else: no HTTP port, no heartbeat file, no metrics. So this reads /proc, the process check the kubelet can run:

- fewer than N worker processes alive (one exited: a zombie's /proc/PID/cmdline is empty, so it no longer carries
  its title): the monitor saw it die and the shutdown hangs (a collective of the dead rank's peers that never
  completes), or the executor never started its workers;
- a worker in uninterruptible sleep (`D`): blocked in the kernel, as on a GPU fallen off the bus or a hung driver
  call; a probe sees one instant, so the probe's failureThreshold in a row is what judges it stuck.

A rank wedged in a collective whose peers are gone spins or sleeps interruptibly and is not seen here: the leader's
VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS still ends that one. Exit 0: alive; 1: not, with why on stdout (the probe's
message in the pod's events). The standard library only: the vLLM image's python3 runs it.
"""

from __future__ import annotations

import os
import sys

#: Exit codes of the probe.
EXIT_ALIVE, EXIT_DEAD = 0, 1
#: vLLM's default title prefix (vllm/envs.py VLLM_PROCESS_NAME_PREFIX).
DEFAULT_PREFIX = "VLLM"
PROC = "/proc"


def state(stat: str) -> str:
    """The state letter of a /proc/PID/stat line (after the command in parentheses, which may hold spaces)."""
    return stat[stat.rindex(")") + 2 :].split(" ", 1)[0]


def workers(proc: str, prefix: str) -> dict[int, str]:
    """PID -> state of every process whose title starts with `<prefix>::Worker`."""
    found: dict[int, str] = {}
    title = f"{prefix}::Worker".encode()
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(f"{proc}/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"{proc}/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
        except OSError:  # gone between the listing and the read
            continue
        if cmdline.startswith(title):
            found[int(entry)] = state(stat)
    return found


def verdict(found: dict[int, str], expected: int) -> str | None:
    """Why the rank is not alive, or None when it is."""
    alive = {pid: s for pid, s in found.items() if s not in ("Z", "X")}
    if len(alive) < expected:
        return f"{len(alive)} of {expected} vLLM worker processes alive"
    stuck = sorted(pid for pid, s in alive.items() if s == "D")
    if stuck:
        return f"vLLM worker process(es) {', '.join(map(str, stuck))} in uninterruptible sleep (D)"
    return None


def main(argv: list[str]) -> int:
    """`N [PROC]`: N workers expected; PROC the proc filesystem (a test's)."""
    expected = int(argv[1])
    proc = argv[2] if len(argv) > 2 else PROC
    why = verdict(workers(proc, os.environ.get("VLLM_PROCESS_NAME_PREFIX") or DEFAULT_PREFIX), expected)
    print(why or f"{expected} vLLM worker processes alive")
    return EXIT_DEAD if why else EXIT_ALIVE


if __name__ == "__main__":
    sys.exit(main(sys.argv))
