"""Server-side apply and field ownership (metadata.managedFields), simplified the documented way.

A field is a leaf path: maps are descended; lists the schema marks `x-kubernetes-list-type: map` are descended
element by element, each element named by its keys (containers by `name`, ports by `containerPort` and
`protocol`), as structured-merge-diff merges them (merge/update.go, fieldpath/pathelement.go); other lists,
scalars and empty maps are owned whole. Each (manager, operation, subresource) entry owns a set of leaf paths,
kept in `metadata.managedFields[].fieldsV1` in the real notation (`f:name`, `k:{"name":"vllm"}` with its `.`),
and conflicts name paths as the real server does (`.spec.template.spec.containers[name="vllm"].image`).
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from datetime import UTC, datetime

from tests.kubeapi import builtin
from tests.kubeapi.errors import ApiError
from tests.kubeapi.registry import ResourceType
from tests.kubeapi.structural import list_map_keys

Path = tuple[str, ...]

#: metadata fields a manager can own; the rest are the server's.
OWNED_METADATA = ("labels", "annotations", "finalizers", "ownerReferences")


def now() -> str:
    """RFC 3339 UTC timestamp with seconds, as Kubernetes writes them."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


#: A path part naming a list-map element starts with this, followed by the JSON of its keys.
ELEMENT = "\x00"


def element(keys: list[str], item: dict) -> str:
    """The path part of one list-map element."""
    return ELEMENT + json.dumps({k: item[k] for k in keys if k in item}, sort_keys=True, separators=(",", ":"))


@functools.lru_cache(maxsize=4096)
def _element_keys(part: str) -> dict:
    # Cached (every managed path is resolved on each write); callers copy before changing it.
    return json.loads(part[1:])


def schema_for(rtype: ResourceType, api_version: str) -> dict | None:
    """The schema whose list types decide how lists merge (none for an open custom resource)."""
    version = api_version.rsplit("/", 1)[-1]
    return rtype.schema(version) if rtype.crd else builtin.schema(rtype.group, version, rtype.kind)


def _sub(schema: dict | None, key: str) -> dict | None:
    if not schema:
        return None
    extra = schema.get("additionalProperties")
    return (schema.get("properties") or {}).get(key) or (extra if isinstance(extra, dict) else None)


def _leaves(value: object, prefix: Path, out: dict[Path, object], schema: dict | None) -> None:
    keys = list_map_keys(schema) if schema else None
    if isinstance(value, dict) and value:
        for key, child in value.items():
            _leaves(child, (*prefix, key), out, _sub(schema, key))
    elif keys and isinstance(value, list) and value and all(isinstance(i, dict) for i in value):
        items = schema.get("items") if isinstance(schema.get("items"), dict) else None  # type: ignore[union-attr]
        for item in value:
            _leaves(item, (*prefix, element(keys, item)), out, items)
    else:
        out[prefix] = value


def leaf_values(
    obj: dict, rtype: ResourceType, subresource: str | None, schema: dict | None = None
) -> dict[Path, object]:
    """{owned leaf path: value} of `obj` for a write to the main resource or to its status subresource, in
    document order (new list-map elements are appended in that order)."""
    out: dict[Path, object] = {}
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if key == "metadata":
            for mkey in OWNED_METADATA:
                if mkey in (value or {}):
                    _leaves(value[mkey], ("metadata", mkey), out, None)
        elif subresource == "status":
            if key == "status":
                _leaves(value, ("status",), out, _sub(schema, "status"))
        elif key != "status" or not rtype.has_status:
            _leaves(value, (key,), out, _sub(schema, key))
    return out


def leaf_paths(obj: dict, rtype: ResourceType, subresource: str | None, schema: dict | None = None) -> set[Path]:
    """The owned leaf paths of `obj` for a write to the main resource or to its status subresource."""
    return set(leaf_values(obj, rtype, subresource, schema))


