"""Label selectors (=, ==, !=, in, notin, exists, !exists) and field selectors, as the API server parses them."""

from __future__ import annotations

import re
from collections.abc import Callable

from tests.kubeapi.errors import ApiError

Predicate = Callable[[dict], bool]

_SET_RE = re.compile(r"^\s*(!?)([A-Za-z0-9_./-]+)\s*(?:(in|notin)\s*\(([^)]*)\)|(==|=|!=)\s*([A-Za-z0-9_.-]*))?\s*$")


def _split_terms(selector: str) -> list[str]:
    """Split on commas that are not inside a parenthesised value set."""
    terms, depth, current = [], 0, ""
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        terms.append(current)
    return [t for t in terms if t.strip()]


def label_selector(selector: str | None) -> Predicate:
    """A predicate on an object's metadata.labels for a `labelSelector` query string; 400 if it does not parse."""
    checks: list[Callable[[dict], bool]] = []
    for term in _split_terms(selector or ""):
        m = _SET_RE.match(term)
        if not m:
            raise ApiError.bad_request(f"unable to parse requirement: {term!r}")
        negate, key, set_op, values, op, value = m.groups()
        if negate and (set_op or op):
            raise ApiError.bad_request(f"unable to parse requirement: {term!r}")
        if set_op:
            allowed = {v.strip() for v in values.split(",") if v.strip()}
            if set_op == "in":
                checks.append(lambda labels, k=key, a=allowed: labels.get(k) in a)
            else:
                checks.append(lambda labels, k=key, a=allowed: labels.get(k) not in a)
        elif op in ("=", "=="):
            checks.append(lambda labels, k=key, v=value: labels.get(k) == v)
        elif op == "!=":
            checks.append(lambda labels, k=key, v=value: labels.get(k) != v)
        elif negate:
            checks.append(lambda labels, k=key: k not in labels)
        else:
            checks.append(lambda labels, k=key: k in labels)

    def matches(obj: dict) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(check(labels) for check in checks)

    return matches


def match_label_selector(selector: dict | None, labels: dict) -> bool:
    """Whether `labels` match a structured LabelSelector (matchLabels + matchExpressions); None matches nothing."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], set(expr.get("values") or [])
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


#: Field selectors every type supports, plus the per-type ones k3deploy uses.
_FIELDS: dict[str, tuple[str, ...]] = {
    "metadata.name": ("metadata", "name"),
    "metadata.namespace": ("metadata", "namespace"),
    "spec.nodeName": ("spec", "nodeName"),
    "spec.schedulerName": ("spec", "schedulerName"),
    "status.phase": ("status", "phase"),
    "involvedObject.kind": ("involvedObject", "kind"),
    "involvedObject.name": ("involvedObject", "name"),
    "involvedObject.namespace": ("involvedObject", "namespace"),
    "involvedObject.uid": ("involvedObject", "uid"),
    "involvedObject.apiVersion": ("involvedObject", "apiVersion"),
    "involvedObject.fieldPath": ("involvedObject", "fieldPath"),
    "involvedObject.resourceVersion": ("involvedObject", "resourceVersion"),
    "reason": ("reason",),
    "type": ("type",),
    "source": ("source", "component"),
    "spec.unschedulable": ("spec", "unschedulable"),
}


def _field_value(obj: dict, path: tuple[str, ...]) -> str:
    value: object = obj
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def field_selector(selector: str | None) -> Predicate:
    """A predicate for a `fieldSelector` query string (=, ==, !=); 400 for an unsupported field, as the server does."""
    checks: list[Callable[[dict], bool]] = []
    for term in _split_terms(selector or ""):
        m = re.match(r"^\s*([A-Za-z.]+)\s*(==|=|!=)\s*(.*?)\s*$", term)
        if not m:
            raise ApiError.bad_request(f"invalid selector: {term!r}")
        name, op, value = m.groups()
        if name not in _FIELDS:
            raise ApiError.bad_request(f"field label not supported: {name}")
        path = _FIELDS[name]
        if op == "!=":
            checks.append(lambda obj, p=path, v=value: _field_value(obj, p) != v)
        else:
            checks.append(lambda obj, p=path, v=value: _field_value(obj, p) == v)
    return lambda obj: all(check(obj) for check in checks)
