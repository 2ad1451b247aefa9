"""The arithmetic of a staging run: what is left to copy, the space it needs, how many copiers, how long it takes.

Pure: the caller lists the source and what is already staged; nothing here touches a disk.
"""

from __future__ import annotations

from dataclasses import dataclass

#: MB as the summary and `--max-mb-s` count it (10^6 bytes, as disk vendors and `dd` do).
MB = 1_000_000
#: Room left free on DEST beyond the copy itself (the filesystem's own metadata, the journal, the marker).
FREE_MARGIN_BYTES = 256 * 1024 * 1024
#: Copiers at most: past this a local NVMe disk gains nothing and the shared volume suffers.
MAX_JOBS = 16


@dataclass(frozen=True)
class SourceFile:
    """A file to stage: relative path, size, and the sha256 it must have (None: hashed while copying)."""

    path: str
    size: int
    sha256: str | None


@dataclass(frozen=True)
class StagePlan:
    """What a run does: the files still to copy, and the sizes that the summary and the free-space check use."""

    todo: tuple[SourceFile, ...]
    total_files: int
    total_bytes: int
    done_bytes: int

    @property
    def remaining_bytes(self) -> int:
        """Bytes still to copy."""
        return self.total_bytes - self.done_bytes

    @property
    def space_needed(self) -> int:
        """Free space DEST needs before the run starts."""
        return self.remaining_bytes + FREE_MARGIN_BYTES if self.todo else 0


def make_plan(files: list[SourceFile], done: dict[str, int]) -> StagePlan:
    """The plan for `files` when `done` (relative path -> size) are already staged and checked: a done file of
    another size than the source's is copied again."""
    todo = tuple(sorted((f for f in files if done.get(f.path) != f.size), key=lambda f: (-f.size, f.path)))
    total = sum(f.size for f in files)
    return StagePlan(todo=todo, total_files=len(files), total_bytes=total, done_bytes=total - sum(f.size for f in todo))


def jobs_for(plan: StagePlan, asked: int | None) -> int:
    """Copiers to run: the number asked, else one per file up to 8; never more than files left nor MAX_JOBS."""
    wanted = asked if asked is not None else 8
    return max(1, min(wanted, MAX_JOBS, len(plan.todo) or 1))


def mb_per_s(nbytes: int, seconds: float) -> float:
    """The rate of a copy in MB/s (0 when no time passed)."""
    return round(nbytes / MB / seconds, 1) if seconds > 0 else 0.0


def seconds_at(nbytes: int, mb_s: float) -> float:
    """How long `nbytes` take at `mb_s` MB/s."""
    if mb_s <= 0:
        raise ValueError("a rate must be positive")
    return nbytes / (mb_s * MB)
