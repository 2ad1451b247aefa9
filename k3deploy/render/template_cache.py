"""Jinja2's compiled templates kept between runs: a bytecode cache in k3deploy's folder of the user's cache.

Compiling the templates costs `render` more than rendering them. jinja2 stores each template's compiled code with a
checksum of the template's source and compiles again whenever the source differs (jinja2/bccache.py, `Bucket`);
what that checksum does not cover (the jinja2 and Python versions, k3deploy's version, and the environment's options
and filters, given as `identity`) names the cache's folder, so a change to any of them starts an empty one. The
cache only saves time: a folder that cannot be made, or that is not the user's alone, means no cache, a damaged
entry is compiled again, and a write that fails is skipped.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
from pathlib import Path

import jinja2

import k3deploy

__all__ = ["FOLDER", "bytecode_cache", "cache_root"]

#: The cache's folder under $XDG_CACHE_HOME/k3deploy: a dot name, so never a local profile's state folder.
FOLDER = ".jinja2"


class _BytecodeCache(jinja2.FileSystemBytecodeCache):
    """jinja2's file cache, for which a damaged entry is a compile and a failed write is no error."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        """The entry's code when it reads back whole; else the bucket stays empty and the template is compiled."""
        try:
            super().load_bytecode(bucket)
        except Exception:  # a damaged entry (jinja2 unpickles its checksum): compile instead
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        """Written as jinja2 writes it (a temporary file renamed into place); a full or read-only disk skips it."""
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


def cache_root(environ: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    """$XDG_CACHE_HOME/k3deploy, else ~/.cache/k3deploy (where the local target keeps its state too)."""
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "k3deploy"


def _key(identity: bytes) -> str:
    digest = hashlib.sha256()
    for part in (jinja2.__version__, sys.version, k3deploy.__version__):
        digest.update(part.encode() + b"\0")
    digest.update(identity)
    return digest.hexdigest()[:16]


def _own_folder(path: Path) -> bool:
    """`path` is a folder of this user's that no one else may write into (what jinja2 asks of its own default)."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def bytecode_cache(identity: bytes, root: Path | None = None) -> jinja2.BytecodeCache | None:
    """The cache for an environment described by `identity` (its options and filters), under `root` (default
    `cache_root()`); None when no safe folder can be had there."""
    folder = (root or cache_root()) / FOLDER / _key(identity)
    return _BytecodeCache(str(folder), "%s.cache") if _own_folder(folder) else None
