"""`KubePort`: what k3deploy asks of a cluster connection, as a Protocol. `KubeApi` (kube/api.py) is the one
implementation; the rollout I/O, the status and the probes take a `KubePort`, so they are typed without naming the
client, and a test's recording or in-memory stand-in is checked against the same surface."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any, Protocol

from k3deploy.kobject import KubeObject


class KubePort(Protocol):
    """Reads, writes, watches, logs and events of one cluster, as the raw dicts the API server sends."""

    def look(
        self,
        action: str,
        api_version: str,
        plural: str,
        name: str | None = None,
        *,
        namespace: str | None = None,
        field_selector: str | None = None,
        missing_ok: bool = False,
    ) -> Any:
        """One GET of a REST path under the look policy (JSON as sent; None for a 404 when `missing_ok`)."""
        ...

    def server_version(self) -> str:
        """The API server's gitVersion."""
        ...

    def served_resources(self, groups: builtins.list[str]) -> builtins.list[str]:
        """`plural.group` of every top-level resource the server serves in `groups`."""
        ...

    def namespaced_kinds(self) -> builtins.list[tuple[str, str, str]]:
        """(apiVersion, kind, plural) of every listable, deletable resource served inside a namespace."""
        ...

    def can_i(
        self, verb: str, resource: str, group: str = "", namespace: str | None = None, subresource: str = ""
    ) -> tuple[bool, str]:
        """Whether this identity may `verb` the resource, and the server's reason."""
        ...

    def served(self, api_version: str, kind: str) -> bool:
        """Whether the server serves the kind."""
        ...

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> KubeObject | None:
        """One object, or None when it (or its kind) is not there."""
        ...

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[builtins.list[KubeObject], str]:
        """The objects of a kind and the list's resourceVersion."""
        ...

    def apply(
        self, obj: KubeObject, *, force: bool = False, dry_run: bool = False, manager: str = "k3deploy"
    ) -> KubeObject:
        """Server-side apply as field manager `manager` (k3deploy's own by default): the object as the server stored
        (or would store) it."""
        ...

    def create(self, obj: KubeObject) -> KubeObject:
        """Create the object; the server's copy."""
        ...

    def replace(self, obj: KubeObject) -> KubeObject:
        """Replace the object (its resourceVersion guards the write); the server's copy."""
        ...

    def delete(
        self, api_version: str, kind: str, name: str, namespace: str | None = None, *, propagation: str = "Background"
    ) -> bool:
        """Delete one object: whether it was there."""
        ...

    def watch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        resource_version: str,
        *,
        timeout_s: int,
        field_selector: str | None = None,
        label_selector: str | None = None,
        watcher: Any = None,
    ) -> Iterator[KubeObject]:
        """One watch connection's raw events, from `resource_version`."""
        ...

    def new_watcher(self) -> Any:
        """A handle another thread may `stop()` to end a `watch` connection."""
        ...

    def pod_log(self, name: str, namespace: str, container: str | None, *, tail_lines: int, previous: bool) -> str:
        """The tail of a container's log (its previous run's when `previous`)."""
        ...

    def read_log(self, name: str, namespace: str, container: str, *, limit_bytes: int) -> str:
        """A container's log, at most `limit_bytes` of it."""
        ...

    def events(self, namespace: str) -> builtins.list[KubeObject]:
        """The namespace's events."""
        ...
