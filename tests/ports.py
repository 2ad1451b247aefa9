"""Free TCP ports on 127.0.0.1 for the servers the tests start (vLLM, the control plane's components, Prometheus)."""

from __future__ import annotations

import contextlib
import random
import socket
from pathlib import Path

#: Ports free_port has handed out in this process.
_GIVEN: set[int] = set()


def _ephemeral_low() -> int:
    """The lowest port the kernel hands to outgoing connections (net.ipv4.ip_local_port_range; 32768 by default)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    return 32768


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago, below the kernel's ephemeral range.

    A port the kernel picked (bind to 0) comes from the range it also gives outgoing connections, so between this
    call and the component's own bind any client could take it: on the realk8s tier the LWS controller then failed
    with `bind: address already in use` and took the whole plane with it. Below the range only a listener can take it.
    """
    low = _ephemeral_low()
    for _ in range(100):
        port = random.randrange(max(1024, low - 12000), low)
        if port in _GIVEN:  # handed out before: a component of this process may be about to bind it
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            _GIVEN.add(port)
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
