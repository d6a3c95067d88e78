"""Import of memories from JSON lines (the documented format), with per-line errors that never stop the run.

Each line: ``id`` (kept as an external id, unique per subject), ``subject`` (older name ``user_id``;
absent for catalog), ``type`` (older name ``memory_type``), ``text``, ``timestamp`` (ISO 8601) or ``days_ago``, and
the type's optional fields. Ids are derived from the external ids: re-importing a file leaves what it
stored as it is (``unchanged``), and a line naming a stored memory with other content is an error — an
import never replaces a memory (memory/services/gate.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from atlas_site.echo import echoed, names_listed
from atlas_site.errors import AtlasError, ValidationFailed
from atlas_site.json_input import json_parse
from memory.authority import IMPORT, authority_parse, authority_stamp, is_pending
from memory.elastic import store
from memory.portable.importing import export_lines_import
from memory.services.import_batch import (
    BATCH,
    SUPERSEDES_A_CYCLE,
    ImportReport,
    has_lone_surrogate,
    prepared_store,
    supersession_cycle_errors,
)
from memory.services.prepare import (
    MEMORY_TYPES,
    PreparedMemory,
    PreviousTurn,
    catalog_prepare,
    episode_prepare,
    fact_prepare,
    memory_id_for,
    memory_owner_check,
    now,
    playbook_prepare,
)
from memory.services.writes import fact_store
from memory.validation import id_list
from tenants.models import MemorySubject, Tenant
from tenants.selectors import tenant_es_client, writer_es_client
from tenants.services import audit_record, subject_create

COMMON_FIELDS = {"id", "user_id", "memory_type", "text", "timestamp", "days_ago"}
#: A subject's memory's scope (memory/scoping.py), on every type but the catalog.
SCOPE_FIELDS = {"agent_id", "app_id", "run_id", "metadata"}
TYPE_FIELDS = {
    "episodic": {"role", "event_type", "session_id", *SCOPE_FIELDS},
    "semantic": {
        "fact_type",
        "confidence",
        "supersedes",
        "contradiction",
        "source_episodes",
        "valid_from",
        "valid_to",
        *SCOPE_FIELDS,
    },
    "procedural": {"name", "trigger_text", "description", "steps", *SCOPE_FIELDS},
    "catalog": {"title", "category", "tags"},
}


MAX_DAYS_AGO = 36500


def _when(record: dict[str, Any]) -> Any:
    if "timestamp" in record and "days_ago" in record:
        raise ValidationFailed("give either timestamp or days_ago, not both")
    if "days_ago" in record:
        days = record["days_ago"]
        if isinstance(days, bool) or not isinstance(days, int | float) or not 0 <= days <= MAX_DAYS_AGO:
            raise ValidationFailed(f"days_ago must be a number from 0 to {MAX_DAYS_AGO}")
        return now() - timedelta(days=days)
    return record.get("timestamp")


def _record_parse(line: str) -> dict[str, Any]:
    """One line as a JSON object; a null field counts as absent (as it does for every optional field)."""
    if has_lone_surrogate(line):
        raise ValidationFailed("not UTF-8 text")
    record = json_parse(line, field=None, what="the line")
    if not isinstance(record, dict):
        raise ValidationFailed("each line must be a JSON object")
    if has_lone_surrogate(record):  # a \ud800 escape: Elasticsearch cannot store it
        raise ValidationFailed("a string holds an unpaired surrogate escape (\\ud800-\\udfff)")
    record = {k: v for k, v in record.items() if v is not None}
    # A line names its kind as every answer and export does ("type"); "memory_type" is the older name.
    if "type" in record:
        if "memory_type" in record:
            raise ValidationFailed("give type or its older name memory_type, not both")
        record["memory_type"] = record.pop("type")
    # Whose memory it is: "subject", as the export and every interface name it; "user_id" is the older name.
    if "subject" in record:
        if "user_id" in record:
            raise ValidationFailed("give subject or its older name user_id, not both")
        record["user_id"] = record.pop("subject")
    return record


@dataclass(frozen=True)
class ImportAuthority:
    """Who imported facts and playbooks speak for: ``default`` (``import``), or — reading our own export
    format, whose records carry it — each record's ``authority`` field when ``per_record``."""

    written_by: str
    default: str = IMPORT
    per_record: bool = False

    def stamp(self, prepared: PreparedMemory, record: dict[str, Any]) -> PreparedMemory:
        if prepared.memory_type not in ("semantic", "procedural"):
            return prepared
        given = record.get("authority") if self.per_record else None
        authority = authority_parse(given) if given is not None else self.default
        authority_stamp(prepared.source, authority=authority, written_by=self.written_by)
        return prepared


