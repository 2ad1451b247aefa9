"""The unit tier's mirror of the LWS controller's ControllerRevisions (tests/support/lws_revision.py) against the real
LeaderWorkerSet controller: for the LWS k3deploy renders, and again after a template change, the revision the
controller records has the name, the template-revision-hash and the data the mirror computes from the live object."""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.cluster_fixtures import NO_DRA, PROFILE
from tests.realk8s.plane import Plane
from tests.support.lws_revision import DEFAULT_VERSION, REVISION_KEY, new_revision

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]
LWS_API = "leaderworkerset.x-k8s.io/v1"
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"


def _rendered(namespace: str) -> dict[str, Any]:
    """The profile's LeaderWorkerSet as k3deploy renders it, kept off every node so its pods (if any) take no GPU
    tray from the other tests: what is under test is the revision, which the controller records regardless."""
    profile = load_profile(PROFILE, [f"kubernetes.namespace={namespace}", NO_DRA[1]])
    lws = next(m.obj for m in build(profile) if m.obj["kind"] == "LeaderWorkerSet")
    for key in ("leaderTemplate", "workerTemplate"):
        template = lws["spec"]["leaderWorkerTemplate"].get(key)
        if template is not None:
            template["spec"].setdefault("nodeSelector", {})["k3deploy.test/no-such-node"] = "true"
    return lws


def _lws_owned(revision: dict[str, Any]) -> bool:
    """Whether a ControllerRevision is the LeaderWorkerSet controller's: the StatefulSets it makes for the groups
    record theirs too (kube-controller-manager's StatefulSet controller), labelled with their pod template's labels,
    the LWS name among them, and numbered from 1 as well."""
    refs = revision["metadata"].get("ownerReferences") or []
    return any(ref.get("controller") and ref.get("kind") == "LeaderWorkerSet" for ref in refs)


def _recorded(plane: Plane, namespace: str, name: str, number: int) -> dict[str, Any]:
    """The LeaderWorkerSet controller's ControllerRevision number `number` of LWS `name`, once it is there."""

    def find() -> dict[str, Any] | None:
        items = plane.api.get(resource_path("apps/v1", "controllerrevisions", namespace))["items"]
        return next(
            (
                r
                for r in items
                if r["metadata"]["labels"].get(NAME_LABEL) == name and r["revision"] == number and _lws_owned(r)
            ),
            None,
        )

    return wait_until(f"ControllerRevision {number} of {name}", find, 120)


def _assert_mirrored(plane: Plane, recorded: dict[str, Any], live: dict[str, Any], number: int) -> str:
    """The recorded revision is the mirror's for the plane's LWS release (the default one); returns its key."""
    version = plane.binaries.versions["LWS_VERSION"]
    assert version == DEFAULT_VERSION, f"the plane runs LWS {version}: update tests/support/lws_revision.py"
    mirrored = new_revision(live, number)
    assert recorded["data"] == mirrored["data"]
    assert recorded["metadata"]["labels"][REVISION_KEY] == mirrored["metadata"]["labels"][REVISION_KEY]
    assert recorded["metadata"]["name"] == mirrored["metadata"]["name"]
    assert recorded["revision"] == number
    owner = recorded["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "LeaderWorkerSet",
        live["metadata"]["name"],
        live["metadata"]["uid"],
    )
    return str(mirrored["metadata"]["labels"][REVISION_KEY])


def test_the_mirrored_revision_is_the_one_the_real_controller_records(realk8s: Plane, namespace: str) -> None:
    lws = _rendered(namespace)
    name = lws["metadata"]["name"]
    path = resource_path(LWS_API, "leaderworkersets", namespace, name)
    realk8s.api.apply(path, lws, manager="k3deploy")
    first = _recorded(realk8s, namespace, name, 1)
    key = _assert_mirrored(realk8s, first, realk8s.api.get(path), 1)
    # What made this test fail half the time (the random namespace moves the hashes, so the list order): the leader
    # StatefulSet's own revision 1 carries the LWS name label as well, and holds a StatefulSet's patch.
    statefulset = wait_until(
        f"the StatefulSet controller's ControllerRevision of {name}",
        lambda: next(
            (
                r
                for r in realk8s.api.get(resource_path("apps/v1", "controllerrevisions", namespace))["items"]
                if r["metadata"]["labels"].get(NAME_LABEL) == name and not _lws_owned(r)
            ),
            None,
        ),
        120,
    )
    assert statefulset["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
    assert list(statefulset["data"]["spec"]) == ["template"]

    # A template change: the controller records revision 2 with the new template's key.
    args = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    args.setdefault("env", []).append({"name": "K3DEPLOY_TEST_CHANGE", "value": "2"})
    realk8s.api.apply(path, lws, manager="k3deploy")
    second = _recorded(realk8s, namespace, name, 2)
    assert _assert_mirrored(realk8s, second, realk8s.api.get(path), 2) != key
