"""A kubeconfig that is not one, and a server that is not the Kubernetes API (an HTML login page of a proxy in
front of it): one `error:` line naming the file or the server and what is wrong, exit 3, never "unexpected"."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.support.kubeconfig import write_kubeconfig

K3 = "kimi-k3-gb300-tp16"
GARBAGE = [
    (b"garbage\n", "expected a mapping (apiVersion, clusters, contexts, users), got str"),
    (b"[1, 2]\n", "expected a mapping (apiVersion, clusters, contexts, users), got list"),
    (b"apiVersion: v1\nclusters: 5\n", "'clusters' must be a list, got int"),
    (b"clusters: [{name: c, cluster: 5}]\n", "clusters[0].cluster must be a mapping"),
    (b"users: [5]\n", "users[0] must be a mapping with a 'name'"),
    (b"current-context: [a]\n", "'current-context' must be a string"),
    (b"\xff\xfe\x00\x01", "not UTF-8 text"),
    (b"a: [\n", "not valid YAML at line 2"),
    (
        b"apiVersion: v1\nclusters: [{name: c, cluster: {server: 5}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
        b"users: [{name: u, user: {}}]\ncurrent-context: c\n",
        "AttributeError",
    ),
]


@pytest.mark.parametrize(("content", "what"), GARBAGE)
def test_a_garbage_kubeconfig_is_named_with_what_is_wrong(tmp_path: Path, content: bytes, what: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_bytes(content)
    result = run_cli("status", "-p", K3, "--kubeconfig", str(path))
    assert result.returncode == 3, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith(f"error: kubeconfig {str(path)!r} is not a valid kubeconfig: ") and what in lines[0]
    assert "unexpected" not in result.stderr and "Traceback" not in result.stderr


class _LoginPage(http.server.BaseHTTPRequestHandler):
    """What a misconfigured ingress or SSO proxy answers on every path: 200 and an HTML page."""

    def _page(self) -> None:
        body = b"<!doctype html><html><body><form>Sign in</form></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _page

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def login_page() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _LoginPage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("command", [["status"], ["down", "--yes"], ["preflight", "--cluster"]])
def test_an_api_answering_html_is_named(tmp_path: Path, login_page: str, command: list[str]) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", login_page)
    result = run_cli(*command, "-p", K3, "--kubeconfig", str(kubeconfig))
    assert result.returncode == 3, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2, result.stderr
    assert f"the server at {login_page} did not answer as a Kubernetes API server" in lines[0]
    # What it answered, not the JSON decoder's words about it.
    assert (
        "answered text/html; charset=utf-8, starting '<!doctype html><html><body><form>Sign in</form></body></html'..."
        in lines[0]
    )
    assert "JSONDecodeError" not in lines[0] and "Expecting value" not in lines[0]
    assert lines[1].startswith("hint: check that --kubeconfig/--context point at the API server itself")
