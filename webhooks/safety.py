"""Where a webhook may be delivered (SSRF): https to public addresses only, checked on the address a name
resolves to at delivery time — the connection is then made to that very address, never to a second
resolution a rebinding DNS server could answer differently.

Refused by default: private (10/8, 172.16/12, 192.168/16, fc00::/7), loopback (127/8, ::1), link-local
(169.254/16 — the cloud metadata address —, fe80::/10), multicast, reserved and unspecified addresses,
and the IPv4 ones again inside IPv6 (::ffff:127.0.0.1, 64:ff9b::/96 NAT64, 2002::/16 6to4).
``ATLAS_WEBHOOKS_ALLOW_LOOPBACK=true`` (development, tests) allows loopback addresses, and plain http
to them only. Redirects are never followed (webhooks.transport): a 3xx is a failed attempt, so no
redirect can lead a delivery anywhere these rules did not check.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from atlas_site.echo import echoed
from atlas_site.errors import ValidationFailed

MAX_URL_CHARS = 2000
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
#: host, port → the addresses it resolves to. Tests pass their own (a hosts file of their own).
Resolver = Callable[[str, int], list[str]]


class AddressRefused(Exception):
    """A delivery refused before connecting: the message says why (it goes to the delivery log)."""


@dataclass(frozen=True)
class Target:
    """A checked endpoint URL, split: where to connect, what to name in the Host header and TLS."""

    scheme: str
    host: str
    port: int
    path: str


def system_resolve(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise AddressRefused(f"the host {host} does not resolve: {exc}") from None
    return list(dict.fromkeys(info[4][0] for info in infos))


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, NAT64, 6to4), whose own rules then apply."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in ipaddress.ip_network("64:ff9b::/96"):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    return None


def address_refusal(address: IPAddress) -> str | None:
    """Why a delivery may not connect to ``address`` (None: it may)."""
    if isinstance(address, ipaddress.IPv6Address) and (inner := _embedded_ipv4(address)) is not None:
        return address_refusal(inner)
    if address.is_loopback:
        return None if settings.ATLAS_WEBHOOKS_ALLOW_LOOPBACK else "a loopback address"
    for kind, flag in (
        ("a link-local address", address.is_link_local),
        ("a multicast address", address.is_multicast),
        ("an unspecified address", address.is_unspecified),
        ("a reserved address", address.is_reserved),
        ("a private address", address.is_private),
    ):
        if flag:
            return kind
    return None if address.is_global else "a non-public address"


def _shown(address: IPAddress) -> IPAddress:
    """The address a refusal names: the IPv4 one an IPv6 address carries, whose rule refused it."""
    inner = _embedded_ipv4(address) if isinstance(address, ipaddress.IPv6Address) else None
    return inner or address


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _numeric_form(host: str) -> bool:
    """A host that is a number in a form other than dotted decimal (2130706433, 0x7f.1, 017700000001):
    resolvers read these as addresses, so they are refused rather than guessed at."""
    parts = host.split(".")
    return all(p and (p.isdigit() or p.lower().startswith("0x")) for p in parts) and _literal(host) is None


def url_check(url: object) -> Target:
    """A webhook URL, parsed and checked as far as it can be without resolving (a clear 400 otherwise):
    https (http only to a loopback address, with ATLAS_WEBHOOKS_ALLOW_LOOPBACK), no user info, and an
    address literal that is itself refused is refused now rather than at every delivery."""
    if not isinstance(url, str) or not url.strip():
        raise ValidationFailed("url is required", field="url")
    if len(url) > MAX_URL_CHARS or not url.isprintable() or " " in url:
        raise ValidationFailed(f"url must be at most {MAX_URL_CHARS} printable characters, no spaces", field="url")
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        raise ValidationFailed(f"url {echoed(url)} has an invalid port", field="url") from None
    host = (parts.hostname or "").rstrip(".")
    if parts.scheme not in ("https", "http") or not host:
        raise ValidationFailed(f"url must be an https:// URL with a host, not {echoed(url)}", field="url")
    if parts.username is not None or parts.password is not None:
        raise ValidationFailed("url must not carry a user name or password", field="url")
    if parts.fragment:
        raise ValidationFailed("url must not have a #fragment", field="url")
    if _numeric_form(host):
        raise ValidationFailed(f"write the address {echoed(host)} in dotted decimal form", field="url")
    literal = _literal(host)
    if (host == "localhost" or host.endswith(".localhost")) and not settings.ATLAS_WEBHOOKS_ALLOW_LOOPBACK:
        raise ValidationFailed("url points at localhost: webhooks go to public addresses", field="url")
    if parts.scheme == "http":
        loopback = host == "localhost" or (literal is not None and literal.is_loopback)
        if not (settings.ATLAS_WEBHOOKS_ALLOW_LOOPBACK and loopback):
            raise ValidationFailed(
                "url must use https (plain http only to a loopback address, with ATLAS_WEBHOOKS_ALLOW_LOOPBACK=true)",
                field="url",
            )
    if literal is not None and (why := address_refusal(literal)):
        raise ValidationFailed(f"url points at {why} ({_shown(literal)}): webhooks go to public addresses", field="url")
    path = parts.path or "/"
    return Target(
        scheme=parts.scheme,
        host=host,
        port=port or (443 if parts.scheme == "https" else 80),
        path=path + (f"?{parts.query}" if parts.query else ""),
    )


def address_choose(target: Target, *, resolve: Resolver | None = None) -> str:
    """The address to connect to for ``target``, resolved now: every address the name has must be
    allowed (one refused address refuses the name — a rebinding server cannot slip one in), and plain
    http only ever goes to loopback. Raises AddressRefused."""
    literal = _literal(target.host)
    addresses = [str(literal)] if literal is not None else (resolve or system_resolve)(target.host, target.port)
    if not addresses:
        raise AddressRefused(f"the host {target.host} has no address")
    for raw in addresses:
        address = ipaddress.ip_address(raw.split("%", 1)[0])
        if why := address_refusal(address):
            raise AddressRefused(f"{target.host} resolves to {why} ({_shown(address)}): refused")
        if target.scheme == "http" and not address.is_loopback:
            raise AddressRefused(f"plain http only to a loopback address, and {target.host} resolves to {address}")
    return addresses[0]
