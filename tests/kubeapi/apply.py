"""Server-side apply and field ownership (metadata.managedFields), simplified the documented way.

A field is a leaf path: maps are descended, while lists, scalars and empty maps are owned whole (lists are
treated as atomic). Each (manager, operation, subresource) entry owns a set of leaf paths, kept in
`metadata.managedFields[].fieldsV1` in the real `f:` notation.
"""

from __future__ import annotations

import copy
from datetime import datetime, timezone

from tests.kubeapi.errors import ApiError
from tests.kubeapi.registry import ResourceType

Path = tuple[str, ...]

#: metadata fields a manager can own; the rest are the server's.
OWNED_METADATA = ("labels", "annotations", "finalizers", "ownerReferences")


def now() -> str:
    """RFC 3339 UTC timestamp with seconds, as Kubernetes writes them."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _leaves(value: object, prefix: Path, out: set[Path]) -> None:
    if isinstance(value, dict) and value:
        for key, child in value.items():
            _leaves(child, prefix + (key,), out)
    else:
        out.add(prefix)


def leaf_paths(obj: dict, rtype: ResourceType, subresource: str | None) -> set[Path]:
    """The owned leaf paths of `obj` for a write to the main resource or to its status subresource."""
    out: set[Path] = set()
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if key == "metadata":
            for mkey in OWNED_METADATA:
                if mkey in (value or {}):
                    _leaves(value[mkey], ("metadata", mkey), out)
        elif subresource == "status":
            if key == "status":
                _leaves(value, ("status",), out)
        elif key != "status" or not rtype.has_status:
            _leaves(value, (key,), out)
    return out


def get_path(obj: object, path: Path) -> tuple[bool, object]:
    """(found, value) at `path`."""
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return False, None
        obj = obj[key]
    return True, obj


def set_path(obj: dict, path: Path, value: object) -> None:
    """Set `path`, creating maps on the way."""
    for key in path[:-1]:
        if not isinstance(obj.get(key), dict):
            obj[key] = {}
        obj = obj[key]
    obj[path[-1]] = copy.deepcopy(value)


def delete_path(obj: dict, path: Path) -> None:
    """Remove `path` and any map above it that it leaves empty (never a top-level section)."""
    parents = []
    node: object = obj
    for key in path[:-1]:
        if not isinstance(node, dict) or key not in node:
            return
        parents.append((node, key))
        node = node[key]
    if isinstance(node, dict):
        node.pop(path[-1], None)
    while len(parents) > 1:
        parent, key = parents.pop()
        if parent[key] == {}:
            del parent[key]
        else:
            break


def to_fields_v1(paths: set[Path]) -> dict:
    """The `f:` tree of a set of leaf paths."""
    tree: dict = {}
    for path in sorted(paths):
        node = tree
        for key in path:
            node = node.setdefault(f"f:{key}", {})
    return tree


def from_fields_v1(tree: dict, prefix: Path = ()) -> set[Path]:
    """Leaf paths of an `f:` tree (inverse of to_fields_v1)."""
    out: set[Path] = set()
    for key, child in (tree or {}).items():
        if not key.startswith("f:"):
            continue
        path = prefix + (key[2:],)
        children = from_fields_v1(child, path)
        out |= children or {path}
    return out


class Ownership:
    """The managedFields of one object as {(manager, operation, subresource): (apiVersion, paths)}."""

    def __init__(self, obj: dict | None) -> None:
        self.entries: dict[tuple[str, str, str], tuple[str, set[Path]]] = {}
        self.times: dict[tuple[str, str, str], str] = {}
        for entry in ((obj or {}).get("metadata") or {}).get("managedFields") or []:
            key = (entry["manager"], entry.get("operation", "Update"), entry.get("subresource", ""))
            self.times[key] = entry.get("time", "")
            self.entries[key] = (entry.get("apiVersion", ""), from_fields_v1(entry.get("fieldsV1") or {}))

    def owners(self, path: Path, exclude_manager: str) -> list[tuple[str, str, str]]:
        """Entries of other managers owning `path` or a path overlapping it."""
        found = []
        for key, (_, paths) in self.entries.items():
            if key[0] == exclude_manager:
                continue
            if any(p[:len(path)] == path or path[:len(p)] == p for p in paths):
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
        self.entries[key] = (api_version, {p for p in paths if not (p[:len(path)] == path or path[:len(p)] == p)})

    def write(self, obj: dict, previous: dict | None) -> None:
        """Store the entries into obj.metadata.managedFields, keeping timestamps of unchanged entries."""
        old_times = {(e["manager"], e.get("operation"), e.get("subresource", "")): (e.get("time"), e.get("fieldsV1"))
                     for e in ((previous or {}).get("metadata") or {}).get("managedFields") or []}
        entries = []
        for (manager, operation, sub), (api_version, paths) in self.entries.items():
            paths = {p for p in paths if get_path(obj, p)[0]}
            if not paths:
                continue
            fields = to_fields_v1(paths)
            old = old_times.get((manager, operation, sub))
            entry = {"manager": manager, "operation": operation, "apiVersion": api_version,
                     "time": old[0] if old and old[1] == fields else now(), "fieldsType": "FieldsV1",
                     "fieldsV1": fields}
            if sub:
                entry["subresource"] = sub
            entries.append(entry)
        obj.setdefault("metadata", {})["managedFields"] = entries


def _empty_map_on_map(live_value: object, config: dict, path: Path) -> bool:
    """An applied `{}` where a map exists claims the map, not the keys others put in it."""
    return isinstance(live_value, dict) and get_path(config, path)[1] == {}


def _display(path: Path) -> str:
    return "." + ".".join(path)


def apply(live: dict | None, config: dict, rtype: ResourceType, manager: str, force: bool,
          subresource: str | None, api_version: str) -> dict:
    """The object after `manager` applies `config` to `live` (None: create); raises 409 on a conflict unless forced."""
    applied = leaf_paths(config, rtype, subresource)
    result = copy.deepcopy(live) if live is not None else {"apiVersion": config["apiVersion"],
                                                            "kind": config["kind"], "metadata": {}}
    ownership = Ownership(live)
    me = (manager, "Apply", subresource or "")
    conflicts: list[tuple[Path, str]] = []
    for path in sorted(applied):
        found, live_value = get_path(result, path)
        if found and (live_value == get_path(config, path)[1] or _empty_map_on_map(live_value, config, path)):
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
        if not any(p for p in applied if p[:len(path)] == path or path[:len(p)] == p) \
                and not ownership.owners(path, manager):
            delete_path(result, path)
    for path in applied:
        if not _empty_map_on_map(get_path(result, path)[1], config, path):
            set_path(result, path, get_path(config, path)[1])
    ownership.entries[me] = (api_version, applied)
    ownership.write(result, live)
    return result


def record_update(old: dict | None, new: dict, rtype: ResourceType, manager: str, subresource: str | None,
                  api_version: str) -> None:
    """Give `manager` (operation Update) the fields a non-apply write changed or added; others lose them."""
    ownership = Ownership(old)
    before = leaf_paths(old or {}, rtype, subresource)
    after = leaf_paths(new, rtype, subresource)
    changed = {p for p in after if p not in before or get_path(old, p)[1] != get_path(new, p)[1]}
    me = (manager, "Update", subresource or "")
    for path in changed:
        for key in ownership.owners(path, manager):
            ownership.drop(key, path)
    mine = ownership.entries.get(me, (api_version, set()))[1]
    ownership.entries[me] = (api_version, mine | changed)
    ownership.write(new, old)


def _conflict(rtype: ResourceType, name: str, conflicts: list[tuple[Path, str]]) -> ApiError:
    """The apply conflict error of k8s.io/apimachinery/pkg/util/managedfields/internal/conflict.go: one cause per
    field; one conflict in one line, several grouped by manager (sorted) as `conflicts with M:` and `- path` lines.
    """
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {who}", "field": _display(path)}
              for path, who in conflicts]
    if len(causes) == 1:
        summary = f"Apply failed with 1 conflict: {causes[0]['message']}: {causes[0]['field']}"
    else:
        lines = []
        for who in sorted({who for _, who in conflicts}):
            lines.append(f"conflicts with {who}:")
            lines += [f"- {_display(path)}" for path, other in conflicts if other == who]
        summary = f"Apply failed with {len(causes)} conflicts: " + "\n".join(lines)
    return ApiError(409, summary, "Conflict",
                    {"name": name, "group": rtype.group, "kind": rtype.plural, "causes": causes})
