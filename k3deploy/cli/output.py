"""Data on stdout as one JSON or YAML document (`-o json`, `-o yaml`): the same data either way, as kubectl does."""

from __future__ import annotations

import json
from typing import Any

import typer

from k3deploy.cli.app import OutputFormat
from k3deploy.console import out


def as_yaml(data: Any, *, document: bool = False) -> str:
    """`data` as block YAML in its own key order; `document` starts it with `---` (one of a stream)."""
    # Loaded when YAML is written: `k3deploy --help` stays light.
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, explicit_start=document, width=1_000_000)


def print_data(data: Any, output: OutputFormat) -> None:
    """Print `data` (JSON-able) on stdout in the format asked for: YAML, else JSON."""
    if output is OutputFormat.yaml:
        typer.echo(as_yaml(data), nl=False)
    else:
        out.print_json(json.dumps(data))


def print_json_text(text: str, output: OutputFormat) -> None:
    """Print a JSON document already serialised (a large report) as it is, or as YAML."""
    if output is OutputFormat.yaml:
        typer.echo(as_yaml(json.loads(text)), nl=False)
    else:
        typer.echo(text)