def _prepare(
    tenant: Tenant,
    subject: MemorySubject | None,
    record: dict[str, Any],
    previous_turns: dict[tuple[str, str], PreviousTurn],
    stamp: ImportAuthority | None = None,
) -> PreparedMemory:
    stamp = stamp or ImportAuthority(written_by="import")
    return stamp.stamp(_prepared(tenant, subject, record, previous_turns, stamp), record)


def _prepared(
    tenant: Tenant,
    subject: MemorySubject | None,
    record: dict[str, Any],
    previous_turns: dict[tuple[str, str], PreviousTurn],
    stamp: ImportAuthority,
) -> PreparedMemory:
    memory_type = record.get("memory_type")
    if memory_type not in MEMORY_TYPES:
        raise ValidationFailed(f"memory_type must be one of {', '.join(MEMORY_TYPES)}")
    own_fields = {"authority"} if stamp.per_record and memory_type in ("semantic", "procedural") else set()
    unknown = set(record) - COMMON_FIELDS - TYPE_FIELDS[memory_type] - {"kind", "note"} - own_fields
    if unknown:
        raise ValidationFailed(f"unknown field(s) for {memory_type}: {names_listed(sorted(unknown))}")
    tenant_id = str(tenant.es_id)
    common = {"external_id": record.get("id"), "at": _when(record)}
    fields = {k: record[k] for k in TYPE_FIELDS[memory_type] if k in record}
    if memory_type == "catalog":
        return catalog_prepare(tenant_id=tenant_id, text=record.get("text"), **fields, **common)
    user_id = str(subject.es_id)
    if memory_type == "episodic":
        session = fields.get("session_id")
        key = (user_id, session) if isinstance(session, str) else None
        previous = previous_turns.get(key) if key else None
        prepared = episode_prepare(
            tenant_id=tenant_id, user_id=user_id, text=record.get("text"), previous_turn=previous, **fields, **common
        )
        if key:  # a file lists a session's turns in order
            previous_turns[key] = PreviousTurn(prepared.memory_id, prepared.source["text"])
        return prepared
    if memory_type == "semantic":
        if "supersedes" in fields:
            targets = fields["supersedes"]
            if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
                raise ValidationFailed("supersedes must be a list of ids")
            fields["supersedes"] = [
                memory_id_for(tenant_id=tenant_id, user_id=user_id, memory_type="semantic", external_id=t)
                for t in targets
            ]
        if "source_episodes" in fields:
            fields["source_episodes"] = [
                memory_id_for(tenant_id=tenant_id, user_id=user_id, memory_type="episodic", external_id=e)
                for e in id_list(fields["source_episodes"], field_name="source_episodes")
            ]
        return fact_prepare(tenant_id=tenant_id, user_id=user_id, text=record.get("text"), **fields, **common)
    return playbook_prepare(tenant_id=tenant_id, user_id=user_id, text=record.get("text"), **fields, **common)


def _line_prepare(
    line: str,
    *,
    tenant: Tenant,
    subjects: dict[str, MemorySubject],
    create_subjects: bool,
    actor: str,
    report: ImportReport,
    previous_turns: dict[tuple[str, str], PreviousTurn],
    stamp: ImportAuthority | None = None,
) -> tuple[PreparedMemory, MemorySubject | None]:
    """One line as a memory ready to store, and its subject; ValidationFailed says what is wrong with it."""
    stamp = stamp or ImportAuthority(written_by=f"import:{actor}")
    record = _record_parse(line)
    subject = None
    if record.get("memory_type") != "catalog":
        user = record.get("user_id")
        if not isinstance(user, str) or not user:
            raise ValidationFailed("subject is required (only catalog entries have none)")
        subject = subjects.get(user)
        if subject is None:
            if not create_subjects:
                raise ValidationFailed(f"no subject {echoed(user)} in tenant {tenant.slug} (use --create)")
            # Check the whole line against an unsaved subject first: a bad line creates no subject.
            _prepare(tenant, MemorySubject(tenant=tenant, external_id=user), record, {}, stamp)
            subject = subjects[user] = subject_create(tenant=tenant, external_id=user, actor=actor)
            report.subjects_created.append(user)
    elif "user_id" in record:
        raise ValidationFailed("catalog entries are shared: they have no subject")
    return _prepare(tenant, subject, record, previous_turns, stamp), subject


