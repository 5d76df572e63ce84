"""TLS for the parties: server and client contexts, and a local CA for test deployments.

Outside loopback every link must run over TLS: the Ed25519 signatures authenticate
messages but do not hide them (``docs/federated-deployment.md``). A party's ``tls``
section names its certificate and key (served, and shown to peers as a client
certificate), the CA file it trusts for its peers, and whether it requires peers to show
a certificate (mutual TLS: only the round's parties can reach its port, which also stops
strangers from aborting the round with junk messages).

:func:`make_local_ca` issues a throw-away CA and one certificate per party (for the demo
and the tests); real deployments use their own PKI.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["TLSConfig", "client_context", "make_local_ca", "server_options"]


@dataclass(frozen=True)
class TLSConfig:
    """A party's TLS files (PEM) and whether it demands client certificates."""

    certfile: Path
    keyfile: Path
    ca_file: Path
    require_client_cert: bool = True


def server_options(tls: TLSConfig) -> dict[str, object]:
    """Keyword arguments for ``uvicorn.Config``."""
    return {
        "ssl_certfile": str(tls.certfile),
        "ssl_keyfile": str(tls.keyfile),
        "ssl_ca_certs": str(tls.ca_file),
        "ssl_cert_reqs": ssl.CERT_REQUIRED if tls.require_client_cert else ssl.CERT_NONE,
    }


def client_context(tls: TLSConfig) -> ssl.SSLContext:
    """Verify peers against ``ca_file`` (host names checked); present our certificate."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(tls.ca_file))
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(str(tls.certfile), str(tls.keyfile))
    return ctx


def _write(path: Path, data: bytes, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def make_local_ca(
    folder: str | os.PathLike[str], parties: list[str], *, host: str = "127.0.0.1", days: int = 7
) -> dict[str, TLSConfig]:
    """A throw-away CA and a certificate for each party (server and client use) for ``host``.

    Writes ``ca.pem`` and ``<party>.pem`` / ``<party>.key`` (mode 0600) under ``folder``;
    the CA's private key is not kept. Returns each party's :class:`TLSConfig`.
    """
    root = Path(folder)
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ppdp local round CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_file = root / "ca.pem"
    _write(ca_file, ca.public_bytes(serialization.Encoding.PEM), 0o644)
    try:
        san: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        san = x509.DNSName(host)
    out: dict[str, TLSConfig] = {}
    for party in parties:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, party)]))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName([san]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .sign(ca_key, hashes.SHA256())
        )
        certfile, keyfile = root / f"{party}.pem", root / f"{party}.key"
        _write(certfile, cert.public_bytes(serialization.Encoding.PEM), 0o644)
        _write(
            keyfile,
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
            0o600,
        )
        out[party] = TLSConfig(certfile, keyfile, ca_file)
    return out
