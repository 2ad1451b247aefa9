"""Load a profile by built-in name or file path (several layered, later wins), apply `--set` overrides, validate,
explain errors.

Every failure becomes one `ProfileError` line naming the dotted field path of the bad value.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from k3deploy.errors import ProfileError
from k3deploy.kobject import JsonObject
from k3deploy.profile.default import DEFAULT_PROFILE
from k3deploy.profile.host_paths import completed
from k3deploy.profile.model import Profile
from k3deploy.profile.overrides import apply_overrides, key_path, merge, parse_set, written_scalars
from k3deploy.profile.plan import plan
from k3deploy.profile.safe_yaml import MAX_DEPTH, YamlRefused, parse_yaml
from k3deploy.profile.suggest import unknown_field

__all__ = [
    "DEFAULT_PROFILE",
    "MAX_DEPTH",
    "MAX_PROFILE_BYTES",
    "ProfileRefs",
    "YamlRefused",
    "apply_overrides",
    "builtin_names",
    "load_profile",
    "load_raw",
    "parse_yaml",
    "profile_schema",
    "read_layers",
    "read_text",
    "refs_of",
]
#: What names a profile: a built-in name or a file, several of them (layered in order), or None (the default).
ProfileRefs = str | Sequence[str] | None
_BUILTIN_PACKAGE = "k3deploy.profile.builtin"
#: A profile is a few kilobytes; anything this large is not one (and is not read whole into memory).
MAX_PROFILE_BYTES = 1 << 20


def builtin_names() -> list[str]:
    """Names of the profiles shipped inside the package, sorted."""
    files = resources.files(_BUILTIN_PACKAGE).iterdir()
    return sorted(f.name[: -len(".yaml")] for f in files if f.name.endswith(".yaml"))


def read_text(ref: str) -> tuple[str, str]:
    """The text of a built-in profile or a profile file (bounded, UTF-8), and where it came from."""
    if ref in builtin_names():
        text = resources.files(_BUILTIN_PACKAGE).joinpath(f"{ref}.yaml").read_text(encoding="utf-8")
        origin = f"built-in profile {ref!r}"
    else:
        path = Path(ref)
        if not path.is_file():
            raise ProfileError(
                f"profile {ref!r} is neither a built-in profile nor a file",
                hint=f"built-in profiles: {', '.join(builtin_names())}; or pass a path to a YAML file",
            )
        origin = f"profile file {ref!r}"
        try:
            with path.open("rb") as handle:
                raw = handle.read(MAX_PROFILE_BYTES + 1)
        except OSError as exc:
            raise ProfileError(
                f"cannot read profile {ref!r}: {exc.strerror}", hint="check the path and its permissions"
            ) from exc
        if len(raw) > MAX_PROFILE_BYTES:
            raise ProfileError(
                f"{origin} is larger than {MAX_PROFILE_BYTES // 1024} KiB: not a profile",
                hint="pass a profile YAML file",
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProfileError(
                f"{origin} is not UTF-8 text (byte {exc.start})", hint="pass a profile YAML file, saved as UTF-8"
            ) from None
    return text, origin


def _read_raw(ref: str) -> tuple[JsonObject, str]:
    """Return the raw mapping of a built-in name or a YAML file, and where it came from."""
    text, origin = read_text(ref)
    try:
        data = parse_yaml(text)
    except YamlRefused as exc:
        raise ProfileError(
            f"{origin}: {exc}", hint="write the values out in full; a profile needs no anchors or deep nesting"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ProfileError(f"{origin} is not valid YAML{where}", hint="fix the YAML syntax") from exc
    if not isinstance(data, dict):
        raise ProfileError(
            f"{origin} must be a YAML mapping, got {type(data).__name__}", hint="start the file with 'name: ...'"
        )
    return data, origin


def refs_of(ref: ProfileRefs) -> list[str]:
    """The profiles named, in order: one name or path, several (layered), or none (the default)."""
    if ref is None:
        return [DEFAULT_PROFILE]
    refs = [ref] if isinstance(ref, str) else list(ref)
    return refs or [DEFAULT_PROFILE]


def read_layers(ref: ProfileRefs) -> tuple[JsonObject, str, list[tuple[str, JsonObject]]]:
    """The profiles named, merged in order (later wins, as `helm -f a -f b`), where they came from, and each layer."""
    layers = [(origin, data) for data, origin in map(_read_raw, refs_of(ref))]
    merged: JsonObject = {}
    for _, data in layers:
        merged = merge(merged, data)
    return merged, " + ".join(origin for origin, _ in layers), layers


def _explain(exc: ValidationError, origin: str, layers: list[tuple[str, JsonObject]], sets: list[str]) -> ProfileError:
    """Turn a pydantic error into one line naming each bad field by its dotted path (an unknown one with where it
    came from and the nearest known field)."""
    parts = []
    for err in exc.errors():
        loc = list(err["loc"])
        is_key = bool(loc) and loc[-1] == "[key]"  # a bad mapping key: pydantic puts the key, then "[key]"
        path = ".".join(str(p) for p in (loc[:-2] if is_key else loc))
        msg = err["msg"].removeprefix("Value error, ")
        if is_key:
            msg = f"key {msg}"
        if err["type"] == "extra_forbidden":
            msg = unknown_field(tuple(loc), Profile, layers, sets)
        # Cross-field errors carry no location; their message names the fields itself.
        parts.append(f"{path}: {msg}" if path else msg)
    first = exc.errors()[0]["loc"] if exc.errors() else ()
    hint = "see `k3deploy schema` for the allowed fields and types"
    if first:
        hint = f"fix '{'.'.join(str(p) for p in first if p != '[key]')}' in the profile or with --set; " + hint
    return ProfileError(f"{origin} is invalid: " + "; ".join(parts), hint=hint)


def load_raw(ref: ProfileRefs = None, sets: list[str] | None = None) -> tuple[JsonObject, str]:
    """The profile's mapping as written (layers merged, overrides applied, not validated) and where it came from."""
    data, origin, _ = read_layers(ref)
    return apply_overrides(data, sets or []), origin


