"""httpx's failures as EndpointErrors: a kind (unreachable, timeout, protocol) and one line naming the URL and why.

`watch` scrapes through httpx (net/capped.py) and words its failures here. The OpenAI client of smoke and bench
(measure/client.py) is aiohttp's and words the same failures the same way in its own `translate`.
"""

from __future__ import annotations

import socket
import ssl

import httpx

from k3deploy.errors import EndpointError, cause_chain


def translate(exc: Exception, url: str) -> EndpointError:
    """The one place httpx's exceptions become EndpointErrors (kind + message naming the URL and the reason)."""
    if isinstance(exc, EndpointError):
        return exc
    chain = cause_chain(exc)
    reason = str(chain[-1]) or type(chain[-1]).__name__
    if isinstance(exc, httpx.ConnectTimeout):
        return EndpointError("unreachable", f"connecting to {url} timed out")
    if isinstance(exc, httpx.TimeoutException):
        return EndpointError("timeout", f"{url} did not answer in time ({type(exc).__name__})")
    if isinstance(exc, httpx.ConnectError):
        if any(isinstance(c, socket.gaierror) for c in chain) or "Name or service not known" in reason:
            return EndpointError("unreachable", f"DNS lookup failed for {httpx.URL(url).host}: {reason}")
        if any(isinstance(c, ssl.SSLError) for c in chain):
            return EndpointError("unreachable", f"TLS handshake with {url} failed: {reason}")
        if any(isinstance(c, ConnectionRefusedError) for c in chain):
            return EndpointError("unreachable", f"cannot connect to {url}: connection refused (nothing listens there)")
        return EndpointError("unreachable", f"cannot connect to {url}: {reason}")
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        return EndpointError("protocol", f"connection to {url} broke: {reason}")
    if isinstance(exc, httpx.HTTPError):
        return EndpointError("protocol", f"{url}: {type(exc).__name__}: {reason}")
    raise exc
