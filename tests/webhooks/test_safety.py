"""SSRF: what a webhook URL may be, and where a delivery may connect — checked on the address a name
resolves to at delivery time, connecting to that address; redirects never followed."""

from __future__ import annotations

import pytest

from atlas_site.errors import ValidationFailed
from webhooks.delivery import delivery_attempt
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.safety import AddressRefused, address_choose, system_resolve, url_check
from webhooks.services import endpoint_create, event_emit

from .receiver import Receiver, receiver_start

REFUSED_WITHOUT_LOOPBACK = {
    "http://127.0.0.1:8080/hook": "url must use https",
    "http://localhost/hook": "url points at localhost",
    "https://127.0.0.1/hook": "url points at a loopback address (127.0.0.1)",
    "https://[::1]/hook": "url points at a loopback address (::1)",
    "https://localhost/hook": "url points at localhost",
    "https://hooks.localhost/hook": "url points at localhost",
}
REFUSED_ALWAYS = {
    "http://169.254.169.254/latest/meta-data/": "url must use https",
    "https://169.254.169.254/latest/meta-data/": "url points at a link-local address (169.254.169.254)",
    "https://10.0.0.5/hook": "url points at a private address (10.0.0.5)",
    "https://192.168.1.1/hook": "url points at a private address (192.168.1.1)",
    "https://[fe80::1]/hook": "url points at a link-local address (fe80::1)",
    "https://[::ffff:10.0.0.1]/hook": "url points at a private address (10.0.0.1)",
    "https://224.0.0.1/hook": "url points at a multicast address (224.0.0.1)",
    "https://0.0.0.0/hook": "url points at an unspecified address (0.0.0.0)",
    "https://100.64.0.1/hook": "url points at a non-public address (100.64.0.1)",
    "http://2130706433/": "write the address '2130706433' in dotted decimal form",
    "https://2130706433/": "write the address '2130706433' in dotted decimal form",
    "https://0x7f.1/": "write the address '0x7f.1' in dotted decimal form",
    "https://user:pw@hooks.example.com/": "url must not carry a user name or password",
    "ftp://hooks.example.com/": "url must be an https:// URL with a host",
    "https://hooks.example.com/#x": "url must not have a #fragment",
    "https:///nohost": "url must be an https:// URL with a host",
}


@pytest.mark.parametrize(("url", "why"), sorted(REFUSED_WITHOUT_LOOPBACK.items()) + sorted(REFUSED_ALWAYS.items()))
def test_a_url_that_points_where_webhooks_may_not_go_is_refused(settings, url, why) -> None:
    settings.ATLAS_WEBHOOKS_ALLOW_LOOPBACK = False
    with pytest.raises(ValidationFailed) as refused:
        url_check(url)
    assert refused.value.message.startswith(why) and refused.value.field == "url"


@pytest.mark.parametrize(("url", "why"), sorted(REFUSED_ALWAYS.items()))
def test_the_loopback_flag_allows_loopback_and_nothing_else(settings, url, why) -> None:
    settings.ATLAS_WEBHOOKS_ALLOW_LOOPBACK = True
    with pytest.raises(ValidationFailed) as refused:
        url_check(url)
    assert refused.value.message.startswith(why)


def test_the_loopback_flag_allows_http_to_loopback(settings) -> None:
    settings.ATLAS_WEBHOOKS_ALLOW_LOOPBACK = True
    assert url_check("http://127.0.0.1:8080/hook?x=1").path == "/hook?x=1"
    assert url_check("http://localhost/hook").port == 80
    assert url_check("https://hooks.example.com/in").port == 443


def test_registering_a_refused_url_stores_nothing(plain_tenant, settings) -> None:
    settings.ATLAS_WEBHOOKS_ALLOW_LOOPBACK = False
    with pytest.raises(ValidationFailed):
        endpoint_create(tenant=plain_tenant, url="http://127.0.0.1/hook", events=["memory.created"], actor="t")
    assert not WebhookEndpoint.objects.exists()


def _hosts(table: dict[str, list[str]]):
    """A resolver of the test's own, as a hosts file would answer."""

    def resolve(host: str, port: int) -> list[str]:
        return table[host]

    return resolve


@pytest.mark.parametrize(
    ("addresses", "why"),
    [
        (["10.1.2.3"], "hooks.example.com resolves to a private address (10.1.2.3): refused"),
        (["93.184.216.34", "10.1.2.3"], "hooks.example.com resolves to a private address (10.1.2.3): refused"),
        (["169.254.169.254"], "hooks.example.com resolves to a link-local address (169.254.169.254): refused"),
        (["::1"], "hooks.example.com resolves to a loopback address (::1): refused"),
        (["::ffff:127.0.0.1"], "hooks.example.com resolves to a loopback address (127.0.0.1): refused"),
    ],
)
def test_a_name_is_checked_on_every_address_it_resolves_to(settings, addresses, why) -> None:
    settings.ATLAS_WEBHOOKS_ALLOW_LOOPBACK = False
    target = url_check("https://hooks.example.com/in")
    with pytest.raises(AddressRefused) as refused:
        address_choose(target, resolve=_hosts({"hooks.example.com": addresses}))
    assert str(refused.value) == why


def test_a_public_address_is_chosen(settings) -> None:
    settings.ATLAS_WEBHOOKS_ALLOW_LOOPBACK = False
    target = url_check("https://hooks.example.com/in")
    assert address_choose(target, resolve=_hosts({"hooks.example.com": ["93.184.216.34"]})) == "93.184.216.34"


