"""Built-in kinds held to the Kubernetes 1.34 OpenAPI definitions shipped with kubernetes-validate (a test
dependency), converted to the structural form structural.py reads: `$ref`s resolved (recursive types become
cyclic dicts), `["string", "null"]` as a nullable type, IntOrString and Quantity as int-or-string.

What the server does with them (k8s.io/apiserver/pkg/endpoints/handlers): an apply configuration goes through the
same typed conversion as a custom resource's (the built-in types' schemas carry their list-map keys too); other
writes have undeclared fields pruned by fieldValidation; fields the API marks required answer 422 Required.
Kind-specific Go validation (names, ports, quantities) is not imitated.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import TYPE_CHECKING

from tests.kubeapi import structural
from tests.kubeapi.errors import FieldError, invalid
from tests.kubeapi.registry import ResourceType

if TYPE_CHECKING:
    from tests.kubeapi.admission import Admission

K8S_VERSION = "1.34"
_INT_OR_STRING = ("io.k8s.apimachinery.pkg.util.intstr.IntOrString", "io.k8s.apimachinery.pkg.api.resource.Quantity")


@functools.lru_cache(maxsize=1)
def _definitions() -> dict[str, dict]:
    root = resources.files("kubernetes_validate") / "kubernetes-json-schema" / f"v{K8S_VERSION}.0-local-strict"
    raw = json.loads((root / "_definitions.json").read_text(encoding="utf-8"))["$defs"]
    converted: dict[str, dict] = {name: {} for name in raw}

    def convert(node: dict) -> dict:
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            return {"x-kubernetes-int-or-string": True} if name in _INT_OR_STRING else converted[name]
        out = {
            k: v
            for k, v in node.items()
            if k not in ("description", "type", "oneOf", "properties", "items", "additionalProperties")
        }
        if "properties" in node:
            out["properties"] = {key: convert(sub) for key, sub in node["properties"].items()}
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                out[key] = convert(node[key])
            elif key in node:
                out[key] = node[key]
        types = node.get("type")
        if isinstance(types, list):
            out["nullable"] = "null" in types
            types = next((t for t in types if t != "null"), None)
        if types:
            out["type"] = types
        return out

    for name, node in raw.items():
        converted[name].update(convert(node) if name not in _INT_OR_STRING else {"x-kubernetes-int-or-string": True})
    return converted


@functools.cache
def schema(group: str, version: str, kind: str) -> dict | None:
    """The structural schema of a built-in kind, or None when kubernetes-validate has none for it."""
    for node in _definitions().values():
        for gvk in node.get("x-kubernetes-group-version-kind") or []:
            if (gvk.get("group", ""), gvk.get("version"), gvk.get("kind")) == (group, version, kind):
                return node
    return None


def _schema(rtype: ResourceType, version: str) -> dict | None:
    return None if rtype.crd else schema(rtype.group, version, rtype.kind)


def typed_errors(rtype: ResourceType, version: str, config: dict) -> list[str]:
    """The apply configuration's typed-conversion errors (none for an open custom resource)."""
    found = _schema(rtype, version)
    return structural.typed_errors(found, config) if found is not None else []


def _required(node: dict, value: object, path: tuple, errors: list[FieldError]) -> None:
    if isinstance(value, dict):
        for key in node.get("required") or []:
            if key not in value and (path or key != "metadata"):
                errors.append(FieldError("Required", structural.field_path((*path, key))))
        props = node.get("properties") or {}
        for key, child in value.items():
            if key in props and key != "metadata":
                _required(props[key], child, (*path, key), errors)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, item in enumerate(value):
            _required(node["items"], item, (*path, i), errors)


def admit(admission: Admission, new: dict, old: dict | None, *, applied: bool) -> None:
    """Prune undeclared fields (unless applied: apply refused them already), then 422 for missing required ones."""
    found = _schema(admission.rtype, admission.version)
    if found is None:
        return
    if not applied:
        admission.unknown_fields(structural.prune(found, new))
    errors: list[FieldError] = []
    _required(found, {k: v for k, v in new.items() if k != "metadata"}, (), errors)
    if errors:
        raise invalid(admission.rtype, new.get("metadata", {}).get("name", ""), errors)
