"""Every fact moved, none lost: each command line and each flag the README held before it was cut to a front door
(frozen in old_readme.json from README.md at commit 1f98140 by tests/docs/freeze.py) is in docs/ or the README."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import REPO_ROOT
from tests.docs.commands import command_lines, flags

FROZEN = json.loads(Path(__file__).with_name("old_readme.json").read_text(encoding="utf-8"))


def _texts() -> list[str]:
    pages = sorted((REPO_ROOT / "docs").rglob("*.md"))
    return [(REPO_ROOT / "README.md").read_text(encoding="utf-8")] + [
        p.read_text(encoding="utf-8") for p in pages if "incoming" not in p.parts
    ]


def test_the_frozen_lists_are_the_old_readmes() -> None:
    """The lists are what freeze.py wrote (an emptied list would make the two checks below pass on nothing)."""
    assert FROZEN["source"] == "README.md at 1f98140"
    assert len(FROZEN["commands"]) == 68 and len(FROZEN["flags"]) == 129


def test_every_old_command_line_is_shown_by_the_site_or_the_readme() -> None:
    """Found as a command line of a page (code block or inline code), or one that extends it with more words."""
    shown = {command for text in _texts() for command in command_lines(text)}
    missing = [old for old in FROZEN["commands"] if not any(c == old or c.startswith(old + " ") for c in shown)]
    assert missing == []


def test_every_old_flag_is_named_by_the_site_or_the_readme() -> None:
    named = {flag for text in _texts() for flag in flags(text)}
    assert sorted(set(FROZEN["flags"]) - named) == []
