"""Parse a documented `k3deploy ...` command line with the real command line, executing nothing (`--help`-level).

The command tree typer builds from `k3deploy.cli.app` (typer.main.get_command; typer 0.29 carries its own copy of
click, typer._click) is walked as typer itself walks it when it runs a command (typer.core.TyperGroup.invoke: parse
the group's own options, resolve the subcommand, make its context), so an unknown command, an unknown option, an
option without its value, a value outside a choice or an extra argument fails as it would for a user. Nothing is invoked: no callback of a command runs, only the parameters' own
conversions (and `--help`/`--version`, which end the parse as they end a run).

What a page shows that is not literally typed is made typable first (`prepared`): a `<placeholder>` becomes a word,
`[--opt]` the option, `a|b|c` its first choice, an elided `...` a word, and the line ends at a shell operator
(`|`, `>`, `;`, `&&`). The words then go through what `k3deploy.cli.main` does to argv before typer sees it
(`--debug` out, `--dry-run`'s bare form and `--goodput`'s several words spelled out). Two
One rule of the real parse is relaxed, because a page names commands in prose: a required option or argument may
be left out (`k3deploy stage` in a table). get_command builds a fresh tree, so relaxing it changes nothing else;
that tree is built once per process (a parse only reads it) and shared by every parse. (No option of k3deploy requires its path to exist, so files the reader makes parse too.)
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
import shlex

import typer
from typer._click.core import Command
from typer._click.exceptions import NoArgsIsHelpError, UsageError
from typer.core import TyperGroup
from typer.exceptions import Exit

from k3deploy.cli import _dry_run_args, _goodput_args  # also registers every command on the app
from k3deploy.cli.app import app

__all__ = ["UsageError", "parse", "prepared"]

_PLACEHOLDER = re.compile(r"<[^<>]*>")
_OPTIONAL = re.compile(r"(?<=\s)\[(-[^\]]*)\]")
_CHOICES = re.compile(r"(?<![\w/.:-])([a-z][\w-]*)(?:\|[a-z][\w-]*)+(?![\w/.:-])")
_OPERATORS = {"|", "||", ">", ">>", "2>", "<", ";", "&", "&&", "2>&1"}


def prepared(command: str) -> list[str]:
    """The words after `k3deploy` of a documented command line, made typable as the module docstring says."""
    text = _OPTIONAL.sub(r"\1", _PLACEHOLDER.sub("PLACEHOLDER", command))
    text = _CHOICES.sub(r"\1", text)
    lexer = shlex.shlex(text, posix=True, punctuation_chars="|&;<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words: list[str] = []
    for word in lexer:
        if word in _OPERATORS or (word and set(word) <= set("|&;<>")):
            break
        words.append("PLACEHOLDER" if word in ("...", "…") else word)
    if words[:1] != ["k3deploy"]:
        raise ValueError(f"not a k3deploy command line: {command!r}")
    argv = [word for word in words[1:] if word != "--debug"]
    return _goodput_args(_dry_run_args(argv))


def _relaxed(command: Command) -> Command:
    """`command` and its subcommands with no parameter required."""
    for param in command.params:
        param.required = False
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            _relaxed(sub)
    return command


@functools.cache
def _tree() -> Command:
    return _relaxed(typer.main.get_command(app))


def parse(words: list[str]) -> list[str]:
    """Parse `k3deploy WORDS`; the command path it resolved to (e.g. ["bench", "compare"]).

    Raises UsageError (NoSuchOption, BadParameter, ...) as a run would.
    """
    root = _tree()
    path: list[str] = []
    # --help and a bare `k3deploy` print the help: kept out of the test's output.
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(Exit, NoArgsIsHelpError):
        ctx = root.make_context("k3deploy", list(words))
        command = root
        while isinstance(command, TyperGroup):
            rest = [*ctx._protected_args, *ctx.args]  # what TyperGroup.invoke hands to the subcommand
            if not rest:
                break
            name, sub, args = command.resolve_command(ctx, rest)
            if sub is None or name is None:
                raise UsageError(f"no such command {rest[0]!r}", ctx)
            path.append(name)
            ctx = sub.make_context(name, args, parent=ctx)
            command = sub
    return path
