"""A hostile "API server" on 127.0.0.1 for timeout tests: it accepts connections and then does not answer.

A real listening socket, not a mock: the kernel completes the TCP handshake, the server reads the request and
then either sends nothing (`silent`) or sends a valid HTTP/1.1 status line and headers promising a body
and then only part of it (`stall`). Either way it keeps the connection open until the test ends, as a hung
API server or a half-dead load balancer in front of one does.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Literal

Mode = Literal["silent", "stall"]
#: What `stall` sends: the head of a /version answer that promises more body than ever arrives.
_STALL_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n"
    b'{"major": "1", "minor": "34", "gitVersion": "v1.3'
)


def _serve(listener: socket.socket, mode: Mode, held: list[socket.socket], stop: threading.Event) -> None:
    listener.settimeout(0.1)
    while not stop.is_set():
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        except OSError:
            return
        held.append(conn)
        if mode == "stall":
            conn.settimeout(5)
            with contextlib.suppress(OSError):
                conn.recv(65536)  # the request head; its body, if any, is never read
                conn.sendall(_STALL_HEAD)


@contextlib.contextmanager
def stalling_server(mode: Mode = "silent") -> Iterator[str]:
    """Listen on 127.0.0.1 (a free port) in `mode` until the block ends; yields the server URL (http://...)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()
    thread = threading.Thread(target=_serve, args=(listener, mode, held, stop), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
        for conn in held:
            conn.close()