def test_localhost_is_refused_at_delivery_once_loopback_is_no_longer_allowed(plain_tenant, receiver, settings) -> None:
    """Registered while loopback was allowed, delivered after it no longer is: checked again, refused."""
    port = receiver.server.server_address[1]
    endpoint, _ = endpoint_create(
        tenant=plain_tenant, url=f"https://localhost:{port}/hook", events=["memory.created"], actor="t"
    )
    event = event_emit(tenant=plain_tenant, type="memory.created", subject="s", data={})
    settings.ATLAS_WEBHOOKS_ALLOW_LOOPBACK = False
    sent = WebhookDelivery.objects.get(event=event, endpoint=endpoint)
    assert delivery_attempt(delivery_id=sent.pk) == "pending"
    sent.refresh_from_db()
    assert sent.last_error == "refused: url points at localhost: webhooks go to public addresses"
    assert receiver.requests == []


def test_a_delivery_connects_to_the_address_it_checked_and_names_the_host(plain_tenant, receiver) -> None:
    port = receiver.server.server_address[1]
    endpoint, _ = endpoint_create(
        tenant=plain_tenant, url=f"http://localhost:{port}/hook", events=["memory.created"], actor="t"
    )
    event = event_emit(tenant=plain_tenant, type="memory.created", subject="s", data={})
    sent = WebhookDelivery.objects.get(event=event, endpoint=endpoint)
    assert delivery_attempt(delivery_id=sent.pk, resolve=_hosts({"localhost": ["127.0.0.1"]})) == "delivered"
    (request,) = receiver.requests
    assert request.headers["Host"] == f"localhost:{port}"


def test_a_redirect_is_not_followed(plain_tenant, receiver) -> None:
    """The endpoint answers 302 to another (private, here loopback) address: that one is never asked."""
    elsewhere = receiver_start(Receiver())
    try:
        receiver.statuses, receiver.location = [302], elsewhere.url
        endpoint, _ = endpoint_create(tenant=plain_tenant, url=receiver.url, events=["memory.created"], actor="t")
        event = event_emit(tenant=plain_tenant, type="memory.created", subject="s", data={})
        sent = WebhookDelivery.objects.get(event=event, endpoint=endpoint)
        assert delivery_attempt(delivery_id=sent.pk) == "pending"
        sent.refresh_from_db()
        assert (sent.last_status_code, sent.last_error) == (302, "a redirect (not followed)")
        assert len(receiver.requests) == 1 and elsewhere.requests == []
    finally:
        elsewhere.server.shutdown()
        elsewhere.server.server_close()


def test_an_answer_is_read_only_up_to_the_cap_and_within_the_timeout(plain_tenant, loopback, settings) -> None:
    import socket
    import threading

    # A server that answers headers, then trickles a huge body: the attempt ends at the deadline.
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n")
        try:
            for _ in range(400):
                conn.sendall(b"x")
                threading.Event().wait(0.01)
        except OSError:
            pass
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    settings.ATLAS_WEBHOOKS_TIMEOUT_SECONDS = 1.0
    endpoint, _ = endpoint_create(
        tenant=plain_tenant, url=f"http://127.0.0.1:{port}/hook", events=["memory.created"], actor="t"
    )
    event = event_emit(tenant=plain_tenant, type="memory.created", subject="s", data={})
    sent = WebhookDelivery.objects.get(event=event, endpoint=endpoint)
    assert delivery_attempt(delivery_id=sent.pk) == "pending"
    sent.refresh_from_db()
    assert sent.last_error == "TimeoutError: the answer took longer than 1 s"
    listener.close()


def test_no_more_of_an_answer_than_the_cap_is_read() -> None:
    import socket
    import threading

    from webhooks import transport

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        conn.recv(65536)
        try:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n" + b"x" * 1048576)
        except OSError:
            pass  # the client stopped reading at its cap and hung up
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    target = url_check_loopback(f"http://127.0.0.1:{port}/hook")
    answer = transport.post(
        target=target, address="127.0.0.1", body=b"{}", headers={}, timeout=5, max_response_bytes=1000
    )
    assert (answer.status, answer.body_bytes) == (200, 1000)
    listener.close()


def url_check_loopback(url: str):
    from django.test import override_settings

    with override_settings(ATLAS_WEBHOOKS_ALLOW_LOOPBACK=True):
        return url_check(url)


def test_the_systems_resolver_is_used_when_no_other_is_given(plain_tenant, receiver) -> None:
    port = receiver.server.server_address[1]
    endpoint, _ = endpoint_create(
        tenant=plain_tenant, url=f"http://localhost:{port}/hook", events=["memory.created"], actor="t"
    )
    event = event_emit(tenant=plain_tenant, type="memory.created", subject="s", data={})
    sent = WebhookDelivery.objects.get(event=event, endpoint=endpoint)
    first = system_resolve("localhost", port)[0]  # the address a delivery connects to
    outcome = delivery_attempt(delivery_id=sent.pk)
    sent.refresh_from_db()
    if first == "127.0.0.1":
        assert (outcome, len(receiver.requests)) == ("delivered", 1)
    else:  # ::1 first: this receiver listens on 127.0.0.1 only, so the connection is refused
        assert (outcome, sent.last_error[:22]) == ("pending", "ConnectionRefusedError")
