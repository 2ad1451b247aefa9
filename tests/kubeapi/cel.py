"""`x-kubernetes-validations` CEL rules of custom resource schemas, evaluated with cel-python (celpy).

Imitates k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go: each rule runs with `self` bound
to the value at its schema node; a transition rule (one that reads `oldSelf`) runs only on update and only where
an old value correlates (same map key, same list-map element key); a failed rule is
`field.Invalid(path, "<schema type>", message)` (`failed rule: <rule>` when it has no message), at `fieldPath`
when the rule names one, typed by `reason` when it gives one.
"""

from __future__ import annotations

import functools

import celpy

from tests.kubeapi.errors import FieldError
from tests.kubeapi.structural import Path, field_path, list_map_keys

_MISSING = object()
_REASONS = {
    "FieldValueRequired": "Required",
    "FieldValueForbidden": "Forbidden",
    "FieldValueDuplicate": "Duplicate",
    "FieldValueInvalid": "Invalid",
}


@functools.lru_cache(maxsize=256)
def _program(rule: str) -> celpy.Runner:
    env = celpy.Environment()
    return env.program(env.compile(rule))


def _holds(rule: str, value: object, old: object) -> bool:
    bindings = {"self": celpy.json_to_cel(value)}
    if old is not _MISSING:
        bindings["oldSelf"] = celpy.json_to_cel(old)
    result = _program(rule).evaluate(bindings)
    if isinstance(result, Exception):
        raise result
    return bool(result)


def validate(schema: dict, new: dict, old: dict | None) -> list[FieldError]:
    """The CEL rule failures of `new` (an update when `old` is given), root metadata excluded."""
    errors: list[FieldError] = []
    body = {k: v for k, v in new.items() if k != "metadata"}
    old_body = {k: v for k, v in old.items() if k != "metadata"} if old is not None else _MISSING
    _walk(schema, body, old_body, (), errors)
    return errors


def _walk(schema: dict, value: object, old: object, path: Path, errors: list[FieldError]) -> None:
    if value is None:
        return
    for rule in schema.get("x-kubernetes-validations") or []:
        transition = "oldSelf" in rule["rule"]
        if transition and old is _MISSING:
            continue
        if not _holds(rule["rule"], value, old if transition else _MISSING):
            where = field_path(path) + (rule.get("fieldPath") or "")
            kind = _REASONS.get(rule.get("reason", ""), "Invalid")
            errors.append(
                FieldError(
                    kind,
                    where.lstrip("."),
                    schema.get("type", "object"),
                    rule.get("message") or f"failed rule: {rule['rule']}",
                )
            )
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties") if isinstance(schema.get("additionalProperties"), dict) else None
        for key, child in value.items():
            sub = props.get(key, extra)
            if sub is not None:
                before = old.get(key, _MISSING) if isinstance(old, dict) else _MISSING
                _walk(sub, child, before, (*path, key), errors)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        keys = list_map_keys(schema)
        olds = (
            {tuple(o.get(k) for k in keys): o for o in old if isinstance(o, dict)}
            if keys and isinstance(old, list)
            else {}
        )
        for i, item in enumerate(value):
            before = (
                olds.get(tuple(item.get(k) for k in keys), _MISSING) if keys and isinstance(item, dict) else _MISSING
            )
            _walk(schema["items"], item, before, (*path, i), errors)
