"""Builds the documentation site (`mkdocs build --strict`) and reads what the built pages hold (ids, headings).

mkdocs runs as its own process from this interpreter's environment (the `docs` extra, installed by `.ci/setup`), so
a build is exactly what `mkdocs build --strict` does in the checkout. Without mkdocs the tests that need a built site
skip, and fail under CI=true, as the browser test does without Chromium.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

#: Generous for a build of about 30 pages that takes a few seconds on a loaded 2-core machine.
BUILD_TIMEOUT_S = 300


@dataclass(frozen=True)
class Build:
    """One finished `mkdocs build`: its exit status, output, the site folder and how long it took."""

    returncode: int
    output: str
    site: Path
    seconds: float


def require_mkdocs() -> None:
    """Skip (fail under CI=true) when mkdocs or its theme is not installed."""
    if all(importlib.util.find_spec(m) is not None for m in ("mkdocs", "material")):
        return
    if os.environ.get("CI") == "true":
        pytest.fail("mkdocs is not installed: `bash .ci/setup` installs the `docs` extra")
    pytest.skip("mkdocs is not installed; run `bash .ci/setup` (the `docs` extra)")


def build(config: Path, site: Path) -> Build:
    """`mkdocs build --strict -f CONFIG -d SITE`, bounded."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # the theme's notice about MkDocs 2, not a finding
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        env=env,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    return Build(done.returncode, done.stdout + done.stderr, site, time.monotonic() - started)


def copy_sources(dest: Path) -> Path:
    """mkdocs.yml and docs/ copied under `dest` (to build a changed copy); the copy's mkdocs.yml."""
    shutil.copy2(REPO_ROOT / "mkdocs.yml", dest / "mkdocs.yml")
    shutil.copytree(REPO_ROOT / "docs", dest / "docs", ignore=shutil.ignore_patterns("incoming"))
    return dest / "mkdocs.yml"


class _Ids(HTMLParser):
    """Every element id of a page, and the text of its h1."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.h1 = ""
        self._in_h1 = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if key == "id" and value:
                self.ids.add(value)
        self._in_h1 = self._in_h1 or tag == "h1"

    def handle_endtag(self, tag: str) -> None:
        if tag == "h1":
            self._in_h1 = False

    def handle_data(self, data: str) -> None:
        if self._in_h1:
            self.h1 += data


def page_ids(html: Path) -> set[str]:
    """The ids a link's `#anchor` can land on in a built page."""
    parser = _Ids()
    parser.feed(html.read_text(encoding="utf-8"))
    return parser.ids


def page_title(html: Path) -> str:
    """The text of a built page's h1 (without the permalink sign the toc extension adds)."""
    parser = _Ids()
    parser.feed(html.read_text(encoding="utf-8"))
    return parser.h1.replace("¶", "").strip()


def built_page(site: Path, source: str) -> Path:
    """The HTML file a source page (`guide/pin.md`, `index.md`) becomes with directory URLs."""
    stem = source.removesuffix(".md")
    if stem == "index" or stem.endswith("/index"):
        return site / stem.removesuffix("index") / "index.html"
    return site / stem / "index.html"
