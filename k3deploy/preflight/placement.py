"""Where a profile's serving groups can land: each group needs `parallel.nodes` trays of one NVLink clique.
Pure: the caller reads the nodes (preflight/cluster.py, `plan --cluster`).

A tray is a GPU node that can take one pod of a group: Ready, schedulable, matching the node selector, with
`parallel.gpus_per_node` GPUs free and room for the serving pod's CPU and memory requests (what other pods request
counted against the node's allocatable, as the scheduler's NodeResourcesFit does). The groups are dealt to the clique with the most free trays left, one at a
time, which is where the LeaderWorkerSet's preferred anti-affinity between groups steers the scheduler while a
clique holds no group (templates/leaderworkerset.yaml.j2); the count of groups that fit does not depend on the order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from k3deploy.kobject import KubeObject
from k3deploy.preflight.facts import NodeFacts, cpu_milli
from k3deploy.profile.model import Profile
from k3deploy.profile.names import quantity_bytes

GIB = 2**30
#: The clique name used when the profile needs no NVLink domain (any trays do).
ANY_CLIQUE = "(any)"


@dataclass(frozen=True)
class CliquePlacement:
    """One clique: its free trays, the groups dealt to it and the trays they take."""

    clique: str
    trays: list[str]
    groups: list[int] = field(default_factory=list)
    used: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)

    @property
    def free_after(self) -> int:
        """Trays left free once the groups dealt here run."""
        return len(self.trays) - len(self.used)


@dataclass(frozen=True)
class Placement:
    """How `replicas` groups of `nodes` trays land on the cluster's cliques."""

    replicas: int
    nodes: int
    nvlink: bool
    cliques: list[CliquePlacement]
    #: GPU nodes that are not trays and have no clique to be counted under ("name: why").
    unassigned: list[str] = field(default_factory=list)

    @property
    def placed(self) -> int:
        """Groups that fit."""
        return sum(len(c.groups) for c in self.cliques)

    @property
    def fits(self) -> bool:
        """Whether every group fits."""
        return self.placed >= self.replicas

    def room(self, clique: CliquePlacement) -> int:
        """How many more groups `clique` could take once the groups dealt to it run."""
        return clique.free_after // self.nodes if self.nodes > 0 else 0

    @property
    def more(self) -> int:
        """How many more groups the cluster could take beyond `replicas`: each clique's room, summed (a group never
        spans cliques, so trays left over in several cliques do not add up to one)."""
        return sum(self.room(c) for c in self.cliques)

    def homes(self) -> list[tuple[int, str, list[str]]]:
        """Each placed group, by index: the clique it would land in and the trays it would take there."""
        found = []
        for clique in self.cliques:
            for k, index in enumerate(clique.groups):
                found.append((index, clique.clique, clique.used[k * self.nodes : (k + 1) * self.nodes]))
        return sorted(found)

    def as_dict(self) -> dict[str, object]:
        """Everything `plan --cluster -o json` says of the placement: the cliques as dealt (each with its room for
        more), every placed group's clique and trays, how many fit and how many more could."""
        cliques = [dataclasses.asdict(c) | {"free_after": c.free_after, "room": self.room(c)} for c in self.cliques]
        return {
            "replicas": self.replicas,
            "nodes": self.nodes,
            "nvlink": self.nvlink,
            "placed": self.placed,
            "fits": self.fits,
            "more": self.more,
            "groups": [{"group": i, "clique": c, "trays": t} for i, c, t in self.homes()],
            "cliques": cliques,
            "unassigned": self.unassigned,
        }

    def lacks(self, clique: CliquePlacement) -> str:
        """What a clique lacks to take one more group, in words."""
        short = self.nodes - clique.free_after
        return f"{clique.free_after} free tray(s), {short} short of a group of {self.nodes}"


def exclusion(profile: Profile, node: NodeFacts) -> str | None:
    """Why `node` cannot take one pod of a group, or None when it can."""
    need = profile.parallel.gpus_per_node
    if not node.ready:
        return "not Ready"
    if node.unschedulable:
        return "cordoned"
    for key, value in profile.kubernetes.node_selector.items():
        if node.labels.get(key) != value:
            return f"{key}={node.labels.get(key, '<unset>')}, not {value}"
    if node.free_gpus < need:
        return f"{node.free_gpus} of {node.allocatable_gpus} GPUs free, needs {need}"
    return _short_of_cpu_or_memory(profile, node)


def serving_pod_requests(profile: Profile) -> tuple[int, int]:
    """CPU (millicores) and memory (bytes) one serving pod requests: its vllm container's, which the scheduler counts
    (its init containers ask for far less: 100m and 256Mi at most, templates/leaderworkerset.yaml.j2)."""
    kube = profile.kubernetes
    return cpu_milli(kube.cpu_request), quantity_bytes(kube.memory_request)


def _short_of_cpu_or_memory(profile: Profile, node: NodeFacts) -> str | None:
    """Why the node's free CPU or memory cannot take a serving pod; None when it can or the node does not say."""
    cpu, memory = serving_pod_requests(profile)
    kube = profile.kubernetes
    free_cpu, free_memory = node.free_cpu_milli, node.free_memory_bytes
    if free_cpu is not None and free_cpu < cpu:
        return (
            f"{free_cpu / 1000:g} of {(node.allocatable_cpu_milli or 0) / 1000:g} CPUs free, the serving pod "
            f"requests {kube.cpu_request} (kubernetes.cpu_request)"
        )
    if free_memory is not None and free_memory < memory:
        return (
            f"{free_memory / GIB:.0f} of {(node.allocatable_memory_bytes or 0) / GIB:.0f} GiB memory free, the "
            f"serving pod requests {kube.memory_request} (kubernetes.memory_request)"
        )
    return None


