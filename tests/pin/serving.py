"""One threaded HTTP server on an ephemeral 127.0.0.1 port, shared by the test registry and the test Hub."""

from __future__ import annotations

import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Serving:
    """Start/stop of a `ThreadingHTTPServer` whose handler reaches the owning object as `server.owner`."""

    def __init__(self) -> None:
        self.url = ""
        self._server: ThreadingHTTPServer | None = None

    def serve(self, handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None) -> None:
        """Serve `handler` on an ephemeral 127.0.0.1 port in a daemon thread (https with `tls`); sets `url`."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.owner = self  # type: ignore[attr-defined]
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Stop serving."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
