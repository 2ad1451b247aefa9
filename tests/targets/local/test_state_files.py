"""The state directory's own files: atomic records, the lock, the ownership registry. Real files and processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from k3deploy.errors import EnvironmentProblem
from k3deploy.targets.local import ownership
from k3deploy.targets.local.lock import LOCK_FILE, locked
from k3deploy.targets.local.state import ServerRecord, Unreadable, read_record_or_error, write_record

RECORD = ServerRecord(
    profile="p",
    pid=1234,
    create_time=1.5,
    host="127.0.0.1",
    port=8000,
    argv=["python3"],
    env={},
    argv_hash="h",
    log_path="l",
    model_path="m",
    rehearsal=False,
    started_at="t",
    server_id="s",
)


def test_a_write_interrupted_anywhere_keeps_the_old_record_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "server.json"
    write_record(path, RECORD)
    before = path.read_bytes()

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_record(path, RECORD.model_copy(update={"pid": 99}))
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["server.json"]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"pid": 1', "not JSON: "),
        (RECORD.model_dump_json().replace('"pid":1234', '"pid":0'), "pid: Input should be greater than or equal to 2"),
        (RECORD.model_dump_json().replace('"create_time":1.5', '"create_time":NaN'), "create_time: "),
        ("[]", "the record: Input should be a valid dictionary"),
    ],
)
def test_an_invalid_record_says_what_is_wrong(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "server.json"
    path.write_text(text)
    found = read_record_or_error(path)
    assert isinstance(found, Unreadable) and found.why.startswith(f"{path} is not a valid record ({why}")


def test_the_lock_names_its_holder_and_is_gone_after_release(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time; from pathlib import Path; from k3deploy.targets.local.lock import locked\n"
                f"with locked(Path({str(tmp_path)!r}), 'up'):\n    print('held', flush=True); time.sleep(60)"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(EnvironmentProblem) as info, locked(tmp_path, "down"):
            pass
        assert (
            info.value.message == f"another k3deploy command (pid {holder.pid}) is using {tmp_path}; not starting down"
        )
    finally:
        holder.kill()
        holder.wait()
    # The kernel let go of the dead holder's lock: its file is stale, and taken over.
    assert (tmp_path / LOCK_FILE).exists()
    with locked(tmp_path, "down"):
        assert (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n"
    assert not (tmp_path / LOCK_FILE).exists()


def test_a_folder_holding_the_profiles_model_is_never_removed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    cache = state / "vllm-cache"
    assert ownership.create(state, cache) and ownership.is_owned(state, cache)
    assert not ownership.create(state, cache)  # it exists: not created again, still ours
    (cache / "weights").mkdir()
    assert ownership.remove(state, cache, [str(cache / "weights")]) == (
        f"kept {cache}: the profile names {cache / 'weights'} as a model"
    )
    assert ownership.remove(state, cache, [str(state / "model")]) is None
    assert not cache.exists() and not (state / ownership.REGISTRY).exists()
