"""An acknowledged write survives the engine's death (issue 25, point 1), and the engine comes back (point 8).

Elasticsearch acknowledges a write once it is in the translog, fsynced (``index.translog.durability:
request``, the default: "fsync and commit after every request"); a SIGKILL of the node loses nothing
it answered with a 2xx. The embedded gateway gives the same guarantee through its write journal
(``embedded_es/journal.py``): each test below writes through the gateway, SIGKILLs the engine (or
the engine and the gateway) right after the last acknowledgement, and finds every acknowledged
write once, and only once — a scripted counter counts each acknowledged increment exactly once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from elasticsearch import ApiError, Elasticsearch, TransportError

from embedded_es import EmbeddedElasticsearch

from .conftest import ROOT, engine_pids, mint_key, needs_embedded, ready_url, serve_cli

pytestmark = needs_embedded

INDEX = "durable"
WRITER_ROLE = {"writer": {"indices": [{"names": ["durable*"], "privileges": ["write", "create_index"]}]}}
INCREMENT = {"source": "ctx._source.n += params.by", "lang": "painless", "params": {"by": 1}}


def _write_everything(server: EmbeddedElasticsearch, *, tag: str, increments: int) -> dict:
    """Acknowledged writes of every kind through the gateway; returns what must be there afterwards."""
    admin = Elasticsearch(server.url, basic_auth=("elastic", server.password))
    writer = Elasticsearch(server.url, api_key=mint_key(admin, f"writer-{tag}", WRITER_ROLE))
    expected: dict[str, dict] = {}
    for i in range(20):
        doc_id = f"{tag}-single-{i}"
        assert writer.index(index=INDEX, id=doc_id, document={"tag": tag, "i": i})["result"] == "created"
        expected[doc_id] = {"tag": tag, "i": i}
    auto = writer.index(index=INDEX, document={"tag": tag, "auto": True})  # the engine picks the id
    assert auto["result"] == "created"
    expected[auto["_id"]] = {"tag": tag, "auto": True}
    operations: list[dict] = []
    for i in range(15):
        if i % 3 == 0:
            operations += [{"index": {"_index": INDEX}}, {"tag": tag, "bulk": i}]  # an auto id
        else:
            operations += [{"index": {"_index": INDEX, "_id": f"{tag}-bulk-{i}"}}, {"tag": tag, "bulk": i}]
    operations += [{"delete": {"_index": INDEX, "_id": f"{tag}-single-0"}}]
    bulk = writer.bulk(operations=operations)
    assert not bulk["errors"]
    for item, i in zip(bulk["items"][:15], range(15), strict=True):
        expected[item["index"]["_id"]] = {"tag": tag, "bulk": i}
    del expected[f"{tag}-single-0"]
    counter = f"{tag}-counter"
    writer.index(index=INDEX, id=counter, document={"tag": tag, "n": 0})
    for _ in range(increments):
        assert writer.update(index=INDEX, id=counter, script=INCREMENT)["result"] == "updated"
    expected[counter] = {"tag": tag, "n": increments}
    writer.update(index=INDEX, id=f"{tag}-single-1", doc={"patched": True})
    expected[f"{tag}-single-1"] = {"tag": tag, "i": 1, "patched": True}
    return expected


def _stored(server: EmbeddedElasticsearch) -> dict[str, dict]:
    admin = Elasticsearch(server.url, basic_auth=("elastic", server.password))
    admin.indices.refresh(index=INDEX)
    hits = admin.search(index=INDEX, size=1000, query={"match_all": {}})["hits"]["hits"]
    return {hit["_id"]: hit["_source"] for hit in hits}


def _versions(server: EmbeddedElasticsearch) -> dict[str, tuple[int, int]]:
    admin = Elasticsearch(server.url, basic_auth=("elastic", server.password))
    admin.indices.refresh(index=INDEX)
    hits = admin.search(index=INDEX, size=1000, seq_no_primary_term=True, version=True)["hits"]["hits"]
    return {hit["_id"]: (hit["_seq_no"], hit["_version"]) for hit in hits}


def _kill_engine(server: EmbeddedElasticsearch) -> int:
    pid = server.engine_pid()
    os.kill(pid, signal.SIGKILL)
    return pid


def _assert_all_there(server: EmbeddedElasticsearch, expected: dict[str, dict]) -> None:
    stored = _stored(server)
    missing = sorted(set(expected) - set(stored))
    assert not missing, f"{len(missing)} acknowledged writes lost: {missing[:10]}"
    assert stored == expected  # every document as acknowledged, nothing twice, nothing deleted comes back


@pytest.mark.parametrize("sync", ["interval", "request"])
def test_kill_9_of_the_engine_loses_no_acknowledged_write(
    tmp_path: Path, sync: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both journal modes: appended before the answer (the default) and fsynced before it."""
    monkeypatch.setenv("EMBEDDED_ES_JOURNAL_SYNC", sync)
    server = EmbeddedElasticsearch(data_dir=tmp_path / "es").start()
    try:
        expected = _write_everything(server, tag="a", increments=8)
        _kill_engine(server)  # right after the last acknowledgement
        server.stop()
        server.start()
        _assert_all_there(server, expected)
    finally:
        server.cleanup()


