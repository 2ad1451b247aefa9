"""One command at a time per state directory, and `wait` accepts only the server it started.

Driven through the real CLI over real processes and sockets.
"""

from __future__ import annotations

import os
import threading

from k3deploy.targets.local.lock import LOCK_FILE
from tests.integration.vllm_server import alive
from tests.smoke.scripted_server import Counters, Script
from tests.targets.local.conftest import FakeLocal, servers_of, wait_for
from tests.targets.local.fake_vllm import _Server, bind


def test_a_second_up_on_the_same_state_dir_is_refused_while_the_first_runs(fake_local: FakeLocal) -> None:
    slow = "vllm.env.FAKE_VLLM_START_DELAY_S='4'"
    first = fake_local.popen("up", slow, extra=("-o", "json"))
    try:
        assert wait_for(lambda: (fake_local.state_dir / LOCK_FILE).exists(), 30)
        code, _, stderr = fake_local.json("up", slow)
        assert code == 3
        assert (
            f"error: another k3deploy command (pid {first.pid}) is using {fake_local.state_dir}; not starting up"
            in stderr
        ), stderr
        assert "hint: wait for it to finish (or interrupt it), then run this again" in stderr
        # down is refused too: it would stop the server the first up is still waiting for.
        assert fake_local.run("down", extra=("--yes",)).returncode == 3
        _out, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    # The first up's server is the recorded one, and the only one.
    leaders = [p.pid for p in servers_of(fake_local.state_dir) if os.getsid(p.pid) == p.pid]
    assert leaders == [fake_local.record()["pid"]] == [fake_local.json("status")[1]["pid"]]
    assert not (fake_local.state_dir / LOCK_FILE).exists()
    code, _, stderr = fake_local.json("up", slow)
    assert code == 0, stderr


def test_up_refuses_a_port_answered_by_another_server(fake_local: FakeLocal) -> None:
    # Someone else's OpenAI server already serves the port, with the same model name and /metrics.
    sock = bind("127.0.0.1", fake_local.port)
    other = _Server(sock, Script(models=["rehearsal-llama-tiny"]), Counters())
    thread = threading.Thread(target=other.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        code, summary, stderr = fake_local.json(
            "up", "vllm.env.FAKE_VLLM_START_DELAY_S='3'", extra=("--skip-preflight",)
        )
        assert code == 3, stderr
        assert [(s["name"], s["status"]) for s in summary["stages"]] == [
            ("preflight", "skip"),
            ("render", "pass"),
            ("apply", "pass"),
            ("wait", "fail"),
        ]
        pid = int(summary["stages"][2]["detail"].removeprefix("started vLLM (pid ").split(")")[0])
        assert summary["error"] == (
            f"http://127.0.0.1:{fake_local.port} is answered by another process, "
            f"not by the vLLM k3deploy started (pid {pid})"
        )
        assert summary["rollback"] == f"stopped the new server (pid {pid}); nothing ran before"
        assert not alive(pid) and other.counters.requests == 0  # smoke never ran against the wrong server
    finally:
        other.shutdown()
        other.server_close()
