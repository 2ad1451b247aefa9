"""`app_for`: the app with only the command a run names is built and behaves as the whole app does for it; the
root's own options, a mistyped command and completion get the whole app."""

from __future__ import annotations

import pytest
import typer.main
from typer.testing import CliRunner

import k3deploy.cli  # noqa: F401  (registers every command on the app)
from k3deploy.cli.app import app, app_for
from tests.conftest import run_cli

COMMANDS = list(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def test_every_command_is_reachable_alone() -> None:
    assert {"render", "plan", "up", "apply", "status", "down", "smoke", "bench", "preflight", "pin"} <= set(COMMANDS)
    for name in COMMANDS:
        alone = typer.main.get_command(app_for([name, "--help"]))
        assert list(alone.commands) == [name]  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", COMMANDS)
def test_a_command_alone_has_the_same_help_and_usage_errors(name: str) -> None:
    runner = CliRunner()
    for args in ([name, "--help"], [name, "--no-such-flag"]):
        whole, alone = runner.invoke(app, args), runner.invoke(app_for(args), args)
        assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output)


@pytest.mark.parametrize(
    "args", [[], ["--help"], ["--version"], ["rendr"], ["--debug", "render"], ["-p", "x", "render"]]
)
def test_what_names_no_command_first_gets_the_whole_app(args: list[str]) -> None:
    assert app_for(args) is app


def test_the_app_itself_keeps_every_command() -> None:
    app_for(["render"])
    assert len(typer.main.get_command(app).commands) == len(COMMANDS)  # type: ignore[attr-defined]


def test_a_mistyped_command_is_still_suggested_from_every_command() -> None:
    result = run_cli("rendr")
    assert result.returncode == 2
    assert "render" in result.stderr
