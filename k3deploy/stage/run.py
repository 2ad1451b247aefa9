"""One `stage` run: find SOURCE's files and record, resume what DEST already holds, copy the rest in parallel under
the cap, write the record and then the marker, and remove k3deploy's old snapshots."""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from k3deploy.errors import CheckFailed, EnvironmentProblem, StagedFileMismatch, UsageError
from k3deploy.stage import state
from k3deploy.stage.copy import PART_PREFIX, Copier, hash_file
from k3deploy.stage.hub import hub_source, hub_spec
from k3deploy.stage.plan import MB, SourceFile, jobs_for, make_plan, mb_per_s
from k3deploy.stage.progress import Progress
from k3deploy.stage.prune import prune
from k3deploy.stage.record import FileEntry, Marker, Record, record_data, records_from_text
from k3deploy.stage.source import Source, load_source, scan
from k3deploy.stage.throttle import Throttle

#: Copies of one file tried before a sha256 mismatch fails the run: a second read rules out a transient fault.
ATTEMPTS = 2


@dataclass(frozen=True)
class StageOptions:
    """What the command line asked for."""

    source: Path
    dest: Path
    name: str | None = None
    record: Path | None = None
    revision: str | None = None
    jobs: int | None = None
    max_mb_s: float | None = None
    verify: bool = True
    recheck: bool = False
    prune: bool = True
    in_use: tuple[str, ...] = ()
    progress_interval_s: float = 10.0
    live: bool | None = False


@dataclass(frozen=True)
class StageResult:
    """The run's summary (`-o json`)."""

    name: str
    folder: str
    repo: str
    revision: str
    files: int
    bytes: int
    files_copied: int
    bytes_copied: int
    files_resumed: int
    seconds: float
    mb_s: float
    verified: bool
    already_staged: bool
    pruned: list[str] = field(default_factory=list)
    checked_against: str = ""

    def data(self) -> dict[str, Any]:
        """The JSON form."""
        return dict(self.__dict__)


def _check_name(name: str) -> str:
    if not name or "/" in name or name.startswith(".") or "\x00" in name:
        raise UsageError(f"cannot name a staged copy {name!r}", "give --name a plain folder name")
    return name


def _check_paths(source: Path, dest: Path, name: str) -> None:
    src, folder = source.resolve(), (dest / name).resolve()
    if folder == src or src in folder.parents or folder in src.parents:
        raise UsageError(f"SOURCE {source} and DEST {dest}/{name} overlap", "stage into a folder outside SOURCE")


def _content_id(entries: list[FileEntry]) -> str:
    listing = json.dumps([[e.path, e.size, e.sha256] for e in sorted(entries, key=lambda e: e.path)])
    return "sha256:" + hashlib.sha256(listing.encode()).hexdigest()[:16]


def _dest_record(dest: Path, name: str) -> Record | None:
    path = state.record_path(dest, name)
    try:
        records = records_from_text(path.read_text(encoding="utf-8"))
    except (OSError, CheckFailed):
        return None
    return records[0] if len(records) == 1 else None


def _matches(source: Source, dest: Path, name: str, marker: Marker) -> bool:
    """The complete copy in DEST is of SOURCE's snapshot: the same revision (a record's), else the same files."""
    if source.record is not None:
        return marker.revision == source.record.revision and marker.repo == source.record.repo
    staged = _dest_record(dest, name)
    return staged is not None and {(e.path, e.size) for e in staged.files} == {(f.path, f.size) for f in source.files}


def _forget_other_revision(dest: Path, name: str, keep: set[str]) -> None:
    """The folder holds another revision: drop its marker, then the files k3deploy listed that SOURCE lacks."""
    state.drop_marker(dest, name)
    old = set(state.read_journal(dest, name))
    if (record := _dest_record(dest, name)) is not None:
        old |= {e.path for e in record.files}
    for rel in sorted(old - keep):
        path = dest / name / rel
        if path.is_file() and not path.is_symlink():
            path.unlink()
    state.reset_journal(dest, name)


def _done(source: Source, dest: Path, name: str, recheck: bool) -> dict[str, FileEntry]:
    """The files a previous run finished and SOURCE still wants (rehashed from DEST when `recheck`)."""
    journal = state.read_journal(dest, name)
    done = {}
    for f in source.files:
        entry, path = journal.get(f.path), dest / name / f.path
        if entry is None or entry.size != f.size or (f.sha256 is not None and entry.sha256 != f.sha256):
            continue
        if not path.is_file() or path.stat().st_size != f.size:
            continue
        if recheck and hash_file(path) != entry.sha256:
            continue
        done[f.path] = entry
    return done


def _remove_parts(folder: Path) -> None:
    for part in folder.rglob(PART_PREFIX + "*"):
        if part.is_file() and not part.is_symlink():
            part.unlink()


