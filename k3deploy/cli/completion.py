"""`k3deploy completion bash|zsh|fish`: the shell's completion script, as `kubectl completion` and `helm completion`
print theirs (`source <(k3deploy completion bash)`).

The script calls k3deploy back with COMPLETE_VAR set; typer's completion classes answer it (cli/__init__.py
registers them only then, so other runs never load them).
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from k3deploy.cli.app import app

#: The environment variable the scripts set when they ask k3deploy for completions (typer's `_<PROG>_COMPLETE`).
COMPLETE_VAR = "_K3DEPLOY_COMPLETE"


class Shell(str, Enum):
    """Shells k3deploy prints a completion script for."""

    bash = "bash"
    zsh = "zsh"
    fish = "fish"


def register() -> None:
    """Make typer's bash, zsh and fish completion answer (what the printed scripts ask for)."""
    # Loaded only to complete: every other run stays light.
    from typer.completion import completion_init

    completion_init()


@app.command()
def completion(shell: Annotated[Shell, typer.Argument(help="bash, zsh or fish.")]) -> None:
    """Print the shell completion script: `source <(k3deploy completion bash)`, or put it where your shell loads
    completions from (zsh: a `_k3deploy` file on $fpath; fish: ~/.config/fish/completions/k3deploy.fish)."""
    # Loaded only here: every other run stays light.
    from typer.completion import get_completion_script

    register()
    typer.echo(get_completion_script(prog_name="k3deploy", complete_var=COMPLETE_VAR, shell=shell.value))
