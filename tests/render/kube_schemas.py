"""Schemas the rendered custom resources are checked against (test helper, not a test module).

Two independent sources: structural schemas written here for exactly the fields k3deploy sets
(additionalProperties false everywhere, pod templates and label selectors resolved against the strict
Kubernetes 1.34 definitions shipped with kubernetes-validate), and the upstream CRDs' openAPIV3Schema
converted to strict JSON Schema.
"""

from __future__ import annotations

import copy
import json
from importlib import resources
from typing import Any

import jsonschema
import referencing
import yaml

from tests.support import crds

K8S_VERSION = "1.34"
CRD_DIR = crds.upstream_dir()
_DEFS = "https://kubernetes.io/api/_definitions.json#/$defs/"
#: CRD file of each custom kind k3deploy renders.
CRD_FILES = crds.FILES


def _k8s(name: str) -> dict[str, Any]:
    return {"$ref": _DEFS + name}


def _obj(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required or list(properties),
        "additionalProperties": False,
    }


def _strs() -> dict[str, Any]:
    return {"type": "object", "additionalProperties": {"type": "string"}}


_DURATION = {"type": "string", "pattern": r"^(0|(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"}
_METADATA = _obj(
    {
        "name": {"type": "string", "minLength": 1, "maxLength": 63},
        "namespace": {"type": "string"},
        "labels": _strs(),
        "annotations": _strs(),
    },
    required=["name", "namespace", "labels"],
)

#: Hand-written structural schemas of the fields we use, per kind.
STRUCTURAL: dict[str, dict[str, Any]] = {
    "LeaderWorkerSet": _obj(
        {
            "apiVersion": {"const": "leaderworkerset.x-k8s.io/v1"},
            "kind": {"const": "LeaderWorkerSet"},
            "metadata": _METADATA,
            "spec": _obj(
                {
                    "replicas": {"type": "integer", "minimum": 1},
                    "startupPolicy": {"enum": ["LeaderCreated", "LeaderReady"]},
                    "rolloutStrategy": _obj(
                        {
                            "type": {"const": "RollingUpdate"},
                            "rollingUpdateConfiguration": _obj(
                                {
                                    "maxUnavailable": {"type": ["integer", "string"]},
                                    "maxSurge": {"type": ["integer", "string"]},
                                }
                            ),
                        }
                    ),
                    "leaderWorkerTemplate": _obj(
                        {
                            "size": {"type": "integer", "minimum": 1},
                            "restartPolicy": {"enum": ["RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None"]},
                            "leaderTemplate": _k8s("io.k8s.api.core.v1.PodTemplateSpec"),
                            "workerTemplate": _k8s("io.k8s.api.core.v1.PodTemplateSpec"),
                        }
                    ),
                }
            ),
        }
    ),
    "ComputeDomain": _obj(
        {
            "apiVersion": {"const": "resource.nvidia.com/v1beta1"},
            "kind": {"const": "ComputeDomain"},
            "metadata": _METADATA,
            "spec": _obj(
                {
                    "numNodes": {"type": "integer", "minimum": 0},
                    "channel": _obj(
                        {
                            "allocationMode": {"enum": ["Single", "All"]},
                            "resourceClaimTemplate": _obj({"name": {"type": "string", "minLength": 1}}),
                        }
                    ),
                },
                required=["channel"],
            ),
        }
    ),
    "ServiceMonitor": _obj(
        {
            "apiVersion": {"const": "monitoring.coreos.com/v1"},
            "kind": {"const": "ServiceMonitor"},
            "metadata": _METADATA,
            "spec": _obj(
                {
                    "selector": _k8s("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"),
                    "namespaceSelector": _obj(
                        {"matchNames": {"type": "array", "items": {"type": "string"}, "minItems": 1}}
                    ),
                    "endpoints": {
                        "type": "array",
                        "minItems": 1,
                        "items": _obj(
                            {
                                "port": {"type": "string"},
                                "path": {"type": "string", "pattern": "^/"},
                                "interval": _DURATION,
                                "scrapeTimeout": _DURATION,
                            },
                            required=["port", "path"],
                        ),
                    },
                },
                required=["selector", "endpoints"],
            ),
        }
    ),
    "PrometheusRule": _obj(
        {
            "apiVersion": {"const": "monitoring.coreos.com/v1"},
            "kind": {"const": "PrometheusRule"},
            "metadata": _METADATA,
            "spec": _obj(
                {
                    "groups": {
                        "type": "array",
                        "minItems": 1,
                        "items": _obj(
                            {
                                "name": {"type": "string", "minLength": 1},
                                "rules": {
                                    "type": "array",
                                    "minItems": 1,
                                    "items": _obj(
                                        {
                                            "alert": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
                                            "expr": {"type": "string", "minLength": 1},
                                            "for": _DURATION,
                                            "keep_firing_for": _DURATION,
                                            "labels": _obj({"severity": {"enum": ["warning", "critical"]}}),
                                            "annotations": _obj(
                                                {
                                                    "summary": {"type": "string", "minLength": 1},
                                                    "description": {"type": "string", "minLength": 1},
                                                    "runbook_url": {
                                                        "type": "string",
                                                        "pattern": "^https://.+#runbook-",
                                                    },
                                                }
                                            ),
                                        },
                                        required=["alert", "expr", "for", "labels", "annotations"],
                                    ),
                                },
                            }
                        ),
                    },
                }
            ),
        }
    ),
}


def _definitions() -> dict[str, Any]:
    root = resources.files("kubernetes_validate") / "kubernetes-json-schema" / f"v{K8S_VERSION}.0-local-strict"
    return json.loads((root / "_definitions.json").read_text(encoding="utf-8"))


def validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    """A validator for `schema` whose $refs resolve into the strict Kubernetes definitions."""
    defs = referencing.Resource.from_contents(_definitions())
    registry = referencing.Registry().with_resource("https://kubernetes.io/api/_definitions.json", defs)
    return jsonschema.Draft202012Validator(schema, registry=registry)


def strict_crd_schema(node: Any) -> Any:
    """OpenAPI v3 CRD schema -> JSON Schema: closed objects (unless the CRD preserves unknown fields),
    int-or-string and nullable honoured."""
    if isinstance(node, list):
        return [strict_crd_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: strict_crd_schema(value) for key, value in node.items() if not key.startswith("x-kubernetes-")}
    if node.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    if node.get("nullable") and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if (
        "properties" in node
        and "additionalProperties" not in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    for key in ("properties", "patternProperties"):
        if key in node:
            out[key] = {name: strict_crd_schema(sub) for name, sub in node[key].items()}
    return out


def crd_schema(kind: str, version: str) -> dict[str, Any]:
    """The strict JSON Schema of `kind`/`version` from its upstream CRD; root metadata is the strict ObjectMeta."""
    crd = yaml.safe_load((CRD_DIR / CRD_FILES[kind]).read_text(encoding="utf-8"))
    assert crd["spec"]["names"]["kind"] == kind
    served = {v["name"]: v for v in crd["spec"]["versions"]}
    schema = strict_crd_schema(copy.deepcopy(served[version]["schema"]["openAPIV3Schema"]))
    schema["properties"]["metadata"] = _k8s("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
    return schema
