"""The gateway gives up on a stalled engine within EMBEDDED_ES_ENGINE_TIMEOUT for a read: a 503 the app's
client gets before its own timeout (issue 25, docs/operations.md "Timeouts"), and it serves again once the
engine resumes. (A journaled write waits for the engine instead: the journal must know its fate.)"""

from __future__ import annotations

import os
import signal
import time

from elasticsearch import ApiError, Elasticsearch

from tests.processes import paused

from .conftest import engine_pids, needs_embedded, ready_url, serve_cli

pytestmark = needs_embedded


def test_a_stalled_engine_is_a_503_for_a_read_after_the_engine_timeout(tmp_path) -> None:
    env = {**os.environ, "ATLAS_ES_PASSWORD": "engine-timeout-test", "EMBEDDED_ES_ENGINE_TIMEOUT": "1.5"}
    proc = serve_cli(tmp_path / "es", env)
    try:
        url = ready_url(proc)
        admin = Elasticsearch(url, basic_auth=("elastic", "engine-timeout-test"), request_timeout=30, max_retries=0)
        admin.index(index="stall", id="before", document={"n": 1}, refresh=True)
        [engine] = engine_pids(tmp_path / "es")
        with paused(engine):
            started = time.monotonic()
            try:
                admin.search(index="stall", query={"match_all": {}})
                raise AssertionError("a search of a stalled engine answered")
            except ApiError as exc:
                waited = time.monotonic() - started
                assert exc.meta.status == 503
                assert exc.body["error"]["type"] == "engine_unavailable_exception"
                assert exc.body["error"]["reason"] == "[embedded_es] the engine did not answer within 1.5 s"
            assert 1.4 <= waited < 5, waited
        assert admin.index(index="stall", id="after", document={"n": 2}, refresh=True)["result"] == "created"
        assert admin.count(index="stall")["count"] == 2
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        proc.stdout.close()
        proc.stderr.close()
