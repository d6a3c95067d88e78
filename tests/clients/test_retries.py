"""Retries and idempotency for real: failures made by a real HTTP proxy in front of the live server
(tests/clients/proxy.py), the server's own rate limit and its own "still running" answer."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from atlas_memory import NEVER, Atlas, ConnectionFailed, RateLimited, Retry, StillRunning, Unavailable, ValidationError
from django.db import connection

from atlas_site.idempotency import idempotency_record_claim, idempotency_record_release
from tenants.models import ApiToken

from .conftest import FAST
from .proxy import proxy_to

pytestmark = pytest.mark.django_db(transaction=True)


def _episodes(atlas: Atlas, subject: str = "alice") -> list[str]:
    return [m.text for m in atlas.memory_list_iter(subject=subject, types=["episodic"])]


def test_the_same_key_answers_the_same_memory_and_stores_one(world, atlas) -> None:
    first = atlas.episode_write(subject="alice", text="I moved to Lisbon", idempotency_key="turn-1")
    again = atlas.episode_write(subject="alice", text="I moved to Lisbon", idempotency_key="turn-1")
    assert again == first
    turn = atlas.turn(subject="alice", text="and I like it", idempotency_key="turn-2")
    assert atlas.turn(subject="alice", text="and I like it", idempotency_key="turn-2").episode == turn.episode
    assert _episodes(atlas) == ["and I like it", "I moved to Lisbon"]
    with pytest.raises(ValidationError) as mismatch:
        atlas.episode_write(subject="alice", text="something else", idempotency_key="turn-1")
    assert (mismatch.value.status, mismatch.value.code) == (422, "idempotency_mismatch")
    # Without a key of the caller's, each call is a new write with a key of its own.
    atlas.episode_write(subject="alice", text="twice")
    atlas.episode_write(subject="alice", text="twice")
    assert _episodes(atlas).count("twice") == 2


def test_a_503_is_retried_after_its_retry_after_with_the_same_key(world) -> None:
    with proxy_to(world.url, ["503"]) as proxy, world.client() as direct:
        started = time.monotonic()
        with Atlas(proxy.url, world.svc, retry=FAST) as atlas:
            fact = atlas.fact_write(subject="alice", text="Plays the cello")
        assert time.monotonic() - started >= 1.0  # the proxy's Retry-After: 1, not the 0.05 s backoff
        assert [(s.method, s.path) for s in proxy.seen] == [("POST", "/api/v1/subjects/alice/facts")] * 2
        assert proxy.seen[0].idempotency_key == proxy.seen[1].idempotency_key is not None
        assert [m.id for m in direct.memory_list(subject="alice").memories] == [fact.id]


def test_a_write_whose_answer_was_lost_is_retried_onto_the_same_memory(world) -> None:
    """The server stored the turn, the answer never came back: the retry carries the same key, the server
    replays its first answer, and the turn is stored once."""
    with proxy_to(world.url, ["lost", "lost"]) as proxy, world.client() as direct:
        with Atlas(proxy.url, world.svc, retry=FAST) as atlas:
            episode = atlas.episode_write(subject="alice", text="I adopted a dog")
            turn = atlas.turn(subject="alice", text="what food suits my dog?")
        assert len(proxy.seen) == 4 and len({s.idempotency_key for s in proxy.seen}) == 2
        assert _episodes(direct) == ["what food suits my dog?", "I adopted a dog"]
        assert direct.memory_get(subject="alice", memory_id=episode.id).id == episode.id
        assert turn.episode.text == "what food suits my dog?"


def test_reads_are_retried_after_a_lost_answer(world) -> None:
    with proxy_to(world.url, ["lost", "503"]) as proxy, Atlas(proxy.url, world.svc, retry=FAST) as atlas:
        assert atlas.memory_list(subject="alice").memories == []
        assert len(proxy.seen) == 3


def test_an_edit_or_a_forget_is_not_retried_once_it_may_have_run(world) -> None:
    """PATCH and DELETE carry no Idempotency-Key: after a lost answer or a 503 a second attempt could act
    twice, so the error is the caller's to judge."""
    with world.client() as direct:
        fact = direct.fact_write(subject="alice", text="Drinks coffee")
    with proxy_to(world.url, ["lost", "503"]) as proxy, Atlas(proxy.url, world.svc, retry=FAST) as atlas:
        with pytest.raises(ConnectionFailed):
            atlas.fact_edit(subject="alice", memory_id=fact.id, text="Drinks tea")
        with pytest.raises(Unavailable) as unavailable:
            atlas.memory_forget(subject="alice", memory_id=fact.id)
        assert unavailable.value.retry_after == 1.0
        assert [s.method for s in proxy.seen] == ["PATCH", "DELETE"]
    with world.client() as direct:
        assert [m.text for m in direct.memory_list(subject="alice", types=["semantic"]).memories] == ["Drinks tea"]


