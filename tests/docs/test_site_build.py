"""`mkdocs build --strict` builds the site; a broken link or anchor fails the build, and an unfinished page waiting
in docs/incoming/ is never built; every page is in the navigation."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.conftest import REPO_ROOT
from tests.docs.site import Build, build, built_page, copy_sources, page_title, require_mkdocs

DOCS = REPO_ROOT / "docs"


def _nav_pages(nav: list[object]) -> list[str]:
    out: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        out += _nav_pages(value) if isinstance(value, list) else [str(value)]
    return out


def _config() -> dict[str, object]:
    # mkdocs.yml has no !tags (python-name constructors), so a plain YAML reader reads all of it.
    config: dict[str, object] = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return config


def test_the_site_builds_strict_with_every_page_titled(site: Build) -> None:
    assert "WARNING" not in site.output, site.output
    sources = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "incoming" not in p.parts)
    assert len(sources) >= 25
    for source in sources:
        html = built_page(site.site, source)
        assert html.is_file(), source
        assert page_title(html), source


def test_every_page_is_in_the_navigation_once() -> None:
    nav = _nav_pages(_config()["nav"])  # type: ignore[arg-type]
    sources = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "incoming" not in p.parts)
    assert sorted(nav) == sources


def test_the_sections_the_site_promises_exist() -> None:
    for folder in ("guide", "operations", "development"):
        assert len(list((DOCS / folder).glob("*.md"))) >= 6, folder
    assert (DOCS / "operations" / "runbooks.md").is_file()


def test_a_broken_link_or_anchor_fails_the_strict_build(tmp_path: Path) -> None:
    require_mkdocs()
    config = copy_sources(tmp_path)
    page = tmp_path / "docs" / "guide" / "gitops.md"
    broken = "\n[gone](pin.md#no-such-heading) and [gone too](no-such-page.md)\n"
    page.write_text(page.read_text(encoding="utf-8") + broken, encoding="utf-8")
    done = build(config, tmp_path / "site")
    assert done.returncode != 0
    assert "does not contain an anchor '#no-such-heading'" in done.output
    assert "no-such-page.md" in done.output


def test_a_page_waiting_in_incoming_is_not_built(tmp_path: Path) -> None:
    """Another branch's text for the lead to place, with a link that resolves nowhere: the strict build ignores it."""
    require_mkdocs()
    config = copy_sources(tmp_path)
    (tmp_path / "docs" / "incoming").mkdir()
    (tmp_path / "docs" / "incoming" / "branch.md").write_text("guide/x\n\n[nowhere](nope.md#x)\n", encoding="utf-8")
    done = build(config, tmp_path / "site")
    assert done.returncode == 0, done.output
    assert not (tmp_path / "site" / "incoming").exists()