def memories_import(
    *,
    tenant: Tenant,
    lines: Iterable[str],
    create_subjects: bool,
    actor: str,
    progress: Callable[[int, ImportReport], None] | None = None,
    partial: bool = False,
    authority: str = IMPORT,
    authority_per_record: bool = False,
    subject_name: str | None = None,
) -> ImportReport:
    """Import a file's lines, all or nothing: every line is checked first — its fields, its subject,
    and that what it ``supersedes`` is in the file or stored for that subject — and with any error
    nothing is written (no subject created either). ``partial`` imports the valid lines and skips the
    others. Errors come in line order.

    Facts and playbooks speak with ``authority`` (``import``), or with each record's own ``authority``
    field when ``authority_per_record``; ``written_by`` import:actor. An imported replacement of a fact
    the person wrote waits as a pending proposal (writes.fact_store).

    A file whose first line is an export header (docs/export-format.md) is read as that format;
    ``subject_name`` then puts its memories under that subject (the older format names each line's)."""
    lines = list(lines)
    if _first_line_is_header(lines):
        return export_lines_import(
            tenant=tenant,
            lines=lines,
            create_subjects=create_subjects,
            actor=actor,
            subject_name=subject_name,
            partial=partial,
            progress=progress,
        )
    if subject_name is not None:
        raise ValidationFailed("a subject can be given for an export (a file with a header line) only")
    stamp = ImportAuthority(written_by=f"import:{actor}", default=authority, per_record=authority_per_record)
    problems = _lines_check(tenant, lines, create_subjects=create_subjects, stamp=stamp)
    report = ImportReport()
    if problems and not partial:
        report.lines = sum(1 for line in lines if line.strip())
        report.errors = problems
        return report
    skipped = {line_no for line_no, _ in problems}
    subjects = {s.external_id: s for s in tenant.subjects.filter(is_active=True)}
    writer = writer_es_client()
    reader = tenant_es_client(tenant=tenant)
    pending: list[tuple[int, PreparedMemory]] = []
    facts_with_links: list[tuple[int, PreparedMemory, MemorySubject]] = []
    previous_turns: dict[tuple[str, str], PreviousTurn] = {}

    def flush() -> None:
        if not pending:
            return
        prepared_store(writer=writer, reader=reader, pending=pending, report=report)
        pending.clear()
        if progress:
            progress(report.lines, report)

    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        report.lines += 1
        if line_no in skipped:
            continue
        try:
            prepared, subject = _line_prepare(
                line,
                tenant=tenant,
                subjects=subjects,
                create_subjects=create_subjects,
                actor=actor,
                report=report,
                previous_turns=previous_turns,
                stamp=stamp,
            )
            if subject is not None:
                memory_owner_check(tenant_id=str(tenant.es_id), user_id=str(subject.es_id), prepared=prepared)
            if prepared.supersedes:  # stored after the rest, one by one, each claiming what it replaces
                facts_with_links.append((line_no, prepared, subject))
            else:
                pending.append((line_no, prepared))
        except AtlasError as err:
            report.errors.append((line_no, err.message))
        if len(pending) >= BATCH:
            flush()
    flush()
    report.supersessions = _supersessions_store(tenant, facts_with_links, report)
    report.errors = sorted(problems + report.errors)
    audit_record(
        tenant=tenant,
        actor=actor,
        action="memory.import",
        target=tenant.slug,
        detail={"lines": report.lines, "written": dict(report.written), "errors": len(report.errors)},
    )
    return report


def _first_line_is_header(lines: list[str]) -> bool:
    """Whether the file is an export (docs/export-format.md): its first line names a ``format``; the
    older line format has no header, so an object without ``format`` is its first memory."""
    first = next((line for line in lines if line.strip()), None)
    if first is None:
        return False
    try:
        value = json_parse(first, field=None, what="the line")
    except AtlasError:
        return False
    return isinstance(value, dict) and "format" in value


Reference = tuple[int, MemorySubject, str | None, list[str]]  # (line, subject, the line's id, the ids it replaces)


def _lines_check(
    tenant: Tenant, lines: list[str], *, create_subjects: bool, stamp: ImportAuthority
) -> list[tuple[int, str]]:
    """Every line's error, without writing anything: its fields and subject as the import reads them
    (a subject to be created is checked unsaved), and each fact's ``supersedes`` — an id that names
    neither a valid fact line of the same subject in the file nor a stored fact of that subject."""
    subjects = {s.external_id: s for s in tenant.subjects.filter(is_active=True)}
    errors: list[tuple[int, str]] = []
    in_file: dict[str, set[str]] = {}  # subject → the external ids of the file's valid fact lines
    references: list[Reference] = []
    previous_turns: dict[tuple[str, str], PreviousTurn] = {}
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = _record_parse(line)
            subject = None
            if record.get("memory_type") != "catalog":
                user = record.get("user_id")
                if not isinstance(user, str) or not user:
                    raise ValidationFailed("subject is required (only catalog entries have none)")
                if user not in subjects:
                    if not create_subjects:
                        raise ValidationFailed(f"no subject {echoed(user)} in tenant {tenant.slug} (use --create)")
                    subjects[user] = MemorySubject(tenant=tenant, external_id=user)  # unsaved: created on import
                subject = subjects[user]
            elif "user_id" in record:
                raise ValidationFailed("catalog entries are shared: they have no subject")
            prepared = _prepare(tenant, subject, record, previous_turns, stamp)
        except AtlasError as err:
            errors.append((line_no, err.message))
            continue
        if prepared.memory_type == "semantic":
            if isinstance(record.get("id"), str):
                in_file.setdefault(subject.external_id, set()).add(record["id"])
            if record.get("supersedes"):
                own_id = record["id"] if isinstance(record.get("id"), str) else None
                references.append((line_no, subject, own_id, record["supersedes"]))
    return sorted(errors + _references_check(tenant, references, in_file))


