"""The currency rules pinned at their boundaries, both sides (the survivors of tests/mutation/run on
k3deploy/rollout/currency.py): observedGeneration equal to or behind the generation, what counts as the same
template (only Go's zero values dropped, the default network config), the newest matching revision, and which pods
a set's count is made of (groups below spec.replicas, spec.replicas times the group size, the defaults of both)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from k3deploy.rollout.currency import prove_current, template_revision
from tests.rollout.test_currency import _lws
from tests.support.lws_revision import REVISION_KEY, new_revision

GROUP = "leaderworkerset.sigs.k8s.io/group-index"


def _pod(key: str, group: int | None = 0, name: str = "k3-0") -> dict[str, Any]:
    labels = {REVISION_KEY: key}
    if group is not None:
        labels[GROUP] = str(group)
    return {"metadata": {"name": name, "labels": labels}}


def _proved(lws: dict[str, Any], pods: list[dict[str, Any]]) -> bool:
    """prove_current of `lws` by its own revision (no observedGeneration), with `pods`."""
    return prove_current(lws, [new_revision(lws, 1)], pods).current


def _key(lws: dict[str, Any]) -> str:
    return str(new_revision(lws, 1)["metadata"]["labels"][REVISION_KEY])


@pytest.mark.parametrize(("observed", "current"), [(1, False), (2, True), (3, True)])
def test_observed_generation_proves_the_status_from_equal_up_and_not_one_behind(observed: int, current: bool) -> None:
    proof = prove_current(_lws(generation=2, observed=observed), None, [])
    assert proof.current is current and proof.provable


def test_a_set_with_no_generation_is_generation_0_which_any_observed_generation_has_seen() -> None:
    lws = _lws(observed=0)
    del lws["metadata"]["generation"]
    assert prove_current(lws, None, []).current
    del lws["status"]["observedGeneration"]
    assert "generation 0's template" in prove_current(lws, None, []).how


@pytest.mark.parametrize("extra", [{"hostNetwork": True}, {"terminationGracePeriodSeconds": 1}, {"priority": -1}])
def test_only_gos_zero_values_are_dropped_so_a_set_non_zero_field_is_another_template(extra: dict[str, Any]) -> None:
    """Go's encoding omits false, 0, "" and empties: a true, a 1 or a -1 the live spec sets and the revision lacks
    is a change of template, not encoding noise."""
    old = _lws()
    live = copy.deepcopy(old)
    live["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"].update(extra)
    assert template_revision(live, [new_revision(old, 1)]) is None
    assert template_revision(live, [new_revision(live, 2)]) is not None
    zero = copy.deepcopy(old)
    zero["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"].update(dict.fromkeys(extra, 0))
    assert template_revision(zero, [new_revision(old, 1)]) is not None  # a zero value is what Go leaves out


def test_a_spec_without_network_config_is_the_webhooks_default_shared_subdomain() -> None:
    recorded = _lws()  # networkConfig {"subdomainPolicy": "Shared"}, as the webhook defaults it
    revision = new_revision(recorded, 1)
    bare = copy.deepcopy(recorded)
    del bare["spec"]["networkConfig"]
    assert template_revision(bare, [revision]) is revision
    del revision["data"]["spec"]["networkConfig"]
    assert template_revision(recorded, [revision]) is revision


def test_a_different_subdomain_policy_is_another_template_and_the_same_one_matches() -> None:
    shared = _lws()
    unique = copy.deepcopy(shared)
    unique["spec"]["networkConfig"] = {"subdomainPolicy": "UniquePerReplica"}
    assert template_revision(unique, [new_revision(shared, 1)]) is None
    assert template_revision(shared, [new_revision(unique, 1)]) is None
    recorded = new_revision(unique, 2)
    assert template_revision(unique, [recorded]) is recorded


def test_the_newest_revision_holding_the_template_is_taken_whatever_the_listing_order() -> None:
    lws = _lws()
    third, fifth = new_revision(lws, 3), new_revision(lws, 5)
    assert template_revision(lws, [third, fifth]) is fifth
    assert template_revision(lws, [fifth, third]) is fifth
    unnumbered = new_revision(lws, 1)
    del unnumbered["revision"]
    first = new_revision(lws, 1)
    assert template_revision(lws, [unnumbered, first]) is first  # no number ranks below revision 1


def test_a_set_with_no_replicas_field_is_one_group() -> None:
    lws = _lws()  # size 2
    del lws["spec"]["replicas"]
    key = _key(lws)
    assert _proved(lws, [_pod(key, 0, "k3-0"), _pod(key, 0, "k3-0-1")])
    assert not _proved(lws, [_pod(key, 0, "k3-0"), _pod("old", 0, "k3-0-1")])


def test_a_template_with_no_size_is_groups_of_one_pod() -> None:
    lws = _lws()  # replicas 1
    del lws["spec"]["leaderWorkerTemplate"]["size"]
    key = _key(lws)
    assert _proved(lws, [_pod(key)])
    assert not _proved(lws, [])


def test_a_pod_without_a_group_index_counts_as_group_0() -> None:
    lws = _lws()
    lws["spec"]["leaderWorkerTemplate"]["size"] = 1
    key = _key(lws)
    assert _proved(lws, [_pod(key, None)])
    lws["spec"]["replicas"] = 0
    assert _proved(lws, [_pod("old", None)])  # group 0 is beyond a set scaled to zero


@pytest.mark.parametrize("group", [1, 2])
def test_pods_of_groups_at_or_beyond_replicas_are_leaving_and_do_not_count(group: int) -> None:
    """Scaling down, the controller deletes groups >= spec.replicas: their pods' older key is not the set's."""
    lws = _lws()
    key = _key(lws)
    current = [_pod(key, 0, "k3-0"), _pod(key, 0, "k3-0-1")]
    assert _proved(lws, [*current, _pod("old", group, f"k3-{group}")])
    assert not _proved(lws, [*current, _pod("old", 0, "k3-0-2")])


def test_a_scaled_to_zero_set_is_current_with_its_leftover_group_0_pods() -> None:
    lws = _lws()
    lws["spec"]["replicas"] = 0
    assert _proved(lws, [_pod("old", 0)])


@pytest.mark.parametrize(("replicas", "size"), [(1, 2), (2, 2), (3, 1), (2, 3)])
def test_the_status_is_current_only_when_replicas_times_size_pods_carry_the_key(replicas: int, size: int) -> None:
    lws = _lws()
    lws["spec"]["replicas"] = replicas
    lws["spec"]["leaderWorkerTemplate"]["size"] = size
    key = _key(lws)
    pods = [_pod(key, g, f"k3-{g}-{w}") for g in range(replicas) for w in range(size)]
    assert _proved(lws, pods)
    assert not _proved(lws, pods[1:])  # one short, none stale
    proof = prove_current(lws, [new_revision(lws, 1)], pods[1:])
    assert proof.how == f"{replicas * size - 1}/{replicas * size} pods on template-revision-hash {key}"


def test_a_stale_pod_beside_a_full_count_still_holds_the_proof_back() -> None:
    lws = _lws()
    key = _key(lws)
    pods = [_pod(key, 0, "k3-0"), _pod(key, 0, "k3-0-1"), _pod("old", 0, "k3-0-2")]
    proof = prove_current(lws, [new_revision(lws, 1)], pods)
    assert not proof.current and proof.how == f"2/2 pods on template-revision-hash {key}; others on old"
