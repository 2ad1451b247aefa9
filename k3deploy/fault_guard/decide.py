"""What `k3deploy guard` does about sick trays under a release's serving groups (pure: a snapshot in, actions out).

Per group: a tray under it with a fault (signals.py) makes the group *act* (cordon its sick trays that are not
cordoned yet, delete its pods so LeaderWorkerSet recreates the group elsewhere), unless

- the rate limit is spent: at most `max_cordons_per_hour` trays cordoned by guard in the last hour (those the
  snapshot shows with guard's annotation, and those this pass already plans);
- no clique would be left with room for the group: a group of `group_size` trays needs one clique whose free,
  healthy, schedulable trays (its own healthy trays count: its pods go) number `group_size` after the cordon; the last
  such room is never taken away, the group then *waits* with an alert instead (deleting it could only leave it Pending);

and `confirm` keeps only what a second, later snapshot still shows (a tray healthy again by then is left alone).
A leader whose /health fails while its group is started makes the group act with nothing to cordon (a restart), as
does a group stranded in a clique too small for it (`stranded_in`).
Nothing here ever uncordons.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

#: Seconds in the window of the cordon rate limit.
HOUR_S = 3600.0
#: Reasons, as the `reason` label of k3deploy_guard_actions_total and Events say them.
REASON_TRAY = "TrayUnhealthy"
REASON_LEADER = "LeaderUnhealthy"
REASON_STRANDED = "GroupStranded"
REASON_RATE = "RateLimited"
REASON_NO_ROOM = "NoCliqueWithRoom"


@dataclass(frozen=True)
class Tray:
    """One GPU node as guard sees it."""

    name: str
    clique: str
    #: `spec.unschedulable`, by anyone.
    cordoned: bool = False
    #: What marks it sick, in words (empty: healthy).
    faults: tuple[str, ...] = ()
    #: When guard cordoned it (epoch seconds, from guard's annotation), else None.
    guard_cordoned_at: float | None = None
    #: It holds a GPU pod that is not of this release's groups: no room there.
    taken_by_other: bool = False


@dataclass(frozen=True)
class Group:
    """One serving group of the release: its index, its pods and the trays they run on."""

    index: int
    pods: tuple[str, ...]
    trays: tuple[str, ...]
    #: Its leader's /health failed while every pod of it was Running and started.
    leader_unhealthy: bool = False
    #: Some of its pods cannot be scheduled (PodScheduled False, Unschedulable).
    unschedulable: bool = False


@dataclass(frozen=True)
class Snapshot:
    """What one read of the cluster showed: the trays by name, the groups, their size, the time of the read."""

    trays: Mapping[str, Tray]
    groups: tuple[Group, ...]
    group_size: int
    now: float


@dataclass(frozen=True)
class Decision:
    """What guard does for one group: `act` (cordon `cordon`, delete the group's pods) or `wait` (alert only)."""

    group: int
    verdict: Literal["act", "wait"]
    reason: str
    #: The group's sick trays and why each is sick.
    sick: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: The sick trays to cordon now (those not cordoned yet).
    cordon: tuple[str, ...] = ()
    #: Why it waits (None when it acts).
    why_waiting: str | None = None
    leader_unhealthy: bool = False
    #: The clique its placed pods hold has no room for the whole group: the rest can never be scheduled there.
    stranded: str | None = None

    def describe(self) -> str:
        """One line: what and why."""
        where = "; ".join(f"{tray}: {', '.join(why)}" for tray, why in sorted(self.sick.items()))
        if not where and self.stranded:
            where = f"stranded in clique {self.stranded}, which has no room for the whole group"
        cause = where or "its leader's /health fails while every pod is started"
        if self.verdict == "wait":
            return f"group {self.group}: {cause}; waiting: {self.why_waiting}"
        todo = f"cordon {', '.join(self.cordon)} and " if self.cordon else ""
        return f"group {self.group}: {cause}; {todo}delete its pods"


def recent_cordons(trays: Iterable[Tray], now: float) -> int:
    """Trays guard cordoned within the last hour."""
    return sum(1 for t in trays if t.guard_cordoned_at is not None and now - t.guard_cordoned_at < HOUR_S)


def room_by_clique(snapshot: Snapshot, group: Group, cordon: Iterable[str]) -> dict[str, int]:
    """Clique -> trays the group could land on once `cordon` is cordoned and its pods are gone."""
    others = {tray for g in snapshot.groups if g.index != group.index for tray in g.trays}
    leaving = set(cordon)
    room: dict[str, int] = {}
    for tray in snapshot.trays.values():
        free = not (tray.cordoned or tray.faults or tray.taken_by_other or tray.name in others or tray.name in leaving)
        room[tray.clique] = room.get(tray.clique, 0) + int(free)
    return room


def stranded_in(snapshot: Snapshot, group: Group) -> str | None:
    """The clique holding the group's placed pods when some of its pods cannot be scheduled and that clique has no
    room for the whole group: the pod affinity keeps the rest to that clique, so they never will be. The scheduler
    places a group's pods one at a time (no gang admission), so a recreated group's leader can land in a clique
    too small for it (the one a sick tray was just cordoned in); deleting the group again lets it land elsewhere."""
    if not group.unschedulable:
        return None
    cliques = {snapshot.trays[t].clique for t in group.trays if t in snapshot.trays}
    if len(cliques) != 1:
        return None
    [clique] = cliques
    return clique if room_by_clique(snapshot, group, ()).get(clique, 0) < snapshot.group_size else None


def decide(snapshot: Snapshot, max_cordons_per_hour: int) -> list[Decision]:
    """A decision for every group with a sick tray or an unhealthy leader, by group index."""
    decisions: list[Decision] = []
    planned = 0
    spent = recent_cordons(snapshot.trays.values(), snapshot.now)
    for group in sorted(snapshot.groups, key=lambda g: g.index):
        sick = {
            name: snapshot.trays[name].faults
            for name in sorted(set(group.trays))
            if name in snapshot.trays and snapshot.trays[name].faults
        }
        stranded = None if sick else stranded_in(snapshot, group)
        if not sick and not group.leader_unhealthy and stranded is None:
            continue
        cordon = tuple(name for name in sick if not snapshot.trays[name].cordoned)
        leader = group.leader_unhealthy
        if cordon and spent + planned + len(cordon) > max_cordons_per_hour:
            why = (
                f"guard.max_cordons_per_hour is {max_cordons_per_hour} and {spent + planned} tray(s) were cordoned "
                f"by guard in the last hour; {len(cordon)} more would pass it"
            )
            decisions.append(
                Decision(
                    group.index, "wait", REASON_RATE, sick, why_waiting=why, leader_unhealthy=leader, stranded=stranded
                )
            )
            continue
        room = room_by_clique(snapshot, group, cordon)
        if not any(free >= snapshot.group_size for free in room.values()):
            counts = ", ".join(f"{clique} {free}" for clique, free in sorted(room.items())) or "no trays"
            why = f"no clique would keep room for a group of {snapshot.group_size} trays (free trays: {counts})"
            decisions.append(
                Decision(
                    group.index,
                    "wait",
                    REASON_NO_ROOM,
                    sick,
                    why_waiting=why,
                    leader_unhealthy=leader,
                    stranded=stranded,
                )
            )
            continue
        planned += len(cordon)
        reason = REASON_TRAY if sick else REASON_LEADER if leader else REASON_STRANDED
        decisions.append(
            Decision(group.index, "act", reason, sick, cordon=cordon, leader_unhealthy=leader, stranded=stranded)
        )
    return decisions


def confirm(first: Iterable[Decision], second: Iterable[Decision]) -> list[Decision]:
    """The acts of `second` (a later read) that `first` already showed: only trays sick in both are cordoned or
    counted, and a group whose fault cleared in between is left alone. A wait of `second` stands as it is."""
    seen = {d.group: d for d in first if d.verdict == "act"}
    out: list[Decision] = []
    for now in second:
        if now.verdict == "wait":
            out.append(now)
            continue
        before = seen.get(now.group)
        if before is None:
            continue
        sick = {tray: why for tray, why in now.sick.items() if tray in before.sick}
        leader = now.leader_unhealthy and before.leader_unhealthy
        stranded = now.stranded if now.stranded and now.stranded == before.stranded else None
        if not sick and not leader and not stranded:
            continue
        cordon = tuple(tray for tray in now.cordon if tray in sick)
        reason = REASON_TRAY if sick else REASON_LEADER if leader else REASON_STRANDED
        out.append(
            Decision(
                group=now.group,
                verdict="act",
                reason=reason,
                sick=sick,
                cordon=cordon,
                leader_unhealthy=leader,
                stranded=None if sick else stranded,
            )
        )
    return out


def unhealthy_trays(snapshot: Snapshot) -> int:
    """Sick trays under the release's groups (the k3deploy_guard_unhealthy_trays gauge)."""
    under = {tray for g in snapshot.groups for tray in g.trays}
    return sum(1 for name in under if name in snapshot.trays and snapshot.trays[name].faults)
