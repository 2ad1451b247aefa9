"""Where `k3deploy watch` gets its figures: the leader's `/metrics`, or a Prometheus server's HTTP API.

Both sources answer `sample()`: the figures of the latest interval (None for the first `/metrics` scrape, which
only sets the baseline) or a ScrapeError naming what failed. Every request has a timeout and a body limit.

The Prometheus side follows the HTTP API as documented (prometheus.io/docs/prometheus/latest/querying/api/,
"Instant queries" and "Expression query result formats") and implemented (prometheus/prometheus
web/api/v1/api.go): `{"status": "success"|"error", "data": {"resultType", "result"}, "errorType", "error"}`,
sample values as strings ("NaN", "+Inf" included).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from k3deploy.errors import MetricsFormatError, ScrapeError, TooLarge
from k3deploy.kube.deadline import Deadline
from k3deploy.net.capped import get_capped
from k3deploy.net.httpx_errors import translate
from k3deploy.observe.watch_figures import (
    DeltaTracker,
    QueryResult,
    WatchFigures,
    figures_from_queries,
    parse_scrape,
)
from k3deploy.redact import redact_text, redact_url

#: A multi-engine vLLM's /metrics is some hundreds of KB (smoke allows the same); a query answer far less.
METRICS_LIMIT = 8 * 1024 * 1024
QUERY_LIMIT = 4 * 1024 * 1024
DEFAULT_TIMEOUT_S = 10.0


def _get_capped(
    client: httpx.Client, url: str, limit: int, timeout_s: float, params: Mapping[str, str] | None = None
) -> httpx.Response:
    """GET `url`, its body read up to `limit` bytes (past it: a ScrapeError) and the whole answer within about
    `timeout_s` (net/capped.py: a server trickling its body cannot hold a tick, or `--for`, past it). Messages
    name the URL with the credentials of its userinfo redacted."""
    shown = redact_url(url)
    try:
        resp, body = get_capped(
            client,
            url,
            limit=limit,
            error_limit=limit,
            deadline=Deadline(timeout_s),
            read_timeout_s=timeout_s,
            params=dict(params) if params else None,
        )
        headers = [(k, v) for k, v in resp.headers.items() if k.lower() not in ("content-encoding", "content-length")]
        return httpx.Response(resp.status_code, headers=headers, content=body, request=resp.request)
    except TooLarge:
        raise ScrapeError(
            f"{shown} answered more than {limit // (1024 * 1024)} MiB", "is this the right URL?"
        ) from None
    except httpx.HTTPError as exc:
        raise ScrapeError(
            redact_text(translate(exc, shown).message, url),
            "check the URL, and that the server (or its port-forward) still runs",
        ) from None


class MetricsSource:
    """The leader's `/metrics`, scraped once per interval; each figure is a delta since the previous scrape."""

    kind = "metrics"

    def __init__(
        self, base_url: str, *, timeout_s: float = DEFAULT_TIMEOUT_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._request_url = base_url.rstrip("/") + "/metrics"
        #: The scraped URL as lines and messages show it: credentials in its userinfo redacted.
        self.url = redact_url(self._request_url)
        self._client = httpx.Client(timeout=httpx.Timeout(timeout_s), follow_redirects=False)
        self._timeout_s = timeout_s
        self._tracker = DeltaTracker()
        self._clock = clock

    def sample(self) -> WatchFigures | None:
        """The figures since the previous scrape; None for the first one (the baseline)."""
        started = self._clock()
        resp = _get_capped(self._client, self._request_url, METRICS_LIMIT, self._timeout_s)
        finished = self._clock()
        if resp.status_code != 200:
            excerpt = " ".join(resp.text.split())[:200]
            raise ScrapeError(
                f"{self.url} answered {resp.status_code}: {excerpt}", "is this the vLLM server's base URL?"
            )
        try:
            snapshot = parse_scrape(resp.text, started, finished)
        except MetricsFormatError as exc:
            raise ScrapeError(
                f"{self.url}: {exc}", "point --endpoint at the vLLM server, not a proxy or another app"
            ) from None
        if not snapshot.series:
            raise ScrapeError(f"{self.url} exports no vLLM series", "is this a vLLM server? (vllm:* metrics missing)")
        return self._tracker.update(snapshot)

    def close(self) -> None:
        """Release the connection pool."""
        self._client.close()


def _series(item: Any) -> tuple[dict[str, str], float] | None:
    """One vector sample as (labels, value); None for a malformed one: that series is left out (its row shows no
    value), not the whole answer refused."""
    try:
        return {str(k): str(v) for k, v in item["metric"].items()}, float(item["value"][1])
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return None


def parse_query_answer(text: str, status_code: int) -> QueryResult:
    """The series of one `/api/v1/query` answer; a ScrapeError for an error answer or an unknown shape.

    A vector gives (labels, value) per series, a scalar one series without labels; a matrix or string result
    cannot be a watch figure.
    """
    try:
        body: Any = json.loads(text)
    except ValueError:
        raise ScrapeError(
            f"Prometheus answered {status_code} with no JSON: {' '.join(text.split())[:120]!r}",
            "is --prometheus the Prometheus server's base URL (e.g. http://127.0.0.1:9090)?",
        ) from None
    if not isinstance(body, dict):
        raise ScrapeError(
            f"Prometheus answered {status_code} with JSON that is not an API envelope",
            "is --prometheus a Prometheus server?",
        )
    if body.get("status") != "success":
        kind, error = body.get("errorType", "unknown"), body.get("error", "")
        raise ScrapeError(
            f"Prometheus answered {status_code} {kind}: {error}",
            "the query names vLLM metrics: is vLLM scraped by this Prometheus (ServiceMonitor)?",
        )
    try:
        data = body["data"]
        kind = data["resultType"]
        if kind == "scalar":
            return [({}, float(data["result"][1]))]
        if kind == "vector":
            rows = [_series(item) for item in data["result"]]
            return [row for row in rows if row is not None]
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        raise ScrapeError(
            "Prometheus answered success with a malformed result", "is --prometheus a Prometheus server?"
        ) from None
    raise ScrapeError(
        f"Prometheus answered a {kind!r} result; watch needs an instant vector or a scalar",
        "the expressions are instant queries: report this as a k3deploy bug",
    )


class PrometheusSource:
    """A Prometheus server's `/api/v1/query`: one instant query per figure, per interval."""

    kind = "prometheus"

    def __init__(self, base_url: str, expressions: Mapping[str, str], *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self._request_url = base_url.rstrip("/") + "/api/v1/query"
        #: The query URL as lines and messages show it: credentials in its userinfo redacted.
        self.url = redact_url(self._request_url)
        self.expressions = dict(expressions)
        self._timeout_s = timeout_s
        self._client = httpx.Client(timeout=httpx.Timeout(timeout_s), follow_redirects=False)

    def query(self, expression: str) -> QueryResult:
        """One instant query at the server's now, with Prometheus' own evaluation timeout set to ours."""
        resp = _get_capped(
            self._client,
            self._request_url,
            QUERY_LIMIT,
            self._timeout_s,
            params={"query": expression, "timeout": f"{self._timeout_s:g}s"},
        )
        try:
            return parse_query_answer(resp.text, resp.status_code)
        except ScrapeError as exc:
            raise ScrapeError(f"{exc.message} (query {expression})", exc.hint) from None

    def sample(self) -> WatchFigures:
        """Every figure's query, answered now."""
        return figures_from_queries({key: self.query(expr) for key, expr in self.expressions.items()})

    def close(self) -> None:
        """Release the connection pool."""
        self._client.close()
