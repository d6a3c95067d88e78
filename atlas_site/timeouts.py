"""The order of a request's timeouts, innermost first: each layer must give up well before the one above.

A layer that gives up first answers the one above clearly (the gateway: a 503 from the engine; the app:
a 503 with Retry-After), and a keyed write retried after such an answer lands on the same document. An
outer layer that gives up first cuts a request whose fate it cannot know, while the inner ones work on.
"""

from __future__ import annotations

#: "Well before": each layer's ceiling is at most this fraction of the next one's.
MARGIN = 0.9


def es_call_ceiling(*, es_request: float, es_retries: int) -> float:
    """The longest one Elasticsearch call of the app can take: its timeout, tried 1 + retries times."""
    return es_request * (es_retries + 1)


def timeouts_order_problem(*, engine: float, es_request: float, es_retries: int, web_request: float) -> str | None:
    """What is wrong with the order engine < es_request, es call ceiling < web_request; None when it holds."""
    if min(engine, es_request, web_request) <= 0 or es_retries < 0:
        return "timeouts must be positive and ATLAS_ES_MAX_RETRIES at least 0"
    if engine > MARGIN * es_request:
        return (
            f"EMBEDDED_ES_ENGINE_TIMEOUT ({engine:g} s) must be below ATLAS_ES_REQUEST_TIMEOUT ({es_request:g} s) "
            "with a margin: the gateway answers before the app's client gives up on it"
        )
    ceiling = es_call_ceiling(es_request=es_request, es_retries=es_retries)
    if ceiling > MARGIN * web_request:
        return (
            f"ATLAS_ES_REQUEST_TIMEOUT × (ATLAS_ES_MAX_RETRIES + 1) ({ceiling:g} s) must be below "
            f"ATLAS_WEB_REQUEST_TIMEOUT ({web_request:g} s) with a margin: the app answers a stalled "
            "Elasticsearch with a 503 before the proxy or the client gives up on the app"
        )
    return None
