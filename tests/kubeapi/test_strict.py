"""The test API server refuses what a real one refuses: custom resources against their upstream CRDs (types,
enums, required, defaults, unknown fields, CEL rules), the LWS admission webhooks, built-in kinds against the
Kubernetes 1.34 schemas; each answer in the real Status shape.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlencode

import pytest
import urllib3

from tests.kubeapi import crds
from tests.kubeapi.server import KubeApiServer

LWS_PATH = "/apis/leaderworkerset.x-k8s.io/v1/namespaces/default/leaderworkersets"
CD_PATH = "/apis/resource.nvidia.com/v1beta1/namespaces/default/computedomains"
APPLY = "application/apply-patch+yaml"


def _lws(name: str = "k3", **template: object) -> dict:
    worker = {"spec": {"containers": [{"name": "vllm", "image": "vllm:1"}]}}
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name},
        "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 4, "workerTemplate": worker, **template}},
    }


def _cd(name: str = "k3-cd", channel: str = "k3-channel") -> dict:
    return {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": name},
        "spec": {"channel": {"resourceClaimTemplate": {"name": channel}}},
    }


@pytest.fixture
def strict(kube: KubeApiServer) -> KubeApiServer:
    """A server with the upstream CRDs installed (required: fails under CI=true without them) and no controllers."""
    crds.require()
    kube.controllers.disable()
    kube.add_crds()
    return kube


def _request(
    kube: KubeApiServer, method: str, path: str, body: dict, content_type: str = "application/json", **query: str
) -> tuple[int, dict, urllib3.HTTPHeaderDict]:
    url = kube.url + path + ("?" + urlencode(query) if query else "")
    resp = urllib3.PoolManager(retries=False, timeout=10).request(
        method,
        url,
        body=json.dumps(body).encode(),
        headers={"Content-Type": content_type, "Authorization": "Bearer test-token"},
    )
    return resp.status, json.loads(resp.data or b"{}"), resp.headers


def _apply(kube: KubeApiServer, path: str, obj: dict, **query: str) -> tuple[int, dict, urllib3.HTTPHeaderDict]:
    return _request(kube, "PATCH", f"{path}/{obj['metadata']['name']}", obj, APPLY, fieldManager="k3deploy", **query)


def test_a_string_size_is_a_422_with_the_openapi_type_error(strict: KubeApiServer) -> None:
    """k8s.io/apiextensions-apiserver/pkg/apiserver/validation/validation.go: a kube-openapi type failure becomes
    field.TypeInvalid(path, <the value's type>, "<path> in body must be of type integer: \\"string\\""), and
    k8s.io/apimachinery/pkg/api/errors/errors.go NewInvalid words the Status.
    """
    status, body, _ = _request(strict, "POST", LWS_PATH, _lws(size="four"))
    detail = (
        'spec.leaderWorkerTemplate.size: Invalid value: "string": spec.leaderWorkerTemplate.size in body must '
        'be of type integer: "string"'
    )
    assert (status, body["reason"], body["code"]) == (422, "Invalid", 422)
    assert body["message"] == f'LeaderWorkerSet.leaderworkerset.x-k8s.io "k3" is invalid: {detail}'
    assert body["details"] == {
        "name": "k3",
        "group": "leaderworkerset.x-k8s.io",
        "kind": "LeaderWorkerSet",
        "causes": [
            {
                "reason": "FieldValueTypeInvalid",
                "field": "spec.leaderWorkerTemplate.size",
                "message": detail.split(": ", 1)[1],
            }
        ],
    }
    assert strict.store.get("leaderworkersets", "k3", "default") is None


def test_apply_fails_on_a_wrong_type_or_unknown_field_in_typed_conversion(strict: KubeApiServer) -> None:
    """structured-merge-diff typed/validate.go and apimachinery managedfields/internal/structuredmerge.go: the
    apply configuration is converted to a typed value first, whatever fieldValidation says; the plain error is a
    500 (kubernetes/kubernetes#139253), several errors listed under `errors:`.
    """
    status, body, _ = _apply(strict, LWS_PATH, _lws(size="four"))
    assert (status, body["message"]) == (
        500,
        "failed to create typed patch object (default/k3; leaderworkerset."
        "x-k8s.io/v1, Kind=LeaderWorkerSet): .spec.leaderWorkerTemplate.size: "
        "expected numeric (int or float), got string",
    )
    obj = _lws(sizes=4)
    obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["imag"] = "x"
    status, body, _ = _apply(strict, LWS_PATH, obj)
    head, *lines = body["message"].split("\n")
    assert status == 500 and head.endswith("Kind=LeaderWorkerSet): errors:")
    assert sorted(lines) == [
        "  .spec.leaderWorkerTemplate.sizes: field not declared in schema",
        '  .spec.leaderWorkerTemplate.workerTemplate.spec.containers[name="vllm"].imag: field not declared in schema',
    ]


def test_unknown_fields_are_refused_under_strict_and_pruned_with_a_warning_by_default(strict: KubeApiServer) -> None:
    """k8s.io/apiserver/pkg/endpoints/handlers/create.go with fieldValidation (KEP-2885): Strict answers 400
    `strict decoding error: unknown field`, Warn (the default when the client sends none, as the official Python
    client does) prunes and warns (apiextensions-apiserver pkg/apiserver/schema/pruning/algorithm.go).
    """
    obj = _lws(sizes=4)
    status, body, _ = _request(strict, "POST", LWS_PATH, obj, fieldValidation="Strict")
    assert (status, body["message"]) == (
        400,
        'LeaderWorkerSet in version "v1" cannot be handled as a '
        "LeaderWorkerSet: strict decoding error: unknown field "
        '"spec.leaderWorkerTemplate.sizes"',
    )
    status, body, headers = _request(strict, "POST", LWS_PATH, obj)
    assert status == 201 and "sizes" not in body["spec"]["leaderWorkerTemplate"]
    assert headers["Warning"] == '299 - "unknown field \\"spec.leaderWorkerTemplate.sizes\\""'


def test_enums_required_and_minimums_are_field_errors(strict: KubeApiServer) -> None:
    """apiextensions-apiserver validation.go: enum -> field.NotSupported, required -> field.Required, minimum ->
    Invalid with kube-openapi's "should be greater than or equal to"; several errors aggregate as `[a, b]`."""
    obj = _lws(restartPolicy="Always")
    obj["spec"]["replicas"] = -1
    del obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    status, body, _ = _request(strict, "POST", LWS_PATH, obj)
    assert status == 422
    assert [(c["reason"], c["field"]) for c in body["details"]["causes"]] == [
        ("FieldValueInvalid", "spec.replicas"),
        ("FieldValueRequired", "spec.leaderWorkerTemplate.workerTemplate"),
        ("FieldValueNotSupported", "spec.leaderWorkerTemplate.restartPolicy"),
    ]
    assert body["message"] == (
        'LeaderWorkerSet.leaderworkerset.x-k8s.io "k3" is invalid: [spec.replicas: Invalid value: -1: spec.replicas '
        "in body should be greater than or equal to 0, spec.leaderWorkerTemplate.workerTemplate: Required value, "
        'spec.leaderWorkerTemplate.restartPolicy: Unsupported value: "Always": supported values: "Default", '
        '"RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None"]'
    )


def test_duplicate_list_map_keys_are_refused(strict: KubeApiServer) -> None:
    """apiextensions-apiserver pkg/apiserver/schema/listtype/validation.go: two elements of a
    `x-kubernetes-list-type: map` list with the same keys are field.Duplicate."""
    obj = _lws()
    containers = obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"]
    containers.append(dict(containers[0]))
    status, body, _ = _request(strict, "POST", LWS_PATH, obj)
    assert status == 422 and body["details"]["causes"] == [
        {
            "reason": "FieldValueDuplicate",
            "field": "spec.leaderWorkerTemplate.workerTemplate.spec.containers[1]",
            "message": 'Duplicate value: map[string]interface {}{"name":"vllm"}',
        }
    ]


def test_schema_defaults_and_the_lws_defaulting_webhook_fill_the_stored_object(strict: KubeApiServer) -> None:
    """apiextensions-apiserver pkg/apiserver/schema/defaulting/algorithm.go (CRD `default:`), and kubernetes-sigs/lws
    pkg/webhooks/leaderworkerset_webhook.go Default (rolloutStrategy, networkConfig)."""
    assert _apply(strict, CD_PATH, _cd())[0] == 201
    cd = strict.store.get("computedomains", "k3-cd", "default")
    assert cd["spec"] == {
        "numNodes": 0,
        "channel": {"allocationMode": "Single", "resourceClaimTemplate": {"name": "k3-channel"}},
    }
    assert _apply(strict, LWS_PATH, _lws())[0] == 201
    spec = strict.store.get("leaderworkersets", "k3", "default")["spec"]
    assert spec["rolloutStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0, "partition": 0},
    }
    assert (spec["networkConfig"], spec["startupPolicy"], spec["leaderWorkerTemplate"]["restartPolicy"]) == (
        {"subdomainPolicy": "Shared"},
        "LeaderCreated",
        "RecreateGroupOnPodRestart",
    )


def test_a_compute_domain_spec_is_immutable_by_its_cel_rule(strict: KubeApiServer) -> None:
    """NVIDIA k8s-dra-driver-gpu's CRD: `x-kubernetes-validations: [{rule: self == oldSelf, message: A
    computeDomain.spec is immutable}]`, evaluated as apiextensions-apiserver pkg/apiserver/schema/cel/validation.go
    does: a transition rule runs on update only, a failure is field.Invalid(path, "object", message)."""
    assert _apply(strict, CD_PATH, _cd())[0] == 201
    assert _apply(strict, CD_PATH, _cd())[0] == 200
    status, body, _ = _apply(strict, CD_PATH, _cd(channel="other"))
    assert status == 422 and body["message"] == (
        'ComputeDomain.resource.nvidia.com "k3-cd" is invalid: spec: '
        'Invalid value: "object": A computeDomain.spec is immutable'
    )
    status, _, _ = _request(
        strict, "PATCH", f"{CD_PATH}/k3-cd/status", {"status": {"status": "Ready"}}, "application/merge-patch+json"
    )
    assert status == 200


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"size": 0}, "spec.leaderWorkerTemplate.size", "Invalid value: 0: size must be equal or greater than 1"),
        (
            {"maxSurge": 0, "maxUnavailable": 0},
            "spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable",
            'Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:""}: must not be 0 when `maxSurge` is 0',
        ),
        (
            {"maxSurge": "150%"},
            "spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge",
            'Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: must not be greater than 100%',
        ),
        ({"name": "K3.lws"}, "metadata.name", 'Invalid value: "K3.lws": a DNS-1035 label must consist of lower case'),
    ],
)
def test_the_lws_validating_webhook_denies_with_a_403(
    strict: KubeApiServer, change: dict, field: str, message: str
) -> None:
    """kubernetes-sigs/lws pkg/webhooks/leaderworkerset_webhook.go generalValidate; the API server words a webhook
    denial as k8s.io/apiserver/pkg/admission/plugin/webhook/errors/statuserror.go ToStatusErr does (controller-runtime
    admission.Denied: 403 Forbidden)."""
    obj = _lws(change.get("name", "k3"))
    if "size" in change:
        obj["spec"]["leaderWorkerTemplate"]["size"] = change["size"]
    if "maxSurge" in change:
        obj["spec"]["rolloutStrategy"] = {
            "type": "RollingUpdate",
            "rollingUpdateConfiguration": {k: change[k] for k in ("maxSurge", "maxUnavailable") if k in change},
        }
    status, body, _ = _apply(strict, LWS_PATH, obj)
    assert (status, body["reason"]) == (403, "Forbidden")
    assert body["message"].startswith(
        f'admission webhook "vleaderworkerset.kb.io" denied the request: {field}: {message}'
    )


