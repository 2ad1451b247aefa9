"""`read_lws` (targets/kubernetes/upgrade.py) on live states recorded from the real control plane (tests/rollout/recorded): what
it reads of the cluster for each strategy, and what it makes of the answers: nothing live, a template the server's
dry run leaves alone or bumps, two groups walked on a first upgrade or again after a walk stopped at group 1.

The fake API answers only the requests the recording holds (replay.py), so each test also pins what is read."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from k3deploy.errors import K3DeployError
from k3deploy.rollout.groups import partitioned
from k3deploy.rollout.plan import LiveLws, Strategy
from k3deploy.targets.kubernetes.gates import gates_name
from k3deploy.targets.kubernetes.upgrade import read_lws
from tests.rollout.recorded.replay import PROFILE, RecordedApi, answer_of, apply_key, get_key, list_key, load

WALK = Strategy(group_smoke=True)
BLUE_GREEN = Strategy(name="blue-green", group_smoke=True)
LWS_API = "leaderworkerset.x-k8s.io/v1"
NAME_SELECTOR = f"leaderworkerset.sigs.k8s.io/name={PROFILE}"


def lws_get(namespace: str) -> str:
    """The fake's record of a get of the LeaderWorkerSet in `namespace`."""
    return f"get {get_key(LWS_API, 'LeaderWorkerSet', PROFILE, namespace)}"


def dry_run(obj: dict[str, Any]) -> str:
    """The fake's record of a forced server dry run of `obj`."""
    return f"apply {apply_key(obj, True)}"


def read(recording: dict[str, Any], label: str, strategy: Strategy, **kw: Any) -> tuple[LiveLws, RecordedApi]:
    """read_lws of the recording's LeaderWorkerSet `label` on a fake of the recording, and the fake."""
    api = RecordedApi(recording["reads"])
    return read_lws(api, recording["lws"][label], strategy, **kw), api


