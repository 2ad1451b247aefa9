"""An HTTP/1.1 server on 127.0.0.1 that answers 200 and then trickles its body one byte at a time, for bound tests.

A stand-in for a fault on demand: the real registry (distribution), the Hub, the Kubernetes API server and
Prometheus cannot be made to send a byte every few hundred milliseconds, which is what a half-dead proxy or a
saturated link does and what defeats a per-`recv` read timeout (httpx's, urllib3's). It is a real listening
socket and speaks HTTP/1.1 the way Python's http.server (Lib/http/server.py) does: a status line, headers with
the Content-Length of the whole body (so a client cannot end early by framing), then the body. `sent` counts
the body bytes that left before the client went away: a bounded client stops it early, whatever the wall clock.
With `head_interval_s` the status line and headers trickle too (a padding header makes the head long), and
`head_sent` counts them: a client whose only bounds are per-read timeouts waits through the whole head.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class Trickle:
    """What the server sends: `body` after a 200 head with `content_type`, one byte every `interval_s`."""

    body: bytes = b'{"sha": "' + b"0" * 4000 + b'"}'
    content_type: str = "application/json"
    interval_s: float = 0.1
    sent: int = 0
    requests: int = 0
    head_interval_s: float | None = None
    head_sent: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)


def _answer(conn: socket.socket, trickle: Trickle) -> None:
    with conn, contextlib.suppress(OSError):
        conn.settimeout(10)
        conn.recv(65536)  # the request head; its body, if any, is never read
        trickle.requests += 1
        head = (
            f"HTTP/1.1 200 OK\r\nContent-Type: {trickle.content_type}\r\nContent-Length: {len(trickle.body)}\r\n\r\n"
        ).encode()
        if trickle.head_interval_s is None:
            conn.sendall(head)
        else:
            head = head[:-2] + b"X-Padding: " + b"p" * 2000 + b"\r\n\r\n"
            for byte in head:
                if trickle._stop.wait(trickle.head_interval_s):
                    return
                conn.sendall(bytes([byte]))
                trickle.head_sent += 1
        for byte in trickle.body:
            if trickle._stop.wait(trickle.interval_s):
                return
            conn.sendall(bytes([byte]))
            trickle.sent += 1


@contextlib.contextmanager
def trickling_server(trickle: Trickle) -> Iterator[str]:
    """Serve `trickle` on a free 127.0.0.1 port until the block ends; yields the base URL (http://127.0.0.1:PORT)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.1)
    threads: list[threading.Thread] = []

    def serve() -> None:
        while not trickle._stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=_answer, args=(conn, trickle), daemon=True)
            thread.start()
            threads.append(thread)

    acceptor = threading.Thread(target=serve, daemon=True)
    acceptor.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        trickle._stop.set()
        acceptor.join(timeout=5)
        listener.close()
        for thread in threads:
            thread.join(timeout=5)
