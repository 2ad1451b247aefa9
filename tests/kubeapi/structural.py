"""Structural OpenAPI v3 schemas of custom resources: pruning, defaulting, validation and the typed conversion
server-side apply does first (pure functions over plain dicts).

Imitates, in k8s.io/apiextensions-apiserver: pkg/apiserver/schema/pruning/algorithm.go (unknown fields dropped,
`x-kubernetes-preserve-unknown-fields` and embedded resources kept), pkg/apiserver/schema/defaulting/algorithm.go,
pkg/apiserver/validation/validation.go (kube-openapi results turned into field errors: TypeInvalid with the
value's type, Required, NotSupported, TooLong, TooMany, the rest Invalid with kube-openapi's own detail) and
pkg/apiserver/schema/listtype/validation.go (duplicate list-map keys); and
sigs.k8s.io/structured-merge-diff typed/validate.go for apply (`field not declared in schema`,
`expected numeric (int or float), got string`).
"""

from __future__ import annotations

import copy
import json
import re
from datetime import datetime

from tests.kubeapi.errors import FieldError, GoValue

Path = tuple  # of str keys and int list indexes
#: Root fields every object has whatever its schema says (metadata is ObjectMeta, validated apart).
ROOT_FIELDS = ("apiVersion", "kind", "metadata")
#: Go's %T of a decoded JSON value, as structured-merge-diff prints it.
_GO_NAMES = {"boolean": "bool", "object": "map[string]interface {}", "array": "[]interface {}", "null": "<nil>"}
_GO_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", dict: "object", list: "array"}


