"""The smoke package's public surface, and its pure modules staying pure (no I/O libraries imported)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from k3deploy.smoke import runner

ROOT = Path(__file__).resolve().parents[2] / "k3deploy"
PURE = [
    "measure/sse.py",
    "measure/record.py",
    "measure/metrics.py",
    "measure/summary.py",
    "smoke/verdict.py",
    "smoke/correctness.py",
    "smoke/prompts.py",
    "report/smoke.py",
]
IO_LIBRARIES = {"httpx", "rich", "kubernetes", "pynvml", "subprocess", "socket", "asyncio"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_public_surface() -> None:
    assert callable(runner.run_smoke) and callable(runner.exit_code) and runner.SmokeOptions


def test_pure_modules_import_no_io_library() -> None:
    offenders = {mod: sorted(_imports(ROOT / mod) & IO_LIBRARIES) for mod in PURE}
    assert {mod: libs for mod, libs in offenders.items() if libs} == {}


def test_importing_the_pure_parts_does_not_load_httpx() -> None:
    code = "import sys, k3deploy.measure.metrics, k3deploy.smoke.verdict, k3deploy.measure.record; print('httpx' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )
