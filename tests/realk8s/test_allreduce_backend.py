"""`status` reports the all-reduce backend each group's leader logs, read through the real kube-apiserver's pod log
proxy (KWOK ClusterLogs serve the container's log), and "unknown" where the log does not say."""

from __future__ import annotations

import json

import pytest

from tests.realk8s.client import wait_until
from tests.realk8s.cluster_fixtures import LWS, SCRIPTED, TIMEOUT, Deployment
from tests.realk8s.test_gates import GOOD
from tests.smoke.scripted_server import scripted_server

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]

STARTUP = [
    "INFO 12-01 10:00:01 [api_server.py:1961] vLLM API server version 0.32.0",
    "(EngineCore pid=212) INFO 12-01 10:41:07 [flashinfer_all_reduce.py:236] Initialized FlashInfer Allreduce norm "
    "fusion workspace with backend=mnnvl",
    "INFO 12-01 10:52:40 [launcher.py:46] Application startup complete.",
]


def test_status_shows_the_backend_the_leader_log_reports(deploy: Deployment) -> None:
    deploy.logs(["vllm"], STARTUP)
    applied = deploy.k3("apply", *TIMEOUT)
    assert applied.returncode == 0, applied.stderr
    result = deploy.k3("status", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["allreduce_backend"] == {f"{LWS}-0": "mnnvl"}
    table = deploy.k3("status")
    assert f"all-reduce backend ({LWS}-0 log): mnnvl" in table.stdout


def test_a_leader_log_without_the_line_is_unknown(deploy: Deployment) -> None:
    deploy.logs(["vllm"], STARTUP[:1] + STARTUP[2:])
    applied = deploy.k3("apply", *TIMEOUT)
    assert applied.returncode == 0, applied.stderr
    result = deploy.k3("status", "-o", "json")
    assert json.loads(result.stdout)["allreduce_backend"] == {f"{LWS}-0": "unknown"}


def test_up_s_smoke_report_and_verdict_carry_the_backend(deploy: Deployment) -> None:
    deploy.logs(["vllm"], STARTUP)
    applied = deploy.k3("apply", *TIMEOUT)
    assert applied.returncode == 0, applied.stderr
    # KWOK takes up a new ClusterLogs from its own watch: until it has, the log proxy serves no line and the smoke
    # that follows at once would rightly say "unknown". Wait until the leader's log, read as `up` reads it, says it.
    leader = f"/api/v1/namespaces/{deploy.namespace}/pods/{LWS}-0/log?container=vllm"
    wait_until(
        "the leader log served by KWOK", lambda: "backend=mnnvl" in deploy.plane.api.request("GET", leader).text, 60
    )
    with scripted_server(GOOD) as server:
        result = deploy.k3("up", *SCRIPTED, "--endpoint", server.url, "-o", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["smoke"]["allreduce_backend"] == "mnnvl"
    status = json.loads(deploy.k3("status", "-o", "json").stdout)
    assert '"allreduce_backend": "mnnvl"' in json.dumps(status)  # the recorded verdict and the leader's log
