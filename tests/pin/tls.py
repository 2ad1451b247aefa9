"""A throw-away certificate authority for the pin tests: the registry's TLS certificate and the token signer's.

Made with `cryptography` for each test session; nothing is read from or written to the system trust store. A client
trusts it through `SSL_CERT_FILE` (httpx reads it), as a site trusts its own CA for an internal mirror.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key, as PEM files, plus the objects for signing in-process."""

    cert_path: Path
    key_path: Path
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Issued:
    cert_path, key_path = directory / f"{stem}.crt", directory / f"{stem}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    key_path.chmod(0o600)
    return Issued(cert_path, key_path, cert, key)


class TestCA:
    """A self-signed P-256 CA in `directory` (`ca.crt`) that issues server and signing certificates."""

    __test__ = False  # a helper, not a pytest test class

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        now = datetime.datetime.now(datetime.UTC)
        self._not_before, self._not_after = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=1)
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            self._builder(_name("k3deploy test CA"), _name("k3deploy test CA"), key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
            )  # keyCertSign, cRLSign
            .sign(key, hashes.SHA256())
        )
        self.ca = _write(directory, "ca", cert, key)

    def _builder(
        self, subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
    ) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._not_before)
            .not_valid_after(self._not_after)
        )

    def issue(self, stem: str, *, server: bool) -> Issued:
        """A leaf certificate: for TLS on 127.0.0.1 and localhost (`server`), else for signing tokens."""
        key = ec.generate_private_key(ec.SECP256R1())
        builder = self._builder(_name(f"k3deploy test {stem}"), self.ca.cert.subject, key.public_key()).add_extension(
            x509.BasicConstraints(ca=False, path_length=None), critical=True
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            ).add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        cert = builder.sign(self.ca.key, hashes.SHA256())
        return _write(self.directory, stem, cert, key)
