"""Importing the documented export format (and what ``foreign`` converts into it), all or nothing.

Every record is checked first — against the committed JSON Schema, then by the same document rules a
write applies, then its links — and with any error nothing is written, no subject is created either
(``partial`` imports the valid records instead). Then each memory is stored as the file states it:
its timestamps, authority, writer, review state and chain links (supersedes, superseded_by,
superseded_at, retracted) are kept, not recomputed, so a chain arrives as it left. Ids are the
file's: each memory's id here derives from (tenant, subject, type, its external id — the file's
``external_id``, else its ``id``), so importing the same file again overwrites the same documents.

A link to a memory the file does not hold (an episode forgotten before the export, say) is kept as a
dangling id, as it was where it came from. What the file never does is touch a memory stored here:
a fact replacing a stored fact the file does not hold would bypass the one-successor rule, so it is
an error (import the whole chain, or write the replacement through the API).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from atlas_site.echo import echoed, schema_message
from atlas_site.errors import AtlasError, ValidationFailed
from atlas_site.json_input import json_parse
from memory.elastic import store
from memory.elastic.queries import FORGOTTEN_LINK
from memory.scoping import SCOPE_IDS
from memory.services.import_batch import (
    BATCH,
    ImportReport,
    has_lone_surrogate,
    prepared_store,
    supersession_cycle_errors,
)
from memory.services.prepare import (
    PreparedMemory,
    PreviousTurn,
    catalog_prepare,
    episode_prepare,
    fact_prepare,
    memory_id_for,
    memory_owner_check,
    playbook_prepare,
    timestamp,
)
from tenants.models import MemorySubject, Tenant
from tenants.selectors import tenant_es_client, writer_es_client
from tenants.services import EXTERNAL_ID_PATTERN, audit_record, subject_create

from . import FORMAT, VERSION, export_schema
from .export import KEPT

DEFAULT_AUTHORITY = "import"
# What the write path computes from the record's fields; the rest of what the export keeps is stored as
# the file states it (counts, times, chain state), not a new memory's defaults.
SCOPE = (*SCOPE_IDS, "metadata")  # checked and indexed by the write path (memory/scoping.py)
PREPARED = {
    "semantic": {"fact_type", "source_episodes", "supersedes", "contradiction", "valid_from", "valid_to", *SCOPE},
    "procedural": {"name", "trigger_text", "description", "steps", *SCOPE},
}
KEPT_AS_IS = {kind: tuple(f for f in KEPT[kind] if f not in prepared) for kind, prepared in PREPARED.items()}
Key = tuple[str | None, str, str]  # (subject, type, the file's id)


def export_lines_import(
    *,
    tenant: Tenant,
    lines: list[str],
    create_subjects: bool,
    actor: str,
    subject_name: str | None = None,
    partial: bool = False,
    progress: Callable[[int, ImportReport], None] | None = None,
) -> ImportReport:
    """Import an export file's lines (the header first); errors name their line."""
    numbered = [(n, line) for n, line in enumerate(lines, start=1) if line.strip()]
    if not numbered:
        raise ValidationFailed("the file is empty")
    records: list[tuple[int, Any]] = []
    report = ImportReport(lines=len(numbered))
    for n, line in numbered:
        try:
            records.append((n, line_parse(line)))
        except AtlasError as err:
            report.errors.append((n, err.message))
    if records and records[0][0] == numbered[0][0]:
        try:
            header_check(records.pop(0)[1])
        except AtlasError as err:
            report.errors.insert(0, (numbered[0][0], err.message))
    if report.errors and report.errors[0][0] == numbered[0][0]:
        report.errors.sort()
        return report  # an unreadable header: not even --allow-partial can guess what the lines mean
    return records_import(
        tenant=tenant,
        records=records,
        create_subjects=create_subjects,
        actor=actor,
        subject_name=subject_name,
        partial=partial,
        progress=progress,
        unreadable=report.errors,
        count=len(numbered) - 1,  # the header is not a memory: "10 of 10", not "10 of 11"
    )


def foreign_import(
    *,
    tenant: Tenant,
    source: str,
    text: str,
    create_subjects: bool,
    actor: str,
    subject_name: str | None = None,
    partial: bool = False,
    progress: Callable[[int, ImportReport], None] | None = None,
) -> ImportReport:
    """Import another product's dump (``foreign.SOURCES``), converted to export records; each error
    names the item by its number and its place in the dump (``results[2].memory: …``)."""
    from .foreign import graphiti_records, mem0_records

    converters = {"mem0": mem0_records, "graphiti": graphiti_records}
    if source not in converters:
        raise ValidationFailed(f"no importer for {echoed(source)}: choose one of {', '.join(converters)}")
    data = line_parse(text) if text.strip() else None
    if data is None:
        raise ValidationFailed("the file is empty")
    records, unreadable, places = converters[source](data, subject_name=subject_name)
    report = records_import(
        tenant=tenant,
        records=records,
        create_subjects=create_subjects,
        actor=f"{actor}:{source}",
        partial=partial,
        progress=progress,
        unreadable=unreadable,
        count=len(places),
        where=places,
    )
    report.unit = "item"
    return report