def _present(leaves: dict[Path, object]) -> set[Path]:
    """Every path that exists given these leaves: the leaves and the maps and elements above them."""
    out: set[Path] = set()
    for path in leaves:
        out.update(path[:i] for i in range(1, len(path) + 1))
    return out


def _in_scope(path: Path, rtype: ResourceType, subresource: str | None) -> bool:
    """Whether a write to the main resource or to status can change `path` (the rest is carried over)."""
    if path[0] == "metadata":
        return True
    if subresource == "status":
        return path[0] == "status"
    return path[0] != "status" or not rtype.has_status


def _find(items: list, part: str) -> dict | None:
    keys = _element_keys(part)
    return next((i for i in items if isinstance(i, dict) and all(i.get(k) == v for k, v in keys.items())), None)


def _child(node: object, key: str) -> object:
    if key.startswith(ELEMENT):
        return _find(node, key) if isinstance(node, list) else None
    return node.get(key) if isinstance(node, dict) else None


def get_path(obj: object, path: Path) -> tuple[bool, object]:
    """(found, value) at `path`."""
    for key in path:
        if key.startswith(ELEMENT):
            obj = _find(obj, key) if isinstance(obj, list) else None
            if obj is None:
                return False, None
        elif not isinstance(obj, dict) or key not in obj:
            return False, None
        else:
            obj = obj[key]
    return True, obj


def _enter(node: dict | list, key: str, next_key: str | None) -> dict | list:
    """The container at `key` under `node`, created (a list before an element, else a map) when missing."""
    if key.startswith(ELEMENT):
        found = _find(node, key)  # type: ignore[arg-type]
        if found is None:
            found = dict(_element_keys(key))
            node.append(found)  # type: ignore[union-attr]
        return found
    want = list if next_key is not None and next_key.startswith(ELEMENT) else dict
    if not isinstance(node.get(key), want):  # type: ignore[union-attr]
        node[key] = want()  # type: ignore[index]
    return node[key]  # type: ignore[index]


def set_path(obj: dict, path: Path, value: object) -> None:
    """Set `path`, creating maps, lists and list-map elements on the way."""
    node: dict | list = obj
    for i, key in enumerate(path[:-1]):
        node = _enter(node, key, path[i + 1])
    if path[-1].startswith(ELEMENT):
        _enter(node, path[-1], None).update(copy.deepcopy(value) if isinstance(value, dict) else {})  # type: ignore[union-attr]
    else:
        node[path[-1]] = copy.deepcopy(value)  # type: ignore[index]


def _remove(node: object, key: str) -> None:
    if key.startswith(ELEMENT) and isinstance(node, list):
        found = _find(node, key)
        if found is not None:
            node.remove(found)
    elif isinstance(node, dict):
        node.pop(key, None)


def delete_path(obj: dict, path: Path) -> None:
    """Remove `path` (a list-map element with its key fields) and any map or list above it that it leaves empty
    (never a top-level section).
    """
    if len(path) >= 2 and path[-2].startswith(ELEMENT) and path[-1] in _element_keys(path[-2]):
        path = path[:-1]
    chain: list[object] = [obj]
    for key in path[:-1]:
        child = _child(chain[-1], key)
        if child is None:
            return
        chain.append(child)
    _remove(chain[-1], path[-1])
    for depth in range(len(path) - 1, 1, -1):
        if chain[depth] in ({}, []):
            _remove(chain[depth - 1], path[depth - 1])
        else:
            break


def _field_key(key: str) -> str:
    return f"k:{key[1:]}" if key.startswith(ELEMENT) else f"f:{key}"


def to_fields_v1(paths: set[Path]) -> dict:
    """The fieldsV1 tree of a set of leaf paths (`f:` fields, `k:` list-map elements with their `.`)."""
    tree: dict = {}
    for path in sorted(paths):
        node = tree
        for key in path:
            node = node.setdefault(_field_key(key), {})
            if key.startswith(ELEMENT):
                node.setdefault(".", {})
    return tree


