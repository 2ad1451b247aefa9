"""LocalTarget's process lifecycle in seconds: reuse, upgrade, rollback, fail-fast, stale records, down.

vLLM is replaced here by a small real HTTP server on 127.0.0.1, put on the interpreter's path as the
module the target runs (`vllm.entrypoints.openai.api_server`); like vLLM it keeps a child process in its
group. The same lifecycle against a real vLLM is in tests/integration/test_local_up.py.
"""

from __future__ import annotations

import tempfile
import textwrap
from pathlib import Path

import psutil
import pytest

from k3deploy.errors import CheckFailed, EnvironmentProblem
from k3deploy.profile import load_profile
from k3deploy.profile.model import Profile
from k3deploy.targets import DeployOptions
from k3deploy.targets.local.launch import scratch_dir
from k3deploy.targets.local.process import group_members
from k3deploy.targets.local.target import LocalTarget
from tests.integration.vllm_server import alive, free_port

FAKE_SERVER = textwrap.dedent('''
    """Stands in for vLLM's API server: /health 200 (503 for a model named 'unready'), exit 1 for 'broken'."""
    import argparse, http.server, subprocess, sys
    parser = argparse.ArgumentParser()
    parser.add_argument("--model"); parser.add_argument("--host"); parser.add_argument("--port", type=int)
    args, _ = parser.parse_known_args()
    if args.model.endswith("broken"):
        print("Traceback (most recent call last):", flush=True)
        print("ValueError: cannot load " + args.model, flush=True)
        sys.exit(1)
    engine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    code = 503 if args.model.endswith("unready") else 200

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(code); self.end_headers()
        def log_message(self, *a):
            pass

    print("Starting vLLM API server", flush=True)
    http.server.HTTPServer((args.host, args.port), Handler).serve_forever()
''')


@pytest.fixture
def fake_vllm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "fake-site"
    module = root / "vllm" / "entrypoints" / "openai"
    module.mkdir(parents=True)
    for folder in (root / "vllm", root / "vllm" / "entrypoints", module):
        (folder / "__init__.py").write_text("")
    (module / "api_server.py").write_text(FAKE_SERVER)
    monkeypatch.setenv("PYTHONPATH", str(root))


@pytest.fixture
def target(fake_vllm: None) -> LocalTarget:
    return LocalTarget()


def profile_for(tmp_path: Path, port: int, model: str = "model", *sets: str) -> Profile:
    folder = tmp_path / model
    folder.mkdir(exist_ok=True)
    return load_profile(
        "local-cpu",
        [
            f"local.state_dir={tmp_path / 'state'}",
            f"vllm.port={port}",
            "model.rehearsal=false",
            f"model.id={folder}",
            "speculative=null",
            "local.ready_timeout_s=30",
            *sets,
        ],
    )


def test_reuse_upgrade_rollback_and_down(target: LocalTarget, tmp_path: Path) -> None:
    port = free_port()
    first = profile_for(tmp_path, port)
    try:
        assert target.current_revision(first) is None
        outcome = target.apply(first)
        assert outcome.changed
        target.wait_ready(first, 30)
        status = target.status(first).report
        pid = status["pid"]
        assert (status["running"], status["healthy"], status["revision"], status["endpoint"]) == (
            True,
            True,
            1,
            f"http://127.0.0.1:{port}",
        )
        group = group_members(pid)
        assert len(group) == 2

        again = target.apply(first)
        assert (again.changed, again.summary) == (False, f"already running (pid {pid}) at http://127.0.0.1:{port}")

        previous = target.current_revision(first)
        assert previous is not None and previous.number == 1
        changed = profile_for(tmp_path, port, "model", "vllm.max_num_seqs=4")
        upgraded = target.apply(changed)
        assert upgraded.summary.startswith(f"upgraded: stopped pid {pid} and started vLLM (pid ")
        assert not any(alive(p) for p in group)
        target.wait_ready(changed, 30)
        new = target.status(changed).report
        assert new["revision"] == 2 and "--max-num-seqs" in new["argv"] and new["matches_profile"]
        assert target.status(first).report["matches_profile"] is False

        said = target.rollback(changed, previous)
        assert said.startswith(
            f"stopped the new server (pid {new['pid']}); restored the previous server (revision 1, pid "
        )
        assert not alive(new["pid"])
        restored = target.status(first).report
        assert (restored["running"], restored["healthy"], restored["revision"]) == (True, True, 1)
        assert restored["argv"] == status["argv"]
        assert target.rollback(first, target.current_revision(first)).startswith("kept the running server")

        restored_group = group_members(restored["pid"])
        assert target.down(first, purge=False) == f"stopped vLLM (pid {restored['pid']})"
        assert not any(alive(p) for p in restored_group)
        assert target.status(first).report["running"] is False
        assert target.down(first, purge=False) == "nothing is running for local-cpu"
    finally:
        target.down(first, purge=False)