def line_parse(line: str) -> Any:
    """One line as JSON; a null field counts as absent, as it does in every other import."""
    if has_lone_surrogate(line):
        raise ValidationFailed("not UTF-8 text")
    value = json_parse(line, field=None, what="the line")
    if has_lone_surrogate(value):
        raise ValidationFailed("a string holds an unpaired surrogate escape (\\ud800-\\udfff)")
    return {k: v for k, v in value.items() if v is not None} if isinstance(value, dict) else value


def header_check(header: Any) -> None:
    """Refuse a header this deployment cannot read, saying why (a newer version, another format)."""
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValidationFailed(f'the first line is not an {FORMAT} header ({{"format": "{FORMAT}", ...}})')
    if header.get("version") != VERSION:
        raise ValidationFailed(
            f"this is version {echoed(header.get('version'))} of {FORMAT}; this deployment reads version {VERSION}"
        )
    _schema_check(header)


def _schema_check(record: Any) -> None:
    """The record against the committed schema; the error names the field (``steps/0/instruction``)."""
    if not isinstance(record, dict):
        raise ValidationFailed("each line must be a JSON object")
    if "format" not in record and record.get("type") not in MEMORY_TYPES:
        raise ValidationFailed(
            f"type must be one of {', '.join(MEMORY_TYPES)}, not {echoed(record.get('type'))}", field="type"
        )
    error = best_match(_validator().iter_errors(record))
    if error is None:
        return
    if error.context:  # oneOf says "not valid under any": take the errors of the branch the type picks
        branch = 0 if "format" in record else 1 + MEMORY_TYPES.index(record["type"])
        chosen = [e for e in error.context if e.relative_schema_path and e.relative_schema_path[0] == branch]
        error = best_match(chosen) if chosen else error
    where = "/".join(str(p) for p in error.absolute_path)
    raise ValidationFailed(f"{where or 'the record'}: {schema_message(error)}", field=where or None)


MEMORY_TYPES = ("episodic", "semantic", "procedural", "catalog")  # the schema's oneOf order, after the header


def _validator() -> Draft202012Validator:
    global _VALIDATOR
    if _VALIDATOR is None:
        _VALIDATOR = Draft202012Validator(export_schema())
    return _VALIDATOR


_VALIDATOR: Draft202012Validator | None = None


def records_import(
    *,
    tenant: Tenant,
    records: list[tuple[int, Any]],
    create_subjects: bool,
    actor: str,
    subject_name: str | None = None,
    partial: bool = False,
    progress: Callable[[int, ImportReport], None] | None = None,
    unreadable: list[tuple[int, str]] = (),
    count: int | None = None,
    where: dict[int, str] | None = None,
) -> ImportReport:
    """Import export-format memory records ((number, object) pairs: a line number, or an item's for a
    converted dump). ``subject_name`` puts every subject's memories under that one subject instead
    (one person's export arriving where they have another id). ``unreadable``: the errors of numbered
    lines that never became records (they count as bad records); ``count``: how many lines were read;
    ``where``: each record's place in a converted dump, which the record's errors then name."""
    report = ImportReport(lines=len(records) if count is None else count)
    subjects = {s.external_id: s for s in tenant.subjects.filter(is_active=True)}
    checked, problems = _records_check(tenant, records, subjects, create_subjects, subject_name)
    if where:  # the converter's own errors already name the place; the checks' name our fields
        problems = [(n, f"{where[n]}: {message}") for n, message in problems]
    problems = sorted([*unreadable, *problems])
    if problems and not partial:
        report.errors = problems
        return report
    for name in sorted({owner for _, owner, _ in checked if owner is not None and owner not in subjects}):
        subjects[name] = subject_create(tenant=tenant, external_id=name, actor=actor)
        report.subjects_created.append(name)
    tenant_id = str(tenant.es_id)
    by_key = {_key(owner, record): record for _, owner, record in checked}

    def new_id(owner: str | None, memory_type: str, file_id: str) -> str:
        record = by_key.get((owner, memory_type, file_id))
        external = (record.get("external_id") or record["id"]) if record else file_id
        user_id = str(subjects[owner].es_id) if owner is not None else None
        return memory_id_for(tenant_id=tenant_id, user_id=user_id, memory_type=memory_type, external_id=external)

    writer, reader = writer_es_client(), tenant_es_client(tenant=tenant)
    batch: list[tuple[int, PreparedMemory]] = []
    for number, owner, record in checked:
        prepared = _prepared(tenant_id, subjects.get(owner), owner, record, new_id, by_key, actor)
        batch.append((number, prepared))
        if len(batch) >= BATCH:
            _batch_store(writer, reader, batch, report)
            if progress:
                progress(number, report)
    _batch_store(writer, reader, batch, report)
    report.errors = sorted(problems + report.errors)
    audit_record(
        tenant=tenant,
        actor=actor,
        action="memory.import",
        target=tenant.slug,
        detail={
            "format": FORMAT,
            "records": report.lines,
            "written": dict(report.written),
            "errors": len(report.errors),
        },
    )
    return report


