"""Pure helpers of a group-by-group rollout: partitions, a group's pods and state, a leader's endpoint.

See targets/kubernetes/upgrade.py for what LeaderWorkerSet does on its own and what k3deploy adds.
"""

from __future__ import annotations

import copy
import string

from k3deploy.kobject import KubeObject
from k3deploy.lws import GROUP_INDEX_LABEL as GROUP_LABEL
from k3deploy.lws import NAME_LABEL, leader_name, leader_url
from k3deploy.lws import TEMPLATE_REVISION_LABEL as REVISION_LABEL
from k3deploy.profile.names import check_http_url
from k3deploy.rollout.readiness import is_fatal, pod_problems, pod_ready

#: The LWS release that has rollingUpdateConfiguration.partition (api/leaderworkerset/v1/leaderworkerset_types.go).
PARTITION_SINCE = (0, 7, 0)


def replicas_of(lws: KubeObject | None) -> int:
    """spec.replicas of a LeaderWorkerSet (1 when unset), 0 for none."""
    return 0 if lws is None else int((lws.get("spec") or {}).get("replicas", 1))


def partitioned(lws: KubeObject, partition: int) -> KubeObject:
    """A copy of `lws` whose rolling update leaves the groups below `partition` on their template."""
    out = copy.deepcopy(lws)
    strategy = out.setdefault("spec", {}).setdefault("rolloutStrategy", {"type": "RollingUpdate"})
    strategy.setdefault("rollingUpdateConfiguration", {})["partition"] = partition
    return out


def steps_groups(live: KubeObject | None, new: KubeObject) -> bool:
    """Whether an apply of `new` over `live` is walked group by group: both have the same N >= 2 groups (a first
    install, or a change of N, is left to the controller)."""
    return live is not None and replicas_of(live) == replicas_of(new) >= 2


def group_pods(pods: list[KubeObject], lws_name: str, group: int) -> list[KubeObject]:
    """The live (not terminating) pods of one group of the set."""
    return [
        p
        for p in pods
        if ((p.get("metadata") or {}).get("labels") or {}).get(NAME_LABEL) == lws_name
        and p["metadata"]["labels"].get(GROUP_LABEL) == str(group)
        and not p["metadata"].get("deletionTimestamp")
    ]


def group_state(pods: list[KubeObject], key: str, size: int) -> tuple[bool, str | None]:
    """(the group runs template `key` on all `size` pods and they are Ready, a fatal problem of a new pod or None)."""
    new = [p for p in pods if ((p.get("metadata") or {}).get("labels") or {}).get(REVISION_LABEL) == key]
    for pod in new:
        for problem in pod_problems(pod):
            if is_fatal(problem):
                return False, f"pod {pod['metadata']['name']}: {problem.reason}" + (
                    f": {problem.message}" if problem.message else ""
                )
    done = bool(key) and len(new) == size == len(pods) and all(pod_ready(p) for p in new)
    return done, None


#: The fields a --group-endpoint template may name.
TEMPLATE_FIELDS = ("pod", "lws", "group", "namespace")


def check_group_template(template: str) -> str:
    """`template` when it names only TEMPLATE_FIELDS and fills in to an http(s) URL; ValueError saying why not.

    Checked before anything is applied: a template that fails only when the first group is smoked would leave the
    walk half done."""
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as exc:
        raise ValueError(f"{template!r} is not a valid template: {exc}") from None
    unknown = sorted(n for n in names if n not in TEMPLATE_FIELDS)
    if unknown:
        raise ValueError(
            f"{template!r} names {', '.join('{' + n + '}' for n in unknown)}; it may use only "
            + ", ".join("{" + f + "}" for f in TEMPLATE_FIELDS)
        )
    try:
        sample = template.format(pod="kimi-0", lws="kimi", group=0, namespace="default")
    except (ValueError, IndexError, KeyError, AttributeError) as exc:
        raise ValueError(f"{template!r} is not a valid template: {exc}") from None
    check_http_url(sample)
    return template


def group_endpoint(template: str | None, lws_name: str, namespace: str, group: int, port: int) -> str:
    """Where a group's leader serves: `template` with {pod}, {lws}, {group}, {namespace} filled in, else the leader's
    DNS name under the LWS headless Service (subdomainPolicy Shared: `<lws>-<group>.<lws>`,
    kubernetes-sigs/lws api/leaderworkerset/v1/leaderworkerset_types.go), reachable from inside the cluster."""
    pod = leader_name(lws_name, group)
    if template:
        return template.format(pod=pod, lws=lws_name, group=group, namespace=namespace).rstrip("/")
    return leader_url(lws_name, namespace, group, port)
