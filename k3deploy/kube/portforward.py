"""`kubectl port-forward` for one pod port: a listener on 127.0.0.1 whose every connection is forwarded to the pod
through the API server (`pods/portforward`), with the official client's WebSocket support.

`kubernetes.stream.portforward` (kubernetes/stream/ws_client.py `PortForward`) opens one WebSocket per call that
carries one stream per requested port; as kubectl opens a stream per accepted connection, each connection accepted
here gets a WebSocket of its own, and bytes are copied between the two sockets until either side closes. Nothing of
the protocol is written here: framing, channels and the port handshake are the library's.

Two things the library leaves open are bounded here. Its WebSocket connect takes no timeout (`create_websocket`
passes none, so a server that accepts and never answers the upgrade blocks for ever): each open runs in a worker
thread that is given `open_timeout_s`. And it swaps the ApiClient's `call_api` for the duration of a call, which is
not safe across threads: the forward has an ApiClient of its own and opens one stream at a time.

The API server authorises the WebSocket upgrade (an HTTP GET) as `get` on `pods/portforward`; from Kubernetes 1.35
also as `create` (AuthorizePodWebsocketUpgradeCreatePermission, KEP-4006), the verb kubectl's SPDY POST always
needed. A refusal (403), a missing pod (404) or an unreachable API server is a `ForwardFailed` (exit 3).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from typing import Any

from k3deploy.errors import ForwardFailed
from k3deploy.kube.client import connect
from k3deploy.kube.options import KubeOptions

#: Seconds one stream's WebSocket upgrade may take (TLS, authorisation, the API server's dial to the kubelet).
OPEN_TIMEOUT_S = 30.0
#: Bytes copied per read between the local connection and the stream.
CHUNK = 256 * 1024


def _handshake_status(exc: BaseException) -> tuple[int, str]:
    """(HTTP status, the Status object's message) of a refused upgrade, from websocket-client's exception that the
    library wraps into ApiException(status=0) (ws_client.portforward_call)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        status = getattr(cur, "status_code", None)
        if isinstance(status, int):
            body = getattr(cur, "resp_body", b"") or b""
            try:
                message = str(json.loads(body).get("message") or "")
            except (ValueError, AttributeError, TypeError):
                message = body.decode("utf-8", "replace")[:300] if isinstance(body, bytes) else str(body)[:300]
            return status, message
        cur = cur.__cause__ or cur.__context__
    return 0, ""


def _reason(exc: BaseException) -> str:
    """The innermost cause's text (the library's ApiException carries it as its reason)."""
    text = str(getattr(exc, "reason", "") or exc)
    return " ".join(text.split())[:300] or type(exc).__name__


class PodPortForward:
    """`with PodPortForward(options, namespace, pod, port) as fwd:` serves `fwd.url` (http://127.0.0.1:EPHEMERAL)
    until the block ends; the first stream is opened before the block starts, so a refusal raises there."""

    def __init__(
        self, options: KubeOptions, namespace: str, pod: str, port: int, *, open_timeout_s: float = OPEN_TIMEOUT_S
    ) -> None:
        self.options, self.namespace, self.pod, self.port = options, namespace, pod, port
        self.open_timeout_s = open_timeout_s
        self._client: Any = None
        self._core: Any = None
        self._listener: socket.socket | None = None
        self._open_lock = threading.Lock()
        self._live: set[socket.socket] = set()
        self._live_lock = threading.Lock()
        self._closed = threading.Event()

    @property
    def target(self) -> str:
        """`pod/<namespace>/<pod>:<port>`: what the forward reaches."""
        return f"pod/{self.namespace}/{self.pod}:{self.port}"

    @property
    def url(self) -> str:
        """The local base URL the forward serves."""
        assert self._listener is not None, "port-forward not open"
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    # -- opening streams ---------------------------------------------------------------------------------------
    def _open_stream(self) -> Any:
        """One WebSocket stream to the pod port (the library's PortForward); ForwardFailed when it cannot open."""
        # kubernetes loads only when a cluster is used (~0.5-1 s): the local target and `render` never pay for it.
        from kubernetes.stream import portforward

        result: dict[str, Any] = {}

        def call() -> None:
            try:
                result["stream"] = portforward(
                    self._core.connect_get_namespaced_pod_portforward, self.pod, self.namespace, ports=str(self.port)
                )
            except Exception as exc:  # translated below, in the caller's thread
                result["error"] = exc

        with self._open_lock:
            worker = threading.Thread(target=call, name=f"k3deploy port-forward open {self.target}", daemon=True)
            worker.start()
            worker.join(self.open_timeout_s)
        if worker.is_alive():
            raise ForwardFailed(
                f"port-forward to {self.target}: the API server did not complete the upgrade within "
                f"{self.open_timeout_s:g}s",
                hint="check that the API server is up and can reach the node's kubelet",
            )
        if "error" in result:
            raise self._failed(result["error"])
        return result["stream"]

    def _failed(self, exc: BaseException) -> ForwardFailed:
        status, message = _handshake_status(exc)
        what = f"port-forward to {self.target}"
        if status == 403:
            return ForwardFailed(
                f"{what}: forbidden: {message or 'the API server refused the upgrade'}",
                hint=f"ask for `get` and `create` on pods/portforward in namespace {self.namespace} "
                "(`kubectl auth can-i create pods --subresource=portforward`), or give --endpoint URL",
                status=status,
            )
        if status == 404:
            return ForwardFailed(
                f"{what}: not found: {message or 'no such pod'}",
                hint="the pod is gone (restarted or rescheduled?); `k3deploy status` lists the pods",
                status=status,
            )
        if status:
            return ForwardFailed(
                f"{what}: the API server answered {status}: {message}",
                hint="check the API server and the node's kubelet",
                status=status,
            )
        return ForwardFailed(
            f"{what}: {_reason(exc)}", hint="check --kubeconfig/--context and that the API server is up"
        )

    # -- serving -----------------------------------------------------------------------------------------------
    def open(self) -> PodPortForward:
        """Connect, open (and close) one stream to prove the forward is allowed, then listen on 127.0.0.1."""
        # kubernetes loads only when a cluster is used (~0.5-1 s): the local target and `render` never pay for it.
        from kubernetes import client

        self._client = connect(self.options)
        self._core = client.CoreV1Api(self._client)
        try:
            self._open_stream().close()
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", 0))
            listener.listen(64)
        except BaseException:
            self.close()
            raise
        self._listener = listener
        threading.Thread(target=self._accept, name=f"k3deploy port-forward {self.target}", daemon=True).start()
        return self

    def _accept(self) -> None:
        listener = self._listener
        assert listener is not None
        while not self._closed.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # the listener was closed
            self._track(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _track(self, sock: socket.socket, add: bool = True) -> None:
        with self._live_lock:
            (self._live.add if add else self._live.discard)(sock)

    def _serve(self, conn: socket.socket) -> None:
        """Forward one accepted connection through a stream of its own; either side closing ends both."""
        try:
            stream = self._open_stream()
        except ForwardFailed:
            self._track(conn, add=False)
            conn.close()
            return
        remote = stream.socket(self.port)
        remote.setblocking(True)
        back = threading.Thread(target=_copy, args=(remote, conn), daemon=True)
        back.start()
        _copy(conn, remote)
        back.join(timeout=5)
        for sock in (conn, remote):
            with contextlib.suppress(OSError):
                sock.close()
        self._track(conn, add=False)
        with contextlib.suppress(Exception):
            stream.close()

    def close(self) -> None:
        """Stop listening, end every forwarded connection, release the API client."""
        self._closed.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.close()
        with self._live_lock:
            live = list(self._live)
        for sock in live:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
            self._client = None

    def __enter__(self) -> PodPortForward:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _copy(source: Any, sink: Any) -> None:
    """Copy bytes until `source` ends (or either socket fails), then end `sink`'s writing side."""
    try:
        while True:
            data = source.recv(CHUNK)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)
