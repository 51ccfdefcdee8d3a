"""Certificates for TLS tests, made with the ``cryptography`` package: a CA, a server
certificate for 127.0.0.1/localhost, client certificates (a valid one, an expired one, one from
an unknown CA) and PEM files in Kafka's PEM keystore layout (key + chain in one file), the
server's also with an encrypted key."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(cn: str, org: str = "Odradek Tests") -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "DE"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, org),
            x509.NameAttribute(NameOID.COMMON_NAME, cn),
        ]
    )


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey, password: bytes | None = None) -> bytes:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password)
        if password
        else serialization.NoEncryption()
    )
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


@dataclass
class Issued:
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    @property
    def key_pem(self) -> bytes:
        return _pem_key(self.key)

    @property
    def cert_pem(self) -> bytes:
        return _pem_cert(self.cert)


class CertificateAuthority:
    def __init__(self, name: str = "Odradek Test CA") -> None:
        self.key = _key()
        now = datetime.datetime.now(datetime.UTC)
        self.name = _name(name)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(self.name)
            .issuer_name(self.name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
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
            .sign(self.key, hashes.SHA256())
        )

    @property
    def cert_pem(self) -> bytes:
        return _pem_cert(self.cert)

    def issue(
        self,
        cn: str,
        *,
        server: bool = False,
        expired: bool = False,
        org: str = "Odradek Tests",
    ) -> Issued:
        key = _key()
        now = datetime.datetime.now(datetime.UTC)
        if expired:
            start, end = now - datetime.timedelta(days=10), now - datetime.timedelta(days=1)
        else:
            start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=30)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(cn, org))
            .issuer_name(self.name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
        )
        if server:
            import ipaddress

            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [
                        x509.DNSName("localhost"),
                        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    ]
                ),
                critical=False,
            )
        return Issued(key, builder.sign(self.key, hashes.SHA256()))


@dataclass
class TlsFiles:
    """PEM files of one test run."""

    ca: Path  # the CA certificate (truststore)
    server: Path  # broker key + certificate (Kafka's PEM keystore layout)
    server_key: Path
    server_cert: Path
    client_key: Path
    client_cert: Path
    client: Path  # key + certificate in one file
    expired_key: Path
    expired_cert: Path
    rogue_key: Path  # a client certificate from another CA
    rogue_cert: Path
    client_dn: str  # the client certificate's DN as Kafka prints it
    server_chain_pem: str
    server_key_pem: str
    ca_pem: str
    #: the broker's key encrypted with :data:`KEY_PASSWORD` (PKCS#8), + chain, in one file
    server_encrypted: Path
    server_encrypted_key_pem: str


#: the password of :attr:`TlsFiles.server_encrypted` (Kafka's ``ssl.key.password``)
KEY_PASSWORD = "key-secret"


def make_tls_files(directory: Path) -> TlsFiles:
    directory.mkdir(parents=True, exist_ok=True)
    ca = CertificateAuthority()
    server = ca.issue("localhost", server=True)
    client = ca.issue("client-app", org="Client Org")
    expired = ca.issue("expired-app", expired=True)
    rogue = CertificateAuthority("Rogue CA").issue("rogue-app")

    def write(name: str, data: bytes) -> Path:
        path = directory / name
        path.write_bytes(data)
        return path

    return TlsFiles(
        ca=write("ca.pem", ca.cert_pem),
        server=write("server.pem", server.key_pem + server.cert_pem + ca.cert_pem),
        server_key=write("server.key", server.key_pem),
        server_cert=write("server.crt", server.cert_pem),
        client_key=write("client.key", client.key_pem),
        client_cert=write("client.crt", client.cert_pem),
        client=write("client.pem", client.key_pem + client.cert_pem),
        expired_key=write("expired.key", expired.key_pem),
        expired_cert=write("expired.crt", expired.cert_pem),
        rogue_key=write("rogue.key", rogue.key_pem),
        rogue_cert=write("rogue.crt", rogue.cert_pem),
        client_dn="CN=client-app,O=Client Org,C=DE",
        server_chain_pem=(server.cert_pem + ca.cert_pem).decode(),
        server_key_pem=server.key_pem.decode(),
        ca_pem=ca.cert_pem.decode(),
        server_encrypted=write(
            "server-encrypted.pem",
            _pem_key(server.key, KEY_PASSWORD.encode()) + server.cert_pem + ca.cert_pem,
        ),
        server_encrypted_key_pem=_pem_key(server.key, KEY_PASSWORD.encode()).decode(),
    )
