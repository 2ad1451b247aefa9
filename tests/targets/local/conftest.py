"""The real CLI on the local target with the fake vLLM interpreter: a private state directory, port and TMPDIR.

Every test that uses `fake_local` ends with no server process left: `down` runs at the end, and whatever still
carries the state directory in its environment after that fails the test (and is stopped).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from k3deploy.targets.local.process import STATE_DIR_ENV
from tests.conftest import REPO_ROOT, cli_env, run_cli
from tests.integration.vllm_server import free_port
from tests.targets.local.fake_vllm import write_fake_python

#: The fake server needs no RAM or disk to speak of: preflight must not fail because other work fills the host
#: (1 GiB of KV space: with 0, vLLM would get no KV cache at all, and the capacity plan refuses that).
HOST_INDEPENDENT = ("local.min_free_ram_gib=0", "local.min_free_disk_gib=0", "vllm.env.VLLM_CPU_KVCACHE_SPACE='1'")
#: Smoke kept short: the fake server streams instantly.
FAST_SMOKE = ("smoke.requests=2", "smoke.output_tokens=12", "smoke.request_timeout_s=20", "smoke.overall_timeout_s=60")


def servers_of(state_dir: Path) -> list[psutil.Process]:
    """Live processes whose environment says k3deploy started them for `state_dir`."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get(STATE_DIR_ENV) == str(state_dir):
                found.append(proc)
        except psutil.Error:
            continue
    return found


@dataclass
class FakeLocal:
    """One private local deployment driven through `python -m k3deploy`."""

    root: Path
    port: int
    python: Path
    state_dir: Path
    model: Path
    tmp: Path
    sets: list[str] = field(default_factory=list)

    def args(self, command: str, *sets: str, extra: tuple[str, ...] = ()) -> list[str]:
        """The command line after `k3deploy`."""
        base = [
            f"local.python={self.python}",
            f"local.state_dir={self.state_dir}",
            f"vllm.port={self.port}",
            "model.rehearsal=false",
            f"model.id={self.model}",
            f"speculative.model={self.model}",
            "local.ready_timeout_s=30",
            *HOST_INDEPENDENT,
            *FAST_SMOKE,
            *self.sets,
            *sets,
        ]
        return [command, "-p", "local-cpu", *(a for s in base for a in ("--set", s)), *extra]

    def env(self) -> dict[str, str]:
        """The CLI's environment: a private TMPDIR, so temporary files left behind are visible."""
        return {"TMPDIR": str(self.tmp)}

    def run(
        self, command: str, *sets: str, extra: tuple[str, ...] = (), timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run one command to completion."""
        return run_cli(*self.args(command, *sets, extra=extra), env=self.env(), timeout=timeout)

    def json(self, command: str, *sets: str, extra: tuple[str, ...] = ()) -> tuple[int, dict, str]:
        """Run with `-o json`: (exit code, the JSON document, stderr)."""
        done = self.run(command, *sets, extra=(*extra, "-o", "json"))
        return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}, done.stderr

    def popen(self, command: str, *sets: str, extra: tuple[str, ...] = (), **kwargs: object) -> subprocess.Popen[str]:
        """Start a command without waiting for it."""
        return subprocess.Popen(
            [sys.executable, "-m", "k3deploy", *self.args(command, *sets, extra=extra)],
            env=cli_env(self.env()),
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **kwargs,
        )  # type: ignore[call-overload]

    def record(self) -> dict:
        """The state file as JSON."""
        return json.loads((self.state_dir / "server.json").read_text())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests of the real CLI on the fake interpreter are the integration tier's: `up` and `preflight` ask that
    interpreter for its vLLM (the fake runs the real one for anything but the server), so they need the vLLM the
    full set-up installs; in a unit run without it they would fail on local.vllm rather than on what they test."""
    for item in items:
        if "fake_local" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.integration)


@pytest.fixture
def fake_local(tmp_path: Path) -> Iterator[FakeLocal]:
    """A local deployment on a free port with the fake interpreter and a user's model folder (config.json)."""
    model = tmp_path / "user-model"
    model.mkdir()
    (model / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    deployment = FakeLocal(tmp_path, free_port(), write_fake_python(tmp_path / "bin"), tmp_path / "state", model, tmp)
    try:
        yield deployment
    finally:
        deployment.run("down", extra=("--yes",))
        left = servers_of(deployment.state_dir)
        for proc in left:
            proc.kill()
        assert not left, f"processes left behind: {[p.pid for p in left]}"


def wait_for(predicate: Callable[[], object], timeout_s: float = 30.0, poll_s: float = 0.05) -> bool:
    """Poll until `predicate()` is true or the timeout passes; returns the last answer."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() >= deadline:
            return bool(predicate())
        time.sleep(poll_s)
    return True