def _copy_all(
    copier: Copier, source: Source, folder: Path, todo: tuple[SourceFile, ...], jobs: int, on_done: Any
) -> None:
    def one(entry: SourceFile) -> FileEntry:
        for attempt in range(1, ATTEMPTS + 1):
            try:
                sha = copier.copy(source.folder, folder, entry)
                return FileEntry(entry.path, entry.size, sha or "")
            except StagedFileMismatch:
                if attempt == ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="stage-copy") as pool:
        pending: set[Future[FileEntry]] = {pool.submit(one, entry) for entry in todo}
        try:
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    on_done(future.result())
        except BaseException:
            copier.stop.set()
            for future in pending:
                future.cancel()
            raise


def _check_space(dest: Path, needed: int) -> None:
    free = shutil.disk_usage(dest).free
    if free < needed:
        raise EnvironmentProblem(
            f"DEST {dest} has {free / MB:,.0f} MB free; the copy needs {needed / MB:,.0f} MB",
            "free space on the disk, or stage to a larger one (k3deploy's old snapshots there go once a copy is done)",
        )


def _source(options: StageOptions) -> Source:
    """SOURCE as a folder, or as `org/name@<commit>` (no such folder) fetched from the Hub."""
    spec = None if options.source.exists() else hub_spec(str(options.source))
    if spec is None:
        return load_source(options.source, options.record, options.revision)
    if options.record is not None or options.revision not in (None, spec[1]):
        raise UsageError(
            f"--record and --revision name a folder SOURCE's record; {options.source} is checked against the Hub's",
            "drop them: the commit after @ is the revision",
        )
    return hub_source(*spec)


def stage(options: StageOptions) -> StageResult:
    """Stage SOURCE into DEST/<name>; the summary. Exit codes through the errors raised (1 a mismatch, 2 usage,
    3 no space or another run on DEST)."""
    if options.max_mb_s is not None and options.max_mb_s <= 0:
        raise UsageError(f"--max-mb-s {options.max_mb_s} is not a positive rate", "for example --max-mb-s 500")
    if options.jobs is not None and options.jobs < 1:
        raise UsageError(f"--jobs {options.jobs} is not a positive count", "for example --jobs 8")
    source = _source(options)
    record = source.record
    name = _check_name(options.name or (record.revision if record else options.source.resolve().name))
    dest = options.dest
    if dest.exists() and not dest.is_dir():
        raise UsageError(f"DEST {dest} is not a folder", "give a folder on the node's local disk")
    dest.mkdir(parents=True, exist_ok=True)
    _check_paths(source.folder, dest, name)
    repo = record.repo if record else options.source.resolve().name
    wanted = {f.path for f in source.files}
    with state.locked(dest):
        marker = state.read_marker(dest, name)
        if marker is not None and not _matches(source, dest, name, marker):
            state.claim(dest, name)
            _forget_other_revision(dest, name, wanted)
            marker = None
        if marker is not None and not options.recheck:
            pruned = prune(dest, {name, *options.in_use}) if options.prune else []
            return StageResult(
                name, str(dest / name), marker.repo, marker.revision, marker.files, marker.bytes, 0, 0, 0, 0.0, 0.0,
                options.verify, True, pruned, source.checked_against,
            )  # fmt: skip
        state.claim(dest, name)
        folder = dest / name
        _remove_parts(folder)
        done = _done(source, dest, name, options.recheck or marker is not None)
        plan = make_plan(list(source.files), {path: entry.size for path, entry in done.items()})
        _check_space(dest, plan.space_needed)  # before the marker goes: a refused --recheck keeps its copy's marker
        state.drop_marker(dest, name)
        entries = dict(done)

        def finished(entry: FileEntry) -> None:
            entries[entry.path] = entry
            state.append_journal(dest, name, entry)

        started = time.monotonic()
        with Progress(plan.total_bytes, plan.done_bytes, options.progress_interval_s, live=options.live) as progress:
            copier = Copier(
                Throttle(options.max_mb_s and options.max_mb_s * MB, started), progress.add, threading.Event()
            )
            copier.verify = options.verify
            _copy_all(copier, source, folder, plan.todo, jobs_for(plan, options.jobs), finished)
        strays = sorted(set(scan(folder)) - wanted)
        if strays:
            raise CheckFailed(
                f"{folder} holds files the snapshot does not list: {', '.join(strays[:3])}",
                "k3deploy did not write them and leaves them: remove them, or stage under another --name",
            )
        listed = [entries[f.path] for f in source.files]
        revision = record.revision if record else (options.revision or _content_id(listed))
        state.write_atomic(
            state.record_path(dest, name),
            json.dumps(record_data(Record(repo, revision, tuple(listed))), indent=2) + "\n",
        )
        seconds = round(time.monotonic() - started, 3)
        copied = plan.remaining_bytes
        marker = Marker(name, repo, revision, plan.total_files, plan.total_bytes, seconds, mb_per_s(copied, seconds))
        state.write_marker(dest, marker)
        pruned = prune(dest, {name, *options.in_use}) if options.prune else []
    return StageResult(
        name, str(folder), repo, revision, plan.total_files, plan.total_bytes, len(plan.todo), copied,
        len(done), seconds, marker.mb_s, options.verify or record is None, False, pruned, source.checked_against,
    )  # fmt: skip
