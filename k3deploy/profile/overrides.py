"""`--set key.path=value` overrides, with list indices (`a.b[0]=x`), and profiles layered in order (later wins).

Both follow Helm: `helm install -f a.yaml -f b.yaml --set a.b[0]=x` merges the files' mappings key by key in the
order given (a list or a value in a later file replaces the earlier one whole), then applies the `--set`s, whose
list indices address an existing item or the next one (helm/helm pkg/strvals/parser.go).
"""

from __future__ import annotations

import copy
import itertools
import re
from typing import Any

import yaml

from k3deploy.errors import ProfileError
from k3deploy.kobject import JsonObject
from k3deploy.profile.safe_yaml import MAX_DEPTH, YamlRefused, parse_yaml

#: One segment of a key path: a name with any number of list indices after it (`nodes`, `args[0]`, `m[1][2]`).
_SEGMENT = re.compile(r"^(?P<name>[^\[\]]*)(?P<indices>(?:\[\d+\])*)$")


def merge(base: JsonObject, over: JsonObject) -> JsonObject:
    """`over` merged into a copy of `base`: mappings key by key, anything else (lists included) replaced."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def key_path(key: str) -> list[str | int]:
    """`a.b[0].c` as ["a", "b", 0, "c"]; a ProfileError for a segment that is not `name` or `name[N]...`."""
    path: list[str | int] = []
    segments = key.split(".")
    if len(segments) > MAX_DEPTH:
        raise ProfileError(
            f"--set {key[:60]}...: {len(segments)} levels deep; a profile's fields are at most {MAX_DEPTH}",
            hint="for example: --set vllm.port=8000; free-form values take a JSON map: --set 'speculative.extra={\"k\": 1}'",
        )
    for segment in segments:
        found = _SEGMENT.match(segment)
        if found is None or (not found["name"] and not found["indices"]):
            raise ProfileError(
                f"--set {key}: {segment!r} is not a field name or name[index]",
                hint="for example: --set vllm.port=8000 or --set kubernetes.node_preflight_hosts[0]=gb300-01",
            )
        if found["name"]:
            path.append(found["name"])
        path += [int(index) for index in re.findall(r"\[(\d+)\]", found["indices"])]
    if len(path) > MAX_DEPTH:
        raise ProfileError(
            f"--set {key[:60]}: {len(path)} levels deep; a profile's fields are at most {MAX_DEPTH}",
            hint="address a field of the profile (see `k3deploy schema`)",
        )
    return path


def dotted(path: list[str | int]) -> str:
    """["a", "b", 0] as `a.b[0]`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _child(node: Any, part: str | int, next_part: str | int, key: str) -> Any:
    """The container at `part` of `node`, made (a mapping, or a list before an index) when missing."""
    empty: Any = [] if isinstance(next_part, int) else {}
    if isinstance(part, int):
        if not isinstance(node, list):
            raise ProfileError(f"--set {key}: [{part}] indexes something that is not a list", hint="drop the index")
        if part == len(node):
            node.append(empty)
        elif part > len(node):
            raise ProfileError(
                f"--set {key}: index {part} is past the end of a list of {len(node)}",
                hint=f"use an index from 0 to {len(node)} ({len(node)} appends)",
            )
        elif node[part] is None:
            node[part] = empty
        return node[part]
    if not isinstance(node, dict):
        raise ProfileError(f"--set {key}: {part!r} is not a section", hint="only mapping fields can hold sub-keys")
    if node.get(part) is None:
        node[part] = empty
    return node[part]


def _put(node: Any, part: str | int, value: Any, key: str) -> None:
    if isinstance(part, int):
        if not isinstance(node, list):
            raise ProfileError(f"--set {key}: [{part}] indexes something that is not a list", hint="drop the index")
        if part > len(node):
            raise ProfileError(
                f"--set {key}: index {part} is past the end of a list of {len(node)}",
                hint=f"use an index from 0 to {len(node)} ({len(node)} appends)",
            )
        if part == len(node):
            node.append(value)
        else:
            node[part] = value
        return
    if not isinstance(node, dict):
        raise ProfileError(f"--set {key}: {part!r} is not a section", hint="only mapping fields can hold sub-keys")
    node[part] = value


def parse_set(item: str) -> tuple[str, list[str | int], str]:
    """`key.path=value` as (key, its path, the raw value); a ProfileError when it has no `=` or no key."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ProfileError(
            f"--set {item!r} is not key.path=value", hint="for example: --set vllm.gpu_memory_utilization=0.9"
        )
    return key.strip(), key_path(key.strip()), raw


def written_scalars(sets: list[str]) -> dict[tuple[str | int, ...], str]:
    """Path -> the text after `=` of each `--set` whose value YAML reads as a number or a boolean.

    `--set kubernetes.lws_version=0.9` means the text "0.9"; a field that takes text takes it as written (see
    `load_profile`), not as YAML's float 0.9 (which would be refused, and printed back as "0.9" only by chance).
    """
    out: dict[tuple[str | int, ...], str] = {}
    for item in sets:
        _, path, raw = parse_set(item)
        try:
            value = parse_yaml(raw) if raw != "" else ""
        except yaml.YAMLError:
            continue
        if isinstance(value, (bool, int, float)):
            out[tuple(path)] = raw.strip()
    return out


def apply_overrides(data: JsonObject, sets: list[str]) -> JsonObject:
    """Apply `key.path=value` overrides; values are parsed as YAML (numbers, booleans, JSON lists/maps)."""
    out = copy.deepcopy(data)
    for item in sets:
        key, path, raw = parse_set(item)
        try:
            value = parse_yaml(raw) if raw != "" else ""
        except YamlRefused as exc:
            raise ProfileError(f"--set {key}: {exc}", hint="write the value out in full") from None
        except yaml.YAMLError:
            value = raw
        node: Any = out
        for part, next_part in itertools.pairwise(path):
            node = _child(node, part, next_part, key)
        _put(node, path[-1], value, key)
    return out