def live_of(recording: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The live LeaderWorkerSet as the recorded get answered."""
    return dict(recording["reads"]["get"][get_key(LWS_API, "LeaderWorkerSet", PROFILE, namespace)])


def test_nothing_live_reads_as_nothing_live_after_one_get() -> None:
    recording = load("absent")
    live, api = read(recording, "installed", BLUE_GREEN)
    assert live == LiveLws() and answer_of(live) == recording["answers"]["installed"]
    assert api.calls == [lws_get("k3-recorded-one")]


@pytest.mark.parametrize(
    "strategy",
    [
        Strategy(name="blue-green", group_smoke=True, dry_run=True),
        Strategy(name="blue-green", group_smoke=True, diff=True, dry_run=True),
        Strategy(group_smoke=True, dry_run=True),
        Strategy(group_smoke=True, diff=True, dry_run=True),
        Strategy(group_smoke=True, wait=False),  # --no-wait: nothing to gate on
        Strategy(group_smoke=False),  # --skip-smoke: the controller rolls every group itself
    ],
)
def test_a_dry_run_a_diff_or_a_rolling_with_no_gate_reads_nothing(strategy: Strategy) -> None:
    for name in ("one_group", "two_groups"):
        api = RecordedApi()  # answers nothing: any read raises
        assert read_lws(api, load(name)["lws"]["new_image"], strategy) == LiveLws()
        assert api.calls == []
    assert read_lws(RecordedApi(), None, WALK) == LiveLws()


def test_blue_green_over_its_own_template_reads_no_change() -> None:
    recording = load("one_group")
    live, api = read(recording, "installed", BLUE_GREEN)
    assert live.live == live_of(recording, "k3-recorded-one") and live.live["status"]["readyReplicas"] == 1
    assert (live.template_changes, live.pods_change, live.ungated) == (False, False, [])
    assert answer_of(live) == recording["answers"]["installed"]
    assert api.calls == [lws_get("k3-recorded-one"), dry_run(recording["lws"]["installed"])]


def test_blue_green_of_a_new_image_reads_a_template_change_and_no_gate() -> None:
    recording = load("one_group")
    live, api = read(recording, "new_image", BLUE_GREEN)
    assert live.template_changes and not live.pods_change and live.ungated == []
    assert answer_of(live) == recording["answers"]["new_image"]
    # One group is never walked: blue-green reads no gate record, pods or revisions.
    assert api.calls == [lws_get("k3-recorded-one"), dry_run(recording["lws"]["new_image"])]


@pytest.mark.parametrize(("label", "bump", "changes"), [("new_image", 0, False), ("installed", 1, True)])
def test_a_change_is_the_dry_runs_generation_against_the_live_one(label: str, bump: int, changes: bool) -> None:
    recording = copy.deepcopy(load("one_group"))
    generation = live_of(recording, "k3-recorded-one")["metadata"]["generation"]
    answer = recording["reads"]["apply"][apply_key(recording["lws"][label], True)]
    assert answer["metadata"]["generation"] == generation + (1 - bump)  # as recorded: the other way round
    answer["metadata"]["generation"] = generation + bump
    live, _ = read(recording, label, BLUE_GREEN)
    assert live.template_changes is changes


def test_two_groups_read_for_their_own_template_change_nothing_and_have_no_gate_to_pass() -> None:
    recording = load("two_groups")
    live, api = read(recording, "installed", WALK)
    assert live.live == live_of(recording, "k3-recorded-two") and live.live["status"]["readyReplicas"] == 2
    assert (live.template_changes, live.pods_change, live.ungated) == (False, False, [])
    assert answer_of(live) == recording["answers"]["installed"]
    gates = f"get {get_key('v1', 'ConfigMap', gates_name(PROFILE), 'k3-recorded-two')}"
    assert api.calls == [lws_get("k3-recorded-two"), dry_run(recording["lws"]["installed"]), gates]


def test_two_groups_read_for_a_new_image_recreate_pods_and_check_the_partition_holds() -> None:
    recording = load("two_groups")
    lws = recording["lws"]["new_image"]
    live, api = read(recording, "new_image", WALK)
    assert (live.template_changes, live.pods_change, live.ungated) == (True, True, [])
    assert answer_of(live) == recording["answers"]["new_image"]
    # A first walk on this template: no gate record yet. The held set's dry run keeps the partition (the served
    # CRD has it); the pod template differs, so no pod needs reading.
    assert recording["reads"]["get"][get_key("v1", "ConfigMap", gates_name(PROFILE), "k3-recorded-two")] is None
    assert api.calls == [
        lws_get("k3-recorded-two"),
        dry_run(lws),
        f"get {get_key('v1', 'ConfigMap', gates_name(PROFILE), 'k3-recorded-two')}",
        dry_run(partitioned(lws, 2)),
    ]


def test_a_served_crd_that_prunes_the_partition_is_refused() -> None:
    recording = copy.deepcopy(load("two_groups"))
    held = recording["reads"]["apply"][apply_key(partitioned(recording["lws"]["new_image"], 2), True)]
    assert held["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"].pop("partition") == 2
    with pytest.raises(K3DeployError) as refused:
        read(recording, "new_image", WALK)
    assert "CRD drops rollingUpdateConfiguration.partition" in str(refused.value.message)


def test_a_walk_stopped_at_group_1_reads_every_group_ungated_and_group_0_still_to_recreate() -> None:
    recording = load("two_groups_mid_walk")
    lws = recording["lws"]["new_image"]
    live, api = read(recording, "new_image", WALK)
    held = live_of(recording, "k3-recorded-two")
    assert held["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]["partition"] == 1
    assert held["status"]["updatedReplicas"] == 1
    # Dropping the held partition changes the spec; the walk began on this template and no group passed its gate.
    assert (live.template_changes, live.pods_change, live.ungated) == (True, True, [1, 0])
    assert answer_of(live) == recording["answers"]["new_image"]
    # The pod template is the live one already: the pods of group 0, on the old template, are what still changes.
    dry = recording["reads"]["apply"][apply_key(lws, True)]
    assert dry["spec"]["leaderWorkerTemplate"] == held["spec"]["leaderWorkerTemplate"]
    lists = [c for c in api.calls if c.startswith("list ")]
    assert lists == [
        f"list {list_key('apps/v1', 'ControllerRevision', 'k3-recorded-two', NAME_SELECTOR, None)}",
        f"list {list_key('v1', 'Pod', 'k3-recorded-two', NAME_SELECTOR, None)}",
    ]


def test_the_fake_refuses_what_it_was_not_recorded_for() -> None:
    recording = load("one_group")
    api = RecordedApi(recording["reads"])
    with pytest.raises(AssertionError, match="no recorded answer"):
        api.get("v1", "ConfigMap", "other", "k3-recorded-one")
    with pytest.raises(AssertionError, match="only server dry runs"):
        api.apply(recording["lws"]["installed"], force=True)
    with pytest.raises(AssertionError, match="no recorded answer"):
        api.apply(partitioned(recording["lws"]["installed"], 1), force=True, dry_run=True)
    with pytest.raises(AssertionError, match=r"KubeApi\.delete"):
        api.delete("v1", "Pod", "p", "k3-recorded-one")