def field_path(path: Path) -> str:
    """field.Path.String(): `spec.containers[0].name`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def json_type(value: object) -> str:
    """The OpenAPI type name of a JSON value (kube-openapi's word for it in errors)."""
    if value is None:
        return "null"
    return _GO_TYPES.get(type(value), type(value).__name__)


def _type_ok(schema: dict, value: object) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    want = schema.get("type")
    if not want:
        return True
    if value is None:
        return bool(schema.get("nullable"))
    if want == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if want == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return json_type(value) == want


def _children(schema: dict, value: dict) -> list[tuple[str, dict | None]]:
    """(key, sub-schema or None when unknown) of each key of an object value."""
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    out = []
    for key in value:
        if key in props:
            out.append((key, props[key]))
        elif isinstance(extra, dict):
            out.append((key, extra))
        elif extra is True or schema.get("x-kubernetes-preserve-unknown-fields"):
            out.append((key, {"x-kubernetes-preserve-unknown-fields": True}))
        else:
            out.append((key, None))
    return out


# ----- pruning (create, update, merge patch) ------------------------------------------------------------------
def prune(schema: dict, obj: dict) -> list[str]:
    """Drop, in place, every field the schema does not declare; returns their paths (`spec.foo`) in order."""
    dropped: list[str] = []
    _prune(schema, obj, (), dropped, root=True)
    return dropped


def _prune(schema: dict, value: object, path: Path, dropped: list[str], root: bool = False) -> None:
    if isinstance(value, dict) and schema.get("type", "object") == "object":
        keep = ROOT_FIELDS if root or schema.get("x-kubernetes-embedded-resource") else ()
        for key, sub in _children(schema, value):
            if key in keep and key not in (schema.get("properties") or {}):
                continue
            if sub is None:
                del value[key]
                dropped.append(field_path((*path, key)))
            elif not (root and key == "metadata"):
                _prune(sub, value[key], (*path, key), dropped)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _prune(schema["items"], item, (*path, i), dropped)


# ----- defaulting ------------------------------------------------------------------------------------------------
def apply_defaults(schema: dict, value: object) -> None:
    """Set, in place, each absent property that has a `default` (after pruning, as the server does)."""
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
        for key, sub in _children(schema, value):
            if sub is not None:
                apply_defaults(sub, value[key])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            apply_defaults(schema["items"], item)


# ----- validation ------------------------------------------------------------------------------------------------
def validate(schema: dict, obj: dict) -> list[FieldError]:
    """Field errors of `obj` against its schema (root metadata excluded: ObjectMeta is validated apart)."""
    errors: list[FieldError] = []
    body = {k: v for k, v in obj.items() if k != "metadata"}
    _validate(schema, body, (), errors)
    return errors


def _detail(path: Path, text: str) -> str:
    return f"{field_path(path)} in body {text}"


def _validate(schema: dict, value: object, path: Path, errors: list[FieldError]) -> None:
    where = field_path(path)
    typed = _type_ok(schema, value)
    if not typed:
        want = "integer,string" if schema.get("x-kubernetes-int-or-string") else schema["type"]
        errors.append(
            FieldError(
                "TypeInvalid",
                where,
                json_type(value),
                _detail(path, f"must be of type {want}: {json.dumps(json_type(value))}"),
            )
        )
    elif value is None:
        return
    # kube-openapi checks the enum even after a type failure (apiextensions-apiserver validation_test.go).
    if "enum" in schema and value not in schema["enum"]:
        errors.append(
            FieldError(
                "NotSupported",
                where,
                value,
                "supported values: " + ", ".join(json.dumps(str(v)) for v in schema["enum"]),
            )
        )
    if not typed:
        return
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _numbers(schema, value, path, errors)
    elif isinstance(value, str):
        _strings(schema, value, path, errors)
    elif isinstance(value, list):
        _arrays(schema, value, path, errors)
    elif isinstance(value, dict):
        for key in schema.get("required") or []:
            if key not in value:
                errors.append(FieldError("Required", field_path((*path, key))))
        for key, sub in _children(schema, value):
            if sub is not None:
                _validate(sub, value[key], (*path, key), errors)


def _numbers(schema: dict, value: float, path: Path, errors: list[FieldError]) -> None:
    where = field_path(path)
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(
            FieldError(
                "Invalid", where, value, _detail(path, f"should be greater than or equal to {schema['minimum']}")
            )
        )
    if "maximum" in schema and value > schema["maximum"]:
        errors.append(
            FieldError("Invalid", where, value, _detail(path, f"should be less than or equal to {schema['maximum']}"))
        )


def _strings(schema: dict, value: str, path: Path, errors: list[FieldError]) -> None:
    where = field_path(path)
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(FieldError("TooLong", where, value, f"may not be more than {schema['maxLength']} bytes"))
    if "minLength" in schema and len(value) < schema["minLength"]:
        errors.append(
            FieldError("Invalid", where, value, _detail(path, f"should be at least {schema['minLength']} chars long"))
        )
    if "pattern" in schema and not re.search(schema["pattern"], value):
        errors.append(FieldError("Invalid", where, value, _detail(path, f"should match '{schema['pattern']}'")))
    if schema.get("format") == "date-time":
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            errors.append(
                FieldError("Invalid", where, value, _detail(path, f"must be of type date-time: {json.dumps(value)}"))
            )


def _arrays(schema: dict, value: list, path: Path, errors: list[FieldError]) -> None:
    where = field_path(path)
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(FieldError("TooMany", where, len(value), f"must have at most {schema['maxItems']} items"))
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(
            FieldError("Invalid", where, len(value), _detail(path, f"should have at least {schema['minItems']} items"))
        )
    items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
    for i, item in enumerate(value):
        _validate(items, item, (*path, i), errors)
    list_type = schema.get("x-kubernetes-list-type")
    seen: list[object] = []
    for i, item in enumerate(value):
        if list_type == "map" and isinstance(item, dict):
            key = {k: item.get(k) for k in schema.get("x-kubernetes-list-map-keys") or []}
        elif list_type == "set":
            key = item
        else:
            continue
        if key in seen:
            shown = (
                key
                if list_type == "set"
                else "map[string]interface {}{"
                + ", ".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in key.items())
                + "}"
            )
            errors.append(
                FieldError("Duplicate", field_path((*path, i)), shown if list_type == "set" else GoValue(shown))
            )
        seen.append(key)