def pinned_clique(profile: Profile, objects: Sequence[KubeObject] = ()) -> str | None:
    """The clique the serving pods are pinned to as rendered: the clique label in the LeaderWorkerSets' pod templates'
    nodeSelector (every group's pods alike), else `kubernetes.clique` when nothing was rendered; None: any clique."""
    label = profile.kubernetes.clique_label
    for obj in objects:
        if obj.get("kind") != "LeaderWorkerSet":
            continue
        template = (obj.get("spec") or {}).get("leaderWorkerTemplate") or {}
        for pod in (template.get("leaderTemplate"), template.get("workerTemplate")):
            selector = ((pod or {}).get("spec") or {}).get("nodeSelector") or {}
            if label in selector:
                return str(selector[label])
        return None
    return profile.kubernetes.clique


def trays_by_clique(
    profile: Profile, nodes: list[NodeFacts], pinned: str | None = None
) -> tuple[dict[str, list[str]], dict[str, list[str]], list[str]]:
    """Free trays by clique, the other GPU nodes of each clique with why, and GPU nodes without a clique label.

    `pinned`: the one clique the pods may use (`pinned_clique`); the trays of every other are excluded."""
    label = profile.kubernetes.clique_label
    nvlink = bool(profile.hardware and profile.hardware.nvlink_domain)
    trays: dict[str, list[str]] = {}
    excluded: dict[str, list[str]] = {}
    unassigned: list[str] = []
    for node in [n for n in nodes if n.allocatable_gpus > 0]:
        why = exclusion(profile, node)
        clique = node.labels.get(label) if nvlink else ANY_CLIQUE
        if why is None and pinned is not None and node.labels.get(label) != pinned:
            why = f"the serving pods are pinned to {label}={pinned} (kubernetes.clique)"
        if clique is None:
            unassigned.append(f"{node.name}: {why or f'no {label} label'}")
        elif why is not None:
            excluded.setdefault(clique, []).append(f"{node.name}: {why}")
        else:
            trays.setdefault(clique, []).append(node.name)
    return trays, excluded, unassigned


def place(
    profile: Profile, nodes: list[NodeFacts], replicas: int | None = None, objects: Sequence[KubeObject] = ()
) -> Placement:
    """Deal `replicas` (default: parallel.replicas) groups to the cliques with the most free trays left, only to the
    clique the rendered `objects` pin the pods to when they pin one (`pinned_clique`)."""
    wanted = profile.parallel.replicas if replicas is None else replicas
    size = profile.parallel.nodes
    trays, excluded, unassigned = trays_by_clique(profile, nodes, pinned_clique(profile, objects))
    names = sorted(set(trays) | set(excluded))
    groups: dict[str, list[int]] = {name: [] for name in names}
    free = {name: len(trays.get(name, [])) for name in names}
    for index in range(wanted):
        roomy = [name for name in names if free[name] >= size]
        if not roomy:
            break
        best = min(roomy, key=lambda name: (-free[name], name))
        groups[best].append(index)
        free[best] -= size
    cliques = []
    for name in sorted(names, key=lambda n: (-len(trays.get(n, [])), n)):
        have = sorted(trays.get(name, []))
        cliques.append(
            CliquePlacement(
                clique=name,
                trays=have,
                groups=groups[name],
                used=have[: size * len(groups[name])],
                excluded=excluded.get(name, []),
            )
        )
    nvlink = bool(profile.hardware and profile.hardware.nvlink_domain)
    return Placement(replicas=wanted, nodes=size, nvlink=nvlink, cliques=cliques, unassigned=unassigned)


def index_ranges(indices: Sequence[int]) -> str:
    """Group indices in few words: runs of consecutive ones as `a-b` (`0-3, 8, 12-13`); `-` for none."""
    runs: list[list[int]] = []
    for index in sorted(indices):
        if runs and index == runs[-1][1] + 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs) or "-"


#: What a trap clique does to a group, said after the cliques `traps` names (preflight's WARN, `plan --cluster`).
TRAP_CONSEQUENCE = (
    "with kubernetes.gang_admission none and no kubernetes.clique, a leader the scheduler puts there waits forever "
    "for its workers"
)


def traps(profile: Profile, result: Placement) -> list[str]:
    """Cliques where a leader can land but its group can never form, each in words; empty when nothing can trap one.

    A clique with some free trays but fewer than a group needs takes a leader as readily as any other: the
    LeaderWorkerSet steers groups apart and its workers follow their leader's clique (templates/
    leaderworkerset.yaml.j2), but nothing keeps a leader off a clique too small for the rest. Only a group admitted
    whole (kubernetes.gang_admission kueue or volcano) or pinned to one clique (kubernetes.clique) is safe from it.
    """
    kube, need = profile.kubernetes, profile.parallel.nodes
    if not result.nvlink or kube.clique is not None or kube.gang_admission not in ("none", "auto"):
        return []
    return [
        f"clique {c.clique} has {len(c.trays)} free tray(s), fewer than the {need} a group needs"
        for c in result.cliques
        if 0 < len(c.trays) < need
    ]


def trap_hint(result: Placement) -> str:
    """How to keep leaders out of the trap cliques: pin the one group where it fits (when one group fits), admit
    groups whole, or keep the small cliques' trays out."""
    homes = [c.clique for c in result.cliques if c.groups]
    pin = (
        f"kubernetes.clique={homes[0]} (the group is pinned where it fits), or "
        if result.replicas == 1 and homes
        else ""
    )
    return (
        f"set {pin}kubernetes.gang_admission kueue or volcano (a group is admitted whole), or keep those trays out "
        "with kubernetes.node_selector"
    )
