"""JSON merge patch (RFC 7386; strategic merge is served as this) and JSON patch (RFC 6902)."""

from __future__ import annotations

import copy

from tests.kubeapi.errors import ApiError


def merge_patch(target: object, patch: object) -> object:
    """RFC 7386: maps merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: object, parts: list[str]) -> object:
    for part in parts[:-1]:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def json_patch(doc: dict, ops: list[dict]) -> dict:
    """RFC 6902 add / remove / replace / test / copy / move; 422 when an operation cannot apply."""
    doc = copy.deepcopy(doc)
    for op in ops:
        parts = _pointer(op.get("path", ""))
        try:
            parent, last = _parent(doc, parts), parts[-1]
            kind = op["op"]
            if kind == "test":
                current = parent[int(last)] if isinstance(parent, list) else parent[last]
                if current != op.get("value"):
                    raise ApiError(
                        422,
                        f"the server rejected our request due to an error in our request: "
                        f"testing value {op['path']} failed",
                    )
                continue
            if kind in ("copy", "move"):
                src = _pointer(op["from"])
                src_parent = _parent(doc, src)
                value = src_parent[int(src[-1])] if isinstance(src_parent, list) else src_parent[src[-1]]
                if kind == "move":
                    del src_parent[int(src[-1]) if isinstance(src_parent, list) else src[-1]]
                kind, op = "add", {**op, "value": copy.deepcopy(value)}
            if kind == "remove":
                del parent[int(last) if isinstance(parent, list) else last]
            elif kind == "add" and isinstance(parent, list):
                parent.insert(len(parent) if last == "-" else int(last), op["value"])
            elif kind == "replace":
                if isinstance(parent, list):
                    parent[int(last)] = op["value"]
                else:
                    if last not in parent:
                        raise KeyError(last)
                    parent[last] = op["value"]
            elif kind == "add":
                parent[last] = op["value"]
            else:
                raise ApiError(422, f"unknown JSON patch operation {kind!r}")
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise ApiError(422, f"the server rejected our request due to an error in our request: {exc}") from None
    return doc
