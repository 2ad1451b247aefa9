"""`render --output-dir DIR`, with `-o`/`--output` kept as its alias."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import EXAMPLE_SETS, run_cli


def test_render_output_dir_and_its_old_spelling_write_the_same(tmp_path: Path) -> None:
    new, old = tmp_path / "new", tmp_path / "old"
    assert run_cli("render", "-p", "kimi-k3-gb300-tp16", *EXAMPLE_SETS, "--output-dir", str(new)).returncode == 0
    assert run_cli("render", "-p", "kimi-k3-gb300-tp16", *EXAMPLE_SETS, "-o", str(old)).returncode == 0
    names = sorted(p.name for p in new.iterdir())
    assert "kustomization.yaml" in names and names == sorted(p.name for p in old.iterdir())
    assert all((new / n).read_bytes() == (old / n).read_bytes() for n in names if not n.startswith("."))
