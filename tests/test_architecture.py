"""The dependency rule: pure modules import no I/O library, and `kubernetes` stays inside k3deploy/kube/."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "k3deploy"
PURE_MODULES = [
    "duration.py",
    "profile/model.py",
    "profile/load.py",
    "profile/names.py",
    "profile/plan.py",
    "render/argv.py",
    "render/manifests.py",
    "render/templating.py",
    "report/model.py",
    "preflight/facts.py",
    "preflight/checks.py",
    "preflight/checks_node.py",
    "preflight/checks_cluster.py",
    "preflight/checks_pinning.py",
    "pin/oci.py",
    "pin/floating.py",
    "preflight/checks_storage.py",
    "render/features.py",
    "rollout/readiness.py",
    "rollout/order.py",
    "rollout/surge.py",
    "rollout/currency.py",
    "rollout/judge.py",
    "smoke/sse.py",
    "bench/datasets.py",
    "bench/figures.py",
    "bench/compare.py",
    "bench/series.py",
    "bench/svg.py",
    "smoke/metrics.py",
    "smoke/verdict.py",
    "smoke/headline.py",
    "targets/local/launch.py",
    "targets/local/checks.py",
    "targets/local/startup.py",
]
IO_LIBRARIES = {"kubernetes", "httpx", "pynvml", "rich", "subprocess", "socket", "urllib3", "requests", "typer"}


def imported_roots(path: Path) -> set[str]:
    """Top-level names of every module `path` imports, at any depth of the file."""
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("module", PURE_MODULES)
def test_pure_module_imports_no_io(module: str) -> None:
    path = PACKAGE / module
    assert path.is_file(), f"pure module {module} is missing"
    assert imported_roots(path) & IO_LIBRARIES == set()


def test_only_kube_package_imports_kubernetes() -> None:
    offenders = [
        str(path.relative_to(REPO_ROOT))
        for path in PACKAGE.rglob("*.py")
        if "kubernetes" in imported_roots(path) and path.parent.name != "kube"
    ]
    assert offenders == []


def test_no_module_over_500_lines() -> None:
    long = {str(p.relative_to(REPO_ROOT)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 500}
    assert long == {}


def test_every_module_has_a_docstring() -> None:
    missing = [str(p.relative_to(REPO_ROOT)) for p in PACKAGE.rglob("*.py") if ast.get_docstring(ast.parse(p.read_text())) is None]
    assert missing == []