def test_kill_9_of_the_gateway_and_the_engine_loses_no_acknowledged_write(tmp_path: Path) -> None:
    server = EmbeddedElasticsearch(data_dir=tmp_path / "es").start()
    try:
        expected = _write_everything(server, tag="b", increments=8)
        _kill_engine(server)
        server.kill()
        server.start()
        _assert_all_there(server, expected)
    finally:
        server.cleanup()


def test_writes_before_and_after_a_compaction_each_count_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The journal folds into a new base once writes go quiet; the writes after it are replayed on that
    base, and the ones before it are not replayed again (a scripted increment would count twice)."""
    monkeypatch.setenv("EMBEDDED_ES_JOURNAL_FOLD_AFTER", "0")  # fold at the first quiet second, not after 30 s
    server = EmbeddedElasticsearch(data_dir=tmp_path / "es").start()
    journal = server.data_dir / "journal"
    try:
        expected = _write_everything(server, tag="c", increments=4)
        deadline = time.monotonic() + 30
        while list(journal.glob("*.log")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not list(journal.glob("*.log")), "the journal was not folded into a base after writes went quiet"
        assert len(list(journal.glob("base-*.json"))) == 1
        expected.update(_write_everything(server, tag="d", increments=6))
        admin = Elasticsearch(server.url, basic_auth=("elastic", server.password))
        for _ in range(3):
            admin.update(index=INDEX, id="c-counter", script=INCREMENT)
        expected["c-counter"]["n"] += 3
        _kill_engine(server)
        server.kill()
        server.start()
        _assert_all_there(server, expected)
        # and once more, now that the replayed writes are in the journal a second time round
        _kill_engine(server)
        server.kill()
        server.start()
        _assert_all_there(server, expected)
    finally:
        server.cleanup()


def test_the_server_restarts_a_killed_engine_and_keeps_serving(tmp_path: Path) -> None:
    """Point 8: the gateway stays up, starts the engine again, replays the journal, and serves writes."""
    server = EmbeddedElasticsearch(data_dir=tmp_path / "es").start()
    try:
        expected = _write_everything(server, tag="e", increments=3)
        old = _kill_engine(server)
        deadline = time.monotonic() + 30
        admin = Elasticsearch(server.url, basic_auth=("elastic", server.password), request_timeout=10)
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            pids = engine_pids(server.data_dir)
            if pids and old not in pids:
                try:
                    admin.index(index=INDEX, id="after-restart", document={"tag": "e", "late": True})
                    break
                except (ApiError, TransportError) as exc:  # the engine may still be starting: a 503
                    last_error = exc
            time.sleep(0.2)
        else:
            pytest.fail(f"the engine did not come back within 30 s (last error: {last_error!r})")
        expected["after-restart"] = {"tag": "e", "late": True}
        assert server._proc is not None and server._proc.poll() is None  # the gateway never stopped
        _assert_all_there(server, expected)
    finally:
        server.cleanup()


def test_a_torn_last_record_is_cut_off_and_the_rest_replayed(tmp_path: Path) -> None:
    """A crash during an append (before the answer) leaves a partial record: it ends the replay."""
    server = EmbeddedElasticsearch(data_dir=tmp_path / "es").start()
    try:
        expected = _write_everything(server, tag="f", increments=2)
        _kill_engine(server)
        server.kill()
        segment = sorted((server.data_dir / "journal").glob("*.log"))[-1]
        with segment.open("ab") as fh:
            fh.write(b"\x00\x00\x00\x40\x00\x00")  # a frame header cut short
        server.start()
        _assert_all_there(server, expected)
    finally:
        server.cleanup()


def test_an_unknown_journal_mode_is_refused(tmp_path: Path) -> None:
    env = {**os.environ, "ATLAS_ES_PASSWORD": "pw", "EMBEDDED_ES_JOURNAL_SYNC": "never"}
    result = subprocess.run(
        [sys.executable, "-m", "embedded_es", "serve", "--port", "0", "--data-dir", str(tmp_path / "es")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "EMBEDDED_ES_JOURNAL_SYNC must be one of interval, request, not 'never'" in result.stderr


def test_a_long_journal_is_folded_while_writes_keep_coming(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past EMBEDDED_ES_JOURNAL_MAX_BYTES the fold does not wait for a quiet moment: it holds writes until
    the engine's snapshot lands. Writes never pause here, and the journal is still folded, exactly."""
    monkeypatch.setenv("EMBEDDED_ES_JOURNAL_MAX_BYTES", "20000")
    server = EmbeddedElasticsearch(data_dir=tmp_path / "es").start()
    journal = server.data_dir / "journal"
    try:
        admin = Elasticsearch(server.url, basic_auth=("elastic", server.password))
        admin.index(index=INDEX, id="counter", document={"n": 0})
        expected = {"counter": {"n": 0}}
        deadline = time.monotonic() + 60
        i = 0
        while time.monotonic() < deadline:
            admin.index(index=INDEX, id=f"doc-{i}", document={"i": i, "pad": "x" * 200})
            admin.update(index=INDEX, id="counter", script=INCREMENT)
            expected[f"doc-{i}"] = {"i": i, "pad": "x" * 200}
            expected["counter"]["n"] += 1
            i += 1
            if i >= 100 and any(p.name != f"base-{0:020d}.json" for p in journal.glob("base-*")):
                break
        bases = [p.name for p in journal.glob("base-*")]
        assert bases and all(not name.startswith(f"base-{0:020d}") for name in bases), bases
        _kill_engine(server)
        server.kill()
        server.start()
        _assert_all_there(server, expected)
    finally:
        server.cleanup()


