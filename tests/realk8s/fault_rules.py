"""Fault rules for the Kubernetes API in tests: error statuses, Retry-After, slow answers, dropped connections, a
410 inside a watch and rewritten answers. Pure matching and counting; the proxy in front of the real API server
(tests/realk8s/faults.py) applies them."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Fault:
    """One rule: requests whose method and `path?query` match get this treatment, `times` times (None: always).

    status: answer with this error code (403, 409, 429, 500, ...) instead of serving the request.
    retry_after: seconds for the Retry-After header (and details.retryAfterSeconds).
    delay: sleep this long before serving (alone: a slow but successful answer).
    drop: close the connection without an answer; for a watch, after `drop_after` events were sent.
    expire: for a watch, after `drop_after` events an ERROR event with a 410 Expired Status ends the stream (as when
    etcd compacts under a watch); applied by the proxy only.
    body_patch: merged (JSON merge patch) into a successful JSON answer, e.g. a rewritten /version; proxy only.
    """

    method: str
    path_regex: str
    status: int | None = None
    retry_after: float | None = None
    times: int | None = 1
    delay: float = 0.0
    drop: bool = False
    drop_after: int = 0
    message: str | None = None
    expire: bool = False
    body_patch: dict[str, Any] | None = None
    hits: int = 0
    _pattern: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._pattern = re.compile(self.path_regex)

    def matches(self, method: str, target: str) -> bool:
        """Whether this rule applies to a request (method `*` matches any)."""
        return self.method in ("*", method) and self._pattern.search(target) is not None


class Faults:
    """The active fault rules; tests hold this object (`fault_proxy.faults`) and add rules to it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.rules: list[Fault] = []
        #: Every request served, as "METHOD path?query", for tests that count retries.
        self.requests: list[str] = []
        #: Every request whose upstream answer was relayed back, as "METHOD path?query", in the order they ended.
        self.answered: list[str] = []

    def add(
        self,
        method: str,
        path_regex: str,
        status: int | None = None,
        *,
        retry_after: float | None = None,
        times: int | None = 1,
        delay: float = 0.0,
        drop: bool = False,
        drop_after: int = 0,
        message: str | None = None,
        expire: bool = False,
        body_patch: dict[str, Any] | None = None,
    ) -> Fault:
        """Add a rule; returns it so a test can read `.hits` afterwards."""
        rule = Fault(
            method.upper() if method != "*" else "*",
            path_regex,
            status,
            retry_after,
            times,
            delay,
            drop,
            drop_after,
            message,
            expire,
            body_patch,
        )
        with self._lock:
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        """Remove every rule."""
        with self._lock:
            self.rules.clear()

    def take(self, method: str, target: str) -> Fault | None:
        """The first live rule matching this request (consuming one of its `times`), recording the request."""
        with self._lock:
            self.requests.append(f"{method} {target}")
            for rule in self.rules:
                if rule.matches(method, target) and (rule.times is None or rule.times > 0):
                    rule.hits += 1
                    if rule.times is not None:
                        rule.times -= 1
                    return rule
        return None
