"""`up --strategy blue-green` with one group on the real plane: the new group loads beside the old one in a second
clique, is smoke-tested by its leader, takes the API Service, and only then does the old group go; the real
EndpointSlice controller's slice of the Service never empties (a watch records every write to it)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT, cli_env
from tests.realk8s.client import wait_until
from tests.realk8s.cluster_fixtures import (
    API_SERVICE,
    LWS,
    NEW_IMAGE,
    NO_DRA,
    PROFILE,
    SCRIPTED,
    Deployment,
    SliceRecorder,
    ready_endpoints,
)
from tests.realk8s.stages import CRASH_LOOP_IMAGE, serving_image
from tests.smoke.scripted_server import Script, scripted_server

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]
BLUE, GREEN = LWS, f"{LWS}-green"
BLUE_GREEN = ("--strategy", "blue-green", *NEW_IMAGE)
CRASHING_GREEN = ("--strategy", "blue-green", *serving_image(CRASH_LOOP_IMAGE))
LWS_LABEL = "leaderworkerset.sigs.k8s.io/name"
#: 10 ms between chunks: on a loaded host the 2 ms default lets the client read whole streams in bursts, which smoke
#: rightly calls a WARN (a starved server); these tests are about the switch, not the server's pace.
GOOD = Script(models=["moonshotai/Kimi-K3"], tokens_per_chunk=[4, 4, 4, 4], chunk_delay_s=0.01)


def _up(deploy: Deployment, *args: str) -> subprocess.CompletedProcess[str]:
    return deploy.k3("up", *SCRIPTED, *args)


def _selected(deploy: Deployment) -> str:
    service = deploy.get("services", API_SERVICE)
    assert service is not None
    return str(service["spec"]["selector"][LWS_LABEL])


def _serving(deploy: Deployment) -> list[str]:
    slices = deploy.plane.api.get(
        deploy.path("endpointslices") + f"?labelSelector=kubernetes.io/service-name={API_SERVICE}"
    )["items"]
    return sorted({e for s in slices for e in ready_endpoints(s)})


def _lws_pods(deploy: Deployment, name: str | None = None) -> list[dict]:
    return [
        p
        for p in deploy.list("pods")
        if (p["metadata"].get("labels") or {}).get(LWS_LABEL) in ((name,) if name else (BLUE, GREEN))
    ]


def _installed(deploy: Deployment) -> SliceRecorder:
    first = _up(deploy, "--skip-smoke")
    assert first.returncode == 0, first.stderr
    wait_until(f"{BLUE}-0 behind {API_SERVICE}", lambda: _serving(deploy) == [BLUE + "-0"], 60)
    return SliceRecorder(deploy.plane, deploy.namespace, API_SERVICE)


def test_blue_green_switches_to_a_smoked_new_group_and_the_service_never_empties(deploy: Deployment) -> None:
    recorder = _installed(deploy)
    with scripted_server(GOOD) as server:
        result = _up(deploy, *BLUE_GREEN, "--endpoint", server.url, "--group-endpoint", server.url)
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
    assert deploy.get("leaderworkersets", BLUE) is None and deploy.get("leaderworkersets", GREEN) is not None
    assert _selected(deploy) == GREEN
    assert deploy.get("services", GREEN + "-preview") is None
    live = [p for p in _lws_pods(deploy) if not p["metadata"].get("deletionTimestamp")]
    assert {p["spec"]["containers"][0]["image"] for p in live} == {"vllm/vllm-openai:kimi-k3-next"}

    wait_until(f"{GREEN}-0 alone behind {API_SERVICE}", lambda: _serving(deploy) == [GREEN + "-0"], 60)
    states = recorder.stop()
    assert all(states), f"the API Service had no ready leader at some point: {states}"
    assert [BLUE + "-0", GREEN + "-0"] in states or [GREEN + "-0"] in states
    assert states[-1] == [GREEN + "-0"]

    # Later commands work on the colour that serves: status shows it, a re-run changes nothing, down removes it.
    status = json.loads(deploy.k3("status", "-o", "json").stdout)
    assert status["blue_green"] == {"serving": GREEN, "groups": [GREEN], "previews": [], "in_progress": False}
    assert status["ready"] is True and {p["name"] for p in status["pods"]} >= {GREEN + "-0"}
    again = _up(deploy, *NEW_IMAGE, "--skip-smoke")
    assert again.returncode == 0 and "no changes: all" in again.stderr, again.stderr
    down = deploy.k3("down", "--yes", "--timeout", "120s")
    assert down.returncode == 0, down.stderr
    assert deploy.get("leaderworkersets", GREEN) is None and _lws_pods(deploy) == []


def test_a_crash_looping_new_group_is_removed_and_the_old_one_keeps_serving(deploy: Deployment) -> None:
    recorder = _installed(deploy)
    result = _up(deploy, *CRASHING_GREEN, "--skip-smoke")
    assert result.returncode == 1, result.stderr
    assert "CrashLoopBackOff" in result.stderr
    assert (
        f"blue-green abandoned: new group removed (LeaderWorkerSet/{GREEN}, Service/{GREEN}-preview); "
        f"{BLUE} still serving" in result.stderr
    )
    assert deploy.get("leaderworkersets", GREEN) is None and deploy.get("services", GREEN + "-preview") is None
    wait_until(f"the pods of {GREEN} to go", lambda: _lws_pods(deploy, GREEN) == [], 120)
    assert _selected(deploy) == BLUE
    blue = deploy.get("leaderworkersets", BLUE)
    assert blue is not None and blue["status"]["readyReplicas"] == 1
    # The API Service's slice never lost the old leader (traffic never moved).
    assert all(recorder.stop())
    assert _serving(deploy) == [BLUE + "-0"]


def test_a_half_done_blue_green_shows_in_status_and_down_removes_both_groups(deploy: Deployment) -> None:
    _installed(deploy).stop()
    left = _up(deploy, *CRASHING_GREEN, "--skip-smoke", "--no-rollback")
    assert left.returncode == 1 and "rollback: skipped (--no-rollback)" in left.stderr
    status = json.loads(deploy.k3("status", "-o", "json").stdout)
    assert status["blue_green"] == {
        "serving": BLUE,
        "groups": [BLUE, GREEN],
        "previews": [GREEN + "-preview"],
        "in_progress": True,
    }
    table = deploy.k3("status").stdout
    assert f"blue-green in progress: {BLUE} serving, {GREEN} beside it" in table
    down = deploy.k3("down", "--yes", "--timeout", "120s")
    assert down.returncode == 0, down.stderr
    assert deploy.get("leaderworkersets", BLUE) is None and deploy.get("leaderworkersets", GREEN) is None
    assert deploy.get("services", GREEN + "-preview") is None
    assert _lws_pods(deploy) == []


def test_without_a_second_free_clique_blue_green_asks_on_a_terminal_and_needs_yes_without(
    deploy: Deployment,
) -> None:
    _installed(deploy).stop()
    # Every other GB300 tray cordoned: the live group holds the only clique left.
    held = {p["spec"]["nodeName"] for p in _lws_pods(deploy, BLUE)}
    others = [
        n["metadata"]["name"]
        for n in deploy.plane.api.get("/api/v1/nodes")["items"]
        if n["metadata"]["name"].startswith("gb300-") and n["metadata"]["name"] not in held
    ]
    deploy.cordon(*others)

    config = deploy.plane.admin_kubeconfig
    assert config is not None
    argv = [sys.executable, "-m", "k3deploy", "up", "-p", PROFILE, "--kubeconfig", str(config), "-n", deploy.namespace]
    primary, secondary = pty.openpty()
    os.write(primary, b"n\n")
    try:
        done = subprocess.run(
            [*argv, *NO_DRA, *SCRIPTED, *BLUE_GREEN, "--skip-smoke"],
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
    assert "an outage of about the model's load time (up to the startup budget, 7610s). Go ahead? [y/N]" in done.stderr
    blue = deploy.get("leaderworkersets", BLUE)
    assert blue is not None and "kimi-k3-next" not in json.dumps(blue["spec"])

    refused = _up(deploy, *BLUE_GREEN, "--skip-smoke")
    assert refused.returncode == 2, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert lines[-2].startswith(
        f"error: no second NVLink clique has 4 free trays for a new group beside {BLUE}: "
        "the change replaces the only group in place, an outage of about the model's load time"
    )
    assert lines[-1] == "hint: re-run with --yes to accept the outage, or free a clique for the new group"
    blue = deploy.get("leaderworkersets", BLUE)
    assert blue is not None and "kimi-k3-next" not in json.dumps(blue["spec"])

    accepted = _up(deploy, *BLUE_GREEN, "--skip-smoke", "--yes")
    assert accepted.returncode == 0, accepted.stderr
    assert "blue-green: no room for a second group; replacing the only group in place" in accepted.stderr
    blue = deploy.get("leaderworkersets", BLUE)
    assert blue is not None and "kimi-k3-next" in json.dumps(blue["spec"])
    assert deploy.get("leaderworkersets", GREEN) is None


def test_blue_green_is_refused_for_two_groups(deploy: Deployment) -> None:
    result = _up(deploy, "--strategy", "blue-green", "--set", "parallel.replicas=2", "--skip-smoke")
    assert result.returncode == 2
    assert (
        "error: --strategy blue-green is for one serving group; this profile has parallel.replicas 2" in result.stderr
    )


def test_a_smoke_failure_after_the_switch_restores_the_old_group_and_removes_the_new(deploy: Deployment) -> None:
    _installed(deploy).stop()
    with (
        scripted_server(GOOD) as leader,
        scripted_server(Script(models=["moonshotai/Kimi-K3"], completion_status=500)) as api,
    ):
        result = _up(deploy, *BLUE_GREEN, "--endpoint", api.url, "--group-endpoint", leader.url)
    assert result.returncode == 1, result.stderr
    assert (
        f"switched Service {API_SERVICE} to {GREEN}" in result.stderr
        and "FAIL smoke: smoke via the given endpoint" in result.stderr
    ), result.stderr
    assert "rollback: restored revision 1" in result.stderr and "blue-green abandoned" in result.stderr
    assert _selected(deploy) == BLUE and deploy.get("leaderworkersets", GREEN) is None
    blue = deploy.get("leaderworkersets", BLUE)
    assert blue is not None and "kimi-k3-next" not in json.dumps(blue["spec"])
