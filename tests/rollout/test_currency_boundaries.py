"""The currency rules pinned at their boundaries, both sides (the survivors of tests/mutation/run on
k3deploy/rollout/currency.py): observedGeneration equal to or behind the generation, what counts as the same
template (only Go's zero values dropped, the default network config) and the newest matching revision."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from k3deploy.rollout.currency import prove_current, template_revision
from tests.rollout.test_currency import _lws
from tests.support.lws_revision import new_revision


@pytest.mark.parametrize(("observed", "current"), [(1, False), (2, True), (3, True)])
def test_observed_generation_proves_the_status_from_equal_up_and_not_one_behind(observed: int, current: bool) -> None:
    proof = prove_current(_lws(generation=2, observed=observed))
    assert proof.current is current and proof.provable


def test_a_set_with_no_generation_is_generation_0_which_any_observed_generation_has_seen() -> None:
    lws = _lws(observed=0)
    del lws["metadata"]["generation"]
    assert prove_current(lws).current
    del lws["status"]["observedGeneration"]
    assert "generation 0's template" in prove_current(lws).how


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
