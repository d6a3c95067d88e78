"""https to the checked address: the connection goes to the address webhooks.safety chose, while TLS names
and verifies the URL's host (SNI, certificate) — a certificate for another name is refused."""

from __future__ import annotations

import datetime
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from webhooks import transport
from webhooks.safety import Target


def _certificate(tmp_path: Path, name: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@pytest.fixture
def tls_receiver(tmp_path):
    """An https server on 127.0.0.1 whose certificate names hooks.example.test; records the Host and SNI."""
    cert, key = _certificate(tmp_path, "hooks.example.test")
    seen: dict[str, str] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen["host"] = self.headers["Host"]
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, name, ctx: seen.__setitem__("sni", name)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], cert, seen, tmp_path
    server.shutdown()
    server.server_close()


def test_https_goes_to_the_checked_address_and_verifies_the_urls_host(tls_receiver) -> None:
    port, cert, seen, _ = tls_receiver
    trust = ssl.create_default_context(cafile=str(cert))
    target = Target(scheme="https", host="hooks.example.test", port=port, path="/in")
    answer = transport.post(
        target=target, address="127.0.0.1", body=b"{}", headers={}, timeout=5, max_response_bytes=100,
        tls_context=trust,
    )  # fmt: skip
    assert answer.status == 204
    assert seen == {"sni": "hooks.example.test", "host": f"hooks.example.test:{port}"}


def test_a_certificate_for_another_name_is_refused(tls_receiver) -> None:
    port, cert, seen, _ = tls_receiver
    trust = ssl.create_default_context(cafile=str(cert))
    target = Target(scheme="https", host="other.example.test", port=port, path="/in")
    with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
        transport.post(
            target=target, address="127.0.0.1", body=b"{}", headers={}, timeout=5, max_response_bytes=100,
            tls_context=trust,
        )  # fmt: skip
    assert "host" not in seen  # nothing was sent


def test_an_untrusted_certificate_is_refused(tls_receiver) -> None:
    port, _, seen, _ = tls_receiver
    target = Target(scheme="https", host="hooks.example.test", port=port, path="/in")
    with pytest.raises(ssl.SSLCertVerificationError):
        transport.post(target=target, address="127.0.0.1", body=b"{}", headers={}, timeout=5, max_response_bytes=100)
    assert "host" not in seen
