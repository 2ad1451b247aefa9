"""A test cluster for upgrades: three NVLink cliques of four GB300 trays, a long change history (so a test can replay
every EndpointSlice write of a whole upgrade), and helpers to read what the API Service routed to throughout."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.kubeapi.controllers.endpointslices import SERVICE_NAME_LABEL

CLIQUES = (
    "5b1c3a9e-2f4d-4e7a-9c1b-0d2e3f4a5b6c.1",
    "5b1c3a9e-2f4d-4e7a-9c1b-0d2e3f4a5b6c.2",
    "5b1c3a9e-2f4d-4e7a-9c1b-0d2e3f4a5b6c.3",
)
API_SERVICE = "kimi-k3-gb300-tp16-api"
SLICES = ("discovery.k8s.io", "endpointslices")
#: `up` flags both upgrade test files use: no token Secret, a short smoke that judges decode speed only, no preflight.
QUICK_UP = (
    "--set",
    "kubernetes.hf_token_secret=null",
    "--set",
    "smoke.requests=2",
    "--set",
    "smoke.output_tokens=16",
    "--set",
    "smoke.correctness=false",
    "--set",
    "targets.decode_tok_s=1",
    "--timeout",
    "90s",
    "--skip-preflight",
)
#: The template change both upgrade test files roll out.
NEW_IMAGE = ("--set", "vllm.image=vllm/vllm-openai:kimi-k3-next")


@pytest.fixture
def racks(kube_factory: Callable[..., Any]) -> Any:
    """The test API server with three cliques of four 4-GPU GB300 trays, CRDs, storage and the nvidia RuntimeClass."""
    kube = kube_factory(history_limit=500_000)
    kube.add_crds()
    for clique in CLIQUES:
        kube.add_gb300_nodes(clique=clique)
    kube.add_storage_class(default=True)
    kube.add_runtime_class()
    return kube


def _ready(obj: dict) -> list[str]:
    return sorted(
        e["targetRef"]["name"] for e in obj.get("endpoints") or [] if (e.get("conditions") or {}).get("ready")
    )


def ready_behind(kube: Any, since_rv: int, service: str = API_SERVICE) -> list[list[str]]:
    """The ready endpoints of `service`'s EndpointSlice after every write to it since resourceVersion `since_rv` (a
    deleted slice counts as none), from the server's change history."""
    seen = []
    for event in list(kube.store.history):
        if event.rv <= since_rv or event.key != SLICES:
            continue
        if (event.obj["metadata"].get("labels") or {}).get(SERVICE_NAME_LABEL) != service:
            continue
        seen.append([] if event.type == "DELETED" else _ready(event.obj))
    assert kube.store.history[0].rv <= since_rv + 1, "the change history was truncated"
    return seen


#: LWS's own annotation that gives each group a topology domain of its own (kubernetes-sigs/lws
#: pkg/utils/utils.go, `leaderworkerset.sigs.k8s.io/exclusive-topology`; the test LWS controller honours it).
EXCLUSIVE_TOPOLOGY = "leaderworkerset.sigs.k8s.io/exclusive-topology"


def first_install(kube: Any, lws: str, namespace: str, run: Callable[[], Any]) -> Any:
    """Run the first `up` (`run`, blocking) with each group pinned to a clique of its own: the LWS controller is held
    off until the test has annotated the new LeaderWorkerSet with exclusive-topology, a field k3deploy's later applies
    leave alone (another field manager owns it). How groups are spread over cliques is not what these tests test."""
    import threading

    kube.controllers.lws.enabled = False
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(run()), daemon=True)
    thread.start()
    try:
        kube.wait_for(lambda: kube.store.get("leaderworkersets", lws, namespace), timeout=120)
        kube.store.update(
            "leaderworkersets",
            lws,
            namespace,
            lambda obj: (
                obj["metadata"].setdefault("annotations", {}).update({EXCLUSIVE_TOPOLOGY: "nvidia.com/gpu.clique"})
            ),
            manager="test",
        )
    finally:
        kube.controllers.lws.enabled = True
    thread.join(timeout=240)
    return result[0]
