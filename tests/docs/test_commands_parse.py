"""Every `k3deploy` command line the README and the site show parses with the real command line (tests/docs/
cli_parse.py: typer's own parse, nothing executed), and the check itself rejects what a user's shell would see
refused."""

from __future__ import annotations

import pytest

from tests.conftest import REPO_ROOT
from tests.docs.cli_parse import UsageError, parse, prepared
from tests.docs.commands import command_lines

SOURCES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
SHOWN = [
    (str(path.relative_to(REPO_ROOT)), command)
    for path in SOURCES
    if "incoming" not in path.parts
    for command in command_lines(path.read_text(encoding="utf-8"))
]


def test_the_pages_show_commands_of_every_kind() -> None:
    paths = {tuple(parse(prepared(command))) for _, command in SHOWN}
    for command in ("up", "pin", "preflight", "watch", "bench", "stage", "guard", "render", "smoke", "down"):
        assert (command,) in paths, command
    assert ("bench", "compare") in paths
    assert len(SHOWN) >= 100


@pytest.mark.parametrize(("page", "command"), SHOWN, ids=[f"{p}:{c[:60]}" for p, c in SHOWN])
def test_a_shown_command_line_parses(page: str, command: str) -> None:
    parse(prepared(command))


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("k3deploy up --no-such-flag", "No such option: --no-such-flag"),
        ("k3deploy upp -p local-cpu", "No such command 'upp'"),
        ("k3deploy status -o xml", "'xml' is not one of"),
        ("k3deploy render -p", "requires an argument"),
        ("k3deploy bench compare a.json b.json --label x", "No such option: --label"),
        ("k3deploy profiles extra", "unexpected extra argument"),
    ],
)
def test_the_parse_refuses_what_the_cli_refuses(command: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse(prepared(command))


def test_what_a_page_shows_is_made_typable() -> None:
    shown = "k3deploy down -p pinned.yaml [--purge] [--yes]  # comment | not a pipe"
    assert prepared(shown) == ["down", "-p", "pinned.yaml", "--purge", "--yes"]
    assert prepared("k3deploy completion bash|zsh|fish") == ["completion", "bash"]
    assert prepared("k3deploy up --set storage.read_mb_s=<what your cache reads at>")[-1] == (
        "storage.read_mb_s=PLACEHOLDER"
    )
    assert prepared("k3deploy render -p my.yaml -o - | kubectl apply -f -") == ["render", "-p", "my.yaml", "-o", "-"]
    assert prepared("k3deploy bench --goodput ttft:500 tpot:50") == [
        "bench",
        "--goodput",
        "ttft:500",
        "--goodput",
        "tpot:50",
    ]