def test_built_in_kinds_are_held_to_the_1_34_schemas(strict: KubeApiServer) -> None:
    """kubernetes-validate's Kubernetes 1.34 definitions: an apply configuration with an undeclared field fails in
    typed conversion (list elements named by their map keys), a Deployment without a selector is 422 Required."""
    path = "/apis/apps/v1/namespaces/default/deployments"
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i", "port": 80}]}}},
    }
    status, body, _ = _apply(strict, path, deployment)
    assert (status, body["message"]) == (
        500,
        "failed to create typed patch object (default/d; apps/v1, "
        'Kind=Deployment): .spec.template.spec.containers[name="c"].port: '
        "field not declared in schema",
    )
    del deployment["spec"]["template"]["spec"]["containers"][0]["port"]
    status, body, _ = _request(strict, "POST", path, deployment)
    assert (status, body["details"]["causes"]) == (
        422,
        [{"reason": "FieldValueRequired", "field": "spec.selector", "message": "Required value"}],
    )


def test_missing_upstream_crds_fail_under_ci_and_skip_elsewhere(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Tests that need the upstream CRDs must not pass vacuously in CI."""
    monkeypatch.setenv("K3DEPLOY_TEST_CRDS", str(tmp_path / "absent"))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception):
        crds.require()
    with pytest.raises(FileNotFoundError):
        crds.leaderworkerset()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        crds.require()
    assert (
        crds.leaderworkerset()["spec"]["versions"][0]["schema"]["openAPIV3Schema"][
            "x-kubernetes-preserve-unknown-fields"
        ]
        is True
    )
    assert os.environ["K3DEPLOY_TEST_CRDS"].endswith("absent")


def test_a_job_template_is_immutable(kube: KubeApiServer) -> None:
    """kubernetes pkg/apis/batch/validation/validation.go ValidateJobSpecUpdate: spec.template goes through
    apivalidation.ValidateImmutableField, `field is immutable`."""
    kube.controllers.disable()
    path = "/apis/batch/v1/namespaces/default/jobs"
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i:1"}]}}},
    }
    assert _apply(kube, path, job)[0] == 201
    job["spec"]["template"]["spec"]["containers"][0]["image"] = "i:2"
    status, body, _ = _apply(kube, path, job)
    assert (status, body["message"]) == (
        422,
        'Job.batch "j" is invalid: spec.template: Invalid value: core.PodTemplateSpec{...}: field is immutable',
    )


def test_a_value_of_the_wrong_type_is_also_checked_against_the_enum(strict: KubeApiServer) -> None:
    """apiextensions-apiserver pkg/apiserver/validation/validation_test.go: a mistyped enum field reports both the
    TypeInvalid and the NotSupported error."""
    status, body, _ = _request(strict, "POST", LWS_PATH, _lws(restartPolicy=3))
    assert status == 422 and [c["reason"] for c in body["details"]["causes"]] == [
        "FieldValueTypeInvalid",
        "FieldValueNotSupported",
    ]
    assert body["details"]["causes"][1]["message"] == (
        'Unsupported value: 3: supported values: "Default", "RecreateGroupOnPodRestart", "RecreateGroupAfterStart", '
        '"None"'
    )
