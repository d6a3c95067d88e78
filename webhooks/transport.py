"""One HTTP POST of a delivery, to the address webhooks.safety chose (never resolved again), with a total
deadline and a cap on how much of the answer is read. Redirects are not followed: a 3xx is a failure."""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from dataclasses import dataclass

from .safety import Target

READ_CHUNK = 8192


@dataclass(frozen=True)
class Answer:
    status: int
    latency_ms: int
    body_bytes: int  # read, at most the cap


class _Pinned(http.client.HTTPConnection):
    """http to the checked address (the Host header still names the URL's host)."""

    def __init__(self, target: Target, address: str, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedTLS(http.client.HTTPSConnection):
    """https to the checked address; the certificate must name the URL's host (SNI and verification)."""

    def __init__(self, target: Target, address: str, timeout: float, context: ssl.SSLContext) -> None:
        super().__init__(target.host, target.port, timeout=timeout, context=context)
        self._address = address

    def connect(self) -> None:
        raw = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)


def post(
    *,
    target: Target,
    address: str,
    body: bytes,
    headers: dict[str, str],
    timeout: float,
    max_response_bytes: int,
    tls_context: ssl.SSLContext | None = None,
) -> Answer:
    """POST ``body``; the answer's status. Raises OSError (and http.client's errors) on a connection
    failure, a timeout, or an answer that takes longer than ``timeout`` in all."""
    started = time.monotonic()
    if target.scheme == "https":
        connection: http.client.HTTPConnection = _PinnedTLS(
            target, address, timeout, tls_context or ssl.create_default_context()
        )
    else:
        connection = _Pinned(target, address, timeout)
    try:
        return _exchange(
            connection, target=target, body=body, headers=headers, started=started, timeout=timeout,
            max_response_bytes=max_response_bytes,
        )  # fmt: skip
    except TimeoutError:
        raise TimeoutError(f"the answer took longer than {timeout:g} s") from None
    finally:
        connection.close()


def _exchange(
    connection: http.client.HTTPConnection,
    *,
    target: Target,
    body: bytes,
    headers: dict[str, str],
    started: float,
    timeout: float,
    max_response_bytes: int,
) -> Answer:
    """Send, then read the answer: at most ``max_response_bytes`` of it, before ``started + timeout``."""
    deadline = started + timeout
    connection.request("POST", target.path, body=body, headers=headers)
    response = connection.getresponse()
    read = 0
    # A slow answer trickling bytes would keep each read under the socket timeout forever: the
    # deadline bounds the whole exchange, and the cap how much of it is taken.
    while read < max_response_bytes:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the answer took longer than {timeout:g} s")
        if connection.sock is not None:
            connection.sock.settimeout(left)
        chunk = response.read1(min(READ_CHUNK, max_response_bytes - read))
        if not chunk:
            break
        read += len(chunk)
    return Answer(response.status, int((time.monotonic() - started) * 1000), read)
