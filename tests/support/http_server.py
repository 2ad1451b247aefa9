"""A test HTTP server run on a thread for the length of a block."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import HTTPServer


@contextlib.contextmanager
def serving(server: HTTPServer) -> Iterator[str]:
    """Serve `server` (bound to 127.0.0.1) from a thread for the block; its base URL (`http://127.0.0.1:PORT`,
    no trailing slash). Shut down, closed and joined (10 s bound) at the block's end."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
