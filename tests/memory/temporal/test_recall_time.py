"""Time at write and at recall (issue 34 point 5): the dates a memory names stored as ranges, the time
leg for a question naming a time, and bitemporal reads — ``as_of`` valid time, ``known_at`` recorded time.

Elasticsearch's ``date_range`` field and the ``range`` query's ``relation: intersects`` are what the
time leg searches (reference: "Range field types" and "Range query › relation"); the embedded engine
answers them as Elasticsearch does, which test_time_leg_finds_the_dated_turn checks end to end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.elastic import store
from memory.portable.export import memory_exported
from memory.recall import RecallOptions, memory_recall
from memory.scope import SubjectScope
from memory.selectors import memory_get
from memory.services.writes import episode_write, fact_edit, fact_write
from tests.memory.reviewing import accept

DAY = timedelta(days=1)


@pytest.fixture(autouse=True)
def _quiet(settings) -> None:
    settings.ATLAS_USAGE_RECORDING = "off"


def ids(result) -> list[str]:
    return [h["id"] for h in result.hits]


# ---------------------------------------------------------------------------------------------- write


def test_a_turn_keeps_the_dates_it_names_resolved_against_its_own_time(maya) -> None:
    said = datetime(2026, 3, 18, 19, 30, tzinfo=UTC)  # a Wednesday
    turn = episode_write(
        subject=maya, text="I moved to Lisbon last month and my sister visits on the 28th", at=said.isoformat()
    )
    stored = memory_get(subject=maya, memory_id=turn["id"])
    assert stored["mentions"] == [
        {"phrase": "last month", "start": "2026-02-01", "end": "2026-02-28", "granularity": "month"},
        {"phrase": "the 28th", "start": "2026-03-28", "end": "2026-03-28", "granularity": "day"},
    ]
    source = store.memories_fetch(
        SubjectScope.of(maya).reader(), ids=[turn["id"]], memory_types=("episodic",), filters=[]
    )[turn["id"]]["_source"]
    assert source["mention_ranges"] == [
        {"gte": "2026-02-01", "lte": "2026-02-28"},
        {"gte": "2026-03-28", "lte": "2026-03-28"},
    ]
    # The export leaves them out: an import resolves them again from the text and its time.
    assert "mentions" not in memory_exported({"_id": turn["id"], "_source": source}, subject_name=None)


def test_a_memory_naming_no_date_keeps_none(maya) -> None:
    fact = fact_write(subject=maya, text="Maya is vegetarian")
    assert "mentions" not in memory_get(subject=maya, memory_id=fact["id"])


def test_an_accepted_proposal_edited_by_the_person_keeps_the_dates_of_the_edited_text(maya) -> None:
    maya.tenant.review_mode = "agents"
    maya.tenant.save(update_fields=["review_mode"])
    at = datetime(2026, 5, 4, 9, tzinfo=UTC)  # a Monday
    proposal = fact_write(subject=maya, text="Maya's dentist appointment is tomorrow", at=at.isoformat())
    assert proposal["review_state"] == "pending"
    assert memory_get(subject=maya, memory_id=proposal["id"])["mentions"][0]["start"] == "2026-05-05"
    accept(maya, proposal["id"], text="Maya's dentist appointment is next Friday")
    stored = memory_get(subject=maya, memory_id=proposal["id"])
    assert stored["text"] == "Maya's dentist appointment is next Friday"
    assert [(m["phrase"], m["start"]) for m in stored["mentions"]] == [
        ("next Friday", "2026-05-08")
    ]  # the coming Friday: docs/temporal.md "Ambiguous dates"


# ---------------------------------------------------------------------------------------------- bitemporal


def test_as_of_is_valid_time_and_known_at_is_recorded_time(maya) -> None:
    now = datetime.now(UTC)
    berlin = fact_write(
        subject=maya, text="Maya lives in Berlin", fact_type="identity", at=(now - 700 * DAY).isoformat()
    )
    # Told today that she moved two months ago: Lisbon holds from then, Berlin until then.
    moved = (now - 60 * DAY).replace(microsecond=0)
    lisbon = fact_write(
        subject=maya,
        text="Maya lives in Lisbon",
        fact_type="identity",
        supersedes=[berlin["id"]],
        valid_from=moved.isoformat(),
    )
    replaced = memory_get(subject=maya, memory_id=berlin["id"])
    assert replaced["valid_to"] == moved.isoformat() and replaced["superseded_by"] == [lisbon["id"]]
    month_ago = (now - 30 * DAY).isoformat()
    question = "where does Maya live"
    # What held a month ago, as we know it now: Lisbon.
    assert ids(memory_recall(subject=maya, query=question, k=10, as_of=month_ago, memory_types=["semantic"])) == [
        lisbon["id"]
    ]
    # What we had been told by a month ago: Berlin (the move was recorded today).
    assert ids(memory_recall(subject=maya, query=question, k=10, known_at=month_ago, memory_types=["semantic"])) == [
        berlin["id"]
    ]
    # Before the move, in either time: Berlin.
    year_ago = (now - 365 * DAY).isoformat()
    assert ids(memory_recall(subject=maya, query=question, k=10, as_of=year_ago, memory_types=["semantic"])) == [
        berlin["id"]
    ]
    explained = memory_recall(subject=maya, query=question, k=10, as_of=month_ago, expect=[berlin["id"]])
    assert explained.explain["expected"][0]["detail"] == f"no longer so at as_of (until {moved.isoformat()})"
    assert "as of " + month_ago in " ".join(explained.explain["filters"])


def test_a_harsh_correction_held_all_along_and_the_wrong_version_never_did(maya) -> None:
    now = datetime.now(UTC)
    miso = fact_write(subject=maya, text="Maya's cat is called Miso", at=(now - 100 * DAY).isoformat())
    mochi = fact_edit(subject=maya, memory_id=miso["id"], text="Maya's cat is called Mochi", contradiction="harsh")
    assert (
        memory_get(subject=maya, memory_id=mochi["id"])["valid_from"]
        == memory_get(subject=maya, memory_id=miso["id"])["created_at"]
    )
    last_month = (now - 30 * DAY).isoformat()
    question = "what is Maya's cat called"
    assert ids(memory_recall(subject=maya, query=question, k=10, as_of=last_month, memory_types=["semantic"])) == [
        mochi["id"]
    ]
    # What we believed last month was the wrong name.
    assert ids(memory_recall(subject=maya, query=question, k=10, known_at=last_month, memory_types=["semantic"])) == [
        miso["id"]
    ]


def test_a_released_claim_takes_back_the_end_it_set_and_keeps_a_stated_one(maya) -> None:
    scope = SubjectScope.of(maya)
    now = datetime.now(UTC)
    unbounded = fact_write(subject=maya, text="Maya works at Ondular", at=(now - 400 * DAY).isoformat())
    bounded = fact_write(subject=maya, text="Maya is on a contract until June", valid_to=(now + 100 * DAY).isoformat())
    for fact in (unbounded, bounded):
        hit = store.memories_fetch(scope.reader(), ids=[fact["id"]], memory_types=("semantic",), filters=[])[fact["id"]]
        ends = (now - 10 * DAY).isoformat()
        assert store.fact_successor_claim(
            scope.writer(), index=hit["_index"], old_id=fact["id"], new_id="n" * 32, at=now.isoformat(),
            harsh=False, claimed_at=now.isoformat(), ends=ends,
        )  # fmt: skip
        claimed = memory_get(subject=maya, memory_id=fact["id"])
        assert claimed["valid_to"] == (ends if fact is unbounded else bounded_valid_to(maya, bounded))
        store.fact_successor_release(scope.writer(), index=hit["_index"], old_id=fact["id"], new_id="n" * 32)
    assert "valid_to" not in memory_get(subject=maya, memory_id=unbounded["id"])
    assert memory_get(subject=maya, memory_id=bounded["id"])["valid_to"] == bounded_valid_to(maya, bounded)


def bounded_valid_to(subject, fact) -> str:
    return fact["valid_to"] if "valid_to" in fact else memory_get(subject=subject, memory_id=fact["id"])["valid_to"]


# ---------------------------------------------------------------------------------------------- time leg


def test_time_leg_finds_the_dated_turn_among_look_alikes(maya) -> None:
    monday = datetime(2026, 10, 26, 20, tzinfo=UTC)
    dated = episode_write(
        subject=maya, text="Went climbing at the quarry last weekend, my arms are dead", at=monday.isoformat()
    )
    look_alikes = [
        episode_write(
            subject=maya, text=f"Went climbing at the quarry again, {what}", at=(monday - n * 14 * DAY).isoformat()
        )
        for n, what in enumerate(("great day", "so windy", "new shoes", "with Tom", "rained a bit", "crowded"), start=1)
    ]
    asked = monday + 40 * DAY
    question = "What did I get up to on the weekend of 24 October 2026?"
    result = memory_recall(subject=maya, query=question, k=3, now=asked, explain=True)
    assert "time" in result.legs
    assert ids(result)[0] == dated["id"]
    assert result.explain["fusion"]["time"] == pytest.approx(10.0)
    off = memory_recall(subject=maya, query=question, k=3, now=asked, options=RecallOptions(time=False))
    assert "time" not in off.legs
    assert {h["id"] for h in off.hits} <= {dated["id"], *(t["id"] for t in look_alikes)}
    # A question naming no time has no time leg.
    assert "time" not in memory_recall(subject=maya, query="Where do I go climbing?", k=3, now=asked).legs


def test_time_leg_finds_the_version_that_held_then(maya) -> None:
    now = datetime.now(UTC)
    start = datetime(now.year - 2, 3, 1, tzinfo=UTC)
    berlin = fact_write(subject=maya, text="Maya lives in Berlin", fact_type="identity", at=start.isoformat())
    lisbon = fact_write(
        subject=maya,
        text="Maya lives in Lisbon",
        fact_type="identity",
        supersedes=[berlin["id"]],
        valid_from=datetime(now.year - 1, 9, 1, tzinfo=UTC).isoformat(),
    )
    then = memory_recall(
        subject=maya, query=f"Where did I live in June {now.year - 1}?", k=5, memory_types=["semantic"]
    )
    # The version that held then comes first, marked as replaced; the current one after it.
    assert ids(then) == [berlin["id"], lisbon["id"]]
    assert then.hits[0]["superseded_by"] == [lisbon["id"]]
    # Without a time, the current version only.
    assert ids(memory_recall(subject=maya, query="Where do I live?", k=5, memory_types=["semantic"])) == [lisbon["id"]]


def test_time_leg_never_reaches_another_subjects_memories(maya, tom) -> None:
    monday = datetime(2026, 10, 26, 20, tzinfo=UTC)
    episode_write(subject=tom, text="Went sailing last weekend", at=monday.isoformat())
    mine = episode_write(subject=maya, text="Went sailing with my dad last weekend", at=monday.isoformat())
    result = memory_recall(
        subject=maya, query="What did I do on the weekend of 24 October 2026?", k=10, now=monday + 10 * DAY
    )
    assert ids(result) == [mine["id"]]


def test_a_question_asking_when_favours_the_turns_that_name_a_date(maya) -> None:
    monday = datetime(2026, 10, 26, 20, tzinfo=UTC)
    dated = episode_write(subject=maya, text="Picked up my new road bike last weekend", at=monday.isoformat())
    for n, what in enumerate(
        ("Rode the road bike to work", "The road bike needs new brake pads", "Cleaned the road bike")
    ):
        episode_write(subject=maya, text=what, at=(monday + (n + 1) * 7 * DAY).isoformat())
    result = memory_recall(
        subject=maya, query="When did I get my new road bike?", k=3, now=monday + 40 * DAY, explain=True
    )
    assert "time" in result.legs
    assert ids(result)[0] == dated["id"]
    assert result.hits[0]["mentions"][0]["phrase"] == "last weekend"


def test_a_turn_that_names_no_date_still_answers_when_it_is_the_one_about_the_thing(maya) -> None:
    """The turn's own time answers "when" too: dated turns about other things must not bury it."""
    day = datetime(2026, 9, 14, 19, tzinfo=UTC)
    moved = episode_write(
        subject=maya, text="Just moved into the new flat in Lisbon, boxes everywhere", at=day.isoformat()
    )
    for n, text in enumerate(
        (
            "The dentist appointment last Tuesday went fine",
            "Started a yoga class two weeks ago, loving it",
            "My sister's birthday dinner is on Friday",
            "We watched the match at the pub last night",
        )
    ):
        episode_write(subject=maya, text=text, at=(day + (n + 1) * 5 * DAY).isoformat())
    result = memory_recall(subject=maya, query="When did I move to Lisbon?", k=3, now=day + 60 * DAY)
    assert "time" in result.legs
    assert ids(result)[0] == moved["id"]


