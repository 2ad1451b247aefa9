"""`up --set vllm.port=<a port another process holds>` beside a running server: preflight checks the port asked
for and names its holder, and the healthy server is never stopped for a port the new one cannot bind. A move to a
free port replaces the server as any other change does (stop, start; a failed start or wait puts the old one back)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest

from tests.integration.vllm_server import alive
from tests.ports import free_port
from tests.targets.local.conftest import FakeLocal


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port another program (this test) listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield int(sock.getsockname()[1])


def test_a_held_port_fails_preflight_naming_its_holder_and_the_server_keeps_serving(
    fake_local: FakeLocal, held_port: int
) -> None:
    assert fake_local.run("up").returncode == 0
    pid = fake_local.record()["pid"]
    code, summary, stderr = fake_local.json("up", f"vllm.port={held_port}")
    assert code == 1, stderr
    assert (summary["stages"][0]["name"], summary["stages"][0]["status"]) == ("preflight", "fail")
    assert summary["error"].startswith(
        f"1 preflight check(s) failed, first: local.port: port {held_port} on 127.0.0.1 is in use by another "
        f"process: pid {os.getpid()} ("
    )
    assert alive(pid) and fake_local.record()["pid"] == pid


def test_apply_without_preflight_leaves_the_running_server_when_the_new_port_is_held(
    fake_local: FakeLocal, held_port: int
) -> None:
    assert fake_local.run("up").returncode == 0
    pid = fake_local.record()["pid"]
    result = fake_local.run("apply", f"vllm.port={held_port}")
    assert result.returncode == 3, result.stderr
    assert (
        f"port {held_port} on 127.0.0.1 is in use by another process: pid {os.getpid()} (" in result.stderr
        and f"the running server (pid {pid}, port {fake_local.port}) was left as it is" in result.stderr
    )
    assert alive(pid) and fake_local.record()["pid"] == pid


def test_a_free_other_port_says_the_running_server_will_be_replaced(fake_local: FakeLocal) -> None:
    assert fake_local.run("up").returncode == 0
    pid = fake_local.record()["pid"]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        other = int(probe.getsockname()[1])
    code, report, stderr = fake_local.json("preflight", f"vllm.port={other}")
    assert code == 0, stderr
    port = next(c for c in report["checks"] if c["name"] == "local.port")
    assert port["detail"] == (
        f"127.0.0.1:{other} is free (the k3deploy server on port {fake_local.port}, pid {pid}, will be replaced)"
    )


def test_a_move_to_another_port_replaces_the_server(fake_local: FakeLocal) -> None:
    assert fake_local.run("up").returncode == 0
    old = fake_local.record()["pid"]
    other = free_port()
    code, summary, stderr = fake_local.json("up", f"vllm.port={other}")
    assert code == 0, stderr
    assert summary["stages"][2]["detail"].startswith(f"upgraded: stopped pid {old} and started vLLM (pid ")
    new = fake_local.record()
    assert new["port"] == other and new["pid"] != old and alive(new["pid"]) and not alive(old)
    fake_local.sets.append(f"vllm.port={other}")  # so the fixture's `down` stops it


def test_a_replacement_that_never_gets_ready_is_rolled_back_to_the_old_server(fake_local: FakeLocal) -> None:
    assert fake_local.run("up").returncode == 0
    old = fake_local.record()
    # The fake server refuses a flag vLLM does not take: it exits before it is ready.
    code, summary, stderr = fake_local.json("up", f"vllm.port={free_port()}", "vllm.extra_args=[--no-such-flag]")
    assert code == 1, stderr
    assert [(s["name"], s["status"]) for s in summary["stages"]][3] == ("wait", "fail")
    back = fake_local.record()
    assert summary["rollback"].endswith(
        f"; restored the previous server (revision {old['generation']}, pid {back['pid']})"
    ), summary["rollback"]
    assert back["port"] == old["port"] and back["argv_hash"] == old["argv_hash"] and alive(back["pid"])
    assert not alive(old["pid"])
