"""The fleet plane's parts that need no plane: racks of GB300 trays (each rack its own clique, labelled as GPU
Feature Discovery labels a tray), the release size measured per fleet, the audit log's count of one user's requests,
the split of a write command's requests into structural and run-time ones with the run-time ones' bounds, and the
launcher's refusal of a malformed fleet."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.realk8s import audit
from tests.realk8s.binaries import REPO_ROOT
from tests.realk8s.fleet import replicas_for
from tests.realk8s.objects import clique_ids, gb300_node, nvl72_racks
from tests.realk8s.run_time import LEASE_SLACK, over_run_time, split


def test_each_rack_is_one_clique_of_trays_labelled_as_a_gb300_tray() -> None:
    nodes = nvl72_racks(3, 18, "v1.34.1")
    assert len(nodes) == 54
    by_clique = Counter(n["metadata"]["labels"]["nvidia.com/gpu.clique"] for n in nodes)
    assert by_clique == dict.fromkeys(clique_ids(3), 18)
    first = nodes[0]
    assert first["metadata"]["name"] == "gb300-r01-t01" and nodes[-1]["metadata"]["name"] == "gb300-r03-t18"
    assert first == gb300_node("gb300-r01-t01", clique_ids(3)[0], "v1.34.1")
    assert len({n["metadata"]["name"] for n in nodes}) == 54


def test_the_release_measured_is_the_issues_size_capped_by_four_groups_a_rack() -> None:
    assert [replicas_for(r) for r in (2, 4, 8, 16)] == [2, 8, 16, 32]
    assert replicas_for(1) == 4 and replicas_for(3) == 12


def _event(user: str, verb: str, stage: str = "RequestReceived", **ref: str) -> str:
    event = {"stage": stage, "verb": verb, "user": {"username": user}, "requestURI": "/apis?timeout=32s"}
    if ref:
        event["objectRef"] = ref
    return json.dumps(event) + "\n"


def test_the_audit_count_is_the_users_requests_past_the_offset_by_verb_and_resource(tmp_path: Path) -> None:
    log = audit.log_path(tmp_path)
    log.parent.mkdir()
    log.write_text(_event("bench", "list", resource="nodes"))
    since = audit.offset(log)
    with log.open("a") as out:
        out.write(_event("bench", "list", resource="nodes"))
        out.write(_event("bench", "get", resource="pods", subresource="log"))
        out.write(_event("bench", "get", resource="pods", subresource="log"))
        out.write(_event("bench", "get"))  # discovery: no objectRef
        out.write(_event("kwok", "list", resource="nodes"))
        out.write(_event("bench", "list", stage="ResponseComplete", resource="nodes"))
    assert audit.count(log, since, "bench") == {
        ("list", "nodes"): 1,
        ("get", "pods/log"): 2,
        ("get", "/apis"): 1,
    }
    assert audit.policy(["bench"])["rules"][0]["users"] == ["bench"]
    assert audit.flags(tmp_path, []) == []


def test_renewals_and_watches_are_run_time_and_bounded_by_the_run() -> None:
    requests = Counter(
        {
            ("update", "leases"): 3,
            ("create", "leases"): 1,
            ("patch", "leases"): 1,
            ("watch", "pods"): 4,
            ("list", "pods"): 2,
            ("patch", "pods"): 4,
        }
    )
    structural, run_time = split(requests)
    assert run_time == {("update", "leases"): 3, ("watch", "pods"): 4}
    assert structural + run_time == requests
    # 61 s: the lease taken and renewed at 20 and 40 s (or 60); two pod streams, each opened once and re-opened twice.
    assert over_run_time(requests, 61) == []
    # 39 s: one renewal, at 20 s.
    assert over_run_time(requests + Counter({("update", "leases"): 1}), 39) == [
        f"update leases: 4 in 39.0s (renewal every 20s, +{LEASE_SLACK})"
    ]
    # 15 s: no renewal (the lease taken, one retried); each stream opened, and re-opened at most once.
    short = requests - Counter({("update", "leases"): 1})
    assert over_run_time(short, 15) == []
    assert over_run_time(short + Counter({("watch", "pods"): 1}), 15) == [
        "watch pods: 5 in 15.0s from 2 lists (2 opens each)"
    ]
    # A watch of a resource never listed: no stream could have started it.
    assert over_run_time(Counter({("watch", "nodes"): 1}), 15) == [
        "watch nodes: 1 in 15.0s from 0 lists (2 opens each)"
    ]


def test_the_launcher_refuses_a_fleet_without_trays() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.realk8s", "--kubeconfig", "/dev/null", "--racks", "2", "--trays-per-rack", "0"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines()[0].startswith("error: --racks")
    assert done.stderr.splitlines()[1].startswith("hint: ")
