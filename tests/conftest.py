"""Fixtures every test tier shares: the repo root and running the real CLI in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["tests.kubeapi.fixtures"]

REPO_ROOT = Path(__file__).resolve().parent.parent
#: Upstream CRDs and reference data live beside the checkout, not in it.
SHARED_DIR = REPO_ROOT.parent / "shared"
#: Tests never reach a public registry: one a test does not start itself is a closed port on 127.0.0.1
#: (preflight then reports the image platforms as unknown, a WARN).
os.environ.setdefault("K3DEPLOY_REGISTRY_URL", "http://127.0.0.1:9")


def venv_tool(name: str) -> str | None:
    """A command-line tool installed beside this interpreter (the venv's bin), else the one on PATH; None if neither."""
    return shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for a k3deploy subprocess: this checkout first on the path, no colour, a wide terminal."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("NO_COLOR", "1")
    env["COLUMNS"] = "200"
    env.update(extra or {})
    return env


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120, cwd: Path | None = None,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `python -m k3deploy ARGS` as a user would; returns the completed process (never raises on exit code)."""
    return subprocess.run(
        [sys.executable, "-m", "k3deploy", *args],
        capture_output=True, text=True, timeout=timeout, env=cli_env(env), cwd=cwd or REPO_ROOT, input=input,
    )


@pytest.fixture
def cli():
    """The `run_cli` function as a fixture."""
    return run_cli
