"""The typer application and the options every command shares."""

from __future__ import annotations

import copy
from enum import Enum
from typing import TYPE_CHECKING, Annotated

import typer

from k3deploy import __version__
from k3deploy.errors import UsageError
from k3deploy.profile import DEFAULT_PROFILE
from k3deploy.targets import check_target

if TYPE_CHECKING:
    from k3deploy.profile.load import ProfileRefs
    from k3deploy.profile.model import Profile

app = typer.Typer(
    name="k3deploy",
    help="Deploy Kimi K3 + DSpark on GB300 with vLLM, and prove it reached its targets. Add --debug for tracebacks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    # -h as well as --help, as kubectl and helm take both.
    context_settings={"help_option_names": ["-h", "--help"]},
)


def app_for(args: list[str]) -> typer.Typer:
    """`app` holding only the command (or command group: `bench`) that `args` begins with, else `app` itself (the
    root's --help and --version, a mistyped command: those list or suggest every command).

    typer builds every registered command's click command, options and all, before it parses a word; a command
    runs the same with its siblings left out, so only the one named is built.
    """
    first = args[:1]
    commands = [info for info in app.registered_commands if first == [_command_name(info)]]
    groups = [info for info in app.registered_groups if first == [info.name]]
    if not commands and not groups:
        return app
    only = copy.copy(app)
    only.registered_commands, only.registered_groups = commands, groups
    return only


def _command_name(info: typer.models.CommandInfo) -> str | None:
    """The name typer gives the command (typer.main.get_command_from_info): its own, else its function's."""
    if info.name:
        return info.name
    return typer.main.get_command_name(info.callback.__name__) if info.callback else None


def _version(value: bool) -> None:
    if value:
        typer.echo(f"k3deploy {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """k3deploy: preflight, render, roll out and smoke-test Kimi K3 on GB300."""


class OutputFormat(str, Enum):
    """Output of data commands: a table on a terminal, or one document of the same data as JSON or YAML."""

    table = "table"
    json = "json"
    yaml = "yaml"


ProfileOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--profile",
        "-p",
        help=f"Built-in profile name or path to a profile YAML (default {DEFAULT_PROFILE}); repeat to layer "
        "profiles, later ones winning key by key (as helm -f): -p base.yaml -p site.yaml.",
    ),
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set", help="Override a profile field: key.path=value, list items as key[0]=value (repeatable; last wins)."
    ),
]
FormatOpt = Annotated[
    OutputFormat, typer.Option("--output", "-o", help="table, json or yaml (json and yaml hold the same data).")
]


def get_profile(profile: ProfileRefs, sets: list[str] | None, *, check_fit: bool = True) -> Profile:
    """Load the profile named on the command line, with its overrides (`check_fit`: refuse weights that cannot fit)."""
    # The profile models are built when a command loads a profile: `--help` never pays for them.
    from k3deploy.profile.load import load_profile

    return check_target(load_profile(profile, sets or [], check_fit=check_fit))


def checked_endpoint(value: str | None, flag: str = "--endpoint") -> str | None:
    """An endpoint flag's URL when it can be connected to (http(s), host, port 1-65535, a valid IPv6 literal)."""
    if value is None:
        return None
    # Loaded when a command checks an endpoint: its pydantic validators stay out of `--help`.
    from k3deploy.profile.names import check_http_url

    try:
        return check_http_url(value.strip())
    except ValueError as exc:
        raise UsageError(f"{flag} {exc}", hint=f"for example {flag} http://10.0.0.5:8000") from None
