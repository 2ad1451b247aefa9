"""The guard's election decides on what it read, by client-go's rules, and never waits on a lease it does not hold:
another holder's lease is taken only once its record stayed unchanged for its whole duration on this guard's own
clock; `--once` (one read) therefore never takes it, and says so at once."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from k3deploy.errors import K3DeployError, KubeError
from k3deploy.kobject import KubeObject
from k3deploy.profile.object_names import guard_lease_name
from k3deploy.targets.kubernetes import election
from k3deploy.targets.kubernetes.election import decide

WALL = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
ME = "k3deploy@workstation pid 7 (guard)"
LEADER = "k3deploy@kimi-guard-7d9f8c6b5-x2x4q pid 1 (guard)"


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _lease(holder: str | None, renewed: datetime, duration: int = 60, version: str = "7") -> KubeObject:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": guard_lease_name("kimi"), "namespace": "ml", "resourceVersion": version},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": duration,
            "acquireTime": _stamp(renewed),
            "renewTime": _stamp(renewed),
            "leaseTransitions": 0,
        },
    }


def test_an_absent_freed_or_own_lease_is_taken_on_one_read() -> None:
    assert decide(None, ME, None, 100.0, WALL).take
    assert decide(_lease(None, WALL - timedelta(seconds=5)), ME, None, 100.0, WALL).take
    assert decide(_lease(ME, WALL - timedelta(seconds=5)), ME, None, 100.0, WALL).take


@pytest.mark.parametrize(
    "renewed",
    [
        WALL - timedelta(seconds=5),  # live by its timestamps
        WALL - timedelta(hours=1),  # lapsed by its timestamps: its holder stopped, or its clock is behind ours
        WALL + timedelta(seconds=90),  # a holder whose clock is 90 s ahead
    ],
    ids=["live", "looks-lapsed", "holder-ahead"],
)
def test_another_holders_lease_is_never_taken_on_a_first_sight(renewed: datetime) -> None:
    decision = decide(_lease(LEADER, renewed, duration=600), ME, None, 100.0, WALL)
    assert not decision.take and decision.leader == LEADER
    assert decision.left_s == 600.0  # the whole duration, from this first sight
    assert decision.observed is not None and decision.observed.since == 100.0
    assert decision.looks_lapsed is (renewed < WALL - timedelta(seconds=600))


def test_a_record_unchanged_for_its_whole_duration_on_our_clock_is_taken_over() -> None:
    lease = _lease(LEADER, WALL - timedelta(hours=1), duration=30)
    first = decide(lease, ME, None, 100.0, WALL)
    later = decide(lease, ME, first.observed, 129.5, WALL + timedelta(seconds=29.5))
    assert not later.take and later.left_s == pytest.approx(0.5)
    assert later.observed == first.observed  # the first sight still counts
    due = decide(lease, ME, later.observed, 130.0, WALL + timedelta(seconds=30))
    assert due.take and due.leader == LEADER


@pytest.mark.parametrize("field", ["renewTime", "holderIdentity", "leaseDurationSeconds", "leaseTransitions"])
def test_a_changed_record_starts_the_watch_again(field: str) -> None:
    lease = _lease(LEADER, WALL - timedelta(hours=1), duration=30)
    seen = decide(lease, ME, None, 100.0, WALL).observed
    changed = copy.deepcopy(lease)
    changed["spec"][field] = {
        "renewTime": _stamp(WALL),
        "holderIdentity": "k3deploy@other pid 2 (guard)",
        "leaseDurationSeconds": 31,
        "leaseTransitions": 1,
    }[field]
    decision = decide(changed, ME, seen, 200.0, WALL)
    assert not decision.take
    assert decision.observed is not None and decision.observed.since == 200.0
    assert decision.left_s == float(changed["spec"]["leaseDurationSeconds"])


class OneLease:
    """The API server's part the election talks to, for one Lease: get, create, replace with the stored
    resourceVersion as a precondition (409 when it differs, as the generic registry's optimistic concurrency in
    kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go `Update`), and the JSON
    patch that frees it (a failed `test` is 422). A stand-in because the decision is what is tested; the real API
    server is in tests/realk8s/test_guard_in_cluster.py. Counts every call, so a wait or a second read shows."""

    def __init__(self, lease: KubeObject | None) -> None:
        self.lease = copy.deepcopy(lease)
        self.calls: list[str] = []

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> KubeObject | None:
        self.calls.append("get")
        return copy.deepcopy(self.lease)

    def _stored(self, body: KubeObject) -> KubeObject:
        stored = copy.deepcopy(body)
        version = int((self.lease or {"metadata": {"resourceVersion": "0"}})["metadata"]["resourceVersion"])
        stored["metadata"]["resourceVersion"] = str(version + 1)
        self.lease = stored
        return copy.deepcopy(stored)

    def create(self, body: KubeObject) -> KubeObject:
        self.calls.append("create")
        if self.lease is not None:
            raise KubeError("already exists", status=409)
        return self._stored(body)

    def replace(self, body: KubeObject) -> KubeObject:
        self.calls.append("replace")
        if self.lease is None or body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise KubeError("the object has been modified", status=409)
        return self._stored(body)

    def request(self, method: str, path: str, action: str, **kwargs: Any) -> None:
        self.calls.append(method.lower())
        test, *ops = kwargs["body"]
        assert self.lease is not None
        if self.lease["spec"]["holderIdentity"] != test["value"]:
            raise KubeError("test failed", status=422)
        for op in ops:
            self.lease["spec"][op["path"].rsplit("/", 1)[1]] = op["value"]


def _no_sleep(seconds: float) -> None:
    raise AssertionError(f"the election waited {seconds} s")


def test_once_against_another_holders_lease_reads_once_exits_3_and_does_not_act(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The defect: `guard --once` against a lapsed-looking lease of another holder watched it for its whole
    duration (600 s here) before acting. Now: one read, exit 3, no write, no wait, no work."""
    monkeypatch.setattr("time.sleep", _no_sleep)
    lapsed = _lease(LEADER, datetime.now(UTC) - timedelta(hours=1), duration=600)
    api = OneLease(lapsed)
    worked: list[bool] = []
    with pytest.raises(K3DeployError) as raised:
        election.once(api, "ml", "kimi", ME, lambda: worked.append(True), lambda _line: None)  # type: ignore[arg-type]
    assert raised.value.exit_code == 3
    assert raised.value.message == f"guard of release 'kimi' in ml is led by {LEADER}: only the leader acts"
    assert "the loop (`k3deploy guard` without --once) takes it over once it stays unchanged for 600 s" in (
        raised.value.hint or ""
    )
    assert api.calls == ["get"] and not worked and api.lease == lapsed


