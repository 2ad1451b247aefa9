"""TCP relays between this machine's network namespace and a real node's (tests/realk8s/realnode.py): the node's
kubelet reaches kube-apiserver at 127.0.0.1 inside its namespace, and kube-apiserver reaches the kubelet (logs, exec,
port-forward) at 127.0.0.1 on this machine. A socket belongs to the namespace its thread was in when it was made, so
each relay makes its sockets after setns(2) on its own thread (a network namespace may be entered by one thread of
a multi-threaded process); nothing is routed or exposed beyond loopback."""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import threading
from collections.abc import Iterator

_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextlib.contextmanager
def entered(netns_fd: int | None) -> Iterator[None]:
    """Run the block on this thread inside the network namespace `netns_fd` (None: stay where the thread is)."""
    if netns_fd is None:
        yield
        return
    home = os.open(f"/proc/self/task/{threading.get_native_id()}/ns/net", os.O_RDONLY)
    try:
        _setns(netns_fd)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(home)


def _pump(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := src.recv(65536):
            dst.sendall(data)
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


class Relay:
    """Accept on 127.0.0.1:`listen_port` in namespace `listen_ns`, connect each to 127.0.0.1:`target_port` in
    `target_ns` (None: this process's own namespace)."""

    def __init__(self, listen_ns: int | None, listen_port: int, target_ns: int | None, target_port: int) -> None:
        self.target_ns = target_ns
        self.target_port = target_port
        with entered(listen_ns):
            self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", listen_port))
        self._server.listen(64)
        self._closed = threading.Event()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name=f"relay-{listen_port}", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        try:
            with entered(self.target_ns):
                upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            upstream.settimeout(10)
            upstream.connect(("127.0.0.1", self.target_port))
            upstream.settimeout(None)
        except OSError:
            client.close()
            return
        with self._lock:
            self._open |= {client, upstream}
        back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
        back.start()
        _pump(client, upstream)
        back.join()
        for sock in (client, upstream):
            sock.close()
        with self._lock:
            self._open -= {client, upstream}

    def close(self) -> None:
        """Stop accepting and close every relayed connection."""
        self._closed.set()
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        with self._lock:
            for sock in list(self._open):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)
