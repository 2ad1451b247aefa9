"""`k3deploy render -o DIR` touches only files k3deploy wrote there, never writes through a symlink, and swaps
the new set in only once it is complete (k3deploy/render/output_dir.py), all through the real CLI."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from k3deploy.render import output_dir
from k3deploy.render.output_dir import RECORD
from tests.conftest import EXAMPLE_SETS, REPO_ROOT, cli_env, run_cli

K3 = "kimi-k3-gb300-tp16"
LWS = f"10-leaderworkerset-{K3}.yaml"
MONITOR = f"13-servicemonitor-{K3}.yaml"


def _snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry under `folder`: file bytes, or where a symlink points."""
    found: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        if path.is_symlink():
            found[key] = "-> " + os.readlink(path)
        elif path.is_file():
            found[key] = path.read_bytes()
    return found


def _render(folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli("render", "-p", K3, *EXAMPLE_SETS, "-o", str(folder), *extra)


def _refused(result: subprocess.CompletedProcess[str], text: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("hint: "), result.stderr
    assert text in lines[0]


def test_a_users_kustomization_is_never_overwritten_without_force(tmp_path: Path) -> None:
    mine = "resources: [my-app.yaml]\n"
    (tmp_path / "kustomization.yaml").write_text(mine)
    before = _snapshot(tmp_path)
    _refused(
        _render(tmp_path),
        "refusing to overwrite 1 file (kustomization.yaml): not written by k3deploy, or changed since",
    )
    assert _snapshot(tmp_path) == before  # nothing written, nothing removed, no staging folder left
    forced = _render(tmp_path, "--force")
    assert forced.returncode == 0, forced.stderr
    assert (tmp_path / "kustomization.yaml").read_text() != mine
    assert _render(tmp_path).returncode == 0  # now it is k3deploy's (recorded), re-rendering needs no --force


def test_files_shaped_like_ours_but_not_recorded_are_left_alone(tmp_path: Path) -> None:
    (tmp_path / "99-configmap-mine.yaml").write_text("mine\n")
    (tmp_path / "notes.md").write_text("mine\n")
    assert _render(tmp_path).returncode == 0
    assert _render(tmp_path, "--set", "kubernetes.service_monitor=false").returncode == 0
    assert (tmp_path / "99-configmap-mine.yaml").read_text() == "mine\n" and (
        tmp_path / "notes.md"
    ).read_text() == "mine\n"
    assert not (tmp_path / MONITOR).exists()
    record = json.loads((tmp_path / RECORD).read_text())
    assert sorted(record["files"]) == sorted(
        p.name for p in tmp_path.iterdir() if p.name not in (RECORD, "notes.md", "99-configmap-mine.yaml")
    )


def test_an_edited_file_is_not_overwritten_and_an_edited_stale_file_not_removed(tmp_path: Path) -> None:
    assert _render(tmp_path).returncode == 0
    with (tmp_path / LWS).open("a") as handle:
        handle.write("# tuned by hand\n")
    edited = (tmp_path / LWS).read_bytes()
    _refused(_render(tmp_path), f"refusing to overwrite 1 file ({LWS})")
    assert (tmp_path / LWS).read_bytes() == edited
    # A file of the previous set that the new set drops, edited since: kept, reported, dropped from the record.
    assert _render(tmp_path, "--force").returncode == 0
    with (tmp_path / MONITOR).open("a") as handle:
        handle.write("# mine now\n")
    result = _render(tmp_path, "--set", "kubernetes.service_monitor=false")
    assert result.returncode == 0, result.stderr
    assert f"warning: left {MONITOR}: k3deploy wrote it, but it changed since" in result.stderr
    assert (tmp_path / MONITOR).read_text().endswith("# mine now\n")
    assert MONITOR not in json.loads((tmp_path / RECORD).read_text())["files"]


def test_a_symlinked_output_folder_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    for extra in ((), ("--force",)):
        _refused(_render(tmp_path / "link", *extra), "is a symbolic link; k3deploy writes only into a real folder")
    assert list(real.iterdir()) == []


def test_a_symlink_in_place_of_a_file_is_refused_even_with_force(tmp_path: Path) -> None:
    out, victim = tmp_path / "out", tmp_path / "victim.txt"
    victim.write_text("precious\n")
    assert _render(out).returncode == 0
    (out / LWS).unlink()
    (out / LWS).symlink_to(victim)
    (out / RECORD).unlink()
    (out / RECORD).symlink_to(victim)
    before = _snapshot(tmp_path)
    for extra in ((), ("--force",)):
        _refused(_render(out, *extra), "in the way: not a regular file (a symlink or a folder)")
    assert _snapshot(tmp_path) == before and victim.read_text() == "precious\n"


def test_a_folder_in_place_of_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").mkdir()
    (tmp_path / "kustomization.yaml" / "keep").write_text("x")
    _refused(_render(tmp_path, "--force"), "1 file (kustomization.yaml) in the way")
    assert (tmp_path / "kustomization.yaml" / "keep").read_text() == "x"


def test_a_write_that_fails_midway_leaves_the_previous_set_untouched(tmp_path: Path) -> None:
    assert _render(tmp_path).returncode == 0
    before = _snapshot(tmp_path)

    def small_files() -> None:  # the LeaderWorkerSet file is larger than this: its write fails with EFBIG
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "k3deploy",
            "render",
            "-p",
            K3,
            *EXAMPLE_SETS,
            "--set",
            "vllm.max_num_seqs=64",
            "-o",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(),
        cwd=REPO_ROOT,
        preexec_fn=small_files,
    )
    assert result.returncode == 3, result.stderr
    assert result.stderr.startswith(f"error: cannot write to {str(tmp_path)!r}: File too large")
    assert _snapshot(tmp_path) == before  # the old set, byte for byte, and no staging folder left behind


def test_a_swap_interrupted_half_way_is_accepted_by_the_next_render(tmp_path: Path, monkeypatch) -> None:
    from k3deploy.profile import load_profile
    from k3deploy.render.manifests import build
    from k3deploy.render.write import files_of

    assert _render(tmp_path).returncode == 0
    new = files_of(
        build(load_profile(K3, ["production=false", "vllm.max_num_seqs=64", "kubernetes.service_monitor=false"]))
    )
    real_replace, calls = os.replace, []

    def replace_then_die(*args, **kwargs):
        calls.append(args)
        if len(calls) == 6:  # the pending record and four files are in place: the process "dies" here
            raise KeyboardInterrupt
        return real_replace(*args, **kwargs)

    monkeypatch.setattr(output_dir.os, "replace", replace_then_die)
    with pytest.raises(KeyboardInterrupt):
        output_dir.write_set(tmp_path, new)
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".k3deploy-staging-")] == []
    result = _render(tmp_path, "--set", "vllm.max_num_seqs=64", "--set", "kubernetes.service_monitor=false")
    assert result.returncode == 0, result.stderr
    assert {name: (tmp_path / name).read_text() for name in new} == new and not (tmp_path / MONITOR).exists()


