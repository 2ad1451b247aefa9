"""An unknown profile field named with its source and the nearest known field ("did you mean vllm.port?")."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from pydantic import BaseModel

from k3deploy.kobject import JsonObject
from k3deploy.profile.overrides import dotted, parse_set


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models a field's annotation holds (itself, or inside Optional / a union / a list)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, list, tuple, typing.Annotated):
        return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
    return []


def field_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every field of `model` and its sub-models, dotted (`vllm.port`), sections included (`vllm`)."""
    paths = []
    for name, info in model.model_fields.items():
        key = info.alias or name
        path = f"{prefix}.{key}" if prefix else key
        paths.append(path)
        for sub in _models_in(info.annotation):
            paths += field_paths(sub, path)
    return paths


def nearest(unknown: str, known: list[str]) -> str | None:
    """The known field `unknown` most likely meant: the same name in another section (`local.port` -> `vllm.port`),
    else the closest spelling of the whole path or of the name within its section; None when nothing is close."""
    section, _, leaf = unknown.rpartition(".")
    same_leaf = [path for path in known if path.rpartition(".")[2] == leaf and path != unknown]
    if same_leaf:
        return difflib.get_close_matches(unknown, same_leaf, n=1, cutoff=0.0)[0]
    close = difflib.get_close_matches(unknown, known, n=1, cutoff=0.75)
    if close:
        return close[0]
    siblings = [path.rpartition(".")[2] for path in known if path.rpartition(".")[0] == section]
    leaf_close = difflib.get_close_matches(leaf, siblings, n=1, cutoff=0.6)
    if leaf_close:
        return f"{section}.{leaf_close[0]}" if section else leaf_close[0]
    return None


def _holds(data: Any, path: list[str | int]) -> bool:
    for part in path:
        if isinstance(part, int):
            if not isinstance(data, list) or part >= len(data):
                return False
        elif not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def source_of(path: list[str | int], layers: list[tuple[str, JsonObject]], sets: list[str]) -> str:
    """Where the value at `path` came from: the last `--set` that wrote it or under it, else the last layer holding
    it (later ones win)."""
    for item in reversed(sets):
        key, set_path, _ = parse_set(item)
        if set_path[: len(path)] == path:
            return f"--set {key}"
    for origin, data in reversed(layers):
        if _holds(data, path):
            return origin
    return "the profile"


def unknown_field(
    loc: tuple[Any, ...], model: type[BaseModel], layers: list[tuple[str, JsonObject]], sets: list[str]
) -> str:
    """The message of an unknown field at `loc`: `unknown field (from SOURCE; did you mean X?)`."""
    path: list[str | int] = [p for p in loc if isinstance(p, (str, int))]
    guess = nearest(dotted(path), field_paths(model))
    mean = f"; did you mean {guess}?" if guess else ""
    return f"unknown field (from {source_of(path, layers, sets)}{mean})"