def _key(owner: str | None, record: dict[str, Any]) -> Key:
    return (owner, record["type"], record["id"])


def _records_check(
    tenant: Tenant,
    records: list[tuple[int, Any]],
    subjects: dict[str, MemorySubject],
    create_subjects: bool,
    subject_name: str | None,
) -> tuple[list[tuple[int, str | None, dict[str, Any]]], list[tuple[int, str]]]:
    """The valid records (number, owner, record) and every other record's error, writing nothing."""
    valid: list[tuple[int, str | None, dict[str, Any]]] = []
    errors: list[tuple[int, str]] = []
    seen: dict[Key, int] = {}
    for number, record in records:
        try:
            owner = _record_check(tenant, record, subjects, create_subjects, subject_name)
            key = _key(owner, record)
            if key in seen:
                raise ValidationFailed(
                    f"id {record['id']} is already used by the {record['type']} memory of line {seen[key]}"
                )
            seen[key] = number
        except AtlasError as err:
            errors.append((number, err.message))
            continue
        valid.append((number, owner, record))
    errors += _links_check(tenant, valid, subjects)
    bad = {number for number, _ in errors}
    return [item for item in valid if item[0] not in bad], sorted(errors)


def _record_check(
    tenant: Tenant,
    record: Any,
    subjects: dict[str, MemorySubject],
    create_subjects: bool,
    subject_name: str | None,
) -> str | None:
    """The record's owner (None for a catalog entry) once it is valid; ValidationFailed says what is not."""
    if isinstance(record, dict) and "format" in record:
        raise ValidationFailed("a header belongs on the first line only")
    _schema_check(record)
    owner = None
    if record["type"] != "catalog":
        owner = subject_name or record["subject"]
        if owner not in subjects and not create_subjects:
            raise ValidationFailed(f"no subject {echoed(owner)} in tenant {tenant.slug} (use --create)")
        if owner not in subjects and not EXTERNAL_ID_PATTERN.match(owner):
            raise ValidationFailed(
                f"subject {echoed(owner)} cannot be created: an external id is 1-128 characters, letters, digits "
                "and . _ @ : + - (not starting with a symbol)"
            )
    # The rules a write applies beyond the schema (dates that parse, valid_to after valid_from…).
    unsaved = MemorySubject(tenant=tenant, external_id=owner or "")
    _prepared(str(tenant.es_id), unsaved, owner, record, lambda _o, _t, i: i, {}, actor="check")
    return owner


def _links_check(
    tenant: Tenant, valid: list[tuple[int, str | None, dict[str, Any]]], subjects: dict[str, MemorySubject]
) -> list[tuple[int, str]]:
    """A chain must agree with itself — no fact supersedes itself, directly or through others — and never
    reach a fact stored here that the file does not hold."""
    in_file = {_key(owner, record): (number, record) for number, owner, record in valid}
    errors: list[tuple[int, str]] = []
    outside: list[tuple[int, str, str]] = []  # (number, owner, file id) of replaced facts not in the file
    for number, owner, record in valid:
        successor = record.get("superseded_by")
        if successor and (owner, "semantic", successor) in in_file:
            _, replacing = in_file[(owner, "semantic", successor)]
            if record["id"] not in (replacing.get("supersedes") or []):
                errors.append(
                    (number, f"superseded_by names {successor}, which does not list {record['id']} in supersedes")
                )
        for target in record.get("supersedes") or []:
            if (owner, "semantic", target) not in in_file and owner in subjects and subjects[owner].pk is not None:
                outside.append((number, owner, target))
    errors += supersession_cycle_errors(
        {
            _key(owner, record): (number, [(owner, "semantic", target) for target in record["supersedes"]])
            for number, owner, record in valid
            if record.get("supersedes")
        }
    )
    if outside:
        reader = tenant_es_client(tenant=tenant)
        wanted = {
            memory_id_for(
                tenant_id=str(tenant.es_id), user_id=str(subjects[owner].es_id), memory_type="semantic", external_id=t
            ): (number, t)
            for number, owner, t in outside
        }
        found = store.memories_fetch(reader, ids=list(wanted), memory_types=store.FACT_TYPES_INDICES, filters=[])
        for memory_id in found:
            number, target = wanted[memory_id]
            errors.append(
                (
                    number,
                    f"supersedes {target}, a fact stored here that the file does not hold: import its whole "
                    "chain, or replace it through the API",
                )
            )
    return errors


