"""One k3deploy command at a time per release on a cluster: a Lease (coordination.k8s.io/v1) held for the whole command.

`<release>-k3deploy-lock` in the release's namespace names its holder (`user@host pid N`), when it took the lease and
when it last renewed it. A command takes a free or lapsed lease (every write carries the resourceVersion it read,
so of two racing commands one gets 409 and reads the winner), renews it every `renew_s` from a thread while it
runs, and frees it (holderIdentity cleared) at the end. A second command finds it held and stops with exit 3 naming
the holder; a holder that died leaves a lease that lapses `duration_s` after its last renewal, and the next command
takes it over.

Clocks: renewTime is written by the holder's clock, so it alone never decides a takeover. A lease its own
timestamps call live is held; one they call lapsed is watched for its whole leaseDurationSeconds on this machine's
monotonic clock, as client-go's leader election does (tools/leaderelection: observedTime), and taken over only if its
resourceVersion did not change meanwhile: a holder whose clock is behind (or ours ahead) keeps its lease because it
renews it.

Ending: the lease's requests count against the command's deadline and its grace (kube/deadline.py), so `--timeout`
bounds them too. At the end no renewal is sent any more, and the lease is freed by a JSON patch that first tests that
we still hold it, with no resourceVersion: a renewal still in flight then either lands first (and the patch frees
the lease after it) or lands after (and fails on its resourceVersion), so a renewal queued before the end never
leaves the lease held.
"""

from __future__ import annotations

import getpass
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from k3deploy.errors import EXIT_ENVIRONMENT, K3DeployError, KubeError
from k3deploy.kobject import KubeObject
from k3deploy.kube.api import KubeApi, rest_path
from k3deploy.profile.object_names import lock_lease_name
from k3deploy.rollout.ownership import mark

LEASE_API = "coordination.k8s.io/v1"
#: Seconds a lease lasts past its last renewal (what a crashed command leaves behind).
DURATION_S = 60
#: Seconds between two renewals.
RENEW_S = 20.0
#: Longest pause between two reads of a lease watched for a renewal.
WATCH_POLL_S = 2.0


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
        hint=f"wait for that command to end and re-run; if it is gone, Lease/{lease or lock_lease_name(release)} in {namespace} "
        f"lapses by itself{until}",
        exit_code=EXIT_ENVIRONMENT,
    )


