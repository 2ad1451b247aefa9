"""pytest fixtures for the test Kubernetes API server (registered as a plugin by tests/conftest.py).

`kube`: a started KubeApiServer (v1.34.1) with its controllers running; `kube_factory(git_version=...,
controllers=..., history_limit=...)` starts more. What a test uses:

- `kube.kubeconfig` (file; pass as --kubeconfig or KUBECONFIG), `kube.url`, `kube.set_version("v1.33.2")`
- `kube.add_crds(lws=True, compute_domain=True, service_monitor=True)`: the upstream CRDs (see crds.py; objects are
  then held to their schemas, CEL rules and the LWS webhooks, see admission.py), `kube.add_gb300_nodes(clique=..., count=4,
  gpus=4, arch=..., product=..., memory=..., driver=...)`, `kube.add_node(...)`, `kube.add_storage_class(...)`
- `kube.store`: get / list / create / replace / update / apply / delete objects directly, `logs[(ns, pod, c)]`,
  `compact()`; `kube.wait_for(lambda: ...)` waits on store changes; `kube.when(...)` times past changes
- `kube.faults.add(method, path_regex, status=429, retry_after=1, times=2, delay=..., drop=..., drop_after=...)`,
  `kube.faults.requests`; `kube.break_watches("drop" | "close" | "expire")`; `kube.access.deny(verb, resource, group)`
- `kube.controllers.{lws, scheduler, kubelet, jobs, volumes, compute_domains, endpoint_slices}` (each `.enabled`);
  `kube.controllers.kubelet.fail(mode, image=..., pod=..., logs=[...], times=...)`, `.start_delay`,
  `.ready_delay`, `.termination_delay`; `kube.controllers.disable()`.
The fixture fails the test if a controller raised.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.kubeapi.server import KubeApiServer


def _forget_dynamic_client_cache(url: str) -> None:
    """The kubernetes DynamicClient caches discovery per server URL in the temp dir; a reused port must not
    inherit another test's CRDs.
    """
    name = f"osrcp-{hashlib.md5(url.encode('utf-8'), usedforsecurity=False).hexdigest()}.json"
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(tempfile.gettempdir(), name))


@pytest.fixture
def kube_factory(tmp_path: Path) -> Iterator[Callable[..., KubeApiServer]]:
    """Start KubeApiServers: `kube_factory(git_version="v1.33.2", controllers=True)`; all stopped at the end."""
    started: list[KubeApiServer] = []

    def start(git_version: str = "v1.34.1", controllers: bool = True, history_limit: int = 1000) -> KubeApiServer:
        server = KubeApiServer(git_version, history_limit).start(controllers=controllers)
        _forget_dynamic_client_cache(server.url)
        server.kubeconfig = server.write_kubeconfig(tmp_path / f"kubeconfig-{len(started)}")
        started.append(server)
        return server

    yield start
    errors = []
    for server in started:
        server.stop()
        _forget_dynamic_client_cache(server.url)
        errors += server.controllers.errors()
    assert not errors, "simulated controllers raised:\n" + "\n".join(errors)


@pytest.fixture
def kube(kube_factory: Callable[..., KubeApiServer]) -> KubeApiServer:
    """A test Kubernetes API server (v1.34.1) with its controllers running; see tests/kubeapi/server.py."""
    return kube_factory()
