"""Preflight compares the installed LWS controller and NVIDIA DRA driver with what the rendered set needs.

Minimum versions as read upstream (see k3deploy/preflight/versions.py): kubernetes-sigs/lws
api/leaderworkerset/v1/leaderworkerset_types.go (RecreateGroupAfterStart in v0.9.0),
config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml (flat resourceClaimTemplateName from v0.4.0),
pkg/utils/revision/revision_utils.go (ControllerRevisions from v0.5.0); NVIDIA/k8s-dra-driver-gpu
api/nvidia.com/resource/v1beta1/computedomain.go (numNodes 0 with IMEXDaemonsWithDNSNames, v25.8.0).
Read from the real workloads on a real API server: tests/realk8s/preflight/test_versions.py.
"""

from __future__ import annotations

import copy

import pytest

from k3deploy.errors import ProfileError
from k3deploy.preflight.versions import DRA, LWS, at_least, installed_versions, required_versions, version_checks
from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.report.model import Status

GB300 = "kimi-k3-gb300-tp16"


def _objects() -> list[dict]:
    return [m.obj for m in build(load_profile(GB300, []))]


def test_the_built_in_set_needs_lws_090_for_its_status_and_restart_policy_040_for_its_flat_claim_and_dra_2580() -> None:
    needs = {(r.component, r.minimum, r.feature) for r in required_versions(_objects()) if r.blocking}
    assert needs == {
        (LWS, "v0.9.0", "status.observedGeneration (rollout readiness proven)"),
        (LWS, "v0.9.0", "restartPolicy: RecreateGroupAfterStart"),
        (LWS, "v0.4.0", "flat resourceClaims[].resourceClaimTemplateName"),
        (DRA, "v25.8.0", "ComputeDomain numNodes: 0 (IMEX daemons with DNS names)"),
    }
    assert all(r.blocking for r in required_versions(_objects()))


def test_a_profile_for_an_lws_before_090_is_refused() -> None:
    with pytest.raises(ProfileError, match=r"LeaderWorkerSet 0\.8\.0 is older than 0\.9\.0"):
        load_profile(GB300, ["kubernetes.lws_version=0.8.0"])


def test_recreate_group_after_start_needs_lws_090() -> None:
    objects = copy.deepcopy(_objects())
    lws = next(o for o in objects if o["kind"] == "LeaderWorkerSet")
    lws["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "RecreateGroupAfterStart"
    (check,) = [c for c in version_checks(objects, {LWS: "v0.8.0", DRA: "v25.12.0"}) if c.name == "k8s.lws_version"]
    assert (check.status, check.target) == (Status.FAIL, ">= v0.9.0")
    assert check.detail.endswith("restartPolicy: RecreateGroupAfterStart needs v0.9.0")
    assert check.hint == "upgrade the LeaderWorkerSet controller"


def test_versions_order_across_the_dra_drivers_rename() -> None:
    assert at_least(DRA, "v0.4.0", "v25.8.0") and at_least(DRA, "25.12.0", "v25.8.0")
    assert not at_least(DRA, "v25.3.2", "v25.8.0") and not at_least(LWS, "v0.3.0", "v0.4.0")


def test_installed_versions_from_images_and_helm_labels() -> None:
    def deployment(image: str, labels: dict | None = None) -> dict:
        return {
            "metadata": {"labels": labels or {}},
            "spec": {"template": {"spec": {"containers": [{"image": image}]}}},
        }

    assert installed_versions(
        [
            deployment("registry.k8s.io/lws/lws:v0.8.0"),
            deployment("registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.0"),
        ]
    ) == {LWS: "v0.8.0", DRA: "v0.4.0"}
    # A digest-pinned image says nothing; the chart label does.
    pinned = deployment(
        "nvcr.io/nvidia/k8s-dra-driver-gpu@sha256:" + "0" * 64, {"helm.sh/chart": "nvidia-dra-driver-gpu-25.3.2"}
    )
    assert installed_versions([pinned]) == {DRA: "25.3.2"}


def test_the_profile_field_and_the_version_order_agree_where_the_renamed_driver_starts() -> None:
    from k3deploy.preflight import versions
    from k3deploy.profile.kubernetes_spec import RENAMED_DRA_FIRST, KubernetesSpec

    description = KubernetesSpec.model_fields["dra_driver_version"].description or ""
    assert "from v0.4.0" in description and "dra-driver-nvidia-gpu" in description
    assert "versioned from v0.4.0" in (versions.__doc__ or "") and RENAMED_DRA_FIRST == (0, 4, 0)
    # Every calendar release comes before the renamed driver's first, and none after.
    assert versions.at_least(versions.DRA, "v0.4.0", "v25.12.0")
    assert not versions.at_least(versions.DRA, "v25.12.0", "v0.4.0")
    assert versions.at_least(versions.DRA, "v0.4.0", "v25.8.0")  # numNodes 0 holds on the renamed driver


@pytest.mark.parametrize("version", ["0.1.0", "0.2.0", "v0.3.9"])
def test_a_renamed_driver_version_before_its_first_release_is_refused(version: str) -> None:
    from k3deploy.errors import ProfileError
    from k3deploy.profile import load_profile

    with pytest.raises(ProfileError, match=r"starts at v0\.4\.0"):
        load_profile("kimi-k3-gb300-tp16", [f"kubernetes.dra_driver_version={version}"])