class ReleaseLease:
    """The lock of one release, taken by `hold()` for the length of a `with` block; `name` another Lease of the
    release than its command lock (the guard's leader election, targets/kubernetes/election.py)."""

    def __init__(
        self,
        api: KubeApi,
        namespace: str,
        release: str,
        who: str,
        *,
        note: Callable[[str], None] = lambda _msg: None,
        duration_s: int = DURATION_S,
        renew_s: float = RENEW_S,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        name: str | None = None,
    ) -> None:
        self.api, self.namespace, self.release, self.who = api, namespace, release, who
        self.name = name or lock_lease_name(release)
        self.note, self.duration_s, self.renew_s, self.clock = note, duration_s, renew_s, clock
        self._live: KubeObject | None = None
        #: Whether the lease is ours: from the acquire until it is lost or freed.
        self._held = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        #: Why the lease was lost while held (another command took it over), or None.
        self.lost: str | None = None

    def _body(self, acquired: datetime, transitions: int, base: KubeObject | None) -> KubeObject:
        meta: KubeObject = {"name": self.name, "namespace": self.namespace}
        if base is not None:
            meta["resourceVersion"] = base["metadata"]["resourceVersion"]
        # The ownership mark: `down --purge` counts the lock as the release's, and a failed first `up` removes it.
        labels, annotations = mark(self.release, self.namespace)
        meta["labels"] = {
            "app.kubernetes.io/managed-by": "k3deploy",
            "app.kubernetes.io/instance": self.release,
            **labels,
        }
        meta["annotations"] = annotations
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

    def _read(self) -> KubeObject | None:
        return self.api.get(LEASE_API, "Lease", self.name, self.namespace)

    def _watched(self, live: KubeObject) -> KubeObject | None:
        """`live`, held by another and lapsed by its holder's timestamps, after a whole lease duration on this
        machine's clock without a change; held_error naming the holder when it changed (it is renewed)."""
        spec = live.get("spec") or {}
        duration = float(spec.get("leaseDurationSeconds") or DURATION_S)
        version = live["metadata"].get("resourceVersion")
        self.note(
            f"  lock: Lease/{self.name} of {spec.get('holderIdentity')} looks lapsed by its renewTime; watching it "
            f"{duration:g} s for a renewal before taking it over (clocks differ between machines)"
        )
        until = time.monotonic() + duration
        while (left := until - time.monotonic()) > 0:
            time.sleep(min(WATCH_POLL_S, left))
            current = self._read()
            if current is None or current["metadata"].get("resourceVersion") != version:
                who = ((current or {}).get("spec") or {}).get("holderIdentity")
                if current is None or not who or who == self.who:
                    return current  # freed or deleted meanwhile: the write below settles it
                acquired = _parse((current.get("spec") or {}).get("acquireTime"))
                raise held_error(self.release, self.namespace, Holder(str(who), acquired, None))
        return live

    def acquire(self) -> None:
        """Take the lease, or raise (exit 3) naming who holds it."""
        for _ in range(3):
            live = self._read()
            holder = holder_of(live, self.clock())
            if holder is not None and holder.identity != self.who:
                raise held_error(self.release, self.namespace, holder, self.name)
            spec = (live or {}).get("spec") or {}
            other = spec.get("holderIdentity")
            if live is not None and other and other != self.who:
                live = self._watched(live)
                spec = (live or {}).get("spec") or {}
                if spec.get("holderIdentity") == other:
                    self.note(f"  lock: took over the lapsed lease of {other}")
            try:
                self._write(live)
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

    def _write(self, live: KubeObject | None) -> None:
        """Take the lease on top of `live`, the record last read (None: there was none): one create or replace
        carrying its resourceVersion, so a lease changed since fails with 409."""
        spec = (live or {}).get("spec") or {}
        transitions = int(spec.get("leaseTransitions") or 0) + (1 if live is not None else 0)
        body = self._body(self.clock(), transitions, live)
        self._live = self.api.create(body) if live is None else self.api.replace(body)
        self._held = True

    def take(self, live: KubeObject | None) -> None:
        """Take the lease over the record `live` that the caller read and judged takeable (free, ours, or unchanged
        for its whole duration: targets/kubernetes/election.py), with no read and no watch; exit 3 when it changed
        since (another guard won the race, or its holder renewed it)."""
        try:
            self._write(live)
        except KubeError as exc:
            if exc.status != 409:
                raise
            raise K3DeployError(
                f"Lease/{self.name} in {self.namespace} changed since it was read: another holder took or renewed it",
                hint="the holder that wrote it leads; wait for it and re-run",
                exit_code=EXIT_ENVIRONMENT,
            ) from None

    def renew(self) -> bool:
        """Renew once; False (and `lost` set) when the lease is no longer ours, or the command has ended: no
        renewal is sent after that."""
        with self._lock:
            live = self._live
            if live is None or self._stop.is_set():
                return False
            spec = live.get("spec") or {}
            acquired = _parse(spec.get("acquireTime")) or self.clock()
            body = self._body(acquired, int(spec.get("leaseTransitions") or 0), live)
            try:
                self._live = self.api.replace(body)
                return True
            except KubeError as exc:
                if exc.status in (404, 409) and not self._stop.is_set():
                    holder = holder_of(self._read(), self.clock())
                    self.lost = f"taken over by {holder.identity}" if holder is not None else "lost"
                    self._live, self._held = None, False
                    return False
                raise

    def _renewing(self) -> None:
        while not self._stop.wait(self.renew_s):
            try:
                if not self.renew():
                    if self.lost:
                        self.note(f"  lock: Lease/{self.name} {self.lost}")
                    return
            except K3DeployError as exc:
                if self._stop.is_set():
                    return
                # A failed renewal is retried at the next beat; the lease lasts duration_s past the last one.
                self.note(f"  lock: renewing Lease/{self.name} failed: {exc.message}")

    def release_lease(self) -> None:
        """Stop renewing and free the lease when it is still ours; never raises.

        A JSON patch that tests holderIdentity first, with no resourceVersion: it frees the lease whether a renewal
        still in flight lands before it or not (one landing after fails on its resourceVersion)."""
        self._stop.set()
        held, self._held = self._held, False
        if not held:
            return
        patch: list[KubeObject] = [
            {"op": "test", "path": "/spec/holderIdentity", "value": self.who},
            {"op": "replace", "path": "/spec/holderIdentity", "value": None},
            {"op": "replace", "path": "/spec/renewTime", "value": _micro(self.clock())},
        ]
        try:
            self.api.request(
                "PATCH",
                rest_path(LEASE_API, "leases", self.name, self.namespace),
                f"free Lease/{self.name}",
                body=patch,
                content_type="application/json-patch+json",
            )
        except KubeError as exc:
            # 404: gone with its namespace (`down --purge`); 422: the test failed, the lease is someone else's now.
            if exc.status not in (404, 422):
                self.note(f"  lock: could not free Lease/{self.name} ({exc.message}); it lapses by itself")
        except K3DeployError as exc:
            self.note(f"  lock: could not free Lease/{self.name} ({exc.message}); it lapses by itself")

    @contextmanager
    def hold(self, taking: Callable[[], None] | None = None) -> Iterator[None]:
        """Acquire (or `taking()`, another way to take it: `take` on a record the caller judged), renew from a thread
        while the block runs, release at its end (also on error or Ctrl-C)."""
        (taking or self.acquire)()
        beat = threading.Thread(target=self._renewing, name="k3deploy-lease", daemon=True)
        beat.start()
        try:
            yield
        finally:
            # No wait for a renewal in flight: the release is right in either order, and the command's deadline
            # bounds that renewal's request anyway.
            self.release_lease()