def test_a_clean_stop_folds_the_journal_into_the_engines_last_snapshot(tmp_path: Path) -> None:
    server = EmbeddedElasticsearch(data_dir=tmp_path / "es").start()
    journal = server.data_dir / "journal"
    try:
        expected = _write_everything(server, tag="g", increments=3)
        assert list(journal.glob("*.log"))
        assert server.stop() == 0
        assert list(journal.glob("*.log")) == []
        assert len(list(journal.glob("base-*.json"))) == 1
        server.start()
        _assert_all_there(server, expected)
    finally:
        server.cleanup()


def test_concurrent_writers_lose_nothing_and_count_once(tmp_path: Path) -> None:
    """Writes from several connections at once: the journal's order is the order the engine applied them
    in (they reach it one at a time), so the replay ends in the state the clients last saw."""
    server = EmbeddedElasticsearch(data_dir=tmp_path / "es").start()
    try:
        admin = Elasticsearch(server.url, basic_auth=("elastic", server.password))
        admin.index(index=INDEX, id="counter", document={"n": 0})
        admin.index(index=INDEX, id="last", document={"by": None})
        acknowledged: list[str] = []

        def writer(name: str) -> None:
            client = Elasticsearch(server.url, basic_auth=("elastic", server.password))
            for i in range(25):
                client.index(index=INDEX, id=f"{name}-{i}", document={"by": name, "i": i})
                client.update(index=INDEX, id="counter", script=INCREMENT)
                client.index(index=INDEX, id="last", document={"by": name})
                acknowledged.append(name)

        threads = [threading.Thread(target=writer, args=(f"w{k}",)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        before, versions = _stored(server), _versions(server)
        assert before["counter"] == {"n": len(acknowledged)} == {"n": 100}
        _kill_engine(server)
        server.kill()
        server.start()
        assert _stored(server) == before
        assert _versions(server) == versions  # the same sequence numbers and versions: applied in the same order
    finally:
        server.cleanup()


def test_an_engine_that_keeps_dying_stops_the_server_with_one_line(tmp_path: Path) -> None:
    """Restarts back off (1, 2, 4, 8 s); the fifth death within five minutes stops the server, saying what
    died and how to start again (exit code 1)."""
    data_dir = tmp_path / "es"
    proc = serve_cli(data_dir, {**os.environ, "ATLAS_ES_PASSWORD": "pw-dying"})
    try:
        ready_url(proc)
        killed: set[int] = set()
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            for pid in set(engine_pids(data_dir)) - killed:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            time.sleep(0.05)
        assert proc.wait(timeout=30) == 1
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()
    assert len(killed) == 5
    for delay in (1, 2, 4, 8):
        assert f"embedded_es: the engine (noida-db) exited unexpectedly (code -9); restarting it in {delay} s" in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(
        "embedded_es: the engine (noida-db) died 5 times in 5 minutes (last exit code -9); stopping."
    )
    assert "restart with `python -m embedded_es serve` (or `make run`) on the same --data-dir" in last
