"""Cursor pagination at 10,000 memories of one subject: ``memory_list`` (search_after over created_at desc,
memory_id desc) and the dashboard's facts tab built on it show every memory exactly once, in order, with
none lost or repeated where a page boundary falls inside a run of equal created_at, and no "next" link
after the last page — which here ends exactly on a page boundary (10,000 = 50 × 200 = 400 × 25).

The memories are stored without embeddings (tests/memory/factories.py): ≈ 4 s on the embedded stack where
the models would take ≈ 6 minutes; the test, forgetting them again included, runs in ≈ 25 s.
"""

from __future__ import annotations

import re

import pytest

from memory import selectors
from memory.dashboard.views import PAGE_SIZE
from memory.services import forget
from tests.memory.factories import TIE_GROUP, facts_bulk_store

from .conftest import linked_person

pytestmark = pytest.mark.django_db

COUNT = 10_000
LIST_PAGE = 200
DEEP_START = 5_000  # where the dashboard's deep page starts: a cursor of the memory_list walk
TAIL_START = 9_800  # from here the dashboard's own "next" links are followed to the end


@pytest.fixture
def deep_subject(maya):
    expected = facts_bulk_store(subject=maya, count=COUNT)
    yield maya, expected
    # Out of the session cluster's shared indices again, so later tests search what they wrote.
    assert forget.subject_memories_forget(subject=maya, actor="test")["counts"] == {"semantic": COUNT}


def _page_ids(html: str) -> list[str]:
    return re.findall(r'href="/memory/([0-9a-f]{32})/"', html)


def _next_query(html: str) -> str | None:
    found = re.search(r'href="\?([^"]*)" rel="next"', html)
    return found.group(1).replace("&amp;", "&") if found else None


def test_ten_thousand_memories_page_through_exactly_once_in_order(client, deep_subject) -> None:
    subject, expected = deep_subject
    assert len(set(expected)) == COUNT
    # Page boundaries of both page sizes fall inside ties: the memory_id tie-break orders those.
    assert LIST_PAGE % TIE_GROUP and PAGE_SIZE % TIE_GROUP

    walked, cursors, cursor = [], {}, None
    while True:
        cursors[len(walked)] = cursor
        page = selectors.memory_list(subject=subject, page_size=LIST_PAGE, cursor=cursor)
        walked += [m["id"] for m in page["memories"]]
        assert len(page["memories"]) == LIST_PAGE
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert walked == expected
    assert len(cursors) == COUNT // LIST_PAGE

    client.force_login(linked_person("deep@example.org", subject))
    first = client.get("/").content.decode()
    assert _page_ids(first) == expected[:PAGE_SIZE]
    assert _next_query(first) is not None

    deep = client.get("/memories/", {"cursor": cursors[DEEP_START]}).content.decode()
    assert _page_ids(deep) == expected[DEEP_START : DEEP_START + PAGE_SIZE]

    shown, query = [], "cursor=" + cursors[TAIL_START]
    while query is not None:
        html = client.get("/memories/?" + query).content.decode()
        shown.append(_page_ids(html))
        query = _next_query(html)
    assert [len(ids) for ids in shown] == [PAGE_SIZE] * ((COUNT - TAIL_START) // PAGE_SIZE)
    assert sum(shown, []) == expected[TAIL_START:]