# ---------------------------------------------------------------------------------------------- events


def _moved_to_lisbon(maya, moved: datetime) -> dict[str, dict]:
    """Maya's job and home, both replaced when she moved to Lisbon on ``moved``."""
    since = (moved - 3 * 365 * DAY).isoformat()
    facts: dict[str, dict] = {}
    for old, new, before, after in (
        (
            "kranich",
            "farfetch",
            "Maya is a backend developer at Kranich Logistics",
            "Maya is a data engineer at Farfetch",
        ),
        ("berlin", "lisbon", "Maya lives in Berlin", "Maya lives in Lisbon"),
    ):
        facts[old] = fact_write(subject=maya, text=before, fact_type="identity", at=since, valid_from=since)
        facts[new] = fact_write(
            subject=maya, text=after, fact_type="identity", supersedes=[facts[old]["id"]], valid_from=moved.isoformat()
        )
    return facts


def test_a_question_bounded_by_an_event_asks_about_the_day_before_the_fact_that_dates_it(maya, settings) -> None:
    moved = datetime(datetime.now(UTC).year - 1, 6, 2, tzinfo=UTC)
    facts = _moved_to_lisbon(maya, moved)
    question = "Where did I work before I moved to Lisbon?"
    result = memory_recall(subject=maya, query=question, k=2, memory_types=["semantic"], explain=True)
    # The job that held on 1 June — replaced since — comes first.
    assert ids(result)[0] == facts["kranich"]["id"]
    assert result.hits[0]["superseded_by"] == [facts["farfetch"]["id"]]
    day_before = (moved - DAY).date().isoformat()
    assert result.explain["time"] == {
        "start": day_before,
        "end": day_before,
        "asks_when": False,
        "event": {"bound": "before", "words": "I moved to Lisbon", "dated_by": facts["lisbon"]["id"]},
    }
    # Undated, the question sees the current job only: the one before the move is hidden.
    settings.ATLAS_TIME_LEG_EVENT = False
    off = memory_recall(subject=maya, query=question, k=2, memory_types=["semantic"])
    assert facts["kranich"]["id"] not in ids(off)


