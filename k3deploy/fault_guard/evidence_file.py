"""Writing an evidence bundle under `--evidence-dir`: a new file every time, never one that exists.

The folder is made when missing; the file is opened with O_CREAT | O_EXCL (no overwrite, no symlink followed at the
name), and a name taken already (two bundles of one group in the same second) gets `-1`, `-2`, ... before `.json`.
"""

from __future__ import annotations

import os
from pathlib import Path

#: How many suffixed names are tried before giving up.
MAX_SUFFIX = 100


def write_new(folder: Path, name: str, data: bytes) -> Path:
    """Write `data` to a new file `folder/name` (or `name` with a suffix) and return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    stem, dot, ext = name.rpartition(".")
    for n in range(MAX_SUFFIX):
        path = folder / (name if n == 0 else f"{stem}-{n}{dot}{ext}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        return path
    raise FileExistsError(f"{folder / name} and {MAX_SUFFIX - 1} suffixed names exist already")
