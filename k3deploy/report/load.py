"""Read a saved report's JSON: a regular file under a size cap, parsed with deep nesting refused (ValueError)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from k3deploy.errors import UsageError
from k3deploy.fileio.read import read_text_capped

#: A report holds every request and chunk stamp of a run: tens of MiB at most; anything larger is not one.
MAX_REPORT_BYTES = 256 << 20


def load_json(path: Path, what: str) -> Any:
    """The parsed JSON of the report file `path`: UsageError for a folder, a device or an oversized file; ValueError
    (as `json.loads` raises it) for text that is not JSON or is nested too deeply for the parser."""
    text = read_text_capped(
        path, MAX_REPORT_BYTES, what, error=UsageError, hint=f"pass a file written by k3deploy ({what})"
    )
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply") from None
