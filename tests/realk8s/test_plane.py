"""The plane is the real thing: the built release's /version, RBAC on tokens, the default admission plugins."""

from __future__ import annotations

import uuid

import pytest

from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.objects import KWOK_STALE_DELETE
from tests.realk8s.plane import Plane

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]


def _pod(name: str, **spec: object) -> dict:
    container = {"name": "c", "image": "registry.example/app:1", **spec.pop("container", {})}  # type: ignore[dict-item]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container], **spec}}


def test_version_is_the_built_release(realk8s: Plane) -> None:
    version = realk8s.api.get("/version")
    assert version["gitVersion"] == realk8s.binaries.versions["K8S_VERSION"]
    assert version["gitVersion"].startswith("v1.34.")
    assert (version["major"], version["minor"]) == ("1", "34")
    # Stamped (from the module's publication time), not component-base's unstamped default.
    assert version["buildDate"] != "1970-01-01T00:00:00Z"


def test_rbac_denies_the_test_user_until_a_role_grants_it(realk8s: Plane, namespace: str) -> None:
    user = realk8s.client("realk8s-user")
    try:
        pods = resource_path("v1", "pods", namespace)
        denied = user.request("GET", pods)
        assert denied.status_code == 403
        assert 'User "realk8s-user" cannot list resource "pods"' in denied.json()["message"]
        role = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "pod-reader", "namespace": namespace},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
        }
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "pod-reader", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "realk8s-user"}],
        }
        realk8s.api.create(resource_path("rbac.authorization.k8s.io/v1", "roles", namespace), role)
        realk8s.api.create(resource_path("rbac.authorization.k8s.io/v1", "rolebindings", namespace), binding)
        # The authorizer reads RBAC from an informer cache: a new binding takes effect a moment later.
        wait_until("the RoleBinding to take effect", lambda: user.request("GET", pods).status_code == 200, 30)
        # The Role grants list only: creating a pod stays denied.
        assert user.request("POST", pods, json=_pod("p")).status_code == 403
    finally:
        user.close()


def test_pod_security_admission_enforces_the_namespace_level(realk8s: Plane) -> None:
    # Labelled when created: the admission plugin reads namespaces from a cache, a later label shows a moment late.
    namespace = f"t-{uuid.uuid4().hex[:10]}"
    labels = {"pod-security.kubernetes.io/enforce": "restricted"}
    realk8s.api.create("/api/v1/namespaces", {"metadata": {"name": namespace, "labels": labels}})
    try:
        response = realk8s.api.request(
            "POST",
            resource_path("v1", "pods", namespace),
            json=_pod("priv", container={"securityContext": {"privileged": True}}),
        )
        assert response.status_code == 403
        assert 'violates PodSecurity "restricted:latest"' in response.json()["message"]
    finally:
        realk8s.api.delete(f"/api/v1/namespaces/{namespace}")


def test_service_account_admission_mounts_the_token_and_refuses_a_missing_account(
    realk8s: Plane, namespace: str
) -> None:
    missing = realk8s.api.request(
        "POST", resource_path("v1", "pods", namespace), json=_pod("p", serviceAccountName="nobody")
    )
    assert missing.status_code == 403
    assert 'serviceaccount "nobody" not found' in missing.json()["message"]

    def default_account() -> object:
        return realk8s.api.find(resource_path("v1", "serviceaccounts", namespace, "default"))

    wait_until("the namespace's default ServiceAccount", default_account, 60)
    pod = realk8s.api.create(resource_path("v1", "pods", namespace), _pod("p"))
    assert pod["spec"]["serviceAccountName"] == "default"
    volumes = [v["name"] for v in pod["spec"]["volumes"]]
    assert any(v.startswith("kube-api-access-") for v in volumes)


def test_kwok_deletes_a_pod_only_while_it_is_terminating(realk8s: Plane, namespace: str) -> None:
    """KWOK deletes by name (tests/realk8s/objects.py `kwok_delete_policy`): its delete of a pod no one asked to
    terminate, as a stale delete of a same-named older pod would be, is refused; a terminating pod it still deletes."""
    api, kwok = realk8s.api, realk8s.client("kwok")
    try:
        pods = resource_path("v1", "pods", namespace)
        api.create(pods, _pod("p"))
        pod = resource_path("v1", "pods", namespace, "p")
        running = wait_until("the pod to run", lambda: api.get(pod)["status"].get("phase") == "Running" or None, 120)
        assert running

        def refused() -> bool | None:
            # The apiserver loads a new policy from an informer, so it refuses from a moment after the plane started;
            # a server dry run is admitted or refused as the delete itself would be, and deletes nothing.
            return kwok.request("DELETE", f"{pod}?dryRun=All").status_code == 403 or None

        wait_until("the policy to be in force", refused, 30)
        answer = kwok.request("DELETE", pod)
        assert answer.status_code == 403 and KWOK_STALE_DELETE in answer.json()["message"], answer.text
        assert "deletionTimestamp" not in api.get(pod)["metadata"]  # untouched
        api.delete(pod)  # graceful: a deletionTimestamp, then KWOK's pod-delete Stage deletes it
        wait_until("KWOK to delete the terminating pod", lambda: api.find(pod) is None or None, 60)
    finally:
        kwok.close()
