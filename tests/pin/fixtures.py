"""The real distribution registry (anonymous, or behind token auth) over TLS: fixtures every test directory may use.

Registered in tests/conftest.py (`pytest_plugins`), as preflight and `up` tests read images from it too. The registry
trusts nothing but the session's test CA; clients trust it through `SSL_CERT_FILE`, set for this process and the CLI
subprocesses it starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.pin.distribution import Distribution
from tests.pin.tls import Issued, TestCA
from tests.pin.token_issuer import TokenIssuer


@dataclass(frozen=True)
class Pki:
    """The session's CA bundle, the certificate both servers present, and the token signer's."""

    ca_bundle: Path
    server: Issued
    signer: Issued


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A test CA with a TLS certificate for 127.0.0.1 and a token-signing certificate."""
    ca = TestCA(tmp_path_factory.mktemp("pki"))
    return Pki(ca.ca.cert_path, ca.issue("server", server=True), ca.issue("signer", server=False))


def _run(workdir: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch, **kwargs: object) -> Iterator[Distribution]:
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca_bundle))
    reg = Distribution(workdir, pki.server, pki.ca_bundle, **kwargs).start()  # type: ignore[arg-type]
    try:
        yield reg
    finally:
        reg.stop()


@pytest.fixture
def registry(tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch) -> Iterator[Distribution]:
    """The real registry over TLS, anonymous pull and push."""
    yield from _run(tmp_path / "registry", pki, monkeypatch)


@pytest.fixture
def partial_registry(tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch) -> Iterator[Distribution]:
    """The real registry configured to accept an index whose platform images it does not hold (a partial mirror)."""
    yield from _run(tmp_path / "partial", pki, monkeypatch, index_children_must_exist=False)


@pytest.fixture
def token_issuer(pki: Pki) -> Iterator[TokenIssuer]:
    """The realm of `auth_registry`: anonymous pull of `public` repositories, push with its pusher's credentials."""
    issuer = TokenIssuer(pki.signer, pki.server).start()
    yield issuer
    issuer.stop()


@pytest.fixture
def auth_registry(
    tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch, token_issuer: TokenIssuer
) -> Iterator[Distribution]:
    """The real registry behind token auth: 401 with a Bearer challenge naming `token_issuer` until given its token."""
    yield from _run(tmp_path / "auth", pki, monkeypatch, issuer=token_issuer)
