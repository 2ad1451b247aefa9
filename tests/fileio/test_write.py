"""fileio/write.py: one output file written like `render -o` writes a set, and the commands that use it."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from k3deploy.errors import EnvironmentProblem, UsageError
from k3deploy.fileio.write import RECORD, check_output, write_output
from tests.conftest import run_cli

# Port 1 on loopback: nothing listens, so reaching the network would give exit 3, not 2.
_NOWHERE = "http://127.0.0.1:1"


def test_writes_a_new_file_and_replaces_only_its_own(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    write_output(check_output(target, "--report"), "one\n")
    assert target.read_text() == "one\n"
    assert json.loads((tmp_path / RECORD).read_text())["files"] == {
        "report.json": "2c8b08da5ce60398e1f19af0e5dccc744df274b826abe585eaba68c525434806"
    }
    write_output(check_output(target, "--report"), "two\n")  # k3deploy wrote it, unchanged since: replaced
    assert target.read_text() == "two\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [RECORD, "report.json"]  # no temporary left


def test_refuses_a_foreign_or_edited_file_unless_forced(tmp_path: Path) -> None:
    target = tmp_path / "profile.yaml"
    target.write_text("name: mine\n")
    with pytest.raises(UsageError, match=r"refusing to overwrite .*not written by k3deploy"):
        check_output(target, "--report")
    write_output(check_output(target, "--report", force=True), "k3deploy's\n")
    target.write_text("edited by hand\n")
    with pytest.raises(UsageError, match="changed since"):
        check_output(target, "--report")
    assert target.read_text() == "edited by hand\n"


@pytest.mark.parametrize("force", [False, True])
def test_never_writes_through_a_symlink_or_into_a_special_file(tmp_path: Path, force: bool) -> None:
    precious = tmp_path / "profile.yaml"
    precious.write_text("name: mine\n")
    link = tmp_path / "report.json"
    link.symlink_to(precious)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, what in ((link, "symbolic link"), (fifo, "not a regular file"), (tmp_path, "not a file name")):
        with pytest.raises(UsageError, match=what):
            check_output(path if path != tmp_path else f"{tmp_path}/", "--report", force=force)
    for device in ("/dev/zero", "/dev/full", "/dev/null"):
        with pytest.raises(UsageError, match="not a regular file"):
            check_output(device, "-o", force=force)
    assert precious.read_text() == "name: mine\n"


def test_a_link_put_in_the_way_after_the_check_is_still_refused(tmp_path: Path) -> None:
    precious = tmp_path / "profile.yaml"
    precious.write_text("name: mine\n")
    out = check_output(tmp_path / "report.json", "--report")
    (tmp_path / "report.json").symlink_to(precious)  # during the long run
    with pytest.raises(UsageError, match="symbolic link"):
        write_output(out, "report\n")
    assert precious.read_text() == "name: mine\n"


def test_a_failed_write_leaves_the_previous_file_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "report.json"
    write_output(check_output(target, "--report"), "previous report\n")
    real_write = os.write

    def full_disk(fd: int, data: bytes | memoryview) -> int:
        real_write(fd, bytes(data[:3]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(EnvironmentProblem, match="No space left") as info:
        write_output(check_output(target, "--report"), "new report, longer\n")
    monkeypatch.undo()
    assert info.value.hint and "previous file is untouched" in info.value.hint
    assert target.read_text() == "previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [RECORD, "report.json"]


def test_smoke_refuses_its_report_path_before_the_run(tmp_path: Path) -> None:
    precious = tmp_path / "profile.yaml"
    precious.write_text("name: mine\n")
    result = run_cli("smoke", "--endpoint", _NOWHERE, "--report", str(precious))
    assert result.returncode == 2, result.stderr  # not 3: the endpoint was never tried
    assert "refusing to overwrite" in result.stderr and "liveness" not in result.stderr
    assert precious.read_text() == "name: mine\n"


@pytest.mark.parametrize("flag", ["--report", "--html", "--png"])
def test_bench_refuses_its_output_paths_before_the_run(tmp_path: Path, flag: str) -> None:
    precious = tmp_path / "profile.yaml"
    precious.write_text("name: mine\n")
    link = tmp_path / "out"
    link.symlink_to(precious)
    for path, message in ((precious, "refusing to overwrite"), (link, "symbolic link")):
        result = run_cli("bench", "--endpoint", _NOWHERE, flag, str(path))
        assert result.returncode == 2, result.stderr
        assert message in result.stderr.splitlines()[0]
    assert precious.read_text() == "name: mine\n"


def test_bench_sweep_checks_every_report_it_will_write(tmp_path: Path) -> None:
    taken = tmp_path / "r-num_speculative_tokens=2.json"
    taken.write_text("{}\n")
    result = run_cli(
        "bench",
        "-p",
        "local-cpu",
        "--sweep",
        "speculative.num_speculative_tokens=1,2",
        "--report",
        str(tmp_path / "r.json"),
    )
    assert result.returncode == 2, result.stderr
    assert f"refusing to overwrite {taken}" in result.stderr
    assert "==> bench variant" not in result.stderr


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/full"])
def test_pin_refuses_a_device_before_asking_any_registry(device: str) -> None:
    result = run_cli("pin", "-p", "kimi-k3-gb300-tp16", "-o", device, env={"K3DEPLOY_REGISTRY_URL": _NOWHERE})
    assert result.returncode == 2, result.stderr
    assert (
        result.stderr.splitlines()[0]
        == f"error: --output {device} is not a regular file (a device, a FIFO or a socket); k3deploy writes only regular files"
    )
