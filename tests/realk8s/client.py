"""A small REST client of the plane's kube-apiserver for setting it up and for the tests' own reads: bearer token,
the plane's CA, JSON in and out, server-side apply, every request bounded by a timeout."""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx

T = TypeVar("T")


class ApiError(RuntimeError):
    """A response the caller did not expect: status and the server's Status message."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"HTTP {status}: {text[:500]}")
        self.status = status
        self.text = text


def resource_path(api_version: str, plural: str, namespace: str | None = None, name: str | None = None) -> str:
    """/api/v1/... or /apis/GROUP/VERSION/..., namespaced or not."""
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    if namespace:
        base += f"/namespaces/{namespace}"
    base += f"/{plural}"
    return f"{base}/{name}" if name else base


class Api:
    """`get`, `list`, `create`, `apply`, `delete` against one server with one token."""

    def __init__(self, url: str, token: str, ca_file: Path, timeout_s: float = 30.0) -> None:
        self.url = url
        self._http = httpx.Client(
            base_url=url,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            verify=ssl.create_default_context(cafile=str(ca_file)),
            timeout=timeout_s,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request; the response whatever its status."""
        return self._http.request(method, path, **kwargs)

    def _json(self, response: httpx.Response) -> Any:
        if response.status_code >= 300:
            raise ApiError(response.status_code, response.text)
        return response.json()

    def get(self, path: str) -> Any:
        """GET a path's JSON; ApiError on a non-2xx status."""
        return self._json(self.request("GET", path))

    def find(self, path: str) -> Any | None:
        """GET a path's JSON, None when it is 404."""
        response = self.request("GET", path)
        return None if response.status_code == 404 else self._json(response)

    def create(self, path: str, obj: dict[str, Any]) -> Any:
        """POST an object to its collection path."""
        return self._json(self.request("POST", path, json=obj))

    def apply(self, path: str, obj: dict[str, Any], manager: str = "realk8s") -> Any:
        """Server-side apply `obj` at its object path (forcing conflicts: the plane owns what it sets up)."""
        response = self.request(
            "PATCH",
            path,
            params={"fieldManager": manager, "force": "true"},
            content=json.dumps(obj),
            headers={"Content-Type": "application/apply-patch+yaml"},
        )
        return self._json(response)

    def delete(self, path: str) -> None:
        """DELETE an object; a 404 is fine."""
        response = self.request("DELETE", path)
        if response.status_code not in (200, 202, 404):
            raise ApiError(response.status_code, response.text)


def wait_until(what: str, probe: Callable[[], T | None], timeout_s: float, interval_s: float = 0.2) -> T:
    """Poll `probe` until it returns something truthy; TimeoutError naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while True:
        try:
            value = probe()
            if value:
                return value
        except (httpx.HTTPError, ApiError, OSError) as exc:
            last = exc
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"timed out after {timeout_s:.0f}s waiting for {what}" + (f" (last: {last})" if last else "")
            )
        time.sleep(interval_s)
