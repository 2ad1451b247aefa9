"""`--measured FILE` of `plan` and `preflight`: a rate the prefetch or `k3deploy stage` achieved on the shared weight
volume, which the load time and the start-up budget then use instead of storage.read_mb_s."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from k3deploy.errors import UsageError

if TYPE_CHECKING:
    from k3deploy.stage.measured import Measured

MeasuredOpt = Annotated[
    Path | None,
    typer.Option(
        "--measured",
        "--staged",
        help="A stage marker (DEST/<name>.k3deploy-staged.json, its copy from the weight volume) or the prefetch's "
        "record (<marker>.sha256.json): its measured MB/s stands for storage.read_mb_s in the load time and the "
        "start-up budget.",
    ),
]


def measured_rate_of(path: Path | None) -> Measured | None:
    """The rate FILE records (None without the option); a file that records none is a usage error (exit 2)."""
    if path is None:
        return None
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.fileio.read import read_text_capped
    from k3deploy.stage.measured import measured_rate

    found = measured_rate(read_text_capped(path, 64 << 20, what="measured rate"))
    if found is None:
        raise UsageError(
            f"--measured {path} is not a marker of a completed `k3deploy stage` copy nor a prefetch record with its time",
            hint="name DEST/<name>.k3deploy-staged.json of a copy from the weight volume, or the prefetch's "
            "<marker>.sha256.json",
        )
    return found