def test_nothing_is_written_outside_the_folder_whatever_the_names(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        output_dir.write_set(tmp_path / "out", {"../escape.yaml": "x"})
    with pytest.raises(ValueError):
        output_dir.write_set(tmp_path / "out", {"a/b.yaml": "x"})
    # A record naming a path (hand-made) does not make k3deploy delete outside the folder.
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.yaml"
    victim.write_text("v")
    digest = output_dir.sha256("v")
    (out / RECORD).write_text(json.dumps({"generator": "k3deploy render", "files": {"../victim.yaml": digest}}))
    output_dir.write_set(out, {"a.yaml": "a"})
    assert victim.read_text() == "v"


def test_sigterm_while_staging_removes_the_staging_folder_and_keeps_the_old_set(tmp_path: Path, monkeypatch) -> None:
    from k3deploy.profile import load_profile
    from k3deploy.render.manifests import build
    from k3deploy.render.write import files_of

    assert _render(tmp_path).returncode == 0
    before = _snapshot(tmp_path)
    real_write, written = output_dir._write_new, []

    def write_then_terminated(name: str, text: str, dfd: int) -> None:
        real_write(name, text, dfd)
        written.append(name)
        if len(written) == 3:
            os.kill(os.getpid(), signal.SIGTERM)  # as `kill PID` would, between two files

    monkeypatch.setattr(output_dir, "_write_new", write_then_terminated)
    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt):
        output_dir.write_set(tmp_path, files_of(build(load_profile(K3, ["vllm.max_num_seqs=64"]))))
    assert len(written) == 3 and signal.getsignal(signal.SIGTERM) == previous
    assert _snapshot(tmp_path) == before
