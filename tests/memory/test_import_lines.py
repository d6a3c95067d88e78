"""Every import line of every memory type: a bad one is an error with its line number, never a traceback.

Generated lines (Hypothesis) set each field of a memory type to absent, null (the same as absent), a
valid value or a wrong one; the test knows which lines are valid and checks that exactly those import.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atlas_site.errors import ValidationFailed
from memory.portable.lines import ImportReport, _line_prepare, memories_import
from memory.validation import CONTRADICTIONS, FACT_TYPES
from tenants.models import MemorySubject, Tenant

ABSENT, NULL, VALID, WRONG = "absent", "null", "valid", "wrong"


def _short(max_size: int = 40) -> st.SearchStrategy[str]:
    # Hypothesis' text() never draws a lone surrogate; strip() is the rule require_text applies.
    return st.text(min_size=1, max_size=max_size).filter(lambda s: bool(s.strip()))


IDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=20)
MOMENTS = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC))
STAMPS = MOMENTS.map(lambda d: d.isoformat())
NOT_A_STRING = st.one_of(st.integers(), st.booleans(), st.lists(st.integers(), max_size=2), st.just({"a": 1}))
NOT_A_NUMBER = st.one_of(st.text(max_size=5), st.booleans(), st.lists(st.integers(), max_size=2))
BLANK = st.sampled_from(["", "   ", "\n\t"])
STEP = st.one_of(
    _short(),
    st.fixed_dictionaries(
        {"instruction": _short()},
        optional={"order": st.integers(1, 1000), "tool": st.one_of(st.none(), _short(20))},
    ),
)

# field -> (a valid value, a wrong value)
COMMON = {
    "id": (IDS, st.one_of(NOT_A_STRING, BLANK, st.just("x" * 129))),
    "timestamp": (STAMPS, st.one_of(NOT_A_STRING, st.sampled_from(["yesterday", "2026-13-01", "1/2/2026"]))),
    "days_ago": (
        st.one_of(st.integers(0, 36500), st.floats(0, 36500)),
        st.one_of(NOT_A_NUMBER, st.integers(max_value=-1), st.integers(min_value=36501), st.just(1e308)),
    ),
    "note": (st.one_of(st.text(max_size=10), st.integers()), st.nothing()),
}
TYPES = {
    "episodic": {
        "text": (_short(), st.one_of(NOT_A_STRING, BLANK, st.just("x" * 8001))),
        "role": (st.just("user"), st.one_of(NOT_A_STRING, st.sampled_from(["assistant", "system", ""]))),
        "event_type": (_short(64), st.one_of(NOT_A_STRING, BLANK, st.just("x" * 65))),
        "session_id": (IDS, st.one_of(NOT_A_STRING, BLANK)),
        "agent_id": (IDS, st.one_of(NOT_A_STRING, BLANK)),
    },
    "semantic": {
        "text": (_short(), st.one_of(NOT_A_STRING, BLANK)),
        "fact_type": (st.sampled_from(FACT_TYPES), st.one_of(NOT_A_STRING, st.sampled_from(["opinion", "World"]))),
        "confidence": (
            st.floats(0, 1),
            st.one_of(NOT_A_NUMBER, st.floats(min_value=1.0001, max_value=1e300), st.floats(max_value=-0.0001)),
        ),
        "supersedes": (st.just([]), st.one_of(_short(), st.lists(st.integers(), min_size=1, max_size=3))),
        "contradiction": (st.sampled_from(CONTRADICTIONS), st.one_of(NOT_A_STRING, st.just("mild"))),
        "source_episodes": (
            st.lists(IDS, max_size=5),
            st.one_of(_short(), st.lists(st.integers(), min_size=1, max_size=3), st.just([""])),
        ),
        "valid_from": (STAMPS, st.one_of(NOT_A_STRING, st.just("soon"))),
        "valid_to": (STAMPS, st.one_of(NOT_A_STRING, st.just("later"))),
    },
    "procedural": {
        "name": (_short(), st.one_of(NOT_A_STRING, BLANK, st.just("x" * 301))),
        "trigger_text": (_short(), st.one_of(NOT_A_STRING, BLANK)),
        "steps": (
            st.lists(STEP, min_size=1, max_size=4),
            st.one_of(
                st.just([]),
                _short(),
                st.lists(st.integers(), min_size=1, max_size=2),
                st.just([{"instruction": ""}]),
                st.just([{"instruction": "a", "order": 0}]),
                st.just([{"instruction": "a", "order": 2**31}]),
                st.just([{"tool": "grep"}]),
            ),
        ),
        "description": (_short(), NOT_A_STRING),
        "text": (_short(), NOT_A_STRING),
    },
    "catalog": {
        "title": (_short(), st.one_of(NOT_A_STRING, BLANK)),
        "text": (_short(), st.one_of(NOT_A_STRING, BLANK)),
        "category": (_short(), NOT_A_STRING),
        "tags": (st.lists(_short(20), max_size=5), st.one_of(_short(), st.lists(st.integers(), min_size=1))),
    },
}
REQUIRED = {
    "episodic": {"text"},
    "semantic": {"text"},
    "procedural": {"name", "trigger_text", "steps"},
    "catalog": {"title", "text"},
}


@st.composite
def lines(draw) -> tuple[str, bool]:
    """A JSON line and whether it is valid; about half are drawn to be valid (no wrong value, nothing missing)."""
    memory_type = draw(st.sampled_from(sorted(TYPES)))
    record: dict = {"memory_type": memory_type}
    valid = True
    aim_valid = draw(st.booleans())
    owner = draw(st.sampled_from([ABSENT, NULL] if memory_type == "catalog" else [VALID])) if aim_valid else None
    owner = owner or draw(st.sampled_from([ABSENT, NULL, VALID, VALID, VALID, WRONG]))
    if memory_type == "catalog":
        # A catalog entry belongs to the tenant: any user_id is wrong, null is absent.
        if owner in (VALID, WRONG):
            record["user_id"] = draw(st.sampled_from(["maya", "tom"]))
            valid = False
        elif owner == NULL:
            record["user_id"] = None
    elif owner == VALID:
        record["user_id"] = draw(st.sampled_from(["maya", "tom"]))
    else:
        record["user_id"] = draw(st.one_of(NOT_A_STRING, st.just(""), st.just("nobody"))) if owner == WRONG else None
        valid = False
    present = {}
    for name, (good, bad) in {**COMMON, **TYPES[memory_type]}.items():
        states = [ABSENT, NULL, VALID, WRONG] if not bad.is_empty else [ABSENT, VALID]
        if name in REQUIRED[memory_type]:
            states = [ABSENT, NULL, VALID, VALID, VALID, VALID, WRONG]
        if aim_valid:
            states = [VALID] if name in REQUIRED[memory_type] else [s for s in states if s != WRONG]
            if name == "days_ago" and "timestamp" in present:
                states = [ABSENT, NULL]
        state = draw(st.sampled_from(states))
        if state == NULL:
            record[name] = None
        elif state == VALID:
            record[name] = present[name] = draw(good)
        elif state == WRONG:
            record[name] = present[name] = draw(bad)
            valid = False
        if name in REQUIRED[memory_type] and state in (ABSENT, NULL):
            valid = False
    if "timestamp" in present and "days_ago" in present:
        valid = False
    if valid and "valid_from" in present and "valid_to" in present:
        valid = datetime.fromisoformat(present["valid_to"]) > datetime.fromisoformat(present["valid_from"])
    if not aim_valid and draw(st.integers(0, 20)) == 0:
        record["colour"] = "blue"  # an unknown field
        valid = False
    keys = draw(st.permutations(sorted(record)))
    return json.dumps({k: record[k] for k in keys}, ensure_ascii=draw(st.booleans())), valid


JUNK = st.one_of(
    st.text(max_size=60),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=8,
    ).map(json.dumps),
    st.sampled_from(
        [
            '{"memory_type": "episodic", "user_id": "maya", "text": "\\ud800"}',
            '{"memory_type": "semantic", "user_id": "maya", "text": "x", "confidence": NaN}',
            '{"memory_type": "episodic", "user_id": "maya", "text": "x", "days_ago": Infinity}',
            '{"memory_type": "catalog", "title": "t", "text": "x", "id": ' + "9" * 5000 + "}",
            "[" * 5000 + "]" * 5000,
            '{"memory_type": "episodic", "user_id": "maya", "text": "x", "timestamp": "0001-01-01T00:00:00+05:00"}',
            '{"memory_type": "episodic", "user_id": "maya", "text": "x", "timestamp": "9999-12-31T23:59:59-05:00"}',
            '{"memory_type": "semantic", "user_id": "maya", "text": "bad bytes \udcff"}',
        ]
    ),
)


@pytest.fixture
def subjects(db) -> dict[str, MemorySubject]:
    """Saved rows without Elasticsearch keys: the line checks below never reach the search engine."""
    tenant = Tenant.objects.create(slug="lines", name="Lines")
    return {name: MemorySubject.objects.create(tenant=tenant, external_id=name) for name in ("maya", "tom")}


def _check(line: str, subjects: dict[str, MemorySubject]) -> bool:
    """Whether the line prepares; anything but a ValidationFailed fails the test with its traceback."""
    tenant = next(iter(subjects.values())).tenant
    try:
        _line_prepare(
            line,
            tenant=tenant,
            subjects=dict(subjects),
            create_subjects=False,
            actor="test",
            report=ImportReport(),
            previous_turns={},
        )
    except ValidationFailed as err:
        assert err.message
        return False
    return True


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=lines())
def test_a_generated_line_prepares_exactly_when_it_is_valid(subjects, line) -> None:
    text, valid = line
    assert _check(text, subjects) is valid, text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=JUNK)
def test_any_line_at_all_is_a_memory_or_a_validation_error(subjects, line) -> None:
    _check(line, subjects)


PLAYBOOK = ": a playbook has a name, a trigger_text and steps"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"memory_type": "procedural", "name": "n", "steps": ["s"]}, "trigger_text is required" + PLAYBOOK),
        ({"memory_type": "procedural", "trigger_text": "t", "steps": ["s"]}, "name is required" + PLAYBOOK),
        ({"memory_type": "procedural", "name": "n", "trigger_text": "t"}, "steps is required" + PLAYBOOK),
        (
            {"memory_type": "procedural", "name": "n", "trigger_text": "t", "steps": None},
            "steps is required" + PLAYBOOK,
        ),
        ({"memory_type": "procedural", "name": "n"}, "trigger_text and steps are required" + PLAYBOOK),
        (
            {"memory_type": "semantic", "type": "semantic", "text": "x"},
            "give type or its older name memory_type, not both",
        ),
        ({"type": "dream", "text": "x"}, "memory_type must be one of episodic, semantic, procedural, catalog"),
        ({"type": "semantic", "text": "x", "subject": "maya"}, "give subject or its older name user_id, not both"),
        (
            {"type": "catalog", "title": "t", "text": "x", "subject": "maya"},
            "catalog entries are shared: they have no subject",
        ),
        (
            {"memory_type": "procedural", "name": "n", "trigger_text": "t", "steps": ["a", 5]},
            "a step is a string (the instruction) or an object with an instruction",
        ),
        ({"memory_type": "catalog", "text": "x", "user_id": None}, "title is required"),
        ({"memory_type": "semantic", "text": "x", "source_episodes": [5]}, "source_episodes must be a list of ids"),
        ({"memory_type": "episodic", "text": "x", "days_ago": 1e308}, "days_ago must be a number from 0 to 36500"),
        (
            {"memory_type": "episodic", "text": "x", "timestamp": "0001-01-01T00:00:00+05:00"},
            "timestamp is out of range",
        ),
    ],
)
def test_the_message_names_the_field(subjects, line, message) -> None:
    if line.get("memory_type", line.get("type")) != "catalog":
        line = {**line, "user_id": "maya"}
    with pytest.raises(ValidationFailed) as caught:
        _line_prepare(
            json.dumps(line),
            tenant=subjects["maya"].tenant,
            subjects=subjects,
            create_subjects=False,
            actor="test",
            report=ImportReport(),
            previous_turns={},
        )
    assert caught.value.message == message


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(lines(), min_size=1, max_size=6))
def test_an_import_stores_the_valid_lines_and_reports_the_others_by_number(tenant, maya, tom, batch) -> None:
    """End to end on the embedded Elasticsearch: the report's numbers are exactly the invalid lines, in
    order; with any of them nothing is written, and a partial import writes the others."""
    texts = [_ids_of_this_example(text) for text, _ in batch]
    invalid = [n for n, (_, valid) in enumerate(batch, start=1) if not valid]
    whole = memories_import(tenant=tenant, lines=texts, create_subjects=False, actor="test")
    assert [n for n, _ in whole.errors] == invalid
    assert sum(whole.written.values()) == (0 if invalid else len(batch))
    report = memories_import(tenant=tenant, lines=texts, create_subjects=False, actor="test", partial=True)
    assert [n for n, _ in report.errors] == invalid
    # A line with an id that the first import stored (none, when it refused the file) is left unchanged;
    # a line without one is a new memory each time.
    named = 0 if invalid else sum(1 for text in texts if _named(text))
    assert sum(report.unchanged.values()) == named
    assert sum(report.written.values()) == len(batch) - len(invalid) - named


def _ids_of_this_example(line: str) -> str:
    """The line with its id made unique to this Hypothesis example: the examples share one tenant, and
    an id stored by an earlier example with other content is (rightly) refused, not overwritten."""
    try:
        record = json.loads(line)
    except ValueError:
        return line
    if isinstance(record, dict) and isinstance(record.get("id"), str) and record["id"].strip():
        record["id"] = f"{record['id'][:100]}-{_EXAMPLE.next()}"
        return json.dumps(record)
    return line


def _named(line: str) -> bool:
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return isinstance(record, dict) and isinstance(record.get("id"), str) and bool(record["id"].strip())


class _Counter:
    def __init__(self) -> None:
        self.n = 0

    def next(self) -> int:
        self.n += 1
        return self.n


_EXAMPLE = _Counter()


def test_a_line_names_its_owner_subject_as_every_interface_does(tenant, maya) -> None:
    from memory.selectors import memory_list

    lines = [json.dumps({"id": "f-subject", "subject": "maya", "type": "semantic", "text": "Maya swims"})]
    report = memories_import(tenant=tenant, lines=lines, create_subjects=False, actor="test")
    assert (report.errors, dict(report.written)) == ([], {"semantic": 1})
    listed = memory_list(subject=maya, memory_types=["semantic"])["memories"]
    assert [(m["external_id"], m["text"]) for m in listed] == [("f-subject", "Maya swims")]


def test_an_import_with_a_bad_line_writes_nothing_and_names_unknown_replacements(tenant, maya) -> None:
    from atlas_site.elastic.client import bootstrap_client

    def stored() -> int:
        bootstrap_client().indices.refresh(index="atlas-test-*")
        return bootstrap_client().count(index="atlas-test-*", query={"term": {"tenant_id": str(tenant.es_id)}})["count"]

    lines = [
        json.dumps({"id": "f1", "user_id": "maya", "memory_type": "semantic", "text": "Maya lives in Porto"}),
        json.dumps(
            {"id": "f2", "user_id": "maya", "memory_type": "semantic", "text": "in Lisbon", "supersedes": ["f1"]}
        ),
        json.dumps({"id": "f3", "user_id": "maya", "memory_type": "semantic", "text": "x", "supersedes": ["ghost"]}),
        json.dumps({"id": "e1", "user_id": "nobody", "memory_type": "episodic", "text": "hi"}),
        json.dumps({"id": "p1", "user_id": "maya", "memory_type": "procedural", "name": "n"}),
    ]
    report = memories_import(tenant=tenant, lines=lines, create_subjects=False, actor="test")
    assert report.errors == [
        (3, "supersedes ghost: no fact of maya in the file or stored"),
        (4, f"no subject 'nobody' in tenant {tenant.slug} (use --create)"),
        (5, "trigger_text and steps are required: a playbook has a name, a trigger_text and steps"),
    ]
    assert sum(report.written.values()) == 0 and stored() == 0
    created = memories_import(tenant=tenant, lines=lines, create_subjects=True, actor="test")
    assert [n for n, _ in created.errors] == [3, 5] and stored() == 0
    assert not tenant.subjects.filter(external_id="nobody").exists()  # nothing created either
    partial = memories_import(tenant=tenant, lines=lines, create_subjects=False, actor="test", partial=True)
    assert [n for n, _ in partial.errors] == [3, 4, 5] and partial.written == {"semantic": 2}
    assert stored() == 2  # the line naming an unknown fact was not imported, only reported
    later = memories_import(tenant=tenant, lines=[lines[1].replace('"f2"', '"f4"')], create_subjects=False, actor="t")
    assert later.errors[0][1].startswith("fact ")  # f1 is stored now: the reference holds, the chain refuses a fork


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "the line is not JSON (Expecting property name enclosed in double quotes at line 1 column 2)"),
        ('{"text": NaN}', "the line is not JSON (NaN is not a JSON number)"),
        ('{"days_ago": ' + "9" * 5000 + "}", "the line is not JSON (a number with too many digits)"),
        (
            '{"memory_type": "episodic", "x": ' + "[" * 1_000 + "]" * 1_000 + "}",
            "the line is nested deeper than 32 levels",
        ),
        ('{"x": ' + '{"a": ' * 50_000 + "1" + "}" * 50_000 + "}", "the line is nested deeper than 32 levels"),
    ],
)
def test_a_line_that_is_not_json_or_nested_too_deeply_is_refused_by_the_one_json_reader(
    subjects, line, message
) -> None:
    """The same reader (atlas_site.json_input) as the REST and MCP bodies, with the same depth limit."""
    with pytest.raises(ValidationFailed) as caught:
        _line_prepare(
            line,
            tenant=subjects["maya"].tenant,
            subjects=subjects,
            create_subjects=False,
            actor="test",
            report=ImportReport(),
            previous_turns={},
        )
    assert caught.value.message == message


def test_an_error_quotes_80_characters_of_a_value_and_twenty_names(tenant, maya, tmp_path) -> None:
    """Issue 32, finding 10a: atlas_import echoed a 50 MB value whole into its line's error (578 MB of memory
    for the run). Each error quotes a value's first 80 characters and its length, and lists at most twenty
    names (unknown fields, missing ids), counting the rest."""
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    big = 5_000_000
    fact = {"id": "f", "subject": "maya", "type": "semantic", "text": "Maya swims"}
    lines = [
        {**fact, "timestamp": "t" * big},
        {**fact, "subject": "s" * big},
        {**fact, **{f"extra{n:02}": 1 for n in range(30)}},
        {**fact, "id": "g", "supersedes": ["i" * big]},
    ]
    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    err = StringIO()
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("atlas_import", str(path), "--tenant", tenant.slug, stdout=StringIO(), stderr=err)
    extras = ", ".join(f"extra{n:02}" for n in range(20))
    assert err.getvalue().splitlines() == [
        f"line 1: timestamp must be an ISO 8601 date-time, not {'t' * 80!r}… ({big} characters)",
        f"line 2: no subject {'s' * 80!r}… ({big} characters) in tenant {tenant.slug} (use --create)",
        f"line 3: unknown field(s) for semantic: {extras}, … and 10 more",
        f"line 4: supersedes {'i' * 80}… ({big} characters): no fact of maya in the file or stored",
    ]


def test_a_fact_superseding_itself_or_a_cycle_is_refused_per_line(tenant, maya) -> None:
    """Issue 32, finding 10b: the REST API refuses a fact that supersedes itself; an import stored one (and a
    cycle's lines were found only after the file's other lines were written, so an all-or-nothing import
    stored them). Each such line is an error before anything is written; a partial import stores the rest."""
    from atlas_site.elastic.client import bootstrap_client

    def stored() -> int:
        bootstrap_client().indices.refresh(index="atlas-test-*")
        return bootstrap_client().count(index="atlas-test-*", query={"term": {"tenant_id": str(tenant.es_id)}})["count"]

    def fact(external_id: str, *supersedes: str) -> str:
        line = {"id": external_id, "subject": "maya", "type": "semantic", "text": f"fact {external_id}"}
        return json.dumps({**line, "supersedes": list(supersedes)} if supersedes else line)

    lines = [fact("f1"), fact("a", "a"), fact("b", "c"), fact("c", "b"), fact("d", "f1")]
    errors = [
        (2, "a fact cannot supersede itself"),
        (3, "supersedes a fact that (indirectly) supersedes it: a cycle"),
        (4, "supersedes a fact that (indirectly) supersedes it: a cycle"),
    ]
    whole = memories_import(tenant=tenant, lines=lines, create_subjects=False, actor="test")
    assert (whole.errors, dict(whole.written), stored()) == (errors, {}, 0)
    partial = memories_import(tenant=tenant, lines=lines, create_subjects=False, actor="test", partial=True)
    assert (partial.errors, dict(partial.written), partial.supersessions) == (errors, {"semantic": 2}, 1)
    assert stored() == 2
