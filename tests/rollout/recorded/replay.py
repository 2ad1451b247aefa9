"""Replay of a recording (tests/rollout/recorded/*.json, written by record.py): a fake of k3deploy's KubeApi that
answers only the reads the recording holds.

`RecordedApi` answers `get`, `list` and a server dry-run `apply` with what the real API server answered the same
request; anything else (a call the recording does not hold, an apply that is not a dry run, any other method) raises
`Unrecorded`, so a test cannot pass on an answer the cluster never gave.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from k3deploy.profile import load_profile
from k3deploy.render.manifests import build as render
from k3deploy.rollout.colours import lws_of
from k3deploy.rollout.plan import LiveLws, LiveState, Strategy
from k3deploy.targets.kubernetes.upgrade import read_lws

#: The profile every recording is of.
PROFILE = "kimi-k3-gb300-tp16"

HERE = Path(__file__).resolve().parent


class Unrecorded(AssertionError):
    """A call the recording holds no answer for."""


def body_key(obj: dict[str, Any]) -> str:
    """A digest of an applied body: an apply is answered only for the very body that was recorded."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def get_key(api_version: str, kind: str, name: str, namespace: str | None) -> str:
    """The recording's key of a `get`."""
    return f"{api_version} {kind} {namespace or ''}/{name}"


def list_key(
    api_version: str, kind: str, namespace: str | None, label_selector: str | None, field_selector: str | None
) -> str:
    """The recording's key of a `list`."""
    return f"{api_version} {kind} {namespace or ''} labels={label_selector or ''} fields={field_selector or ''}"


def apply_key(obj: dict[str, Any], force: bool) -> str:
    """The recording's key of a server dry-run `apply`."""
    return f"{obj['apiVersion']} {obj['kind']} {obj['metadata']['name']} force={force} body={body_key(obj)}"


def load(name: str) -> dict[str, Any]:
    """The recording `name` (tests/rollout/recorded/<name>.json)."""
    return dict(json.loads((HERE / f"{name}.json").read_text()))


def rendered(sets: list[str]) -> list[dict[str, Any]]:
    """The set the profile renders with `sets`."""
    return [m.obj for m in render(load_profile(PROFILE, sets))]


def recorded_set(recording: dict[str, Any], label: str) -> list[dict[str, Any]]:
    """The set a recorded read was of: rendered with its overrides, its LeaderWorkerSet the very one recorded (so
    the set is the one the recorded answers are about, whatever the profile renders today)."""
    objects = rendered(recording["sets"][label])
    lws = lws_of(objects)
    return [copy.deepcopy(recording["lws"][label]) if obj is lws else obj for obj in objects]


def answer_of(live: LiveLws) -> dict[str, Any]:
    """What read_lws answered, as a recording keeps it: the live object only said to be there (it is the recorded
    get's answer)."""
    out = asdict(live)
    out["live"] = None if live.live is None else "recorded (the LeaderWorkerSet's get)"
    return out


class RecordedApi:
    """k3deploy's KubeApi as far as a recording goes: `get`, `list`, dry-run `apply`; `calls` lists what was asked."""

    def __init__(self, reads: dict[str, dict[str, Any]] | None = None) -> None:
        reads = reads or {}
        self._answers = {verb: dict(reads.get(verb) or {}) for verb in ("get", "list", "apply")}
        self.calls: list[str] = []

    def _answer(self, verb: str, key: str) -> Any:
        self.calls.append(f"{verb} {key}")
        if key not in self._answers[verb]:
            raise Unrecorded(f"no recorded answer to {verb} {key}; recorded: {sorted(self._answers[verb])}")
        return copy.deepcopy(self._answers[verb][key])

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The object as the server returned it (None: it answered 404)."""
        answer: dict[str, Any] | None = self._answer("get", get_key(api_version, kind, name, namespace))
        return answer

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[dict[str, Any]], str]:
        """The items the server listed (the resourceVersion is not recorded: nothing here watches)."""
        items = self._answer("list", list_key(api_version, kind, namespace, label_selector, field_selector))
        return list(items), ""

    def apply(self, obj: dict[str, Any], *, force: bool = False, dry_run: bool = False) -> dict[str, Any]:
        """What the server's dry run of this very body answered; a real apply is refused."""
        if not dry_run:
            self.calls.append(f"apply (not a dry run) {obj.get('kind')}/{obj.get('metadata', {}).get('name')}")
            raise Unrecorded("a recording answers only server dry runs; this apply would change the cluster")
        answer: dict[str, Any] = self._answer("apply", apply_key(obj, force))
        return answer

    def __getattr__(self, name: str) -> Any:
        raise Unrecorded(f"the recording holds no answers to KubeApi.{name}")


def recorded(name: str, label: str, strategy: Strategy) -> tuple[list[dict[str, Any]], LiveState]:
    """The set of recording `name`'s read `label` and the live state read_lws makes of the recording for
    `strategy` (what the Kubernetes target hands the plan builders)."""
    recording = load(name)
    api = RecordedApi(recording["reads"])
    return recorded_set(recording, label), LiveState(read_lws(api, recording["lws"][label], strategy))
