"""`up --strategy blue-green` with one group: the new group loads beside the old one in a second clique, is smoke-tested
by its leader, takes the API Service, and only then does the old group go; the Service never empties."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.kubeapi.controllers.endpointslices import ready_endpoints
from tests.rollout.conftest import FAST, NAMESPACE, PROFILE
from tests.rollout.upgrade_cluster import API_SERVICE, NEW_IMAGE, QUICK_UP, ready_behind
from tests.smoke.scripted_server import Script, scripted_server

pytestmark = pytest.mark.timeout(300)
BLUE, GREEN = "kimi-k3-gb300-tp16", "kimi-k3-gb300-tp16-green"
ONE = QUICK_UP
BLUE_GREEN = ("--strategy", "blue-green", *NEW_IMAGE)


def _k3(kube: Any, command: str, *args: str, input: str | None = None) -> Any:
    return run_cli(command, "-p", PROFILE, "--kubeconfig", str(kube.kubeconfig), *FAST, *args, timeout=240, input=input)


def _up(kube: Any, *args: str) -> Any:
    return _k3(kube, "up", *ONE, *args)


def _lws(kube: Any, name: str) -> dict | None:
    return kube.store.get("leaderworkersets", name, NAMESPACE)


def _selected(kube: Any) -> str:
    return kube.store.get("services", API_SERVICE, NAMESPACE)["spec"]["selector"]["leaderworkerset.sigs.k8s.io/name"]


def _installed(kube: Any) -> int:
    first = _up(kube, "--skip-smoke")
    assert first.returncode == 0, first.stderr
    kube.wait_for(lambda: ready_endpoints(kube.store, NAMESPACE, API_SERVICE) == [BLUE + "-0"])
    return int(kube.store.rv)


def test_blue_green_switches_to_a_smoked_new_group_and_the_service_never_empties(racks: Any) -> None:
    start = _installed(racks)
    with scripted_server(Script(models=["moonshotai/Kimi-K3"], tokens_per_chunk=[4, 4, 4, 4])) as server:
        result = _up(racks, *BLUE_GREEN, "--endpoint", server.url, "--group-endpoint", server.url)
    assert result.returncode == 0, result.stderr
    order = [
        result.stderr.index(line)
        for line in (
            f"blue-green: new group {GREEN} beside the live {BLUE}",
            f"smoke of the new group {GREEN} through its leader",
            f"switched Service {API_SERVICE} to {GREEN}",
            f"deleted the old group {BLUE}",
        )
    ]
    assert order == sorted(order), result.stderr
    assert _lws(racks, BLUE) is None and _lws(racks, GREEN) is not None
    assert _selected(racks) == GREEN
    assert racks.store.get("services", GREEN + "-preview", NAMESPACE) is None
    images = {
        p["spec"]["containers"][0]["image"]
        for p in racks.store.list("pods", NAMESPACE)
        if p["metadata"]["labels"].get("leaderworkerset.sigs.k8s.io/name")
    }
    assert images == {"vllm/vllm-openai:kimi-k3-next"}

    states = ready_behind(racks, start)
    assert all(states), f"the API Service had no ready leader at some point: {states}"
    assert [BLUE + "-0", GREEN + "-0"] in states or [GREEN + "-0"] in states
    assert states[-1] == [GREEN + "-0"]

    # Later commands work on the colour that serves: status shows it, a re-run changes nothing, down removes it.
    status = json.loads(_k3(racks, "status", "-o", "json").stdout)
    assert status["blue_green"] == {"serving": GREEN, "groups": [GREEN], "previews": [], "in_progress": False}
    assert status["ready"] is True and {p["name"] for p in status["pods"]} >= {GREEN + "-0"}
    again = _up(racks, *NEW_IMAGE, "--skip-smoke")
    assert again.returncode == 0 and "no changes: all" in again.stderr, again.stderr
    down = _k3(racks, "down", "--yes")
    assert down.returncode == 0, down.stderr
    assert (
        _lws(racks, GREEN) is None
        and racks.store.list("pods", NAMESPACE, label="leaderworkerset.sigs.k8s.io/name") == []
    )


def test_a_crash_looping_new_group_is_removed_and_the_old_one_keeps_serving(racks: Any) -> None:
    start = _installed(racks)
    racks.controllers.kubelet.fail("CrashLoopBackOff", image="kimi-k3-next", logs=["RuntimeError: CUDA error"])
    result = _up(racks, *BLUE_GREEN, "--skip-smoke")
    assert result.returncode == 1, result.stderr
    assert "CrashLoopBackOff" in result.stderr
    assert (
        f"blue-green abandoned: new group removed (LeaderWorkerSet/{GREEN}, Service/{GREEN}-preview); "
        f"{BLUE} still serving" in result.stderr
    )
    assert _lws(racks, GREEN) is None and racks.store.get("services", GREEN + "-preview", NAMESPACE) is None
    assert racks.store.list("pods", NAMESPACE, label=f"leaderworkerset.sigs.k8s.io/name={GREEN}") == []
    assert _selected(racks) == BLUE and _lws(racks, BLUE)["status"]["readyReplicas"] == 1
    # The API Service's slice never lost the old leader (no write to it at all: traffic never moved).
    assert all(ready_behind(racks, start))
    assert ready_endpoints(racks.store, NAMESPACE, API_SERVICE) == [BLUE + "-0"]


def test_a_half_done_blue_green_shows_in_status_and_down_removes_both_groups(racks: Any) -> None:
    _installed(racks)
    racks.controllers.kubelet.fail("CrashLoopBackOff", image="kimi-k3-next")
    left = _up(racks, *BLUE_GREEN, "--skip-smoke", "--no-rollback")
    assert left.returncode == 1 and "rollback: skipped (--no-rollback)" in left.stderr
    status = json.loads(_k3(racks, "status", "-o", "json").stdout)
    assert status["blue_green"] == {
        "serving": BLUE,
        "groups": [BLUE, GREEN],
        "previews": [GREEN + "-preview"],
        "in_progress": True,
    }
    table = _k3(racks, "status").stdout
    assert f"blue-green in progress: {BLUE} serving, {GREEN} beside it" in table
    down = _k3(racks, "down", "--yes")
    assert down.returncode == 0, down.stderr
    assert _lws(racks, BLUE) is None and _lws(racks, GREEN) is None
    assert racks.store.get("services", GREEN + "-preview", NAMESPACE) is None
    assert racks.store.list("pods", NAMESPACE, label="leaderworkerset.sigs.k8s.io/name") == []


def test_without_a_second_free_clique_blue_green_needs_yes_for_the_outage(cluster: Any) -> None:
    # One clique of four trays: the live group holds all of it.
    assert _installed(cluster)
    refused = _up(cluster, *BLUE_GREEN, "--skip-smoke")
    assert refused.returncode == 2, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert lines[-2].startswith(
        f"error: no second NVLink clique has 4 free trays for a new group beside {BLUE}: "
        "the change replaces the only group in place, an outage of about the model's load time"
    )
    assert lines[-1] == "hint: re-run with --yes to accept the outage, or free a clique for the new group"
    assert "kimi-k3-next" not in json.dumps(_lws(cluster, BLUE)["spec"])

    accepted = _up(cluster, *BLUE_GREEN, "--skip-smoke", "--yes")
    assert accepted.returncode == 0, accepted.stderr
    assert "blue-green: no room for a second group; replacing the only group in place" in accepted.stderr
    assert "kimi-k3-next" in json.dumps(_lws(cluster, BLUE)["spec"]) and _lws(cluster, GREEN) is None


def test_blue_green_is_refused_for_two_groups(cluster: Any) -> None:
    result = _up(cluster, "--strategy", "blue-green", "--set", "parallel.replicas=2", "--skip-smoke")
    assert result.returncode == 2
    assert (
        "error: --strategy blue-green is for one serving group; this profile has parallel.replicas 2" in result.stderr
    )


def test_a_smoke_failure_after_the_switch_restores_the_old_group_and_removes_the_new(racks: Any) -> None:
    _installed(racks)
    good = Script(models=["moonshotai/Kimi-K3"], tokens_per_chunk=[4, 4, 4, 4])
    with (
        scripted_server(good) as leader,
        scripted_server(Script(models=["moonshotai/Kimi-K3"], completion_status=500)) as api,
    ):
        result = _up(racks, *BLUE_GREEN, "--endpoint", api.url, "--group-endpoint", leader.url)
    assert result.returncode == 1, result.stderr
    assert (
        f"switched Service {API_SERVICE} to {GREEN}" in result.stderr and "FAIL smoke: smoke against" in result.stderr
    )
    assert "rollback: restored revision 1" in result.stderr and "blue-green abandoned" in result.stderr
    assert _selected(racks) == BLUE and _lws(racks, GREEN) is None
    assert "kimi-k3-next" not in json.dumps(_lws(racks, BLUE)["spec"])


def test_blue_green_is_refused_on_the_local_target() -> None:
    result = run_cli("up", "-p", "local-cpu", "--strategy", "blue-green", "--skip-preflight", timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-2:] == [
        "error: --strategy blue-green needs a cluster; profile 'local-cpu' runs on target 'local'",
        "hint: drop --strategy: the local target runs one server",
    ]


def test_on_a_terminal_blue_green_without_room_asks_and_no_changes_nothing(cluster: Any) -> None:
    import os
    import pty
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT, cli_env

    _installed(cluster)
    primary, secondary = pty.openpty()
    os.write(primary, b"n\n")
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "k3deploy",
                "up",
                "-p",
                PROFILE,
                "--kubeconfig",
                str(cluster.kubeconfig),
                *FAST,
                *ONE,
                *BLUE_GREEN,
                "--skip-smoke",
            ],
            check=False,
            stdin=secondary,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO_ROOT,
            env=cli_env(),
        )
    finally:
        os.close(secondary)
        os.close(primary)
    assert done.returncode == 2, done.stderr
    assert done.stderr.endswith(
        "not confirmed; nothing was changed\nhint: re-run and answer y, or pass --yes to go ahead without being asked\n"
    ), done.stderr
    assert "an outage of about the model's load time (up to the startup budget, 7200s). Go ahead? [y/N]" in done.stderr
    assert "kimi-k3-next" not in json.dumps(_lws(cluster, BLUE)["spec"])
