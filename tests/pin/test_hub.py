"""The Hub client against a Hub API of our own: branches to commits, quoting, private repos, errors."""

from __future__ import annotations

import socket

import httpx
import pytest

from k3deploy.errors import CheckFailed, EnvironmentProblem
from k3deploy.pin.hub import HubClient
from tests.pin.conftest import DRAFT_SHA, MODEL_SHA
from tests.pin.hub_server import Hub, HubModel


@pytest.fixture(autouse=True)
def _endpoint(monkeypatch: pytest.MonkeyPatch, hub: Hub) -> None:
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.delenv("HF_TOKEN", raising=False)


def test_branch_resolves_to_its_commit(hub: Hub) -> None:
    with HubClient(timeout_s=5) as client:
        assert client.resolve("moonshotai/Kimi-K3", "main").sha == MODEL_SHA
        assert client.resolve("Inferact/Kimi-K3-DSpark", None).sha == DRAFT_SHA
        assert client.resolve("Inferact/Kimi-K3-DSpark", "refs/pr/1").sha == "3" * 40
    assert hub.requests[-1][0] == "/api/models/Inferact/Kimi-K3-DSpark/revision/refs%2Fpr%2F1"


def test_unknown_revision_and_unknown_repo_fail(hub: Hub) -> None:
    with HubClient(timeout_s=5) as client:
        with pytest.raises(CheckFailed, match="has no revision 'v9'"):
            client.resolve("moonshotai/Kimi-K3", "v9")
        with pytest.raises(CheckFailed, match=r"not found.*HTTP 401") as missing:
            client.resolve("moonshotai/Nothing", "main")
    assert "HF_TOKEN" in (missing.value.hint or "")


def test_private_repo_needs_hf_token(monkeypatch: pytest.MonkeyPatch, hub: Hub) -> None:
    hub.models["org/private"] = HubModel(refs={"main": "4" * 40}, private=True, readers={"hf_reader"})
    hub.tokens.add("hf_reader")
    with HubClient(timeout_s=5) as client, pytest.raises(CheckFailed):
        client.resolve("org/private", "main")
    monkeypatch.setenv("HF_TOKEN", "hf_reader")
    with HubClient(timeout_s=5) as client:
        assert client.resolve("org/private", "main").sha == "4" * 40
    assert hub.requests[-1][1]["Authorization"] == "Bearer hf_reader"


def test_unreachable_hub_is_an_environment_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
        with HubClient(timeout_s=5) as client, pytest.raises(EnvironmentProblem, match=f"127.0.0.1:{port}") as exc:
            client.resolve("moonshotai/Kimi-K3", "main")
    assert exc.value.exit_code == 3


def test_server_refuses_an_unquoted_revision_and_a_bad_token(hub: Hub) -> None:
    assert httpx.get(f"{hub.url}/api/models/Inferact/Kimi-K3-DSpark/revision/refs/pr/1").status_code == 404
    bad = httpx.get(f"{hub.url}/api/models/moonshotai/Kimi-K3/revision/main", headers={"Authorization": "Bearer nope"})
    assert bad.status_code == 401 and bad.headers["X-Error-Message"] == "Invalid credentials in Authorization header"


def test_a_renamed_repo_is_followed_to_its_new_name(hub: Hub) -> None:
    hub.renames["moonshotai/Kimi-K3-Preview"] = "moonshotai/Kimi-K3"
    with HubClient(timeout_s=5) as client:
        resolved = client.resolve("moonshotai/Kimi-K3-Preview", "main")
    assert (resolved.repo_id, resolved.sha) == ("moonshotai/Kimi-K3", MODEL_SHA)
    assert [path for path, _ in hub.requests] == [
        "/api/models/moonshotai/Kimi-K3-Preview/revision/main",
        "/api/models/moonshotai/Kimi-K3/revision/main",
    ]


def test_a_redirect_loop_is_an_environment_problem(hub: Hub) -> None:
    hub.renames["a/one"] = "a/two"
    hub.renames["a/two"] = "a/one"
    with HubClient(timeout_s=5) as client, pytest.raises(EnvironmentProblem, match="redirected a/one@main more than"):
        client.resolve("a/one", "main")


def test_a_gated_repo_says_what_the_token_needs(monkeypatch: pytest.MonkeyPatch, hub: Hub) -> None:
    hub.models["meta/gated"] = HubModel(refs={"main": "5" * 40}, gated=True, readers={"hf_granted"})
    hub.tokens.update({"hf_granted", "hf_other"})
    with (
        HubClient(timeout_s=5) as client,
        pytest.raises(CheckFailed, match=r"gated and no HF_TOKEN is set \(Repo model") as anon,
    ):
        client.resolve("meta/gated", "main")
    assert "accept the model's terms" in (anon.value.hint or "") and "/meta/gated" in (anon.value.hint or "")
    monkeypatch.setenv("HF_TOKEN", "hf_other")
    with HubClient(timeout_s=5) as client, pytest.raises(CheckFailed, match="not been granted access") as other:
        client.resolve("meta/gated", "main")
    assert "not in the authorized list" in other.value.message and "request access" in (other.value.hint or "")
    monkeypatch.setenv("HF_TOKEN", "hf_granted")
    with HubClient(timeout_s=5) as client:
        assert client.resolve("meta/gated", "main").sha == "5" * 40


def test_a_short_sha_resolves_to_the_full_commit(hub: Hub) -> None:
    with HubClient(timeout_s=5) as client:
        assert client.resolve("moonshotai/Kimi-K3", MODEL_SHA[:7]).sha == MODEL_SHA
        with pytest.raises(CheckFailed, match="has no revision 'abcdef0'") as missing:
            client.resolve("moonshotai/Kimi-K3", "abcdef0")
    assert "full 40-hex commit" in (missing.value.hint or "")