def test_since_an_event_that_ends_a_state_asks_about_the_day_it_ended(maya) -> None:
    moved = datetime(datetime.now(UTC).year - 1, 6, 2, tzinfo=UTC)
    facts = _moved_to_lisbon(maya, moved)
    result = memory_recall(
        subject=maya,
        query="What have I been doing since I left Kranich?",
        k=1,
        memory_types=["semantic"],
        explain=True,
    )
    assert ids(result) == [facts["farfetch"]["id"]]
    assert result.explain["time"]["start"] == moved.date().isoformat()
    assert result.explain["time"]["event"]["dated_by"] == facts["kranich"]["id"]


def test_a_turn_naming_the_events_date_dates_it(maya, settings) -> None:
    said = datetime(2026, 3, 2, 18, tzinfo=UTC)
    wedding = episode_write(subject=maya, text="Ada and Tom's wedding will be on June 14", at=said.isoformat())
    crete = episode_write(
        subject=maya,
        text="We're going to Crete in two weeks, already packed",
        at=datetime(2026, 6, 21, 18, tzinfo=UTC).isoformat(),
    )
    episode_write(
        subject=maya,
        text="We went to Crete years ago and loved it",
        at=datetime(2025, 5, 1, 18, tzinfo=UTC).isoformat(),
    )
    result = memory_recall(
        subject=maya,
        query="Where are we going on holiday after Ada's wedding?",
        k=2,
        now=datetime(2026, 7, 1, tzinfo=UTC),
        explain=True,
    )
    # The trip said in the month after the wedding first, then the wedding's own turn (the question's words).
    assert ids(result) == [crete["id"], wedding["id"]]
    assert result.explain["time"]["event"]["dated_by"] == wedding["id"]
    # The month after the wedding's day.
    assert (result.explain["time"]["start"], result.explain["time"]["end"]) == ("2026-06-15", "2026-07-14")
    # Undated, the trip of a year before is as good an answer.
    settings.ATLAS_TIME_LEG_EVENT = False
    off = memory_recall(
        subject=maya,
        query="Where are we going on holiday after Ada's wedding?",
        k=2,
        now=datetime(2026, 7, 1, tzinfo=UTC),
    )
    assert ids(off) != ids(result)


