"""Group gates on the real plane: a template whose walk did not gate every group is gated again by the re-run, and a
cluster whose LWS has no partition is refused before anything is applied."""

from __future__ import annotations

import json

import pytest

from tests.realk8s import release
from tests.realk8s.client import resource_path
from tests.realk8s.cluster_fixtures import NEW_IMAGE, TWO
from tests.realk8s.plane import Plane
from tests.realk8s.release import images, live_lws, up
from tests.realk8s.test_rollout import LWS
from tests.smoke.scripted_server import Script, scripted_server

release_ns = release.release_ns  # the fixture, used by name
pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]
#: Chunks 20 ms apart: each arrives in a read of its own (the decode rate needs two stamps) even on a loaded host.
GOOD = Script(models=["moonshotai/Kimi-K3"], tokens_per_chunk=[4, 4, 4, 4], chunk_delay_s=0.02)
#: A leader serving another model: its group's smoke fails at liveness.
BAD = Script(models=["someone-else/model"])


def test_a_rerun_gates_the_group_whose_gate_failed(realk8s: Plane, release_ns: str) -> None:
    namespace = release_ns
    first = up(realk8s, namespace, *TWO, "--skip-smoke")
    assert first.returncode == 0, first.stderr
    # Each group's leader at 127.0.0.1{group}: group 0 at 127.0.0.10, group 1 at 127.0.0.11 (both loopback).
    with scripted_server(GOOD, host="127.0.0.11") as one:
        port = one.url.rsplit(":", 1)[1]
        template = "http://127.0.0.1{group}:" + port
        with scripted_server(BAD, host="127.0.0.10", port=int(port)):
            failed = up(
                realk8s,
                namespace,
                *TWO,
                *NEW_IMAGE,
                "--endpoint",
                one.url,
                "--group-endpoint",
                template,
                "--no-rollback",
            )
            assert failed.returncode == 1, failed.stderr
            assert "smoke of the new group via the given endpoint http://127.0.0.10" in failed.stderr, failed.stderr
            # The failed template stays live (--no-rollback stands for a rollback that was interrupted).
            assert set(images(realk8s, namespace).values()) == {"vllm/vllm-openai:kimi-k3-next"}
            again = up(realk8s, namespace, *TWO, *NEW_IMAGE, "--endpoint", one.url, "--group-endpoint", template)
        assert again.returncode == 1, again.stderr
        assert f"smoke of group 0 through its leader {LWS}-0 (no gate passed yet)" in again.stderr, again.stderr
        assert f"smoke of group 1 through its leader {LWS}-1" not in again.stderr, again.stderr
        with scripted_server(GOOD, host="127.0.0.10", port=int(port)):
            fixed = up(
                realk8s,
                namespace,
                *TWO,
                *NEW_IMAGE,
                "--endpoint",
                one.url,
                "--group-endpoint",
                template,
                "--no-rollback",
            )
    assert fixed.returncode == 0, fixed.stderr
    # `again` rolled back to the old template, so this run rolls (and gates) both groups afresh.
    assert f"smoke of group 0 through its leader {LWS}-0" in fixed.stderr, fixed.stderr
    assert set(images(realk8s, namespace).values()) == {"vllm/vllm-openai:kimi-k3-next"}
    record = realk8s.api.get(resource_path("v1", "configmaps", namespace, f"{LWS}-k3deploy-gates"))
    [entry] = json.loads(record["data"]["gates.json"])
    assert sorted(entry["groups"]) == ["0", "1"]
    steady = up(realk8s, namespace, *TWO, *NEW_IMAGE, "--skip-smoke")
    assert steady.returncode == 0 and "smoke of group" not in steady.stderr, steady.stderr


def test_a_profile_for_an_lws_without_partition_is_refused_before_applying(realk8s: Plane, release_ns: str) -> None:
    """LWS before v0.7.0 has no rollingUpdateConfiguration.partition, so no group could be held back for its gate:
    the profile refuses every LWS before v0.9.0 (k3deploy's oldest) before anything is read or applied."""
    namespace = release_ns
    first = up(realk8s, namespace, *TWO, "--skip-smoke")
    assert first.returncode == 0, first.stderr
    generation = live_lws(realk8s, namespace)["metadata"]["generation"]
    old = images(realk8s, namespace)
    refused = up(
        realk8s,
        namespace,
        *TWO,
        *NEW_IMAGE,
        "--set",
        "kubernetes.lws_version=0.6.0",
        "--endpoint",
        "http://127.0.0.1:9",
    )
    assert refused.returncode == 2, refused.stderr
    assert "LeaderWorkerSet 0.6.0 is older than 0.9.0" in refused.stderr, refused.stderr
    assert "all 2 groups" not in refused.stderr and "rolled" not in refused.stderr
    assert live_lws(realk8s, namespace)["metadata"]["generation"] == generation
    assert images(realk8s, namespace) == old
