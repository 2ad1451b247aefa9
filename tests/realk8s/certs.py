"""The plane's certificates, made with `cryptography`: one CA, serving certificates for 127.0.0.1, and the
service-account signing key pair."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

_VALID = datetime.timedelta(days=2)


def _pem_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@dataclass(frozen=True)
class CertPair:
    """A certificate and its key, as files."""

    cert: Path
    key: Path


class CertAuthority:
    """A self-signed CA that signs the plane's serving and client certificates."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "realk8s-ca")])
        now = datetime.datetime.now(datetime.UTC)
        self._name = name
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALID)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        self.pem = self._cert.public_bytes(serialization.Encoding.PEM)
        self.cert_file = directory / "ca.crt"
        self.cert_file.write_bytes(self.pem)
        (directory / "ca.key").write_bytes(_pem_key(self._key))
        self.key_file = directory / "ca.key"

    def serving(self, name: str, dns_names: list[str]) -> CertPair:
        """A serving certificate for 127.0.0.1 and `dns_names`, written as NAME.crt / NAME.key."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        sans += [x509.DNSName(d) for d in dns_names]
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALID)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        pair = CertPair(self.directory / f"{name}.crt", self.directory / f"{name}.key")
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        pair.key.write_bytes(_pem_key(key))
        return pair

    def client(self, file_name: str, user: str, groups: list[str]) -> CertPair:
        """A client certificate for `user` in `groups` (CN and O, as kube-apiserver reads x509 identities), written
        as FILE_NAME.crt / FILE_NAME.key."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        subject = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
        subject.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(subject))
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALID)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        pair = CertPair(self.directory / f"{file_name}.crt", self.directory / f"{file_name}.key")
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        pair.key.write_bytes(_pem_key(key))
        return pair


def service_account_keys(directory: Path) -> CertPair:
    """The RSA key pair kube-apiserver signs and verifies service-account tokens with (`cert` is the public key)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pair = CertPair(directory / "sa.pub", directory / "sa.key")
    pair.key.write_bytes(_pem_key(key))
    pair.cert.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return pair