def test_no_server_is_a_connection_error_after_the_budget(world) -> None:
    with Atlas("http://127.0.0.1:9", world.svc, retry=Retry(attempts=3, backoff=0.01)) as atlas:
        started = time.monotonic()
        with pytest.raises(ConnectionFailed) as failed:
            atlas.episode_write(subject="alice", text="hello")
        assert failed.value.status is None and time.monotonic() - started < 5


def test_the_rate_limit_is_waited_out_within_the_budget(world, settings) -> None:
    settings.ATLAS_API_RATE = "2/s"
    with proxy_to(world.url, []) as proxy, Atlas(proxy.url, world.own, retry=FAST) as atlas:
        written = [atlas.episode_write(subject="alice", text=f"turn {n}").id for n in range(5)]
        assert len(set(written)) == 5 and len(proxy.seen) > 5  # some were refused with 429, then retried
        assert _episodes(atlas) == [f"turn {n}" for n in reversed(range(5))]
    with world.client(world.own, retry=NEVER) as impatient:
        with pytest.raises(RateLimited) as limited:
            for _ in range(5):
                impatient.me()
        assert limited.value.status == 429 and limited.value.retry_after >= 1
    with world.client(world.own, retry=Retry(attempts=10, total_seconds=0.5)) as brief:
        with pytest.raises(RateLimited):  # the wait asked for is longer than the budget has left
            for _ in range(5):
                brief.me()


@contextmanager
def _own_connection() -> Iterator[None]:
    """A thread's database work, its connection closed after (the test database is dropped at the end)."""
    try:
        yield
    finally:
        connection.close()


def _released(*, slot: str) -> None:
    with _own_connection():
        idempotency_record_release(slot=slot)


def test_still_running_is_retried_until_the_first_request_finishes(world) -> None:
    """Another request with the same key holds it (the server's own claim, as a concurrent retry would):
    the server answers 409 "still running" with Retry-After, and the SDK waits, then gets its answer."""
    token = ApiToken.objects.get(tenant=world.tenant, name="svc")

    def held_elsewhere(path: str, headers: dict[str, str], body: bytes) -> None:
        slot = "idem:" + hashlib.sha256(f"{token.pk}:{path}:{headers['Idempotency-Key']}".encode()).hexdigest()
        with _own_connection():
            assert idempotency_record_claim(slot=slot, digest=hashlib.sha256(body).hexdigest())
        threading.Timer(0.5, _released, kwargs={"slot": slot}).start()

    with proxy_to(world.url, [held_elsewhere]) as proxy:
        with Atlas(proxy.url, world.svc, retry=FAST) as atlas:
            started = time.monotonic()
            episode = atlas.episode_write(subject="alice", text="said once")
            assert time.monotonic() - started >= 2.0  # the server's Retry-After for a running request
        with Atlas(proxy.url, world.svc, retry=NEVER) as impatient:
            proxy.script.append(held_elsewhere)
            with pytest.raises(StillRunning) as running:
                impatient.episode_write(subject="alice", text="said once more")
            assert running.value.status == 409 and running.value.code == "idempotency_running"
    with world.client() as direct:
        assert _episodes(direct) == ["said once"] and episode.text == "said once"


def test_the_same_key_sent_twice_at_once_stores_one_memory(world) -> None:
    """Two processes retrying one write at the same moment: whichever the server answers second gets the
    first one's answer (replayed, or after a 409 "still running"), never a second memory."""
    barrier = threading.Barrier(2)
    answers: list[str] = []

    def write() -> None:
        with world.client() as atlas:
            barrier.wait()
            answers.append(atlas.turn(subject="alice", text="at the same time", idempotency_key="twice").episode.id)

    threads = [threading.Thread(target=write) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(answers) == 2 and answers[0] == answers[1]
    with world.client() as direct:
        assert _episodes(direct) == ["at the same time"]


def test_the_export_is_retried_until_it_begins_never_after(world) -> None:
    with world.client() as direct:
        fact = direct.fact_write(subject="alice", text="Speaks Portuguese")
    with proxy_to(world.url, ["lost", "503"]) as proxy, Atlas(proxy.url, world.svc, retry=FAST) as atlas:
        lines = list(atlas.memory_export(subject="alice"))
        assert lines[0]["format"] == "atlas-memory-export" and [line["id"] for line in lines[1:]] == [fact.id]
        assert len(proxy.seen) == 3
        proxy.script.append("cut")
        received = []
        with pytest.raises(ConnectionFailed, match="the stream broke after it began"):
            for line in atlas.memory_export(subject="alice"):
                received.append(line)
        assert [line["format"] for line in received] == ["atlas-memory-export"] and len(proxy.seen) == 4
