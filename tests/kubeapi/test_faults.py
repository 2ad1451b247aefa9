"""Fault injection as the official client sees it: 429 with Retry-After, 500, 403, 409, slow answers, drops."""

from __future__ import annotations

import json

import pytest
import urllib3
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.kubeapi.server import KubeApiServer


@pytest.fixture
def core(kube: KubeApiServer) -> client.CoreV1Api:
    """CoreV1Api for the fixture server."""
    return client.CoreV1Api(config.new_client_from_config(str(kube.kubeconfig)))


def _no_retries(kube: KubeApiServer) -> client.CoreV1Api:
    """A client whose urllib3 pool does not retry, to see each fault as it is."""
    configuration = client.Configuration()
    config.load_kube_config(str(kube.kubeconfig), client_configuration=configuration)
    configuration.retries = False
    return client.CoreV1Api(client.ApiClient(configuration))


def test_too_many_requests_carries_retry_after(kube: KubeApiServer, core: client.CoreV1Api) -> None:
    rule = kube.faults.add("POST", r"^/api/v1/namespaces/default/configmaps$", status=429, retry_after=2, times=1)
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    assert exc.value.status == 429 and exc.value.headers["Retry-After"] == "2"
    body = json.loads(exc.value.body)
    assert (body["reason"], body["details"]["retryAfterSeconds"]) == ("TooManyRequests", 2)
    assert rule.hits == 1 and rule.times == 0
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})


def test_urllib3_under_the_client_honours_retry_after_on_reads(kube: KubeApiServer, core: client.CoreV1Api) -> None:
    rule = kube.faults.add("GET", r"^/api/v1/namespaces/default/pods$", status=429, retry_after=1, times=1)
    assert core.list_namespaced_pod("default").items == []
    assert rule.hits == 1
    assert kube.faults.requests.count("GET /api/v1/namespaces/default/pods") == 2


@pytest.mark.parametrize(("code", "reason"), [(500, "InternalError"), (403, "Forbidden"), (409, "Conflict")])
def test_error_statuses(kube: KubeApiServer, core: client.CoreV1Api, code: int, reason: str) -> None:
    kube.faults.add("POST", r"/configmaps$", status=code)
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    assert exc.value.status == code and json.loads(exc.value.body)["reason"] == reason
    assert kube.store.get("configmaps", "c", "default") is None
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})


def test_slow_answer_trips_a_client_timeout_but_still_serves(kube: KubeApiServer, core: client.CoreV1Api) -> None:
    kube.faults.add("GET", r"/namespaces/default$", delay=1.0, times=1)
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        _no_retries(kube).read_namespace("default", _request_timeout=0.2)
    assert core.read_namespace("default").metadata.name == "default"


def test_dropped_request_is_a_connection_error(kube: KubeApiServer, core: client.CoreV1Api) -> None:
    kube.faults.add("PUT", r"/configmaps/c$", drop=True, times=None)
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    with pytest.raises(urllib3.exceptions.HTTPError):
        _no_retries(kube).replace_namespaced_config_map("c", "default", {"metadata": {"name": "c"}, "data": {"a": "1"}})
    assert "data" not in kube.store.get("configmaps", "c", "default")


def test_requests_are_recorded_for_assertions(kube: KubeApiServer, core: client.CoreV1Api) -> None:
    core.list_namespaced_pod("default", label_selector="app=k3")
    assert "GET /api/v1/namespaces/default/pods?labelSelector=app%3Dk3" in kube.faults.requests