def test_an_event_no_memory_dates_changes_nothing_and_another_subjects_never_dates_it(maya, tom) -> None:
    """The first search runs with Maya's own key: Tom's move to Lisbon does not date Maya's question."""
    toms = _moved_to_lisbon(tom, datetime(2025, 6, 2, tzinfo=UTC))
    fact_write(subject=maya, text="Maya works at the city library", fact_type="identity")
    result = memory_recall(
        subject=maya,
        query="Where did I work before I moved to Lisbon?",
        k=3,
        memory_types=["semantic"],
        explain=True,
    )
    assert result.explain["time"]["event"]["dated_by"] is None
    assert (result.explain["time"]["start"], result.explain["time"]["end"]) == (None, None)
    assert "time" not in result.legs
    assert not {h["id"] for h in result.hits} & {f["id"] for f in toms.values()}


def test_expect_says_whether_a_replaced_version_held_at_the_time_asked(maya) -> None:
    moved = datetime(datetime.now(UTC).year - 1, 6, 2, tzinfo=UTC)
    facts = _moved_to_lisbon(maya, moved)
    # Berlin held in May before the move: shown, so only rank can keep it out — never "replaced".
    during = memory_recall(
        subject=maya,
        query=f"Where did I work in May {moved.year}?",
        k=1,
        memory_types=["semantic"],
        expect=[facts["berlin"]["id"]],
    )
    assert ids(during) == [facts["kranich"]["id"]]
    assert during.explain["expected"][0]["removed_by"] == "rank"
    # Ten years before, Berlin did not hold yet: the filter keeps it out, and says why in those words.
    before = memory_recall(
        subject=maya,
        query=f"Where did I live in May {moved.year - 10}?",
        k=3,
        memory_types=["semantic"],
        expect=[facts["berlin"]["id"]],
    )
    report = before.explain["expected"][0]
    assert report["removed_by"] == "filter"
    assert report["detail"] == (
        f"replaced by {facts['lisbon']['id']} and it did not hold during the time asked "
        f"({moved.year - 10}-05-01 to {moved.year - 10}-05-31)"
    )
