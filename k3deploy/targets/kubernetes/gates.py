"""Which template passed which group gate, per release, and whether the group gate can run at all.

The record is a ConfigMap k3deploy owns (`<release>-k3deploy-gates`, marked like the revision history): for each of
the last few LeaderWorkerSet templates (a digest of the rendered `spec.leaderWorkerTemplate`), the groups whose
smoke through their leader passed on it and when. The group-by-group walk (targets/kubernetes/upgrade.py) smokes every group
that has not passed on the live template, rolled or not: a re-run after an interrupted rollback, with the failed
template still live, gates again what failed instead of exiting 0 on a template no gate passed.

The walk needs `rollingUpdateConfiguration.partition` (LWS v0.7.0 and later): without it the controller rolls every
group as soon as the new template is applied, so no group could be gated before the next one goes.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

from k3deploy.errors import EXIT_ENVIRONMENT, K3DeployError
from k3deploy.kobject import JsonObject, KubeObject
from k3deploy.kube.port import KubePort
from k3deploy.rollout.groups import PARTITION_SINCE, partitioned
from k3deploy.rollout.ownership import mark

GATES_KEY = "gates.json"
#: Templates kept in the record (oldest dropped first).
GATES_LIMIT = 5


def gates_name(release: str) -> str:
    """Name of the gate record ConfigMap of a release."""
    return f"{release}-k3deploy-gates"


def template_digest(lws: KubeObject) -> str:
    """A digest of a rendered LeaderWorkerSet's pod templates (what a group runs; replicas and partition left out)."""
    template = (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:16]


def passed_groups(record: list[JsonObject], digest: str) -> set[int] | None:
    """The groups whose gate passed on template `digest`; None when no walk ever began on it."""
    for entry in record:
        if entry.get("template") == digest:
            return {int(g) for g in (entry.get("groups") or {}) if str(g).isdigit()}
    return None


def with_entry(record: list[JsonObject], digest: str, group: int | None, now: str) -> list[JsonObject]:
    """The record with `digest` as its newest template (begun), `group` passed on it unless None; cut to GATES_LIMIT."""
    groups: dict[str, str] = {}
    rest = []
    for entry in record:
        if entry.get("template") == digest:
            groups = dict(entry.get("groups") or {})
        else:
            rest.append(entry)
    if group is not None:
        groups[str(group)] = now
    return [*rest, {"template": digest, "groups": groups}][-GATES_LIMIT:]


def read_gates(api: KubePort, namespace: str, release: str) -> list[JsonObject]:
    """The record, oldest template first (empty when there is none or it does not parse)."""
    found = api.get("v1", "ConfigMap", gates_name(release), namespace)
    try:
        entries = json.loads(((found or {}).get("data") or {}).get(GATES_KEY) or "[]")
    except ValueError:
        return []
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def record(api: KubePort, namespace: str, release: str, lws: KubeObject, group: int | None) -> None:
    """Record that a walk began on `lws`'s template (`group` None) or that `group` passed its gate on it."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    entries = with_entry(read_gates(api, namespace, release), template_digest(lws), group, now)
    labels, annotations = mark(release, namespace)
    api.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": gates_name(release),
                "namespace": namespace,
                "labels": {"app.kubernetes.io/managed-by": "k3deploy", "app.kubernetes.io/instance": release, **labels},
                "annotations": annotations,
            },
            "data": {GATES_KEY: json.dumps(entries, sort_keys=True)},
        },
        force=True,
    )


def ungated(api: KubePort, namespace: str, release: str, lws: KubeObject) -> list[int]:
    """Groups of `lws` (highest first) whose gate has not passed on its template, when a walk began on it (a
    template no walk began on, a first install's, is gated by the pipeline's smoke alone): none otherwise."""
    done = passed_groups(read_gates(api, namespace, release), template_digest(lws))
    if done is None:
        return []
    replicas = int((lws.get("spec") or {}).get("replicas", 1))
    return [g for g in range(replicas - 1, -1, -1) if g not in done]


def check_partition(api: KubePort, lws: KubeObject) -> None:
    """Refuse (exit 3) a group-by-group walk the cluster cannot hold: the served CRD prunes
    rollingUpdateConfiguration.partition (a server dry run of the partitioned object drops the field; the profile's
    LWS, 0.9 or later, has it)."""
    held = partitioned(lws, int((lws.get("spec") or {}).get("replicas", 1)))
    dry = api.apply(held, force=True, dry_run=True)
    config = ((dry.get("spec") or {}).get("rolloutStrategy") or {}).get("rollingUpdateConfiguration") or {}
    if "partition" not in config:
        raise K3DeployError(
            f"cannot roll LeaderWorkerSet {lws['metadata']['name']} one group at a time: the cluster's "
            "LeaderWorkerSet CRD drops rollingUpdateConfiguration.partition (LWS before "
            f"v{'.'.join(map(str, PARTITION_SINCE))}): every group would roll at once, none smoke-tested first",
            hint="upgrade LWS to v0.9+ (and set kubernetes.lws_version), or --skip-smoke to let the controller roll "
            "every group with no per-group gate",
            exit_code=EXIT_ENVIRONMENT,
        )