Loc = tuple[str | int, ...]


def _bad_value(node: Any, loc: Loc = ()) -> tuple[Loc, str] | None:
    """Where and why a value no output can hold: a string with a lone surrogate (a YAML "\\ud800" escape, or
    command-line bytes that were not UTF-8, which Python keeps as surrogate escapes) or a NUL, or NaN or infinity
    anywhere (the typed fields refuse them, profile/base.py; a free-form map such as speculative.extra would pass
    `.nan` on as `NaN`, which no JSON reader takes). None when there is none."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        where = (*loc, key)
        for text in (key, value):
            if isinstance(text, str) and any("\ud800" <= ch <= "\udfff" for ch in text):
                return where, "not valid Unicode text (a lone surrogate, or bytes that are not UTF-8)"
            if isinstance(text, str) and "\0" in text:  # no environment variable, argument or manifest can hold it
                return where, "holds a NUL character"
        if isinstance(value, float) and not math.isfinite(value):
            return where, f"{value} is not a finite number (.nan and .inf have no JSON form)"
        found = _bad_value(value, where)
        if found is not None:
            return found
    return None


def _check_values(data: JsonObject, origin: str, base: JsonObject, sets: list[str]) -> None:
    """ProfileError for `_bad_value`'s find, blamed on the --set that brought it or on the profile."""
    found = _bad_value(data)
    if found is not None:
        loc, why = found
        where = ".".join(str(part) for part in loc)
        raise ProfileError(
            f"{_blamed(origin, base, sets, loc)} is invalid: {where}: {why}",
            hint=f"fix '{where}' in the profile or with --set",
        )


def _fails_at(loc: Loc) -> Callable[[JsonObject, list[str]], bool]:
    """Whether a profile mapping (with the --sets applied to it) still fails at `loc`: its values' check, then the
    model's, with the --set texts a text field refused put back as written, as load_profile does."""

    def fails(data: JsonObject, sets: list[str]) -> bool:
        found = _bad_value(data)
        if found is not None:
            return found[0] == loc
        try:
            Profile.model_validate(data)
        except ValidationError as exc:
            retyped = _as_written(data, exc, sets)
            if retyped is not None:
                try:
                    Profile.model_validate(retyped)
                except ValidationError as again:
                    exc = again
                else:
                    return False
            return any(tuple(p for p in e["loc"] if p != "[key]") == loc for e in exc.errors())
        return False

    return fails