def test_once_against_a_live_lease_names_its_leader_and_when_a_loop_may_take_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("time.sleep", _no_sleep)
    api = OneLease(_lease(LEADER, datetime.now(UTC), duration=60))
    with pytest.raises(K3DeployError) as raised:
        election.once(api, "ml", "kimi", ME, lambda: None, lambda _line: None)  # type: ignore[arg-type]
    assert raised.value.exit_code == 3 and api.calls == ["get"]
    assert raised.value.hint == (
        "look with --dry-run, or stop that guard: a guard loop takes Lease/kimi-k3deploy-guard over once it stays "
        "unchanged for 60 s"
    )


def test_once_takes_a_freed_lease_on_its_read_acts_and_frees_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", _no_sleep)
    api = OneLease(_lease(None, datetime.now(UTC) - timedelta(minutes=5)))
    holders: list[str | None] = []

    def work() -> str:
        assert api.lease is not None
        holders.append(api.lease["spec"]["holderIdentity"])
        return "acted"

    assert election.once(api, "ml", "kimi", ME, work, lambda _line: None) == "acted"  # type: ignore[arg-type]
    assert holders == [ME]
    assert api.calls == ["get", "replace", "patch"]
    assert api.lease is not None and api.lease["spec"]["holderIdentity"] is None
    assert api.lease["spec"]["leaseTransitions"] == 1


def test_the_loop_stands_by_reading_and_takes_over_a_dead_leaders_lease_after_its_duration_unchanged() -> None:
    api = OneLease(_lease(LEADER, datetime.now(UTC) - timedelta(hours=1), duration=30))
    clock = [1000.0]
    slept: list[float] = []
    said: list[str] = []
    led: list[str | None] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    def work(lost: Any) -> None:
        assert api.lease is not None
        led.append(api.lease["spec"]["holderIdentity"])

    election.lead(
        api,  # type: ignore[arg-type]
        "ml",
        "kimi",
        ME,
        work,
        say=said.append,
        sleep=sleep,
        done=lambda: bool(led),
        clock=lambda: clock[0],
    )
    # Read at 0 s, 15 s and 30 s (the lease's whole duration unchanged): taken then, not before.
    assert slept == [15.0, 15.0]
    assert api.calls == ["get", "get", "get", "replace", "patch"]
    assert led == [ME]
    assert said[0] == f"standing by: {LEADER} leads"
    assert f"took over the lease of {LEADER}: unchanged for its whole duration" in said
