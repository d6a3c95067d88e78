"""Forgetting: a real, complete deletion — one memory, all of a subject's, or a whole tenant's.

Every copy of the text goes, and the answer is a receipt saying what went from each store:
- the memory indices, every concrete index of each type (the archive's generations, and any older
  version a reindex left behind, not only what the aliases point at);
- consolidation run records: their plan, dropped items and errors quote the subject's memories. A
  subject's or a tenant's are deleted outright — everything in them is about memories that no longer
  exist, and a kept plan could be approved or resumed into the index again; forgetting one memory
  scrubs its text from the subject's records and keeps the rest of them;
- idempotency records (a POST's stored answer, replayed to retries for 24 hours): the subject's (or
  the tenant's) all, or for one memory those of its subject whose answer holds its id or quotes its
  text, whichever token stored them (catalog.py does the same across the tenant for an entry);
- this process's query-embedding caches (keyed by query text).

The audit record (who, what, how many) goes to the SQL database, never into a recall corpus, and
never carries the forgotten text.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db.models import QuerySet

from atlas_site.errors import NotFound, ValidationFailed
from atlas_site.idempotency import idempotency_records_forget, idempotency_tenant_records_forget
from memory.elastic import links, queries, store
from memory.elastic.indices import MEMORY_TYPES, memory_type_of_index
from memory.elastic.queries import own_documents_filter
from memory.inference.embeddings import query_caches_clear
from memory.models import ConsolidationRun, RejectedProposal
from memory.provenance import episode_orphans
from memory.scope import SubjectScope
from memory.scoping import filters_fields, filters_parse
from memory.services.consolidation_lease import consolidation_leases_release, consolidation_leases_take_over
from memory.services.guards import secrets_redacted
from tenants.models import MemorySubject, Tenant
from tenants.selectors import tenant_es_client, writer_es_client
from tenants.services import audit_record
from webhooks.services import webhook_events_forget

from .announce import memories_forgotten_announce, memory_forgotten_announce, subject_forgotten_announce
from .non_english_flags import non_english_census
from .prepare import PreparedMemory, embed_into

ALL_INDICES = tuple(MEMORY_TYPES)
OWNED_INDICES = tuple(t for t in MEMORY_TYPES if t != "catalog")
# A receipt lists at most this many ids per store (the count is always whole).
RECEIPT_MAX_IDS = 1000
FORGOTTEN_MARK = "[forgotten]"
# The fields of a memory that hold its words (a playbook's steps hold instructions).
_TEXT_FIELDS = ("text", "name", "trigger_text", "description", "title")
# Shorter texts are scrubbed where a string is exactly them, longer ones wherever they are quoted.
_QUOTED_MIN_CHARS = 8


def _store_receipt(ids: Iterable[Any]) -> dict[str, Any]:
    listed = list(dict.fromkeys(str(i) for i in ids))
    return {"count": len(listed), "ids": listed[:RECEIPT_MAX_IDS], "truncated": len(listed) > RECEIPT_MAX_IDS}


def forget_receipt(
    *, deleted: dict[str, list[str]], runs: list[int], idempotency: list[str], cache_entries: int
) -> dict[str, Any]:
    """What a deletion removed, per store (the shape every interface shows)."""
    return {
        "indices": {memory_type: _store_receipt(ids) for memory_type, ids in deleted.items()},
        "run_records": _store_receipt(runs),
        "idempotency_records": _store_receipt(idempotency),
        # Cache entries are keyed by text: counted, never listed.
        "query_embedding_cache": {"count": cache_entries, "ids": [], "truncated": False},
    }


def _counts(deleted: dict[str, list[str]]) -> dict[str, int]:
    return {memory_type: len(set(ids)) for memory_type, ids in deleted.items() if ids}


def _delete_all(reader, writer, query: dict[str, Any], memory_types: tuple[str, ...]) -> dict[str, list[str]]:
    """Scan every generation and delete until nothing matches (a write racing the scan is caught by the
    next pass); the ids deleted, per type."""
    deleted: dict[str, list[str]] = {memory_type: [] for memory_type in memory_types}
    for _ in range(10):
        targets = [
            (hit["_index"], hit["_id"])
            for hit in store.memories_scan(reader, memory_types=memory_types, query=query, every_generation=True)
        ]
        if not targets:
            return deleted
        store.memories_delete(writer, targets)
        for index, memory_id in targets:
            deleted[memory_type_of_index(index)].append(memory_id)
    raise RuntimeError("memories kept appearing while forgetting; try again")


# ----------------------------------------------------------------- text kept outside the indices
def _memory_texts(source: dict[str, Any]) -> list[str]:
    texts = [source.get(name) for name in _TEXT_FIELDS]
    texts += [step.get("instruction") for step in source.get("steps") or [] if isinstance(step, dict)]
    found = [t.strip() for t in texts if isinstance(t, str) and t.strip()]
    return list(dict.fromkeys(found + [secrets_redacted(t) for t in found]))


def _quotes(value: str, texts: list[str]) -> bool:
    """Whether ``value`` holds one of ``texts``: whole, or cut short (run records keep 300 characters)."""
    for text in texts:
        if value == text:
            return True
        if len(text) >= _QUOTED_MIN_CHARS and (
            text in value or (len(value) >= _QUOTED_MIN_CHARS and text.startswith(value))
        ):
            return True
    return False


def _scrubbed(value: Any, texts: list[str]) -> Any:
    if isinstance(value, str):
        return FORGOTTEN_MARK if _quotes(value, texts) else value
    if isinstance(value, list):
        return [_scrubbed(item, texts) for item in value]
    if isinstance(value, dict):
        return {key: _scrubbed(item, texts) for key, item in value.items()}
    return value


def _plan_scrubbed(plan: Any, texts: list[str], ids: Collection[str]) -> Any:
    """The plan without the items that quote the texts: a run resumed or approved later must not write
    them again, nor write the mark in their place. Nor may it change a forgotten memory — or, the id free
    again, an unrelated one written since under the same external id: an item whose target (``targets``,
    ``fact_id``, ``playbook_id``) is forgotten goes, and a forgotten turn leaves an item's evidence (the
    item goes when it was learnt from forgotten turns only)."""
    if not isinstance(plan, dict):
        return _scrubbed(plan, texts)
    return {
        key: [kept for item in value if _scrubbed(item, texts) == item and (kept := _item_kept(item, ids))]
        if isinstance(value, list)
        else _scrubbed(value, texts)
        for key, value in plan.items()
    }


def _item_kept(item: Any, ids: Collection[str]) -> Any:
    """A plan item with no forgotten id in it, or None when it is about forgotten memories."""
    if not isinstance(item, dict) or not ids:
        return item
    targets = [*(item.get("targets") or []), item.get("fact_id"), item.get("playbook_id")]
    if any(target in ids for target in targets):
        return None
    evidence = item.get("source_episodes")
    if not isinstance(evidence, list) or not any(e in ids for e in evidence):
        return item
    left = [e for e in evidence if e not in ids]
    return {**item, "source_episodes": left} if left else None


def _runs_scrub(*, subject: MemorySubject, texts: list[str], ids: Collection[str] = ()) -> list[int]:
    """Take the texts out of the subject's run records wherever they quote them, and the forgotten ``ids``
    out of their plans; the records changed."""
    changed: list[int] = []
    for run in ConsolidationRun.objects.filter(subject=subject).only("pk", "plan", "rejected", "changes", "error"):
        fields = {name: getattr(run, name) for name in ("plan", "rejected", "changes", "error")}
        cleaned = {name: _scrubbed(value, texts) for name, value in fields.items()}
        cleaned["plan"] = _plan_scrubbed(fields["plan"], texts, ids)
        if cleaned != fields:
            ConsolidationRun.objects.filter(pk=run.pk).update(**cleaned)
            changed.append(run.pk)
    return changed


def _runs_delete(runs) -> list[int]:
    ids = list(runs.values_list("pk", flat=True))
    ConsolidationRun.objects.filter(pk__in=ids).delete()
    return ids


def stored_answer_matcher(memory_id: str, source: dict[str, Any]) -> Callable[[dict[str, Any]], bool]:
    """Whether a stored answer holds the memory: its id anywhere (the POST that made it, a fact naming it
    as a source, a recall hit or evidence) or its text quoted."""
    texts = _memory_texts(source)

    def holds(record: dict[str, Any]) -> bool:
        body = record.get("body")
        return memory_id in json.dumps(body, ensure_ascii=False, default=str) or _scrubbed(body, texts) != body

    return holds


@contextmanager
def _consolidation_held(subjects: QuerySet[MemorySubject]) -> Iterator[None]:
    """Hold the subjects' consolidation leases while forgetting: a run in progress stops at its next
    renewal (before it stores a plan quoting what is forgotten, before each write), none starts."""
    owner = f"forget-{uuid.uuid4().hex[:12]}"
    consolidation_leases_take_over(subjects=subjects, owner=owner)
    try:
        yield
    finally:
        consolidation_leases_release(subjects=subjects, owner=owner)


# ----------------------------------------------------------------------------------- services
def memory_forget(*, subject: MemorySubject, memory_id: Any, actor: str) -> dict[str, Any]:
    """Delete one of the subject's memories (a shared catalog entry is not theirs to forget), with every
    copy of its text; answers what went, per store."""
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise ValidationFailed("memory_id is required", field="memory_id")
    scope = SubjectScope.of(subject)
    found = store.memories_fetch(
        scope.reader(), ids=[memory_id], memory_types=OWNED_INDICES, filters=scope.read_filters()
    )
    hit = found.get(memory_id)
    if hit is None or hit["_source"].get("user_id") != scope.user_id:
        raise NotFound(f"no memory {memory_id} for this user", field="memory_id")
    memory_id = hit["_id"]
    memory_type = hit["_source"].get("memory_type")
    # A playbook's pending steps are its next version — its name, trigger and text: they go with it.
    taken = [hit, *_steps_proposals(scope, [memory_id])] if memory_type == "procedural" else [hit]
    texts = list(dict.fromkeys(t for each in taken for t in _memory_texts(each["_source"])))
    # Read before the delete: what this episode was the last evidence of (the answer says so; the
    # memories themselves stay — forgetting them too is the caller's choice).
    orphaned = (
        [m["id"] for m in episode_orphans(subject=subject, episode_id=memory_id)] if memory_type == "episodic" else []
    )
    # The document, and its copies in older generations of its index.
    same = queries.ids_within([each["_id"] for each in taken], [_own(scope)])
    with _consolidation_held(MemorySubject.objects.filter(pk=subject.pk)):
        deleted = _delete_all(scope.reader(), scope.writer(), same, (memory_type_of_index(hit["_index"]),))
        runs = _runs_scrub(subject=subject, texts=texts, ids={each["_id"] for each in taken})
        contexts = _turn_contexts_scrub(scope, [memory_id]) if memory_type == "episodic" else []
        if memory_type == "episodic":
            _citations_mark(scope, [memory_id])
        if memory_type in store.FACT_TYPES_INDICES:  # a current fact, or a replaced one the archive holds
            _chain_links_drop(scope, [memory_id])
    # Every route that can answer with a subject's memory names the subject, so its records are the
    # subject's, whichever token asked; the tenant-wide routes (catalog, subjects) answer with none.
    matchers = [stored_answer_matcher(each["_id"], each["_source"]) for each in taken]
    idempotency = idempotency_records_forget(
        tenant_id=str(subject.tenant.es_id),
        subject=subject.external_id,
        matches=lambda record: any(holds(record) for holds in matchers),
    )
    receipt = forget_receipt(deleted=deleted, runs=runs, idempotency=idempotency, cache_entries=query_caches_clear())
    if memory_type == "episodic":  # the turns that carried it as their context, rewritten without it
        receipt["turn_contexts"] = _store_receipt(contexts)
    audit_record(
        tenant=subject.tenant,
        actor=actor,
        action="memory.forget",
        target=f"{subject}:{memory_id}",
        detail={"memory_type": memory_type},
    )
    memory_forgotten_announce(subject=subject, memory_id=memory_id, memory_type=memory_type, receipt=receipt)
    if len(taken) > 1:
        proposals = {memory_type: [each["_id"] for each in taken[1:]]}
        memories_forgotten_announce(subject=subject, deleted=proposals, receipt=receipt)
    return {"id": memory_id, "type": memory_type, "forgotten": True, "receipt": receipt, "orphaned": orphaned}


def _own(scope: SubjectScope) -> dict[str, Any]:
    """The subject's own documents (never the tenant's catalog): what forgetting deletes and unlinks."""
    return own_documents_filter(tenant_id=scope.tenant_id, user_id=scope.user_id)


def _chain_links_drop(scope: SubjectScope, fact_ids: list[str]) -> None:
    """No memory names a forgotten fact's id any more — a forgotten id is free again: the same external
    id written later derives it for a new, unrelated fact. The facts that replaced it name FORGOTTEN_LINK
    in its place (``supersedes``: else the new fact would read as replaced — a second current version in
    a chain, which the reconciler would "repair" by marking the new fact superseded), the pending proposals
    to replace it stop naming it (``proposal_for``: one now proposes a new fact, where accepting it would
    have replaced the new fact), and the facts it replaced stay replaced, by FORGOTTEN_LINK when it was
    their only successor (else the new fact would read as their newer version)."""
    modes = {"supersedes": "mark", "proposal_for": "drop", "superseded_by": "mark_if_empty"}
    _links_forget(scope, fact_ids, modes, store.FACT_TYPES_INDICES)


def _citations_mark(scope: SubjectScope, episode_ids: list[str]) -> None:
    """The facts and playbooks citing forgotten turns cite FORGOTTEN_LINK in their place: their evidence
    was forgotten, and a turn written later under the same external id — the same derived id, unrelated —
    must not become their evidence."""
    _links_forget(scope, episode_ids, {"source_episodes": "mark"}, (*store.FACT_TYPES_INDICES, "procedural"))


def _links_forget(
    scope: SubjectScope, forgotten: list[str], modes: dict[str, str], memory_types: tuple[str, ...]
) -> None:
    """Unlink ``forgotten`` from the subject's memories naming it in a field of ``modes``, in every
    generation (store.memory_links_forget: on each document as stored; one deleted or archived meanwhile
    is the next scan's, or nobody's)."""
    own = [_own(scope)]
    query = queries.links_to(forgotten, tuple(modes), own)
    for hit in store.memories_scan(scope.reader(), memory_types=memory_types, query=query, every_generation=True):
        links.memory_links_forget(
            scope.writer(), index=hit["_index"], memory_id=hit["_id"], forgotten=forgotten, modes=modes,
            created_at=hit["_source"].get("created_at"),
        )  # fmt: skip


def _steps_proposals(scope: SubjectScope, playbook_ids: list[str]) -> list[dict[str, Any]]:
    """The pending steps proposed for these playbooks (``proposal_for``), in every generation."""
    if not playbook_ids:
        return []
    query = queries.proposals_for(playbook_ids, [_own(scope)])
    return list(store.memories_scan(scope.reader(), memory_types=("procedural",), query=query, every_generation=True))


def _turn_contexts_scrub(scope: SubjectScope, episode_ids: list[str]) -> list[str]:
    """The turns that followed forgotten turns in their session, rewritten (turn_contexts_scrub)."""
    query = queries.next_turns_query(tenant_id=scope.tenant_id, user_id=scope.user_id, episode_ids=episode_ids)
    return turn_contexts_scrub(scope.reader(), scope.writer(), query=query, gone=episode_ids)


def turn_contexts_scrub(reader: Any, writer: Any, *, query: dict[str, Any], gone: Collection[str]) -> list[str]:
    """The turns ``query`` finds followed a turn that is gone (forgotten, or expired by retention) and carry
    its text as their context (``embedding_context``, ATLAS_CONTEXTUAL_EPISODES) and its id
    (``previous_turn_id``): both go, and their vectors are made again from the turn alone — in every
    generation of the index. A turn that is itself gone is left to its delete. The ids of the turns
    rewritten."""
    rewritten: list[str] = []
    for _ in range(5):  # a turn changed between the read and the rewrite (a use count) is read again
        hits = [
            hit
            for hit in store.memories_scan(
                reader, memory_types=("episodic",), query=query, every_generation=True, versions=True
            )
            if hit["_id"] not in gone
        ]
        if not hits:
            break
        for hit in hits:
            source = {k: v for k, v in hit["_source"].items() if k not in ("embedding_context", "previous_turn_id")}
            prepared = PreparedMemory("episodic", hit["_id"], source)
            embed_into([prepared])
            version = (hit["_seq_no"], hit["_primary_term"])
            if store.memory_source_replace(
                writer, index=hit["_index"], memory_id=hit["_id"], source=prepared.source, if_version=version
            ):
                rewritten.append(hit["_id"])
    return sorted(set(rewritten))


def episode_forget_with_orphans(
    *, subject: MemorySubject, memory_id: Any, actor: str, orphans: Collection[str]
) -> dict[str, Any]:
    """Forget an episode and those of ``orphans`` (the person's choice) it was the last evidence of.

    Which ones qualify is decided by the episode's own forgetting (read just before its delete), not by
    the caller: an id that is not one of them — a fact that found other evidence since, or any other
    memory — is left alone. One forgotten meanwhile (another tab) is simply skipped. ``orphans_forgotten``
    lists what went besides the episode."""
    result = memory_forget(subject=subject, memory_id=memory_id, actor=actor)
    chosen = set(orphans)
    result["orphans_forgotten"] = []
    for orphan in result["orphaned"]:
        if orphan not in chosen:
            continue
        try:
            memory_forget(subject=subject, memory_id=orphan, actor=actor)
        except NotFound:
            continue
        result["orphans_forgotten"].append(orphan)
    return result


def subject_memories_forget(*, subject: MemorySubject, actor: str) -> dict[str, Any]:
    """Delete every memory of the subject in every index (the archive and old generations included) and
    every other copy of their text; ``counts`` per type and the ``receipt`` per store."""
    scope = SubjectScope.of(subject)
    query = _own(scope)
    with _consolidation_held(MemorySubject.objects.filter(pk=subject.pk)):
        deleted = _delete_all(scope.reader(), scope.writer(), query, OWNED_INDICES)
        runs = _runs_delete(ConsolidationRun.objects.filter(subject=subject))
        # What they rejected is a fact about them too (kept as text hashes): it goes with everything else.
        rejections, _ = RejectedProposal.objects.filter(subject=subject).delete()
    idempotency = idempotency_records_forget(tenant_id=str(subject.tenant.es_id), subject=subject.external_id)
    receipt = forget_receipt(deleted=deleted, runs=runs, idempotency=idempotency, cache_entries=query_caches_clear())
    non_english_census(tenant=subject.tenant, subjects=[subject])  # forgotten, so not remembered as written
    counts = _counts(deleted)
    audit_record(
        tenant=subject.tenant,
        actor=actor,
        action="memory.forget_subject",
        target=str(subject),
        detail={
            "deleted": counts,
            "run_records": len(runs),
            "idempotency_records": len(idempotency),
            "rejected_proposals": rejections,
        },
    )
    subject_forgotten_announce(subject=subject, counts=counts, receipt=receipt)
    return {"counts": counts, "receipt": receipt}


def scoped_memories_forget(*, subject: MemorySubject, filters: Any, actor: str) -> dict[str, Any]:
    """Delete the subject's memories matching ``filters`` (memory/scoping.py: "everything agent X wrote"),
    with every copy of their text as forgetting one memory removes it — in every index and generation,
    the run records quoting them, the stored answers holding them, the turns carrying them as context.
    ``filters`` is required (forgetting everything is subject_memories_forget); the answer is ``counts`` per
    type, the ``receipt`` per store and the ``ids`` forgotten."""
    clauses = filters_parse(filters)
    if not clauses:
        raise ValidationFailed(
            "filters are required: name what to forget (to forget everything, forget all)", field="filters"
        )
    scope = SubjectScope.of(subject)
    own = _own(scope)
    query = {"bool": {"filter": [own, *clauses]}}
    with _consolidation_held(MemorySubject.objects.filter(pk=subject.pk)):
        matched = list(
            store.memories_scan(scope.reader(), memory_types=OWNED_INDICES, query=query, every_generation=True)
        )
        playbooks = [h["_id"] for h in matched if memory_type_of_index(h["_index"]) == "procedural"]
        proposals = [h for h in _steps_proposals(scope, playbooks) if h["_id"] not in {m["_id"] for m in matched}]
        if proposals:  # a playbook's pending steps are its next version: they go with it, whoever wrote them
            query = {"bool": {"should": [query, queries.ids_within([h["_id"] for h in proposals], [own])]}}
            matched += proposals
        deleted = _delete_all(scope.reader(), scope.writer(), query, OWNED_INDICES)
        texts = list(dict.fromkeys(t for hit in matched for t in _memory_texts(hit["_source"])))
        runs = _runs_scrub(subject=subject, texts=texts, ids={hit["_id"] for hit in matched}) if matched else []
        facts = sorted({i for memory_type in store.FACT_TYPES_INDICES for i in deleted.get(memory_type, [])})
        if facts:
            _chain_links_drop(scope, facts)
        episodes = set(deleted.get("episodic", []))
        contexts = _turn_contexts_scrub(scope, sorted(episodes)) if episodes else []
        if episodes:
            _citations_mark(scope, sorted(episodes))
    matchers = [stored_answer_matcher(hit["_id"], hit["_source"]) for hit in matched]
    idempotency = (
        idempotency_records_forget(
            tenant_id=str(subject.tenant.es_id),
            subject=subject.external_id,
            matches=lambda record: any(holds(record) for holds in matchers),
        )
        if matchers
        else []
    )
    receipt = forget_receipt(deleted=deleted, runs=runs, idempotency=idempotency, cache_entries=query_caches_clear())
    receipt["turn_contexts"] = _store_receipt(contexts)
    counts = _counts(deleted)
    audit_record(
        tenant=subject.tenant,
        actor=actor,
        action="memory.forget_scoped",
        target=str(subject),
        # The filter's fields only: its values (metadata a caller chose) are not kept in the audit trail.
        detail={
            "deleted": counts,
            "filter_fields": sorted(filters_fields(filters)),
            "run_records": len(runs),
        },
    )
    memories_forgotten_announce(subject=subject, deleted=deleted, receipt=receipt)
    forgotten = list(dict.fromkeys(memory_id for ids in deleted.values() for memory_id in ids))
    return {"counts": counts, "receipt": receipt, "ids": forgotten}


def tenant_memories_forget(*, tenant: Tenant, actor: str) -> dict[str, Any]:
    """Delete every memory of the tenant, its catalog included, and every other copy of their text (before
    deactivating it: that revokes its key); ``counts`` per type and the ``receipt`` per store."""
    reader = tenant_es_client(tenant=tenant)
    query = queries.field_equals("tenant_id", str(tenant.es_id))
    with _consolidation_held(MemorySubject.objects.filter(tenant=tenant)):
        deleted = _delete_all(reader, writer_es_client(), query, ALL_INDICES)
        runs = _runs_delete(ConsolidationRun.objects.filter(tenant=tenant))
        RejectedProposal.objects.filter(tenant=tenant).delete()
    idempotency = idempotency_tenant_records_forget(
        tenant_id=str(tenant.es_id),
        subjects=MemorySubject.objects.filter(tenant=tenant).values_list("external_id", flat=True),
    )
    receipt = forget_receipt(deleted=deleted, runs=runs, idempotency=idempotency, cache_entries=query_caches_clear())
    non_english_census(tenant=tenant)
    counts = _counts(deleted)
    audit_record(
        tenant=tenant,
        actor=actor,
        action="memory.forget_tenant",
        target=tenant.slug,
        detail={"deleted": counts, "run_records": len(runs), "idempotency_records": len(idempotency)},
    )
    webhook_events_forget(tenant=tenant)  # no event keeps a text of the tenant's (it announces nothing)
    return {"counts": counts, "receipt": receipt}


def receipt_summary(receipt: dict[str, Any]) -> str:
    """One line a person reads: how many went from each store."""
    indices = ", ".join(f"{t} {r['count']}" for t, r in receipt["indices"].items() if r["count"]) or "nothing"
    return (
        f"documents deleted: {indices}; run records: {receipt['run_records']['count']}; "
        f"idempotency records: {receipt['idempotency_records']['count']}; "
        f"query-embedding cache entries: {receipt['query_embedding_cache']['count']}"
    )
