"""The ControllerRevision the LeaderWorkerSet controller records for an LWS's template (LWS v0.5.0 and later), for
unit tests of the rollout judgement that need realistic revisions and pod labels without a controller.

Mirrors kubernetes-sigs/lws pkg/utils/revision/revision_utils.go (`NewRevision`, `getPatch`, `hashRevision`,
`revisionName`): the revision's data is a strategic merge patch
`{"spec": {"leaderWorkerTemplate": {..., "$patch": "replace"}, "networkConfig": {..., "$patch": "replace"}}}` made
from the typed Go object (so pod templates carry Go's empty extras such as `resources: {}`, and
`metadata.creationTimestamp: null` from releases built against k8s.io/apimachinery before v0.34, whose
ObjectMeta.CreationTimestamp was not yet `omitzero`: LWS before v0.8.0), marshalled by Go's `encoding/json` from a map (sorted keys, compact, `<>&` escaped); the revision
key (the pods' `leaderworkerset.sigs.k8s.io/template-revision-hash`) is FNV-1 32 of those bytes, printed in decimal
and passed through apimachinery's `rand.SafeEncodeString`; the name is `<lws>-<hash>-<revision>`.
tests/realk8s/test_lws_revision.py proves it equal to what the real controller writes.
"""

from __future__ import annotations

import copy
import json
from typing import Any

PREFIX = "leaderworkerset.sigs.k8s.io"
#: The label (on revisions and pods) that carries the revision key.
REVISION_KEY = f"{PREFIX}/template-revision-hash"
#: k8s.io/apimachinery/pkg/util/rand: the alphabet SafeEncodeString maps onto (no vowels, no look-alikes).
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
#: The LWS release the revisions are made as by default: the one tests/realk8s runs (.ci/build-realk8s LWS_VERSION).
DEFAULT_VERSION = "v0.9.0"
#: The first LWS release built against k8s.io/apimachinery v0.34 (lws go.mod), where a zero creationTimestamp is
#: omitted rather than printed as null.
_OMITZERO_SINCE = (0, 8)


def _release(version: str) -> tuple[int, int]:
    major, minor = version.removeprefix("v").split(".")[:2]
    return int(major), int(minor)


def _go_typed(template: dict[str, Any], version: str) -> dict[str, Any]:
    """A pod template as Go's encoding of corev1.PodTemplateSpec prints it in LWS `version`: the non-omitempty
    empties added."""
    out = copy.deepcopy(template)
    metadata = out.setdefault("metadata", {})
    if _release(version) < _OMITZERO_SINCE:
        metadata.setdefault("creationTimestamp", None)
    for container in out.setdefault("spec", {}).get("containers", []) + out["spec"].get("initContainers", []):
        container.setdefault("resources", {})
    return out


#: What Go's encoding/json escapes beyond JSON's own (encode.go `appendString` with escapeHTML: `<`, `>`, `&`, and
#: the line and paragraph separators U+2028 and U+2029, which JavaScript does not allow in a string).
_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def go_marshal(value: object) -> bytes:
    """`json.Marshal` of a Go map[string]interface{}: sorted keys, no spaces, HTML characters and U+2028/U+2029
    escaped."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in _GO_ESCAPES.items():
        text = text.replace(char, escaped)
    return text.encode()


def patch(lws: dict[str, Any], version: str = DEFAULT_VERSION) -> dict[str, Any]:
    """getPatch of LWS `version`: the leaderWorkerTemplate and networkConfig of `lws`, each marked `$patch: replace`."""
    spec = lws.get("spec") or {}
    template = copy.deepcopy(spec.get("leaderWorkerTemplate") or {})
    for key in ("leaderTemplate", "workerTemplate"):
        if template.get(key) is not None:
            template[key] = _go_typed(template[key], version)
    network = copy.deepcopy(spec.get("networkConfig") or {"subdomainPolicy": "Shared"})
    template["$patch"] = "replace"
    network["$patch"] = "replace"
    return {"spec": {"leaderWorkerTemplate": template, "networkConfig": network}}


def _fnv32(data: bytes) -> int:
    """Go's hash/fnv New32 (FNV-1: multiply, then xor)."""
    value = 0x811C9DC5
    for byte in data:
        value = (value * 0x01000193) & 0xFFFFFFFF
        value ^= byte
    return value


def revision_key(data: dict[str, Any]) -> str:
    """hashRevision: FNV-32 of the marshalled patch, in decimal, through SafeEncodeString."""
    return "".join(_ALPHANUMS[ord(ch) % len(_ALPHANUMS)] for ch in str(_fnv32(go_marshal(data))))


def new_revision(lws: dict[str, Any], number: int, version: str = DEFAULT_VERSION) -> dict[str, Any]:
    """NewRevision of LWS `version`: the ControllerRevision for the current template of `lws`, revision `number`."""
    meta = lws["metadata"]
    data = patch(lws, version)
    key = revision_key(data)
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": f"{meta['name'][:220]}-{key}-{number}",
            "namespace": meta["namespace"],
            "labels": {f"{PREFIX}/name": meta["name"], REVISION_KEY: key},
            "ownerReferences": [
                {
                    "apiVersion": lws["apiVersion"],
                    "kind": "LeaderWorkerSet",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "data": data,
        "revision": number,
    }