#: A URL's userinfo inside a --set value (`http://alice:pw@host`, `{docker.io: 'https://u:p@m'}`), up to its last
#: `@` (a password may hold `/`, `#` or `?`).
_USERINFO = re.compile(r"(://)[^\s'\"{},]*@")


def _shown_set(item: str) -> str:
    """A --set as a message shows it: credentials in a URL masked (redact.py's rule), cut at 80 characters."""
    shown = _USERINFO.sub(r"\1***@", item)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _fails_without(fails: Callable[[JsonObject, list[str]], bool], base: JsonObject, sets: list[str]) -> bool:
    """`fails` of the profile with `sets` applied; True when they no longer apply (a list index an omitted --set
    made): that omission tells nothing."""
    try:
        return fails(apply_overrides(base, sets), sets)
    except ProfileError:
        return True


def _blamed(origin: str, base: JsonObject, sets: list[str], loc: Loc) -> str:
    """Who a message blames for the bad value at `loc`: the --set that replaced it (or a section above it), else
    the one without which the profile no longer fails there, else the profile itself when it fails there alone."""
    if not sets:
        return origin
    paths = [tuple(key_path(parse_set(item)[0])) for item in sets]
    culprits = [item for item, path in zip(sets, paths, strict=True) if loc[: len(path)] == path]
    fails = _fails_at(loc)
    if not culprits and not fails(base, []):
        culprits = [
            item for index, item in enumerate(sets) if not _fails_without(fails, base, sets[:index] + sets[index + 1 :])
        ] or sets
    if not culprits:
        return origin
    shown = ", ".join(f"--set {_shown_set(item)}" for item in culprits[-2:])
    return f"{shown} (on {origin})"


def _first_loc(exc: ValidationError) -> Loc:
    """The location of a validation error's first problem (a bad mapping key's marker dropped)."""
    errors = exc.errors()
    return tuple(part for part in errors[0]["loc"] if part != "[key]") if errors else ()


def _as_written(data: JsonObject, exc: ValidationError, sets: list[str]) -> JsonObject | None:
    """`data` with each `--set` number or boolean that a text field refused put back as the text written; None
    when no error is of that kind (see overrides.written_scalars)."""
    written = written_scalars(sets)
    fixes = [
        (loc, written[loc])
        for loc in (tuple(e["loc"]) for e in exc.errors() if e["type"] == "string_type")
        if loc in written
    ]
    if not fixes:
        return None
    out = copy.deepcopy(data)
    for loc, raw in fixes:
        node: Any = out
        for part in loc[:-1]:
            node = node[part]
        node[loc[-1]] = raw
    return out


def load_profile(ref: ProfileRefs = None, sets: list[str] | None = None, *, check_fit: bool = True) -> Profile:
    """Load (several: layered in order), override and validate a profile; also refuse one whose weights cannot fit
    its GPUs."""
    base, origin, layers = read_layers(ref)
    sets = sets or []
    data = apply_overrides(base, sets)
    _check_values(data, origin, base, sets)
    try:
        profile = Profile.model_validate(data)
    except ValidationError as exc:
        retyped = _as_written(data, exc, sets)
        if retyped is None:
            raise _explain(exc, _blamed(origin, base, sets, _first_loc(exc)), layers, sets) from None
        try:
            profile = Profile.model_validate(retyped)
        except ValidationError as again:
            raise _explain(again, _blamed(origin, base, sets, _first_loc(again)), layers, sets) from None
    if check_fit and profile.hardware is not None:
        result = plan(profile)
        if not result.weights_fit:
            raise ProfileError(
                f"{origin} is invalid: {result.reason}",
                hint="add GPUs (parallel.nodes / parallel.gpus_per_node with tensor_parallel_size), or a smaller checkpoint",
            )
    return completed(profile)


def profile_schema() -> str:
    """The JSON Schema of a profile, as stable pretty-printed JSON."""
    return json.dumps(Profile.model_json_schema(), indent=2, sort_keys=True) + "\n"
