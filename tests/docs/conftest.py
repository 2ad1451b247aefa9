"""The documentation site, built once per session for the checks that read it."""

from __future__ import annotations

import pytest

from tests.conftest import REPO_ROOT
from tests.docs.site import Build, build, require_mkdocs


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Build:
    """The site as `mkdocs build --strict` builds it from the checkout; the build must have passed."""
    require_mkdocs()
    done = build(REPO_ROOT / "mkdocs.yml", tmp_path_factory.mktemp("site") / "site")
    assert done.returncode == 0, done.output
    return done