def test_rollback_of_a_first_install_stops_it(target: LocalTarget, tmp_path: Path) -> None:
    profile = profile_for(tmp_path, free_port())
    try:
        target.apply(profile)
        target.wait_ready(profile, 30)
        pid = target.status(profile).report["pid"]
        scratch = scratch_dir(tmp_path / "state", Path(tempfile.gettempdir()))
        assert (scratch / ".k3deploy-owned").is_file()
        assert target.rollback(profile, None) == f"stopped the new server (pid {pid}); nothing ran before"
        assert not alive(pid) and target.status(profile).report["running"] is False
        assert not scratch.exists()  # removed with the server, as `down` removes it
    finally:
        target.down(profile, purge=False)


def test_a_server_that_exits_fails_the_wait_with_its_error_line(
    target: LocalTarget, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = profile_for(tmp_path, free_port(), "broken")
    try:
        target.apply(profile)
        with pytest.raises(CheckFailed) as info:
            target.wait_ready(profile, 30)
        assert info.value.message == f"vLLM exited before it was ready: ValueError: cannot load {tmp_path / 'broken'}"
        assert info.value.hint == f"the full log is {tmp_path / 'state' / 'server.log'}"
        assert "      Traceback (most recent call last):" in capsys.readouterr().err
    finally:
        target.down(profile, purge=False)


def test_a_server_never_healthy_times_out_and_is_left_for_rollback(target: LocalTarget, tmp_path: Path) -> None:
    profile = profile_for(tmp_path, free_port(), "unready")
    try:
        target.apply(profile)
        with pytest.raises(EnvironmentProblem, match=r"^vLLM \(pid \d+\) not ready after 2 s$"):
            target.wait_ready(profile, 2)
        assert target.status(profile).report["healthy"] is False
        assert target.rollback(profile, None).startswith("stopped the new server")
    finally:
        target.down(profile, purge=False)


def test_the_timeout_hint_names_the_knob_that_was_used(fake_vllm: None, tmp_path: Path) -> None:
    profile = profile_for(tmp_path, free_port(), "unready")
    log = tmp_path / "state" / "server.log"
    from_profile, from_flag = LocalTarget(), LocalTarget(DeployOptions(timeout_s=1))
    try:
        from_profile.apply(profile)
        with pytest.raises(EnvironmentProblem) as by_profile:
            from_profile.wait_ready(profile, 1)
        with pytest.raises(EnvironmentProblem) as by_flag:
            from_flag.wait_ready(profile, 1)
    finally:
        from_profile.down(profile, purge=False)
    assert by_profile.value.hint == f"raise local.ready_timeout_s, or read {log}"
    assert by_flag.value.hint == f"raise --timeout, or read {log}"


def test_a_record_whose_process_died_counts_as_nothing_running(target: LocalTarget, tmp_path: Path) -> None:
    profile = profile_for(tmp_path, free_port())
    try:
        target.apply(profile)
        target.wait_ready(profile, 30)
        pid = target.status(profile).report["pid"]
        members = [psutil.Process(member) for member in group_members(pid)]
        for member in members:
            member.kill()
        # All of them: a member still dying would be stopped by the next apply, which then says "upgraded".
        psutil.wait_procs(members, timeout=10)
        assert target.status(profile).report["detail"] == f"not running (pid {pid} exited)"
        assert target.current_revision(profile) is None
        assert target.apply(profile).summary.startswith("started vLLM (pid ")
        target.wait_ready(profile, 30)
        assert target.status(profile).report["revision"] == 2
    finally:
        target.down(profile, purge=False)


def test_down_with_nothing_recorded_is_a_no_op(target: LocalTarget, tmp_path: Path) -> None:
    profile = profile_for(tmp_path, free_port())
    assert target.down(profile, purge=True) == (
        f"nothing is running for local-cpu; nothing k3deploy generated is left under {tmp_path / 'state'}"
    )
    assert target.status(profile).report == {
        "target": "local",
        "profile": "local-cpu",
        "state_dir": str(tmp_path / "state"),
        "running": False,
        "detail": "not running",
    }


def test_an_upgrade_that_cannot_start_puts_the_old_server_back(target: LocalTarget, tmp_path: Path) -> None:
    port = free_port()
    first = profile_for(tmp_path, port)
    try:
        target.apply(first)
        target.wait_ready(first, 30)
        before = target.status(first).report
        broken = profile_for(tmp_path, port, "model", f"local.python={tmp_path / 'no-python'}")
        with pytest.raises(EnvironmentProblem, match=f"cannot start {tmp_path / 'no-python'}"):
            target.apply(broken)
        target.wait_ready(first, 30)
        after = target.status(first).report
        assert (after["running"], after["healthy"], after["argv"], after["revision"]) == (True, True, before["argv"], 1)
        assert after["pid"] != before["pid"] and not alive(before["pid"])
    finally:
        target.down(first, purge=False)
