"""/metrics over a live server: who may read it (default-deny), what the request metrics count, and that
their labels are URL patterns, never the paths clients send."""

from __future__ import annotations

import pytest
import requests

from tests.atlas_site.observability.conftest import METRICS_TOKEN, sample, scraped

pytestmark = pytest.mark.django_db(transaction=True)


def _get(server, path: str = "/metrics", token: str | None = None) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return requests.get(server.url + path, headers=headers, timeout=30)


def test_with_nothing_configured_every_request_is_refused(atlas_server, settings) -> None:
    settings.ATLAS_METRICS_TOKEN, settings.ATLAS_METRICS_ALLOW = "", []
    for token in (None, "anything", ""):
        answer = _get(atlas_server, token=token)
        assert answer.status_code == 403
        assert answer.text.startswith("metrics are off: set ATLAS_METRICS_TOKEN")
        assert "atlas_http_requests" not in answer.text


def test_the_bearer_token_matrix(atlas_server, settings) -> None:
    settings.ATLAS_METRICS_TOKEN, settings.ATLAS_METRICS_ALLOW = METRICS_TOKEN, []
    missing = _get(atlas_server)
    assert missing.status_code == 401 and missing.headers["WWW-Authenticate"] == 'Bearer realm="metrics"'
    wrong = _get(atlas_server, token=METRICS_TOKEN + "x")
    assert wrong.status_code == 403 and wrong.text == "this token may not read the metrics\n"
    other_scheme = requests.get(
        atlas_server.url + "/metrics", headers={"Authorization": f"Basic {METRICS_TOKEN}"}, timeout=30
    )
    assert other_scheme.status_code == 403
    right = _get(atlas_server, token=METRICS_TOKEN)
    assert right.status_code == 200, right.text
    assert right.headers["Content-Type"].startswith("text/plain; version=")
    assert "# TYPE atlas_http_requests_total counter" in right.text
    assert "atlas_celery_queue_depth" in right.text  # read from the embedded broker at scrape time


def test_the_address_matrix(atlas_server, settings) -> None:
    settings.ATLAS_METRICS_TOKEN = ""
    settings.ATLAS_METRICS_ALLOW = ["10.0.0.0/8", "127.0.0.0/8"]  # the live server's client is 127.0.0.1
    assert _get(atlas_server).status_code == 200
    settings.ATLAS_METRICS_ALLOW = ["10.0.0.0/8", "::1/128"]
    outside = _get(atlas_server)
    assert outside.status_code == 403 and "ATLAS_METRICS_ALLOW" in outside.text
    # The address is the one the server reports: uvicorn takes X-Forwarded-For only from the proxies of its
    # --forwarded-allow-ips (127.0.0.1 by default), as from this test's loopback connection.
    settings.ATLAS_METRICS_ALLOW = ["10.0.0.0/8"]
    assert _get(atlas_server).status_code == 403
    forwarded = requests.get(atlas_server.url + "/metrics", headers={"X-Forwarded-For": "10.1.2.3"}, timeout=30)
    assert forwarded.status_code == 200
    # Both configured: an allowed address needs no token, a wrong token is refused even from there.
    settings.ATLAS_METRICS_TOKEN, settings.ATLAS_METRICS_ALLOW = METRICS_TOKEN, ["127.0.0.1/32"]
    assert _get(atlas_server).status_code == 200
    assert _get(atlas_server, token="wrong").status_code == 403
    settings.ATLAS_METRICS_ALLOW = ["10.0.0.0/8"]
    assert _get(atlas_server).status_code == 401
    assert _get(atlas_server, token=METRICS_TOKEN).status_code == 200


def test_n_requests_add_exactly_n_to_their_route_and_status(atlas_server, settings) -> None:
    settings.ATLAS_METRICS_TOKEN, settings.ATLAS_METRICS_ALLOW = METRICS_TOKEN, []
    ok = {"route": "healthz", "method": "GET", "status": "200"}
    before = sample("atlas_http_requests_total", **ok)
    before_hist = sample("atlas_http_request_duration_seconds_count", **ok)
    for _ in range(7):
        assert _get(atlas_server, "/healthz").status_code == 200
    assert sample("atlas_http_requests_total", **ok) == before + 7
    assert sample("atlas_http_request_duration_seconds_count", **ok) == before_hist + 7
    # Refusals are counted under /metrics' own pattern with their status.
    refused = {"route": "metrics", "method": "GET", "status": "401"}
    before_refused = sample("atlas_http_requests_total", **refused)
    for _ in range(3):
        _get(atlas_server)
    assert sample("atlas_http_requests_total", **refused) == before_refused + 3
    # The scrape says the same as the registry.
    samples = scraped(_get(atlas_server, token=METRICS_TOKEN).text)
    key = ("atlas_http_requests_total", tuple(sorted(ok.items())))
    assert samples[key] == before + 7


def test_labels_are_url_patterns_never_raw_paths(atlas_server, settings) -> None:
    settings.ATLAS_METRICS_TOKEN, settings.ATLAS_METRICS_ALLOW = METRICS_TOKEN, []
    unmatched = {"route": "unmatched", "method": "GET", "status": "404"}
    before = sample("atlas_http_requests_total", **unmatched)
    for n in range(5):
        assert _get(atlas_server, f"/no-such-page-{n}/secret-looking-path").status_code == 404
    anon_recall = requests.post(atlas_server.url + "/api/v1/subjects/someone-7/recall", json={}, timeout=30)
    assert anon_recall.status_code == 401
    assert sample("atlas_http_requests_total", **unmatched) == before + 5
    assert (
        sample("atlas_http_requests_total", route="api/v1/subjects/<str:subject>/recall", method="POST", status="401")
        >= 1
    )
    text = _get(atlas_server, token=METRICS_TOKEN).text
    assert "no-such-page" not in text and "someone-7" not in text and "secret-looking" not in text
    # A method outside HTTP's usual ones is "other" (here refused by the CSRF check before any view).
    before_other = sample("atlas_http_requests_total", route="healthz", method="other", status="403")
    assert requests.request("PROPFIND", atlas_server.url + "/healthz", timeout=30).status_code == 403
    assert sample("atlas_http_requests_total", route="healthz", method="other", status="403") == before_other + 1


def test_mcp_requests_are_counted_under_one_route(atlas_server) -> None:
    """/mcp/ is served beside Django (atlas_site/asgi.py): its requests count under the route "mcp"."""
    refused = {"route": "mcp", "method": "POST", "status": "401"}
    before = sample("atlas_http_requests_total", **refused)
    for n in range(3):
        answer = requests.post(
            atlas_server.url + f"/mcp/?probe={n}",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream"},
            timeout=30,
        )
        assert answer.status_code == 401
    assert sample("atlas_http_requests_total", **refused) == before + 3
    assert sample("atlas_http_request_duration_seconds_count", **refused) >= 3
