"""Discovery documents (/version, /api, /apis, group versions) and the minimal OpenAPI v3 kubectl reads."""

from __future__ import annotations

import hashlib
import re

from tests.kubeapi.registry import Registry, ResourceType


def version_info(git_version: str) -> dict:
    """/version for a `vMAJOR.MINOR.PATCH` gitVersion."""
    m = re.match(r"v(\d+)\.(\d+)", git_version)
    major, minor = (m.group(1), m.group(2)) if m else ("1", "34")
    return {
        "major": major,
        "minor": minor,
        "gitVersion": git_version,
        "gitCommit": hashlib.sha1(git_version.encode()).hexdigest(),
        "gitTreeState": "clean",
        "buildDate": "2025-09-09T00:00:00Z",
        "goVersion": "go1.24.6",
        "compiler": "gc",
        "platform": "linux/arm64",
    }


def api_versions(address: str) -> dict:
    """/api."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def _group(name: str, versions: list[str]) -> dict:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry: Registry) -> dict:
    """/apis."""
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(name, versions) for name, versions in registry.groups().items()],
    }


def api_group(registry: Registry, name: str) -> dict | None:
    """/apis/<group>, or None when the group is not served."""
    versions = registry.groups().get(name)
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)} if versions else None


def _resource_entries(rtype: ResourceType) -> list[dict]:
    main = {
        "name": rtype.plural,
        "singularName": rtype.singular,
        "namespaced": rtype.namespaced,
        "kind": rtype.kind,
        "verbs": list(rtype.verbs),
        "storageVersionHash": hashlib.sha1(rtype.group_resource.encode()).hexdigest()[:12],
    }
    if rtype.short_names:
        main["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        main["categories"] = list(rtype.categories)
    entries = [main]
    for sub in sorted(rtype.subresources):
        verbs = {
            "status": ["get", "patch", "update"],
            "scale": ["get", "patch", "update"],
            "log": ["get"],
            "binding": ["create"],
            "eviction": ["create"],
            "finalize": ["update"],
        }[sub]
        kind = {"scale": "Scale", "binding": "Binding", "eviction": "Eviction"}.get(sub, rtype.kind)
        entries.append(
            {
                "name": f"{rtype.plural}/{sub}",
                "singularName": "",
                "namespaced": rtype.namespaced,
                "kind": kind,
                "verbs": verbs,
            }
        )
    return entries


def resource_list(registry: Registry, group: str, version: str) -> dict | None:
    """/api/v1 or /apis/<group>/<version>, or None when not served."""
    types = registry.in_version(group, version)
    if not types:
        return None
    group_version = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": [e for t in sorted(types, key=lambda t: t.plural) for e in _resource_entries(t)],
    }


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_v3_root(registry: Registry) -> dict:
    """/openapi/v3: one entry per served group/version."""
    paths = {}
    seen = {(t.group, v) for t in registry.all() for v in t.versions}
    for group, version in sorted(seen):
        path = _gv_path(group, version)
        digest = hashlib.sha1(repr(sorted(t.plural for t in registry.in_version(group, version))).encode())
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest.hexdigest().upper()}"}
    return {"paths": paths}


_PARAMS = [
    {"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
    for n in ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")
]


def openapi_v3_group(registry: Registry, group: str, version: str, git_version: str) -> dict | None:
    """A group/version's OpenAPI v3 document: operations tagged with their GVK and the query parameters, so
    kubectl finds that the server validates fields itself; schemas are open (any object is accepted).
    """
    types = registry.in_version(group, version)
    if not types:
        return None
    paths = {}
    for rtype in types:
        gvk = {"group": rtype.group, "version": version, "kind": rtype.kind}
        base = "/" + _gv_path(group, version) + ("/namespaces/{namespace}" if rtype.namespaced else "")
        operation = {
            "x-kubernetes-group-version-kind": gvk,
            "parameters": _PARAMS,
            "responses": {"200": {"description": "OK"}},
        }
        paths[f"{base}/{rtype.plural}/{{name}}"] = {
            verb: {**operation, "x-kubernetes-action": action, "operationId": f"{verb}{rtype.kind}"}
            for verb, action in (("get", "get"), ("put", "put"), ("patch", "patch"), ("delete", "delete"))
        }
        paths[f"{base}/{rtype.plural}"] = {
            verb: {**operation, "x-kubernetes-action": action, "operationId": f"{verb}{rtype.kind}List"}
            for verb, action in (("get", "list"), ("post", "post"))
        }
    schemas = {
        f"{group or 'core'}.{version}.{t.kind}": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "x-kubernetes-group-version-kind": [{"group": t.group, "version": version, "kind": t.kind}],
        }
        for t in types
    }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": git_version},
        "paths": paths,
        "components": {"schemas": schemas},
    }
