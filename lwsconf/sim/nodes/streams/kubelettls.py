"""The kubelet port's serving certificate: self-signed, as a kubelet without one makes its own.

kube-apiserver reaches kubelets over HTTPS only (its kubelet client's scheme), and without
`--kubelet-certificate-authority` it does not verify the certificate, exactly what a kubelet's
self-signed serving certificate relies on. One ECDSA P-256 certificate per process serves every node
agent (node IPs and `localhost` in its names); the sim API server connects the same way, unverified,
and only to loopback addresses. Callers are asked for a client certificate (`kubeletauth.server_context`
adds the client CA), and only authorised ones are answered (`kubeletauth`).
"""

from __future__ import annotations

import datetime
import functools
import ipaddress
import os
import ssl
import tempfile

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@functools.cache
def _identity() -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lwsconf-sim-kubelet")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def server_context() -> ssl.SSLContext:
    """A TLS context serving the kubelet certificate (HTTP/1.1: upgrades need it)."""
    cert_pem, key_pem = _identity()
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory(prefix="lwsconf-kubelet-tls-") as tmp:
        paths = (os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key"))
        for path, data in zip(paths, (cert_pem, key_pem), strict=True):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        ctx.load_cert_chain(*paths)
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx
