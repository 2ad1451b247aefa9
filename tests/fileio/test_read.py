"""fileio/read.py: only regular files, streamed under a cap; and the commands that read the user's files with it."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from k3deploy.errors import EnvironmentProblem, UsageError
from k3deploy.fileio.read import read_capped, read_text_capped
from tests.conftest import cli_env, run_cli


def test_reads_a_regular_file_under_its_cap(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text("{}\n")
    assert read_capped(path, 3, "report") == b"{}\n"
    with pytest.raises(UsageError, match=r"larger than 2 bytes: stopped reading"):
        read_capped(path, 2, "report")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/full", "/dev/urandom"])
def test_devices_are_refused_before_a_byte_is_read(device: str) -> None:
    with pytest.raises(EnvironmentProblem, match=rf"^the state {device} is a device, not a regular file$"):
        read_capped(device, 1 << 20, "state", error=EnvironmentProblem)


def test_a_fifo_with_no_writer_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="is a FIFO"):
        read_capped(fifo, 1 << 20, "dataset file")
    with pytest.raises(UsageError, match="is a folder"):
        read_capped(tmp_path, 1 << 20, "dataset file")


def test_a_huge_file_costs_no_more_than_its_cap(tmp_path: Path) -> None:
    huge = tmp_path / "manifest.json"
    with huge.open("wb") as fh:
        fh.truncate(1 << 30)  # sparse: 1 GiB on paper, nothing on disk
    tracemalloc.start()
    try:
        with pytest.raises(UsageError, match="larger than 4 MiB"):
            read_capped(huge, 4 << 20, "manifest")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


def test_text_that_is_not_utf8_is_the_callers_error(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"\xff\n")
    with pytest.raises(UsageError, match=r"not UTF-8 text \(byte 0\)"):
        read_text_capped(path, 100, "dataset file")


@pytest.mark.parametrize("make", ["folder", "deep", "device"])
def test_bench_compare_on_a_folder_deep_json_or_a_device_is_a_usage_error(tmp_path: Path, make: str) -> None:
    good = tmp_path / "good.json"
    good.write_text("{}")
    if make == "folder":
        other = str(tmp_path)
    elif make == "deep":
        deep = tmp_path / "deep.json"
        deep.write_text("[" * 100_000 + "]" * 100_000)
        other = str(deep)
    else:
        other = "/dev/zero"
    result = run_cli("bench", "compare", str(good), other)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("error: ") and "unexpected" not in lines[0] and lines[1].startswith("hint: ")


def test_a_dataset_of_deep_json_is_a_usage_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    result = run_cli("bench", "--endpoint", "http://127.0.0.1:1", "--dataset", f"jsonl:{deep}")
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[0] == f"error: {deep}:1: JSON nested too deeply"


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_status_with_its_record_on_a_special_file_answers_at_once(tmp_path: Path, special: str) -> None:
    """Today's main reads /dev/zero without end (memory grows, SIGTERM is never handled) and blocks on the FIFO."""
    state = tmp_path / "state"
    state.mkdir()
    if special == "fifo":
        os.mkfifo(state / "server.json")
    else:
        (state / "server.json").symlink_to(special)
    args = [sys.executable, "-m", "k3deploy", "status", "-p", "local-cpu", "--set", f"local.state_dir={state}"]
    done = subprocess.run(args, env=cli_env(), capture_output=True, text=True, timeout=60)
    kind = "a FIFO" if special == "fifo" else "a device"
    assert f"the server record {state / 'server.json'} is {kind}, not a regular file" in done.stdout, done.stderr
