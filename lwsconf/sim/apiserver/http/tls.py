"""A throwaway TLS identity for the simulated API server.

The server must serve HTTPS because kubectl (client-go's clientcmd) only sends a kubeconfig's
bearer token over TLS: over plain HTTP it silently drops the `Authorization` header
(kubernetes/kubectl#744), so token auth and kubectl could not both work. Each server start makes a
fresh self-signed certificate for 127.0.0.1 and localhost (ECDSA P-256, valid one year) with the
`cryptography` library, and the kubeconfig carries it as `certificate-authority-data`.

The same certificate is the CA of the server's kubelet client certificate (`kubelet_client`), as a kubeadm
cluster's one CA signs both kube-apiserver's serving certificate and its `apiserver-kubelet-client`
certificate: the node agents trust their API server's CA as the kubelet's client CA
(`lwsconf.sim.nodes.streams.kubeletauth`), and the server presents that certificate to every kubelet it calls.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Identity:
    cert_pem: bytes
    key_pem: bytes

    def issue_client(self, common_name: str, organization: str) -> Identity:
        """A client certificate (ECDSA P-256, one year, clientAuth) signed by this self-signed identity."""
        issuer_key = serialization.load_pem_private_key(self.key_pem, password=None)
        assert isinstance(issuer_key, ec.EllipticCurvePrivateKey)
        issuer = x509.load_pem_x509_certificate(self.cert_pem)
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
                                     x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(issuer.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(issuer_key, hashes.SHA256())
        )
        return _identity(cert, key)

    def client_context(self) -> ssl.SSLContext:
        """Presents this certificate; the peer's is not verified: kube-apiserver without
        --kubelet-certificate-authority does not verify a kubelet's (self-signed) serving certificate."""
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        self._load(ctx)
        return ctx

    def _load(self, ctx: ssl.SSLContext) -> None:
        with tempfile.TemporaryDirectory(prefix="lwsconf-tls-") as tmp:
            cert_path, key_path = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
            for path, data in ((cert_path, self.cert_pem), (key_path, self.key_pem)):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
            ctx.load_cert_chain(cert_path, key_path)

    def server_context(self) -> ssl.SSLContext:
        """An SSLContext serving this certificate (files exist only while loading)."""
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._load(ctx)
        return ctx


def self_signed(common_name: str = "lwsconf-sim-apiserver") -> Identity:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                    x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return _identity(cert, key)


def _identity(cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Identity:
    return Identity(
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()),
    )
