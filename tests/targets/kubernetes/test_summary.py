"""`status` and `watch --groups` at 64 groups (targets/kubernetes/summary.py, view.py): the pods collapse by state
with counts, the healthy groups fold into one row, and every group with a sick, cordoned or unknown tray or a
ComputeDomain not Ready keeps its own row; `--details` lists every pod and tray; 4 groups are shown whole."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from k3deploy.fault_guard.health import GroupHealth, TrayHealth
from k3deploy.targets.kubernetes.summary import (
    backend_lines,
    fold_groups,
    group_ranges,
    pod_states,
    summarised,
)
from k3deploy.targets.kubernetes.view import SUMMARY_NOTE, groups_table, kubernetes_status_view

GROUPS = 64
TRAYS = 4


def _tray(group: int, worker: int, **state: Any) -> TrayHealth:
    tray: TrayHealth = {"node": f"gb300-{group * TRAYS + worker}", "health": "healthy", "faults": [], "cordoned": False}
    tray.update(state)  # type: ignore[typeddict-item]
    return tray


def _groups(domain: bool = False) -> list[GroupHealth]:
    """64 groups of 4 trays: group 5 has a sick tray guard cordoned, group 9 a tray someone cordoned, group 40 a tray
    whose Node could not be read; the rest healthy."""
    rows: list[GroupHealth] = []
    for g in range(GROUPS):
        trays = [_tray(g, w) for w in range(TRAYS)]
        if g == 5:
            trays[2] = _tray(g, 2, health="sick", faults=["GpuNvlinkWatch: down"], cordoned=True, guard_cordoned=True)
        if g == 9:
            trays[0] = _tray(g, 0, cordoned=True)
        if g == 40:
            trays[3] = {"node": trays[3]["node"], "health": "unknown", "faults": [], "cordoned": None}
        cd = {"name": "cd", "status": "Ready", "trays_ready": TRAYS, "trays": TRAYS} if domain else None
        rows.append({"group": str(g), "compute_domain": cd, "trays": trays})  # type: ignore[typeddict-item]
    return rows


def _pods() -> list[dict[str, Any]]:
    pods = []
    for g in range(GROUPS):
        for w in range(TRAYS):
            pending = g == 63 and w == 3
            pods.append(
                {
                    "name": f"kimi-{g}" + (f"-{w}" if w else ""),
                    "group": str(g),
                    "worker": str(w),
                    "node": None if pending else f"gb300-{g * TRAYS + w}",
                    "clique": "c1",
                    "phase": "Pending" if pending else "Running",
                    "ready": not pending,
                    "restarts": 1 if g == 7 else 0,
                    "weights": None,
                }
            )
    return pods


def _report(groups: list[GroupHealth], pods: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "deployment": "kimi",
        "namespace": "kimi-k3",
        "deployed": True,
        "ready": False,
        "objects": [],
        "pods": pods,
        "groups": groups,
        "endpoint": "",
        "revision": {},
        "smoke": None,
        "admission": [
            {"lws": "kimi", "group": g, "workload": f"w{g}", "admitted": g != 63, "reason": "Pending", "message": "q"}
            for g in range(GROUPS)
        ],
    }


def _text(renderable: Any) -> str:
    console = Console(width=200, record=True)
    console.print(renderable)
    return console.export_text()


def test_group_ranges_run_consecutive_groups_together() -> None:
    assert group_ranges(["3", "0", "1", "2", "9"]) == "0-3, 9"
    assert group_ranges([]) == "-"
    assert group_ranges(["1", "x"]) == "1, x"


def test_pods_collapse_by_phase_and_readiness_with_counts_restarts_and_groups() -> None:
    states = pod_states(_pods())
    assert [(s.phase, s.ready, s.pods, s.restarts, s.groups) for s in states] == [
        ("Running", True, 255, 4, "0-63"),
        ("Pending", False, 1, 0, "63"),
    ]


def test_healthy_groups_fold_into_one_row_and_the_others_keep_theirs() -> None:
    folded, rest = fold_groups(_groups())
    [row] = folded
    assert (row.count, row.trays, row.compute_domain) == (61, 244, False)
    assert row.groups == "0-4, 6-8, 10-39, 41-63"
    assert [g["group"] for g in rest] == ["5", "9", "40"]
    # A ComputeDomain Ready on only some trays keeps a group out of the fold.
    domains = _groups(domain=True)
    domains[0]["compute_domain"] = {"name": "cd", "status": "NotReady", "trays_ready": 3, "trays": 4}
    folded, rest = fold_groups(domains)
    assert [g["group"] for g in rest] == ["0", "5", "9", "40"] and folded[0].compute_domain is True


def test_status_at_64_groups_is_a_few_rows_and_details_lists_every_pod_and_tray() -> None:
    report = _report(_groups(), _pods())
    text = _text(kubernetes_status_view(report))
    lines = text.splitlines()
    assert len(lines) < 30, text
    assert "serving pods by state" in text
    assert any(line.split()[:5] == ["Running", "yes", "255", "4", "0-63"] for line in lines), text
    assert "0-4, 6-8, 10-39, 41-63 (61 groups)  -              244 trays, all healthy" in text
    assert "gb300-22 sick (GpuNvlinkWatch: down) cordoned by guard" in text
    assert "gb300-36 healthy cordoned" in text and "gb300-163 unknown" in text
    assert "kueue: 63 group(s) admitted (0-62)" in text and "kueue: kimi group 63 queued (Pending: q)" in text
    assert SUMMARY_NOTE in text and "kimi-12-3" not in text
    full = _text(kubernetes_status_view(report, details=True))
    assert all(f"kimi-{g}-3" in full for g in range(GROUPS))
    assert all(f"gb300-{t} healthy" in full for t in (0, 100, 255))
    assert SUMMARY_NOTE not in full and "kimi kimi group 0 admitted" not in full


def test_four_groups_are_shown_whole() -> None:
    groups, pods = _groups()[:4], [p for p in _pods() if int(p["group"]) < 4]
    assert not summarised(4, details=False) and summarised(5, details=False) and not summarised(5, details=True)
    text = _text(kubernetes_status_view(_report(groups, pods)))
    assert "kimi-3-3" in text and "gb300-15 healthy" in text and SUMMARY_NOTE not in text


def test_watch_groups_table_summarises_the_same_way() -> None:
    text = _text(groups_table(_groups(), details=False))
    assert len(text.splitlines()) == 1 + 1 + 3 * TRAYS  # header, the fold, groups 5, 9 and 40 a line per tray
    assert "(61 groups)" in text
    assert "(61 groups)" not in _text(groups_table(_groups(), details=True))


def test_the_backends_of_64_leaders_are_one_line_per_backend() -> None:
    backends = {f"kimi-{g}": "nccl" if g else "unknown" for g in range(GROUPS)}
    assert backend_lines(backends, details=False) == [
        "all-reduce backend: nccl (63 leaders' logs)",
        "all-reduce backend: unknown (1 leaders' logs)",
    ]
    assert len(backend_lines(backends, details=True)) == GROUPS
    assert backend_lines({"kimi-0": "nccl"}, details=False) == ["all-reduce backend (kimi-0 log): nccl"]
