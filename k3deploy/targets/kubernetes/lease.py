"""One k3deploy command at a time per release on a cluster: a Lease (coordination.k8s.io/v1) held for the whole command.

`<release>-k3deploy-lock` in the release's namespace names its holder (`user@host pid N`), when it took the lease and
when it last renewed it. A command takes a free or expired lease (every write carries the resourceVersion it read,
so of two racing commands one gets 409 and reads the winner), renews it every `renew_s` from a thread while it
runs, and frees it (holderIdentity cleared) at the end. A second command finds it held and stops with exit 3 naming
the holder; a holder that died leaves a lease that expires `duration_s` after its last renewal, and the next command
takes it over.

The lease's requests use a deadline of their own (unbounded; each request keeps its own timeouts), so a command
past its --timeout still renews and frees it.
"""

from __future__ import annotations

import getpass
import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from k3deploy.errors import EXIT_ENVIRONMENT, K3DeployError, KubeError
from k3deploy.kobject import KubeObject
from k3deploy.kube.port import KubePort

LEASE_API = "coordination.k8s.io/v1"
#: Seconds a lease lasts past its last renewal (what a crashed command leaves behind).
DURATION_S = 60
#: Seconds between two renewals.
RENEW_S = 20.0


def lease_name(release: str) -> str:
    """Name of a release's lock Lease."""
    return f"{release}-k3deploy-lock"


def identity(what: str) -> str:
    """Who holds a lease: `user@host pid N (command)`."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()} pid {os.getpid()} ({what})"


def _micro(moment: datetime) -> str:
    """A MicroTime as the API server writes it."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass(frozen=True)
class Holder:
    """Who holds a lease, since when, and until when it lasts without renewal."""

    identity: str
    acquired: datetime | None
    expires: datetime | None


def holder_of(lease: KubeObject | None, now: datetime) -> Holder | None:
    """The live holder of a lease; None when it is free, released or expired."""
    spec = (lease or {}).get("spec") or {}
    who = spec.get("holderIdentity")
    if not who:
        return None
    renewed = _parse(spec.get("renewTime")) or _parse(spec.get("acquireTime"))
    duration = int(spec.get("leaseDurationSeconds") or DURATION_S)
    expires = renewed + timedelta(seconds=duration) if renewed is not None else None
    if expires is not None and expires <= now:
        return None
    return Holder(str(who), _parse(spec.get("acquireTime")), expires)


def held_error(release: str, namespace: str, holder: Holder, lease: str | None = None) -> K3DeployError:
    """Exit 3: the release is locked by another command (`lease`: the Lease's name, by default the release's lock)."""
    since = f" since {holder.acquired.isoformat(timespec='seconds')}" if holder.acquired else ""
    until = f" (it expires {holder.expires.isoformat(timespec='seconds')} unless renewed)" if holder.expires else ""
    return K3DeployError(
        f"release {release!r} in {namespace} is held by {holder.identity}{since}: another k3deploy command is "
        "changing it",
        hint=f"wait for that command to end and re-run; if it is gone, Lease/{lease or lease_name(release)} in {namespace} "
        f"lapses by itself{until}",
        exit_code=EXIT_ENVIRONMENT,
    )