def from_fields_v1(tree: dict, prefix: Path = ()) -> set[Path]:
    """Leaf paths of an `f:` tree (inverse of to_fields_v1)."""
    out: set[Path] = set()
    for key, child in (tree or {}).items():
        if key.startswith("f:"):
            path = (*prefix, key[2:])
        elif key.startswith("k:"):
            path = (*prefix, ELEMENT + key[2:])
        else:
            continue
        children = from_fields_v1(child, path)
        out |= children or {path}
    return out


class Ownership:
    """The managedFields of one object as {(manager, operation, subresource): (apiVersion, paths)}."""

    def __init__(self, obj: dict | None) -> None:
        self.entries: dict[tuple[str, str, str], tuple[str, set[Path]]] = {}
        self.times: dict[tuple[str, str, str], str] = {}
        self.raw: dict[tuple[str, str, str], dict] = {}
        self.original: dict[tuple[str, str, str], set[Path]] = {}
        for entry in ((obj or {}).get("metadata") or {}).get("managedFields") or []:
            key = (entry["manager"], entry.get("operation", "Update"), entry.get("subresource", ""))
            self.times[key] = entry.get("time", "")
            self.raw[key] = entry.get("fieldsV1") or {}
            self.entries[key] = (entry.get("apiVersion", ""), from_fields_v1(entry.get("fieldsV1") or {}))
            self.original[key] = set(self.entries[key][1])

    def owners(self, path: Path, exclude_manager: str) -> list[tuple[str, str, str]]:
        """Entries of other managers owning `path` or a path overlapping it."""
        found = []
        for key, (_, paths) in self.entries.items():
            if key[0] == exclude_manager:
                continue
            if any(p[: len(path)] == path or path[: len(p)] == p for p in paths):
                found.append(key)
        return found

    def describe(self, key: tuple[str, str, str]) -> str:
        """printManager: `"name"` for an Apply manager; an Update one adds `using <apiVersion> at <time>`."""
        manager, operation, subresource = key
        out = f'"{manager}"' + (f' with subresource "{subresource}"' if subresource else "")
        if operation == "Update":
            out += f" using {self.entries[key][0]}"
            if self.times.get(key):
                out += f" at {self.times[key]}"
        return out

    def drop(self, key: tuple[str, str, str], path: Path) -> None:
        """Remove ownership of `path` (and overlapping paths) from one entry."""
        api_version, paths = self.entries[key]
        self.entries[key] = (api_version, {p for p in paths if not (p[: len(path)] == path or path[: len(p)] == p)})

    def write(self, obj: dict, previous: dict | None, present: set[Path], in_scope: Callable[[Path], bool]) -> None:
        """Store the entries into obj.metadata.managedFields, keeping timestamps of unchanged entries; owned paths
        the write could touch (`in_scope`) stay only if `present`."""
        old_times = {
            (e["manager"], e.get("operation"), e.get("subresource", "")): (e.get("time"), e.get("fieldsV1"))
            for e in ((previous or {}).get("metadata") or {}).get("managedFields") or []
        }
        entries = []
        for (manager, operation, sub), (api_version, paths) in self.entries.items():
            paths = {p for p in paths if p in present or not in_scope(p)}
            if not paths:
                continue
            unchanged = paths == self.original.get((manager, operation, sub))
            fields = self.raw[(manager, operation, sub)] if unchanged else to_fields_v1(paths)
            old = old_times.get((manager, operation, sub))
            entry = {
                "manager": manager,
                "operation": operation,
                "apiVersion": api_version,
                "time": old[0] if old and old[1] == fields else now(),
                "fieldsType": "FieldsV1",
                "fieldsV1": fields,
            }
            if sub:
                entry["subresource"] = sub
            entries.append(entry)
        obj.setdefault("metadata", {})["managedFields"] = entries


def _empty_map_on_map(live_value: object, config: dict, path: Path) -> bool:
    """An applied `{}` where a map exists claims the map, not the keys others put in it."""
    return isinstance(live_value, dict) and get_path(config, path)[1] == {}


