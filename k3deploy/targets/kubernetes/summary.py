"""`status` and `watch --groups` at fleet scale: the serving pods and groups collapsed by state, with counts (pure:
report rows in, summary rows out). A release of more than `SUMMARY_ABOVE` groups is summarised unless `--details`;
a group with a tray that is not healthy, or cordoned, or a ComputeDomain not Ready on all its trays, is never folded
into a count: it keeps its own row. `-o json` always carries every pod and tray."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from k3deploy.fault_guard.health import GroupHealth
from k3deploy.preflight.placement import index_ranges

#: More groups than this and the tables summarise (4 groups are 16 pod rows: still one screen).
SUMMARY_ABOVE = 4


def summarised(groups: int, details: bool) -> bool:
    """Whether tables of `groups` groups are summarised."""
    return not details and groups > SUMMARY_ABOVE


def group_ranges(indices: Iterable[str]) -> str:
    """Group indices (LeaderWorkerSet group labels) in few words: consecutive runs as `a-b`; `-` for none."""
    listed = set(map(str, indices))
    numbered = index_ranges([int(i) for i in listed if i.isdigit()])
    others = sorted(i for i in listed if not i.isdigit())
    return ", ".join([*([numbered] if numbered != "-" else []), *others]) or "-"


@dataclass(frozen=True)
class PodState:
    """The serving pods in one state: how many, their restarts summed, the groups they belong to."""

    phase: str
    ready: bool
    pods: int
    restarts: int
    groups: str


def pod_states(pods: Iterable[Mapping[str, object]]) -> list[PodState]:
    """The pods of a status report collapsed by (phase, ready), the most pods first."""
    count: Counter[tuple[str, bool]] = Counter()
    restarts: Counter[tuple[str, bool]] = Counter()
    groups: dict[tuple[str, bool], set[str]] = {}
    for pod in pods:
        key = (str(pod.get("phase")), bool(pod.get("ready")))
        count[key] += 1
        restarts[key] += int(str(pod.get("restarts") or 0))
        if pod.get("group") is not None:
            groups.setdefault(key, set()).add(str(pod["group"]))
    return [
        PodState(phase, ready, n, restarts[(phase, ready)], group_ranges(groups.get((phase, ready), set())))
        for (phase, ready), n in count.most_common()
    ]


def healthy(group: GroupHealth) -> bool:
    """Every tray healthy and schedulable, and the ComputeDomain (when there is one) Ready on every tray."""
    domain = group.get("compute_domain")
    trays_ok = all(t.get("health") == "healthy" and not t.get("cordoned") for t in group["trays"])
    domain_ok = domain is None or (domain["status"] == "Ready" and domain["trays_ready"] == domain["trays"])
    return trays_ok and domain_ok


@dataclass(frozen=True)
class HealthyGroups:
    """The healthy groups folded into one row: their indices, how many, their trays, whether they have a
    ComputeDomain."""

    groups: str
    count: int
    trays: int
    compute_domain: bool


def fold_groups(groups: list[GroupHealth]) -> tuple[list[HealthyGroups], list[GroupHealth]]:
    """The healthy groups as summary rows (with and without a ComputeDomain apart), and every other group whole."""
    folded: dict[bool, list[GroupHealth]] = {}
    rest = []
    for group in groups:
        if healthy(group):
            folded.setdefault(group.get("compute_domain") is not None, []).append(group)
        else:
            rest.append(group)
    rows = [
        HealthyGroups(
            groups=group_ranges(g["group"] for g in members),
            count=len(members),
            trays=sum(len(g["trays"]) for g in members),
            compute_domain=has_domain,
        )
        for has_domain, members in sorted(folded.items())
    ]
    return rows, rest


def backend_lines(backends: Mapping[str, str], details: bool) -> list[str]:
    """`status`'s all-reduce backend lines: one per leader's log, or, for more than SUMMARY_ABOVE leaders and not
    `details`, one per backend with how many leaders' logs name it."""
    if not summarised(len(backends), details):
        return [f"all-reduce backend ({pod} log): {backend}" for pod, backend in backends.items()]
    counts = Counter(backends.values())
    return [f"all-reduce backend: {backend} ({n} leaders' logs)" for backend, n in counts.most_common()]
