"""A command renders the set once and passes it along (pipeline.py, targets/base.py): on the real plane, `up` (with
and without preflight), `apply` with its in-place question and `down` each build the profile's set once. The lock's
Namespace, preflight's access review, the render stage, the plan, a rollback and the removal all take that one set.

The plan renders no second set: it pins the node-preflight Job of the one set to the eligible nodes it found
(targets/kubernetes/observe.py, render/node_preflight.py); a build of a profile with pinned hosts is counted apart,
and there is none."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from k3deploy.profile.model import Profile
from k3deploy.render import manifests
from tests.realk8s.cluster_fixtures import QUICK, UP, Deployment

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]


def _count_builds(monkeypatch: pytest.MonkeyPatch) -> Callable[[], tuple[int, int]]:
    """Count every build of a set (render/manifests.py `build` makes its template context once per set): (the
    command's own profile, the profile with node-preflight hosts pinned), since the last call."""
    own: list[Profile] = []
    pinned: list[Profile] = []
    real = manifests.context

    def counted(profile: Profile) -> dict:
        (pinned if profile.kubernetes.node_preflight_hosts else own).append(profile)
        return real(profile)

    monkeypatch.setattr(manifests, "context", counted)

    def taken() -> tuple[int, int]:
        counts = (len(own), len(pinned))
        own.clear()
        pinned.clear()
        return counts

    return taken


def test_each_command_renders_its_set_once(deploy: Deployment, monkeypatch: pytest.MonkeyPatch) -> None:
    builds = _count_builds(monkeypatch)
    first = deploy.k3("up", *QUICK)  # a first install: the lock makes the Namespace from the set
    assert first.returncode == 0, first.stderr
    assert builds() == (1, 0)

    # With preflight: its access review and cluster checks take the set too, whatever they find.
    checked = deploy.k3("up", "--skip-smoke", *UP)
    assert "==> [1/5] preflight" in checked.stderr, checked.stderr
    assert builds() == (1, 0), checked.stderr

    # A changed template: the in-place question (here refused) reads the one set as well.
    changed = deploy.k3("apply", "--set", "vllm.image=vllm/vllm-openai:next", input="")
    assert changed.returncode == 2 and "in place" in changed.stderr, changed.stderr
    assert builds() == (1, 0)
    again = deploy.k3("apply", "--timeout", "240s")
    assert again.returncode == 0, again.stderr
    assert builds() == (1, 0)

    gone = deploy.k3("down", "--yes", "--timeout", "120s")
    assert gone.returncode == 0, gone.stderr
    assert builds() == (1, 0)
