"""Remove the old snapshots of DEST: only k3deploy's (a marker and a record of k3deploy's beside the folder), never
the one in use (named with --in-use, or with a file a process holds open), and within one only the files its
record lists: anything else in the folder stays, and so does the folder then.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from k3deploy.stage.copy import PART_PREFIX
from k3deploy.stage.record import GENERATOR, records_from_text
from k3deploy.stage.state import MARKER_SUFFIX, drop_marker, journal_path, read_marker, record_path

_PROC = Path("/proc")


def open_below(folder: Path) -> bool:
    """True when a process this user can see holds a file below `folder` open (or mapped)."""
    root = str(folder.resolve()) + os.sep
    for pid in _PROC.iterdir() if _PROC.is_dir() else ():
        if not pid.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (pid / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd).startswith(root):
                        return True
        with contextlib.suppress(OSError):
            if root in (pid / "maps").read_text(errors="replace"):
                return True
    return False


def _remove_listed(folder: Path, paths: list[str]) -> None:
    for rel in paths:
        target = folder / rel
        for doomed in (target, target.with_name(PART_PREFIX + target.name)):
            if doomed.is_file() and not doomed.is_symlink():
                doomed.unlink()
    # Empty folders only, deepest first: a folder holding anything k3deploy did not list stays.
    for root, _dirs, _files in sorted(os.walk(folder), key=lambda item: -len(item[0])):
        with contextlib.suppress(OSError):
            Path(root).rmdir()


def prune(dest: Path, keep: set[str]) -> list[str]:
    """Remove k3deploy's snapshots in DEST other than `keep` and not in use; the names removed."""
    removed = []
    for marker_file in sorted(dest.glob("*" + MARKER_SUFFIX)):
        name = marker_file.name[: -len(MARKER_SUFFIX)]
        folder, record_file = dest / name, record_path(dest, name)
        if name in keep or read_marker(dest, name) is None or not record_file.is_file():
            continue
        if folder.is_symlink() or not folder.is_dir() or open_below(folder):
            continue
        text = record_file.read_text(encoding="utf-8", errors="replace")
        if f'"generator": "{GENERATOR}"' not in text:
            continue
        paths = [entry.path for record in records_from_text(text) for entry in record.files]
        drop_marker(dest, name)  # first: a half-removed folder must never look complete
        _remove_listed(folder, paths)
        record_file.unlink()
        with contextlib.suppress(FileNotFoundError):
            journal_path(dest, name).unlink()
        removed.append(name)
    return removed
