"""Every rendered built-in object against real schemas: Kubernetes 1.34 (strict) and the CRDs.

Kubernetes-validate ships the 1.34 schemas (strict: no unknown field anywhere); the custom resources are
checked against structural schemas of the fields we use and the upstream CRDs' own schemas.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import kubernetes_validate
import pytest

from k3deploy.profile import builtin_names, load_profile
from k3deploy.render.manifests import Manifest, build
from tests.render.kube_schemas import CRD_FILES, K8S_VERSION, STRUCTURAL, crd_schema, validator
from tests.support import crds

KUBE_PROFILES = [name for name in builtin_names() if load_profile(name).target == "kubernetes"]


def _objects() -> list[tuple[str, Manifest]]:
    return [(name, manifest) for name in KUBE_PROFILES for manifest in build(load_profile(name))]


OBJECTS = _objects()
BUILTIN_KINDS = [(p, m) for p, m in OBJECTS if m.kind not in CRD_FILES]
CUSTOM_KINDS = [(p, m) for p, m in OBJECTS if m.kind in CRD_FILES]


def _id(item: tuple[str, Manifest]) -> str:
    return f"{item[0]}/{item[1].filename}"


def test_the_set_has_the_expected_kinds() -> None:
    kinds = [m.kind for m in build(load_profile("kimi-k3-gb300-tp16"))]
    assert kinds == [
        "Namespace",
        "NetworkPolicy",
        "NetworkPolicy",
        "ServiceAccount",
        # The smoke Job's gate: its own identity, which labels the leaders that pass (smoke.gate_traffic).
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ConfigMap",
        "Job",
        "PersistentVolumeClaim",
        "ComputeDomain",
        "Job",
        "LeaderWorkerSet",
        "Service",
        "PodDisruptionBudget",
        "ServiceMonitor",
        "ConfigMap",
        "PrometheusRule",
        "Job",
    ]


@pytest.mark.parametrize("item", BUILTIN_KINDS, ids=_id)
def test_builtin_kinds_validate_strictly_against_kubernetes_1_34(item: tuple[str, Manifest]) -> None:
    assert kubernetes_validate.validate(item[1].obj, K8S_VERSION, strict=True) == K8S_VERSION


def test_strict_validation_catches_an_unknown_field() -> None:
    job = next(m for m in build(load_profile("kimi-k3-gb300-tp16")) if m.kind == "Job").obj
    bad = copy.deepcopy(job)
    bad["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


def test_strict_validation_checks_the_profile_configmap() -> None:
    config_map = next(m for m in build(load_profile("kimi-k3-gb300-tp16")) if m.kind == "ConfigMap").obj
    assert list(config_map["data"]) == ["profile.yaml", "gpu-check.py"]
    for field, value in (("data", {"profile.yaml": 3}), ("dataa", {})):
        bad = copy.deepcopy(config_map)
        bad[field] = value
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


@pytest.mark.parametrize("item", CUSTOM_KINDS, ids=_id)
def test_custom_kinds_match_our_structural_schemas(item: tuple[str, Manifest]) -> None:
    validator(STRUCTURAL[item[1].kind]).validate(item[1].obj)


@pytest.mark.parametrize("item", CUSTOM_KINDS, ids=_id)
def test_custom_kinds_match_the_upstream_crds(item: tuple[str, Manifest]) -> None:
    crds.require()
    obj = item[1].obj
    version = obj["apiVersion"].split("/")[1]
    validator(crd_schema(item[1].kind, version)).validate(obj)


def _lws() -> dict[str, Any]:
    return copy.deepcopy(next(m for m in build(load_profile("kimi-k3-gb300-tp16")) if m.kind == "LeaderWorkerSet").obj)


def test_structural_schema_rejects_what_the_crd_would_prune() -> None:
    bad = _lws()
    bad["spec"]["leaderWorkerTemplate"]["sizee"] = 4
    with pytest.raises(jsonschema.ValidationError):
        validator(STRUCTURAL["LeaderWorkerSet"]).validate(bad)
    bad = _lws()
    bad["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["resource"] = {}
    with pytest.raises(jsonschema.ValidationError):
        validator(STRUCTURAL["LeaderWorkerSet"]).validate(bad)


def test_upstream_crd_schema_rejects_unknown_and_mistyped_fields() -> None:
    crds.require()
    schema = validator(crd_schema("LeaderWorkerSet", "v1"))
    bad = _lws()
    bad["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "Always"
    with pytest.raises(jsonschema.ValidationError):
        schema.validate(bad)
    bad = _lws()
    bad["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["volumes"][0]["emptyDirr"] = {}
    with pytest.raises(jsonschema.ValidationError):
        schema.validate(bad)
    cd = next(m for m in build(load_profile("kimi-k3-gb300-tp16")) if m.kind == "ComputeDomain").obj
    cd = copy.deepcopy(cd)
    cd["spec"]["channel"]["allocationMode"] = "Many"
    with pytest.raises(jsonschema.ValidationError):
        validator(crd_schema("ComputeDomain", "v1beta1")).validate(cd)
