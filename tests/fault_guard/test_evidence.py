"""The evidence bundle (k3deploy/fault_guard/evidence.py) and its file (evidence_file.py): content, bound, name,
and no file ever overwritten."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from k3deploy.fault_guard.decide import Decision
from k3deploy.fault_guard.evidence import CUT_MARK, bounded, build_bundle, bundle_name
from k3deploy.fault_guard.evidence_file import write_new

NOW = 1_796_468_400.0  # 2026-12-05T11:00:00Z
DECISION = Decision(0, "act", "TrayUnhealthy", {"a1": ("GpuNvlinkWatch: down",)}, cordon=("a1",))


def pod(name: str, node: str) -> dict:
    return {
        "metadata": {"name": name, "labels": {"leaderworkerset.sigs.k8s.io/group-index": "0"}},
        "spec": {"nodeName": node, "containers": [{"name": "vllm"}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "vllm", "restartCount": 1}]},
    }


def bundle(log: str = "tail\n") -> dict:
    return build_bundle(
        release="k3",
        namespace="ns",
        decision=DECISION,
        now=NOW,
        pods=[pod("k3-0-1", "a1"), pod("k3-0", "a0")],
        logs={("k3-0", "vllm", False): log, ("k3-0", "vllm", True): "before restart\n"},
        events=[
            {"involvedObject": {"kind": "Pod", "name": "k3-0"}, "reason": "Killing", "message": "m", "type": "Normal"},
            {"involvedObject": {"kind": "Pod", "name": "other"}, "reason": "Other"},
            {"involvedObject": {"kind": "Node", "name": "k3-0"}, "reason": "NodeNotReady"},
        ],
        domains=[{"metadata": {"name": "cd"}, "status": {"status": "NotReady", "nodes": [{"name": "a1"}]}}],
        nodes=[
            {
                "metadata": {"name": "a1", "annotations": {"k3deploy/guard-reason": "r", "other": "x"}},
                "spec": {"unschedulable": True},
                "status": {"conditions": [{"type": "GpuNvlinkWatch", "status": "True"}]},
            }
        ],
    )


def test_the_bundle_holds_logs_events_domain_status_and_conditions_of_the_group() -> None:
    b = bundle()
    assert (b["release"], b["namespace"], b["group"], b["time"]) == ("k3", "ns", 0, "2026-12-05T11:00:00Z")
    assert b["decision"]["cordon"] == ["a1"] and b["decision"]["sick"] == {"a1": ["GpuNvlinkWatch: down"]}
    assert [p["name"] for p in b["pods"]] == ["k3-0", "k3-0-1"]
    assert b["pods"][0]["logs"] == {"vllm": {"current": "tail\n", "previous": "before restart\n"}}
    assert b["pods"][1]["logs"] == {"vllm": {"current": "", "previous": ""}}
    assert [e["reason"] for e in b["events"]] == ["Killing"]
    assert b["computeDomains"] == [{"name": "cd", "status": {"status": "NotReady", "nodes": [{"name": "a1"}]}}]
    assert b["nodes"] == [
        {
            "name": "a1",
            "unschedulable": True,
            "taints": [],
            "annotations": {"k3deploy/guard-reason": "r"},
            "conditions": [{"type": "GpuNvlinkWatch", "status": "True"}],
        }
    ]


def test_bundle_name_is_release_group_and_utc_time() -> None:
    assert bundle_name("k3", 2, NOW) == "k3-group-2-20261205T110000Z.json"


def test_a_bundle_that_fits_is_unchanged() -> None:
    assert json.loads(bounded(bundle(), 64 * 1024)) == bundle()


def test_a_large_bundle_is_cut_to_the_bound_keeping_the_end_of_each_log() -> None:
    log = "".join(f"line {i}\n" for i in range(50_000))
    data = bounded(bundle(log), 64 * 1024)
    assert len(data) <= 64 * 1024
    current = json.loads(data)["pods"][0]["logs"]["vllm"]["current"]
    assert current.startswith(CUT_MARK) and current.endswith("line 49999\n")
    assert json.loads(data)["pods"][0]["logs"]["vllm"]["previous"] == "before restart\n"


def test_the_file_is_new_and_an_existing_name_is_never_overwritten(tmp_path: Path) -> None:
    folder = tmp_path / "made" / "here"
    first = write_new(folder, "k3-group-0-20261205T110000Z.json", b"one")
    second = write_new(folder, "k3-group-0-20261205T110000Z.json", b"two")
    assert first.name == "k3-group-0-20261205T110000Z.json" and first.read_bytes() == b"one"
    assert second.name == "k3-group-0-20261205T110000Z-1.json" and second.read_bytes() == b"two"


def test_a_symlink_at_the_name_is_neither_followed_nor_replaced(tmp_path: Path) -> None:
    target = tmp_path / "precious"
    target.write_text("keep")
    (tmp_path / "b.json").symlink_to(target)
    written = write_new(tmp_path, "b.json", b"x")
    assert written.name == "b-1.json" and target.read_text() == "keep"


def test_no_free_name_is_an_error_not_an_overwrite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("k3deploy.fault_guard.evidence_file.MAX_SUFFIX", 2)
    write_new(tmp_path, "b.json", b"1")
    write_new(tmp_path, "b.json", b"2")
    with pytest.raises(FileExistsError):
        write_new(tmp_path, "b.json", b"3")
    assert (tmp_path / "b.json").read_bytes() == b"1"
