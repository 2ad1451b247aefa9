"""`.ci/fetch-crds` and tests/support/crds.py: the upstream CRDs the tests hold renders to come from the Go modules of
pinned versions into a cache the script fills, never from beside the checkout, and without them a test fails with
one line naming the command."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support import crds

REPO = Path(__file__).resolve().parents[2]
FETCH = REPO / ".ci" / "fetch-crds"


def _fetch(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The script offline (GOPROXY=off) on an empty module cache under tmp_path: no module can be had."""
    env = {
        **os.environ,
        "K3DEPLOY_CRDS_CACHE": str(tmp_path / "cache"),
        "GOPROXY": "off",
        "GOMODCACHE": str(tmp_path / "gomod"),
        "GOFLAGS": "-modcacherw",
    }
    env.pop("K3DEPLOY_CRDS_FROM", None)
    return subprocess.run(["bash", str(FETCH), *args], env=env, capture_output=True, text=True, timeout=300)


def test_the_crds_are_looked_for_in_the_fetch_cache_not_beside_the_checkout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("K3DEPLOY_TEST_CRDS", raising=False)
    monkeypatch.setenv("K3DEPLOY_CRDS_CACHE", str(tmp_path))
    found = crds.upstream_dir()
    assert found.parent == tmp_path
    assert re.fullmatch(r"[0-9a-f]{16}", found.name)


def test_a_test_without_the_crds_fails_with_one_line_naming_the_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("K3DEPLOY_TEST_CRDS", str(tmp_path))
    with pytest.raises(pytest.fail.Exception) as failed:
        crds.require()
    message = str(failed.value)
    assert "\n" not in message
    assert message.endswith("run: bash .ci/fetch-crds")
    assert "resource.nvidia.com_computedomains.yaml" in message


def test_no_test_reads_a_folder_beside_the_checkout() -> None:
    """What the tiers need is in the repository or in a cache its scripts fill (a user's clone has nothing beside):
    no code line of the tests or the CI scripts names the folder beside the checkout (comments may)."""
    beside = re.compile(r"""parents?(\[\d\])?\s*/\s*["']shared["']|\.\./shared|REPO_ROOT\.parent\s*/""")
    sources = [p for p in [*REPO.glob("tests/**/*.py"), *REPO.glob(".ci/*")] if p.is_file()]
    offenders = [
        f"{p.relative_to(REPO)}: {line.strip()}"
        for p in sources
        for line in p.read_text().splitlines()
        if beside.search(line) and not line.lstrip().startswith("#")
    ]
    assert offenders == []


def test_the_print_dir_is_keyed_by_the_script(tmp_path: Path) -> None:
    done = _fetch(tmp_path, "--print-dir")
    assert done.returncode == 0
    assert Path(done.stdout.strip()).parent == tmp_path / "cache"
    assert not (tmp_path / "cache").exists()  # asking makes nothing


def test_a_file_from_elsewhere_is_taken_only_when_it_is_the_pinned_one(tmp_path: Path) -> None:
    """Offline with an empty module cache, --from a folder of look-alike files: every file refused by its sha256, one
    error and one hint line, exit 3, and no cache folder claims to be complete."""
    lookalikes = tmp_path / "lookalikes"
    lookalikes.mkdir()
    for name in crds.FILES.values():
        (lookalikes / name).write_text("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n")
    done = _fetch(tmp_path, "--from", str(lookalikes))
    assert done.returncode == 3, done.stderr
    problems = [line for line in done.stderr.splitlines() if not line.startswith("[fetch-crds]")]
    assert len(problems) == 2, done.stderr
    assert problems[0].startswith("error: could not fetch ")
    assert all(name in problems[0] for name in crds.FILES.values())
    assert problems[1].startswith("hint: ") and "--from" in problems[1]
    assert not list((tmp_path / "cache").glob("*/.complete"))
    assert not list((tmp_path / "cache").glob("*/*.yaml"))
