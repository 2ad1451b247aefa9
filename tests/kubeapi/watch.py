"""Watch semantics: initial ADDED events, resume from a resourceVersion, selector transitions, bookmarks, 410."""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Iterator

from tests.kubeapi.errors import status_body
from tests.kubeapi.registry import ResourceType
from tests.kubeapi.selectors import Predicate
from tests.kubeapi.store import Store, WatchEvent

#: Not a Kubernetes event: tells the HTTP layer to cut the connection (see Store.break_watches).
DROP = "__DROP__"


def _in_scope(rtype: ResourceType, namespace: str | None, obj: dict) -> bool:
    return namespace is None or not rtype.namespaced or obj["metadata"].get("namespace") == namespace


def _as_version(obj: dict, api_version: str) -> dict:
    obj = copy.deepcopy(obj)
    obj["apiVersion"] = api_version
    return obj


def gone(resource_version: int, oldest: int) -> dict:
    """The ERROR event a server sends when the requested resourceVersion was compacted away."""
    return {
        "type": "ERROR",
        "object": status_body(410, f"too old resource version: {resource_version} ({oldest})", "Expired"),
    }


def _translate(event: WatchEvent, matches: Predicate) -> str | None:
    """The event type a selecting watcher sees: objects entering the selection are ADDED, leaving are DELETED."""
    now_in = matches(event.obj)
    if event.type in ("ADDED", "DELETED"):
        return event.type if now_in else None
    was_in = event.old is not None and matches(event.old)
    if now_in:
        return "MODIFIED" if was_in else "ADDED"
    return "DELETED" if was_in else None


def _next_bookmark(now: float, interval: float | None, deadline: float) -> float:
    """When the next BOOKMARK is due, as the watch cache plans it (k8s.io/apiserver/pkg/storage/cacher/
    cache_watcher.go nextBookmarkTime): every `interval` (a minute by default) and 2 s before the watch's deadline;
    never (inf) once that is past.
    """
    if not interval:
        return math.inf
    due = min(now + interval, deadline - 2.0)
    return due if due >= now else math.inf


def events(
    store: Store,
    rtype: ResourceType,
    api_version: str,
    namespace: str | None,
    matches: Predicate,
    resource_version: str | None,
    timeout: float,
    bookmark_interval: float | None,
) -> Iterator[dict]:
    """Watch events as dicts ({type, object}) until `timeout` seconds pass or the server closes."""
    deadline = time.monotonic() + timeout
    with store.lock:
        breaks = store.watch_breaks
        if resource_version in (None, "", "0"):
            initial = [o for o in store.list(rtype, namespace) if matches(o)]
            last = store.rv
        else:
            try:
                last = int(resource_version)
            except ValueError:
                last = -1
            initial = []
            if last < store.compacted_rv:
                yield gone(last, store.compacted_rv)
                return
    for obj in initial:
        yield {"type": "ADDED", "object": _as_version(obj, api_version)}
    next_bookmark = _next_bookmark(time.monotonic(), bookmark_interval, deadline)
    while True:
        with store.lock:
            if store.watch_breaks != breaks:
                if store.watch_break_mode == "drop":
                    yield {"type": DROP}
                elif store.watch_break_mode == "expire":
                    yield gone(last, store.compacted_rv)
                return
            if last < store.compacted_rv:
                yield gone(last, store.compacted_rv)
                return
            pending = [e for e in store.history if e.rv > last and e.key == rtype.key]
            newest = store.rv
            if not pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or store.closed:
                    return
                wait = min(remaining, 0.5)
                if bookmark_interval:
                    wait = max(0.0, min(wait, next_bookmark - time.monotonic()))
                store.changed.wait(wait)
        for event in pending:
            last = event.rv
            if not _in_scope(rtype, namespace, event.obj):
                continue
            kind = _translate(event, matches)
            if kind:
                yield {"type": kind, "object": _as_version(event.obj, api_version)}
        # Every event of this type up to `newest` was in `pending`, so the watch is current to `newest`.
        last = max(last, newest)
        if bookmark_interval and time.monotonic() >= next_bookmark:
            next_bookmark = _next_bookmark(time.monotonic(), bookmark_interval, deadline)
            yield {
                "type": "BOOKMARK",
                "object": {"kind": rtype.kind, "apiVersion": api_version, "metadata": {"resourceVersion": str(last)}},
            }
