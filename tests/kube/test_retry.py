"""Which API failures are retried, and how long the backoff honours Retry-After."""

from __future__ import annotations

import pytest
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import ProtocolError

from k3deploy.kube.errors import is_transient
from k3deploy.kube.retry import call_with_retries, retry_after_s


def api_error(status: int, retry_after: str | None = None) -> ApiException:
    exc = ApiException(status=status, reason="x")
    exc.headers = {"Retry-After": retry_after} if retry_after else {}
    return exc


@pytest.mark.parametrize(
    ("status", "expected"), [(429, True), (500, True), (503, True), (404, False), (409, False), (403, False)]
)
def test_transient_statuses(status: int, expected: bool) -> None:
    assert is_transient(api_error(status)) is expected


def test_connection_errors_are_transient_and_others_not() -> None:
    assert is_transient(ProtocolError("connection dropped")) is True
    assert is_transient(ValueError("bad")) is False


def test_retry_after_is_read_from_the_header() -> None:
    assert retry_after_s(api_error(429, "2")) == 2.0
    assert retry_after_s(api_error(429)) is None
    assert retry_after_s(ValueError()) is None


def test_call_with_retries_retries_transient_then_returns_and_reraises_others() -> None:
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise api_error(500)
        return "ok"

    assert call_with_retries(flaky) == "ok"
    assert len(calls) == 3

    def conflict() -> None:
        calls.append(1)
        raise api_error(409)

    calls.clear()
    with pytest.raises(ApiException) as info:
        call_with_retries(conflict)
    assert info.value.status == 409 and len(calls) == 1


def test_a_refused_connection_is_not_retried() -> None:
    from urllib3.exceptions import MaxRetryError, NewConnectionError

    refused = MaxRetryError(None, "/api", NewConnectionError(None, "Connection refused"))  # type: ignore[arg-type]
    assert is_transient(refused) is False


def test_a_schema_mismatch_500_is_not_retried() -> None:
    """The apiserver answers an undeclared field in an apply configuration with a 500 "failed to create typed patch
    object" (kubernetes/kubernetes#139253); retrying cannot change it."""
    exc = api_error(500)
    exc.body = (
        '{"kind": "Status", "status": "Failure", "code": 500, "message": "failed to create typed patch object '
        '(ns/x; leaderworkerset.x-k8s.io/v1, Kind=LeaderWorkerSet): .spec.foo: field not declared in schema"}'
    )
    assert is_transient(exc) is False
    assert is_transient(api_error(500)) is True
