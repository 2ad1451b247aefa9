"""`k3deploy --help` and `k3deploy render` do not import the `kubernetes` package (~0.5-1 s)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import EXAMPLE_SETS, REPO_ROOT, cli_env


def _imported_modules(*args: str) -> set[str]:
    """Module names a Python run imported, from its `-X importtime` report."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        capture_output=True,
        text=True,
        env=cli_env(),
        cwd=REPO_ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    names = set()
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def _kubernetes(modules: set[str]) -> set[str]:
    return {m for m in modules if m == "kubernetes" or m.startswith("kubernetes.")}


def test_the_detector_sees_kubernetes_when_it_is_imported() -> None:
    assert "kubernetes" in _kubernetes(_imported_modules("-c", "import kubernetes"))


@pytest.mark.parametrize(
    "args", [["--help"], ["render", "-p", "kimi-k3-gb300-tp16", *EXAMPLE_SETS, "-o", "-"]], ids=["help", "render"]
)
def test_cli_does_not_import_kubernetes(args: list[str]) -> None:
    modules = _imported_modules("-m", "k3deploy", *args)
    assert "k3deploy.cli" in modules
    assert _kubernetes(modules) == set()