def _references_check(
    tenant: Tenant, references: list[Reference], in_file: dict[str, set[str]]
) -> list[tuple[int, str]]:
    """The errors of the lines whose ``supersedes`` closes a cycle (the line's own fact among them) or
    names a fact neither in the file (``in_file``: each subject's valid fact ids) nor stored for that subject."""
    errors = supersession_cycle_errors(
        {
            (subject.external_id, record_id): (line_no, [(subject.external_id, t) for t in targets])
            for line_no, subject, record_id, targets in references
            if record_id is not None
        }
    )
    reader = tenant_es_client(tenant=tenant) if references else None
    for line_no, subject, _, targets in references:
        outside = [t for t in targets if t not in in_file.get(subject.external_id, set())]
        stored: set[str] = set()
        if outside and subject.pk is not None:
            wanted = {
                memory_id_for(
                    tenant_id=str(tenant.es_id), user_id=str(subject.es_id), memory_type="semantic", external_id=t
                ): t
                for t in outside
            }
            found = store.memories_fetch(reader, ids=list(wanted), memory_types=store.FACT_TYPES_INDICES, filters=[])
            stored = {wanted[i] for i, hit in found.items() if hit["_source"].get("user_id") == str(subject.es_id)}
        missing = [t for t in outside if t not in stored]
        if missing:
            errors.append(
                (line_no, f"supersedes {names_listed(missing)}: no fact of {subject.external_id} in the file or stored")
            )
    return errors


def _supersessions_store(
    tenant: Tenant, facts: list[tuple[int, PreparedMemory, MemorySubject]], report: ImportReport
) -> int:
    """Store the facts that replace others, after everything else (a file may list a replacement before
    what it replaces), each through the one supersession path: it claims the facts it replaces, so a
    line replacing a fact that already has a successor is a line error naming the newest version and
    stores nothing. A replacement of a replacement waits for the one it replaces."""
    from memory.scope import SubjectScope

    reader = tenant_es_client(tenant=tenant)
    linked = 0
    for line_no, fact, subject in _replacements_ordered(facts, report):
        try:
            found = store.memories_fetch(reader, ids=fact.supersedes, memory_types=store.FACT_TYPES_INDICES, filters=[])
            targets = {i: h for i, h in found.items() if h["_source"].get("user_id") == str(subject.es_id)}
            missing = [i for i in fact.supersedes if i not in targets]
            if missing:
                raise ValidationFailed(f"supersedes {len(missing)} fact(s) of this user that were not imported")
            stored_already = fact_store(
                scope=SubjectScope.of(subject), prepared=fact, targets=list(targets.values()), refresh=True
            )
        except AtlasError as err:
            report.errors.append((line_no, err.message))
            continue
        if stored_already is not None:  # the file imported again: the replacement is stored as it is
            report.unchanged[fact.memory_type] += 1
            continue
        report.written[fact.memory_type] += 1
        if not is_pending(fact.source):  # a proposal (it would replace a person's fact) links nothing yet
            linked += len(targets)
    return linked


def _replacements_ordered(
    facts: list[tuple[int, PreparedMemory, MemorySubject]], report: ImportReport
) -> list[tuple[int, PreparedMemory, MemorySubject]]:
    """``facts`` in file order, except that a fact comes after the facts of this list it replaces; the
    lines of a cycle (a replaces b replaces a) are errors."""
    by_id = {fact.memory_id: (line_no, fact, subject) for line_no, fact, subject in facts}
    ordered: list[tuple[int, PreparedMemory, MemorySubject]] = []
    placed: set[str] = set()
    waiting = list(facts)
    while waiting:
        ready = [item for item in waiting if all(t in placed or t not in by_id for t in item[1].supersedes)]
        if not ready:
            for line_no, _fact, _subject in waiting:
                report.errors.append((line_no, SUPERSEDES_A_CYCLE))  # found by _lines_check first
            break
        for item in ready:
            ordered.append(item)
            placed.add(item[1].memory_id)
        waiting = [item for item in waiting if item[1].memory_id not in placed]
    return ordered