def _prepared(
    tenant_id: str,
    subject: MemorySubject | None,
    owner: str | None,
    record: dict[str, Any],
    new_id: Callable[[str | None, str, str], str],
    by_key: dict[Key, dict[str, Any]],
    actor: str,
) -> PreparedMemory:
    """The record as a document to store here: built by the write path's own rules, then given back
    what the file states (timestamps, counts, chain state, authority) instead of a new memory's defaults."""
    kind = record["type"]
    external_id = record.get("external_id") or record["id"]
    created = record["created_at"]
    if kind == "catalog":
        fields = {k: record[k] for k in ("title", "category", "tags") if k in record}
        prepared = catalog_prepare(
            tenant_id=tenant_id, text=record["text"], at=created, external_id=external_id, **fields
        )
        return prepared
    user_id = str(subject.es_id)

    def link(memory_type: str, file_id: str) -> str:
        return new_id(owner, memory_type, file_id)

    if kind == "episodic":
        previous = None
        if record.get("previous_turn"):
            before = by_key.get((owner, "episodic", record["previous_turn"]))
            previous = PreviousTurn(link("episodic", record["previous_turn"]), before["text"] if before else "")
        prepared = episode_prepare(
            tenant_id=tenant_id,
            user_id=user_id,
            text=record["text"],
            at=record.get("timestamp", created),
            external_id=external_id,
            previous_turn=previous if previous and previous.text else None,
            **{k: record[k] for k in ("session_id", "role", "event_type", *SCOPE) if k in record},
        )
        if previous is not None:
            prepared.source["previous_turn_id"] = previous.memory_id
    elif kind == "semantic":
        supersedes = [
            FORGOTTEN_LINK if t == FORGOTTEN_LINK else link("semantic", t) for t in record.get("supersedes") or []
        ]
        prepared = fact_prepare(
            tenant_id=tenant_id,
            user_id=user_id,
            text=record["text"],
            source_episodes=[
                FORGOTTEN_LINK if e == FORGOTTEN_LINK else link("episodic", e)
                for e in record.get("source_episodes") or []
            ],
            supersedes=supersedes,
            at=created,
            external_id=external_id,
            **{
                k: record[k]
                for k in ("fact_type", "confidence", "contradiction", "valid_from", "valid_to", *SCOPE)
                if k in record
            },
        )
        successor = record.get("superseded_by")
        if successor:  # a newer version since forgotten names no id, here as where it was exported
            prepared.source["superseded_by"] = [
                FORGOTTEN_LINK if successor == FORGOTTEN_LINK else link("semantic", successor)
            ]
        if "contradiction" in record:
            prepared.source["contradiction"] = record["contradiction"]
    else:
        prepared = playbook_prepare(
            tenant_id=tenant_id,
            user_id=user_id,
            at=created,
            external_id=external_id,
            **{k: record[k] for k in ("name", "trigger_text", "steps", "description", "text", *SCOPE) if k in record},
        )
    for name in KEPT_AS_IS.get(kind, ()):
        if name in record:
            value = record[name]
            if name.endswith("_at"):
                value = timestamp(value, field_name=name).isoformat()
            prepared.source[name] = float(value) if name in ("confidence", "outcome_score") else value
    prepared.source["created_at"] = timestamp(created, field_name="created_at").isoformat()
    prepared.source["authority"] = record.get("authority", DEFAULT_AUTHORITY)
    prepared.source["written_by"] = record.get("written_by", f"import:{actor}")
    if record.get("review_state"):
        prepared.source["review_state"] = record["review_state"]
    if record.get("proposal_for"):
        prepared.source["proposal_for"] = [link("semantic", target) for target in record["proposal_for"]]
    return prepared


def _batch_store(writer: Any, reader: Any, batch: list[tuple[int, PreparedMemory]], report: ImportReport) -> None:
    if not batch:
        return
    for _, prepared in batch:
        if prepared.memory_type != "catalog":
            memory_owner_check(
                tenant_id=prepared.source["tenant_id"], user_id=prepared.source["user_id"], prepared=prepared
            )
    for stored in prepared_store(writer=writer, reader=reader, pending=batch, report=report):
        report.supersessions += len(stored.supersedes)
    batch.clear()
