"""What k3deploy created under the state directory, so `down --purge` deletes that and nothing else.

A folder is ours when it holds a marker file (`.k3deploy-owned`, a random id written when k3deploy created
the folder) *and* the state directory's registry (`owned.json`) records that same id for that path. A folder
a user made, copied or moved there carries no matching pair, so it is never deleted; neither is a symlink,
a path the profile names as its model, nor anything holding one of those.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

from k3deploy.errors import K3DeployError
from k3deploy.fileio.read import read_text_capped
from k3deploy.targets.local.state import atomic_write_text

MARKER = ".k3deploy-owned"
REGISTRY = "owned.json"


def _registry(state_dir: Path) -> dict[str, str]:
    try:
        data = json.loads(read_text_capped(state_dir / REGISTRY, 1 << 20, "ownership registry"))
    except (K3DeployError, OSError, ValueError, RecursionError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _save(state_dir: Path, registry: dict[str, str]) -> None:
    if registry:
        atomic_write_text(state_dir / REGISTRY, json.dumps(registry, indent=2, sort_keys=True) + "\n")
    else:
        (state_dir / REGISTRY).unlink(missing_ok=True)


def _is_real_dir(path: Path) -> bool:
    """A directory itself, not a symlink to one, owned by this user."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def mark(state_dir: Path, folder: Path) -> None:
    """Record `folder` (which k3deploy has just created) as ours: an id in the registry, then the same id inside it."""
    token = secrets.token_hex(16)
    registry = _registry(state_dir)
    registry[str(folder)] = token
    _save(state_dir, registry)
    fd = os.open(folder / MARKER, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")


def create(state_dir: Path, folder: Path, mode: int = 0o755) -> bool:
    """Create `folder` and mark it ours; False (and nothing marked) when it already existed."""
    try:
        folder.mkdir(mode=mode)
    except FileExistsError:
        return False
    mark(state_dir, folder)
    return True


def is_owned(state_dir: Path, folder: Path) -> bool:
    """True when `folder` is a real directory whose marker holds the id the registry recorded for it."""
    expected = _registry(state_dir).get(str(folder))
    if not expected or not _is_real_dir(folder):
        return False
    try:
        fd = os.open(folder / MARKER, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(fd, encoding="utf-8") as fh:
        return fh.read(100).strip() == expected


def _overlaps(folder: Path, protected: Iterable[str]) -> str | None:
    """The protected path that `folder` is, holds, or lies inside, if any (compared after resolving links)."""
    mine = os.path.realpath(folder)
    for path in protected:
        theirs = os.path.realpath(os.path.expanduser(path))
        if os.path.commonpath([mine, theirs]) in (mine, theirs):
            return path
    return None


def remove(state_dir: Path, folder: Path, protected: Iterable[str] = ()) -> str | None:
    """Delete `folder` when it is ours and no protected path overlaps it; None when deleted, else why it was kept."""
    if not os.path.lexists(folder):
        return None
    clash = _overlaps(folder, protected)
    if clash is not None:
        return f"kept {folder}: the profile names {clash} as a model"
    if not is_owned(state_dir, folder):
        return f"kept {folder}: k3deploy did not create it"
    # rmtree never follows a symlink inside the tree (it removes the link itself).
    shutil.rmtree(folder, ignore_errors=True)
    registry = _registry(state_dir)
    if not os.path.lexists(folder):
        registry.pop(str(folder), None)
        _save(state_dir, registry)
        return None
    return f"could not remove all of {folder}"


def forget_missing(state_dir: Path) -> None:
    """Drop registry entries whose folders are gone (removed by hand)."""
    registry = _registry(state_dir)
    kept = {path: token for path, token in registry.items() if os.path.lexists(path)}
    if kept != registry:
        with contextlib.suppress(OSError):
            _save(state_dir, kept)
