"""The certificates and keys of a local control plane, made fresh for each cluster.

kube-apiserver serves TLS only and authenticates clients; kubeadm's layout is followed in spirit: one
self-signed CA signs the API server's serving certificate (SANs: 127.0.0.1, localhost and the names
and first ClusterIP of the `kubernetes` Service, so in-cluster clients that resolve it verify it too)
and client certificates (the admin in `system:masters`; one per component that talks to the API
server). A separate RSA key signs service-account tokens. Everything is written under one folder
with owner-only permissions and removed with the cluster.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=7)
"""Long enough for any run; a local cluster is thrown away with its folder."""

Key = ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class Pair:
    """A certificate and its key, as PEM files."""

    cert: Path
    key: Path


def _key() -> Key:
    return ec.generate_private_key(ec.SECP256R1())


def _name(common: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _write(path: Path, data: bytes) -> Path:
    path.touch(mode=0o600)
    path.write_bytes(data)
    return path


def _key_pem(key: Key | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


class Authority:
    """A self-signed CA that issues the cluster's certificates into `folder`."""

    def __init__(self, folder: Path, name: str = "lwsconf-local-ca") -> None:
        self.folder = folder
        self._key = _key()
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (x509.CertificateBuilder().subject_name(_name(name)).issuer_name(_name(name))
                      .public_key(self._key.public_key()).serial_number(x509.random_serial_number())
                      .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALIDITY)
                      .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                      .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                   content_commitment=False, key_encipherment=False,
                                                   data_encipherment=False, key_agreement=False,
                                                   encipher_only=False, decipher_only=False), critical=True)
                      .sign(self._key, hashes.SHA256()))
        self.pair = Pair(_write(folder / "ca.crt", self._cert.public_bytes(serialization.Encoding.PEM)),
                         _write(folder / "ca.key", _key_pem(self._key)))

    def issue(self, stem: str, common: str, *, org: str | None = None, server_names: tuple[str, ...] = (),
              server_ips: tuple[str, ...] = ()) -> Pair:
        """A leaf certificate: a server one when names or IPs are given, else a client one."""
        key = _key()
        now = datetime.datetime.now(datetime.UTC)
        server = bool(server_names or server_ips)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (x509.CertificateBuilder().subject_name(_name(common, org)).issuer_name(self._cert.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALIDITY)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if server:
            alt: list[x509.GeneralName] = [x509.DNSName(n) for n in server_names]
            alt += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in server_ips]
            builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return Pair(_write(self.folder / f"{stem}.crt", cert.public_bytes(serialization.Encoding.PEM)),
                    _write(self.folder / f"{stem}.key", _key_pem(key)))


def service_account_keys(folder: Path) -> Pair:
    """The RSA pair that signs (private) and verifies (public, `cert` here) service-account tokens."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return Pair(_write(folder / "sa.pub", public), _write(folder / "sa.key", _key_pem(key)))