def _display(path: Path) -> str:
    """fieldpath.Path.String(): `.spec.containers[name="vllm"].image`."""
    out = ""
    for key in path:
        if key.startswith(ELEMENT):
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in _element_keys(key).items()) + "]"
        else:
            out += f".{key}"
    return out


def apply(
    live: dict | None,
    config: dict,
    rtype: ResourceType,
    manager: str,
    force: bool,
    subresource: str | None,
    api_version: str,
) -> dict:
    """The object after `manager` applies `config` to `live` (None: create); raises 409 on a conflict unless forced."""
    schema = schema_for(rtype, api_version)
    values = leaf_values(config, rtype, subresource, schema)
    applied = set(values)
    result = (
        copy.deepcopy(live)
        if live is not None
        else {"apiVersion": config["apiVersion"], "kind": config["kind"], "metadata": {}}
    )
    ownership = Ownership(live)
    me = (manager, "Apply", subresource or "")
    conflicts: list[tuple[Path, str]] = []
    for path in sorted(applied):
        found, live_value = get_path(result, path)
        if found and (live_value == values[path] or _empty_map_on_map(live_value, config, path)):
            continue
        for key in ownership.owners(path, manager):
            if force:
                ownership.drop(key, path)
            else:
                conflicts.append((path, ownership.describe(key)))
    if conflicts:
        raise _conflict(rtype, config["metadata"]["name"], conflicts)
    previous = ownership.entries.get(me, (api_version, set()))[1]
    for path in previous - applied:
        if not any(p for p in applied if p[: len(path)] == path or path[: len(p)] == p) and not ownership.owners(
            path, manager
        ):
            delete_path(result, path)
    for path, value in values.items():
        if not _empty_map_on_map(get_path(result, path)[1], config, path):
            set_path(result, path, value)
    ownership.entries[me] = (api_version, applied)
    ownership.write(
        result,
        live,
        _present(leaf_values(result, rtype, subresource, schema)),
        lambda p: _in_scope(p, rtype, subresource),
    )
    return result


def record_update(
    old: dict | None, new: dict, rtype: ResourceType, manager: str, subresource: str | None, api_version: str
) -> None:
    """Give `manager` (operation Update) the fields a non-apply write changed or added; others lose them."""
    ownership = Ownership(old)
    schema = schema_for(rtype, api_version)
    before = leaf_values(old or {}, rtype, subresource, schema)
    after = leaf_values(new, rtype, subresource, schema)
    changed = {p for p, value in after.items() if p not in before or before[p] != value}
    me = (manager, "Update", subresource or "")
    for path in changed:
        for key in ownership.owners(path, manager):
            ownership.drop(key, path)
    mine = ownership.entries.get(me, (api_version, set()))[1]
    ownership.entries[me] = (api_version, mine | changed)
    ownership.write(new, old, _present(after), lambda p: _in_scope(p, rtype, subresource))


def _conflict(rtype: ResourceType, name: str, conflicts: list[tuple[Path, str]]) -> ApiError:
    """The apply conflict error of k8s.io/apimachinery/pkg/util/managedfields/internal/conflict.go: one cause per
    field; one conflict in one line, several grouped by manager (sorted) as `conflicts with M:` and `- path` lines.
    """
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {who}", "field": _display(path)}
        for path, who in conflicts
    ]
    if len(causes) == 1:
        summary = f"Apply failed with 1 conflict: {causes[0]['message']}: {causes[0]['field']}"
    else:
        lines = []
        for who in sorted({who for _, who in conflicts}):
            lines.append(f"conflicts with {who}:")
            lines += [f"- {_display(path)}" for path, other in conflicts if other == who]
        summary = f"Apply failed with {len(causes)} conflicts: " + "\n".join(lines)
    return ApiError(
        409, summary, "Conflict", {"name": name, "group": rtype.group, "kind": rtype.plural, "causes": causes}
    )