class ReleaseLease:
    """The lock of one release, taken by `hold()` for the length of a `with` block; `name` another Lease of the
    release than its command lock (the guard's leader election, targets/kubernetes/election.py)."""

    def __init__(
        self,
        api: KubePort,
        namespace: str,
        release: str,
        who: str,
        *,
        note: Callable[[str], None] = lambda _msg: None,
        acquire_api: KubePort | None = None,
        duration_s: int = DURATION_S,
        renew_s: float = RENEW_S,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        name: str | None = None,
    ) -> None:
        self.api, self.namespace, self.release, self.who = api, namespace, release, who
        self.name = name or lease_name(release)
        self.note, self.duration_s, self.renew_s, self.clock = note, duration_s, renew_s, clock
        #: Taking the lease counts against the command's deadline (`acquire_api`); renewing and freeing it do not.
        self.acquire_api = acquire_api if acquire_api is not None else api
        self._live: KubeObject | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        #: Why the lease was lost while held (another command took it over), or None.
        self.lost: str | None = None

    def _body(self, acquired: datetime, transitions: int, base: KubeObject | None) -> KubeObject:
        meta: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if base is not None:
            meta["resourceVersion"] = base["metadata"]["resourceVersion"]
        meta["labels"] = {"app.kubernetes.io/managed-by": "k3deploy", "app.kubernetes.io/instance": self.release}
        return {
            "apiVersion": LEASE_API,
            "kind": "Lease",
            "metadata": meta,
            "spec": {
                "holderIdentity": self.who,
                "leaseDurationSeconds": self.duration_s,
                "acquireTime": _micro(acquired),
                "renewTime": _micro(self.clock()),
                "leaseTransitions": transitions,
            },
        }

    def acquire(self) -> None:
        """Take the lease, or raise (exit 3) naming who holds it."""
        for _ in range(3):
            live = self.acquire_api.get(LEASE_API, "Lease", self.name, self.namespace)
            holder = holder_of(live, self.clock())
            if holder is not None and holder.identity != self.who:
                raise held_error(self.release, self.namespace, holder, self.name)
            spec = (live or {}).get("spec") or {}
            if live is not None and spec.get("holderIdentity") and spec.get("holderIdentity") != self.who:
                self.note(f"  lock: took over the lapsed lease of {spec['holderIdentity']}")
            transitions = int(spec.get("leaseTransitions") or 0) + (1 if live is not None else 0)
            body = self._body(self.clock(), transitions, live)
            try:
                self._live = self.acquire_api.create(body) if live is None else self.acquire_api.replace(body)
                return
            except KubeError as exc:
                if exc.status != 409:
                    raise
                # Another command wrote it between our read and our write: read again, and see who won.
        raise K3DeployError(
            f"could not take Lease/{self.name} in {self.namespace}: it kept changing",
            hint="another k3deploy command is taking it: wait for it and re-run",
            exit_code=EXIT_ENVIRONMENT,
        )

    def renew(self) -> bool:
        """Renew once; False (and `lost` set) when the lease is no longer ours."""
        with self._lock:
            live = self._live
            if live is None:
                return False
            spec = live.get("spec") or {}
            acquired = _parse(spec.get("acquireTime")) or self.clock()
            body = self._body(acquired, int(spec.get("leaseTransitions") or 0), live)
            try:
                self._live = self.api.replace(body)
                return True
            except KubeError as exc:
                if exc.status in (404, 409):
                    current = self.api.get(LEASE_API, "Lease", self.name, self.namespace)
                    holder = holder_of(current, self.clock())
                    self.lost = f"taken over by {holder.identity}" if holder is not None else "lost"
                    self._live = None
                    return False
                raise

    def _renewing(self) -> None:
        while not self._stop.wait(self.renew_s):
            try:
                if not self.renew():
                    self.note(f"  lock: Lease/{self.name} {self.lost}")
                    return
            except K3DeployError as exc:
                # A failed renewal is retried at the next beat; the lease lasts duration_s past the last one.
                self.note(f"  lock: renewing Lease/{self.name} failed: {exc.message}")

    def release_lease(self) -> None:
        """Free the lease (holderIdentity cleared) when it is still ours; never raises."""
        with self._lock:
            live, self._live = self._live, None
        if live is None:
            return
        spec = dict(live.get("spec") or {})
        spec["holderIdentity"] = None
        spec["renewTime"] = _micro(self.clock())
        try:
            self.api.replace({**live, "spec": spec})
        except KubeError as exc:
            if exc.status != 404:  # gone with its namespace (`down --purge`): nothing left to free
                self.note(f"  lock: could not free Lease/{self.name} ({exc.message}); it lapses by itself")
        except K3DeployError as exc:
            self.note(f"  lock: could not free Lease/{self.name} ({exc.message}); it lapses by itself")

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Acquire, renew from a thread while the block runs, release at its end (also on error or Ctrl-C)."""
        self.acquire()
        beat = threading.Thread(target=self._renewing, name="k3deploy-lease", daemon=True)
        beat.start()
        try:
            yield
        finally:
            self._stop.set()
            beat.join(timeout=self.renew_s + 5)
            self.release_lease()