# ----- apply's typed conversion ----------------------------------------------------------------------------------
def list_map_keys(schema: dict) -> list[str] | None:
    """The keys of a `x-kubernetes-list-type: map` list schema, else None (atomic lists and sets)."""
    if schema.get("x-kubernetes-list-type") == "map":
        return list(schema.get("x-kubernetes-list-map-keys") or [])
    return None


def element_name(schema: dict, item: object, index: int) -> str:
    """How structured-merge-diff names a list element in a path: `[name="vllm"]`, `[containerPort=8000,
    protocol="TCP"]`, `[="value"]` in a set, `[3]` in an atomic list.
    """
    keys = list_map_keys(schema)
    if keys and isinstance(item, dict):
        return "[" + ",".join(f"{k}={json.dumps(item.get(k))}" for k in keys if k in item) + "]"
    if schema.get("x-kubernetes-list-type") == "set":
        return f"[={json.dumps(item)}]"
    return f"[{index}]"


def typed_errors(schema: dict, obj: dict) -> list[str]:
    """What converting an apply configuration to a typed value reports: undeclared fields and wrong scalar
    types, as `.spec.foo: field not declared in schema` (structured-merge-diff typed/validate.go).
    """
    errors: list[str] = []
    body = {k: v for k, v in obj.items() if k != "metadata"}
    _typed(schema, body, "", errors, root=True)
    return errors


def _typed(schema: dict, value: object, path: str, errors: list[str], root: bool = False) -> None:
    if value is None or (schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("properties")):
        return
    if schema.get("x-kubernetes-int-or-string"):
        return
    want = schema.get("type") or ("object" if schema.get("properties") else None)
    if want == "object":
        if not isinstance(value, dict):
            errors.append(f"{path}: expected map, got {value!r}")
            return
        keep = ROOT_FIELDS if root or schema.get("x-kubernetes-embedded-resource") else ()
        for key, sub in _children(schema, value):
            if sub is None:
                if key not in keep:
                    errors.append(f"{path}.{key}: field not declared in schema")
            else:
                _typed(sub, value[key], f"{path}.{key}", errors)
    elif want == "array":
        if not isinstance(value, list):
            errors.append(f"{path}: expected list, got {value!r}")
            return
        items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
        for i, item in enumerate(value):
            _typed(items, item, path + element_name(schema, item, i), errors)
    elif want in ("integer", "number") and (isinstance(value, bool) or not isinstance(value, (int, float))):
        errors.append(f"{path}: expected numeric (int or float), got {_GO_NAMES.get(json_type(value), 'string')}")
    elif want == "string" and not isinstance(value, str):
        errors.append(f"{path}: expected string, got &value.valueUnstructured{{Value:{json.dumps(value)}}}")
    elif want == "boolean" and not isinstance(value, bool):
        errors.append(f"{path}: expected boolean, got &value.valueUnstructured{{Value:{json.dumps(value)}}}")


def smd_message(errors: list[str]) -> str:
    """structured-merge-diff ValidationErrors.Error(): one error as itself, several as an indented list."""
    return errors[0] if len(errors) == 1 else "\n".join(["errors:"] + [f"  {e}" for e in errors])


def schema_at(schema: dict, path: Path) -> dict | None:
    """The sub-schema at a path of keys (list items are entered with the key None)."""
    node: dict | None = schema
    for key in path:
        if node is None:
            return None
        if key is None or isinstance(key, int):
            node = node.get("items") if isinstance(node.get("items"), dict) else None
        else:
            props = node.get("properties") or {}
            node = props.get(key) or (
                node.get("additionalProperties") if isinstance(node.get("additionalProperties"), dict) else None
            )
    return node
