"""Moving memories written before ids included their owner to owner-scoped ids (``atlas_upgrade_ids``).

Before, a subject's memory with an external id had the id uuid5(ns, "tenant:type:external id"), and a
consolidation item's uuid5(ns, "tenant:type:derived:key"): the same id for every subject of a tenant,
so one subject's write could replace another's memory. Now both include the owner
(documents.memory_id_for / memory_id_derived). This upgrade finds the documents still under a legacy
id — from their own fields (tenant_id, user_id, memory_type, external_id), and for derived ones from the
keys in the consolidation runs' plans, owner checked — and, in every subject index and the archive:

1. copies each to its new id (``create``: a document already there, written after the new version was
   deployed, is newer and kept), with ``memory_id`` and its links rewritten;
2. rewrites ``supersedes``, ``superseded_by``, ``source_episodes`` and ``previous_turn_id`` of every other
   document that names a moved id, in place (a partial update: counts and scores are left alone);
3. rewrites the ids the database keeps: consolidation runs' plans, changes and windows, and each
   subject's consolidation watermark;
4. deletes the documents under legacy ids.

Running it twice changes nothing (the second run finds no legacy id); a run stopped part-way is finished
by running it again (until step 4 every legacy document is still there to map). Memories without an
external id have random ids and stay where they are; catalog entries keep their tenant-scoped ids.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from elasticsearch import helpers

from atlas_site.elastic.client import bootstrap_client, es_errors
from memory.elastic import store
from memory.models import ConsolidationRun, ConsolidationState

from .prepare import TENANT_MEMORY_ID_NAMESPACE, memory_id_derived, memory_id_for

#: The indices that hold subjects' memories (the catalog's ids are the tenant's and do not move).
SUBJECT_INDICES = ("episodic", "semantic", "procedural", "archive")
LINK_FIELDS = ("supersedes", "superseded_by", "source_episodes", "previous_turn_id")
#: Where a consolidation plan's items with derived ids are: (plan section, memory type).
DERIVED_SECTIONS = (("facts", "semantic"), ("supersessions", "semantic"), ("playbooks", "procedural"))
BATCH = 200


def legacy_memory_id_for(*, tenant_id: str, memory_type: str, external_id: str) -> str:
    """A memory's id for an external id before ids included their owner (tenant-scoped)."""
    return uuid.uuid5(TENANT_MEMORY_ID_NAMESPACE, f"{tenant_id}:{memory_type}:{external_id}").hex


def legacy_memory_id_derived(*, tenant_id: str, memory_type: str, key: str) -> str:
    """A consolidation item's id before ids included their owner."""
    return uuid.uuid5(TENANT_MEMORY_ID_NAMESPACE, f"{tenant_id}:{memory_type}:derived:{key}").hex


@dataclass
class IdUpgradeReport:
    #: Documents under a legacy id found, per index (memory type); with ``dry_run`` nothing else happens.
    legacy: dict[str, int] = field(default_factory=dict)
    moved: dict[str, int] = field(default_factory=dict)
    # Legacy documents whose new id already held a document (written after the deploy, or copied by a run
    # that was stopped before it finished): that one is kept.
    kept_newer: int = 0
    relinked: int = 0
    runs_rewritten: int = 0
    watermarks_rewritten: int = 0
    deleted: int = 0


def _type_of(source: dict[str, Any]) -> str:
    # An archived fact says "archive"; its id was made when it was a fact.
    memory_type = source.get("memory_type")
    return "semantic" if memory_type == "archive" else str(memory_type)


def _label(index: str) -> str:
    return next((t for t in SUBJECT_INDICES if f"-{t}-" in f"{index}-"), index)


def _derived_candidates() -> dict[str, tuple[str, str]]:
    """{legacy id: (owner user_id, new id)} of every item with a derived id in a kept consolidation plan."""
    out: dict[str, tuple[str, str]] = {}
    runs = ConsolidationRun.objects.exclude(plan=None).select_related("subject", "tenant")
    for run in runs.iterator():
        tenant_id, user_id = str(run.tenant.es_id), str(run.subject.es_id)
        for section, memory_type in DERIVED_SECTIONS:
            for item in (run.plan or {}).get(section) or []:
                key = item.get("key") if isinstance(item, dict) else None
                if not isinstance(key, str):
                    continue
                old = legacy_memory_id_derived(tenant_id=tenant_id, memory_type=memory_type, key=key)
                new = memory_id_derived(tenant_id=tenant_id, user_id=user_id, memory_type=memory_type, key=key)
                out[old] = (user_id, new)
    return out


def _new_id(hit: dict[str, Any], derived: dict[str, tuple[str, str]]) -> str | None:
    """The owner-scoped id of a document still under its legacy id; None for every other document."""
    source = hit["_source"]
    tenant_id, user_id = source.get("tenant_id"), source.get("user_id")
    if not isinstance(tenant_id, str) or not isinstance(user_id, str):
        return None
    memory_type, external_id = _type_of(source), source.get("external_id")
    if isinstance(external_id, str):
        if hit["_id"] == legacy_memory_id_for(tenant_id=tenant_id, memory_type=memory_type, external_id=external_id):
            return memory_id_for(tenant_id=tenant_id, user_id=user_id, memory_type=memory_type, external_id=external_id)
    candidate = derived.get(hit["_id"])
    if candidate is not None and candidate[0] == user_id:  # a plan's key only ever names its own subject's
        return candidate[1]
    return None


def _relinked(source: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    """The link fields of ``source`` that name a moved id, with the new ids."""
    out: dict[str, Any] = {}
    for name in LINK_FIELDS:
        value = source.get(name)
        if isinstance(value, str) and value in mapping:
            out[name] = mapping[value]
        elif isinstance(value, list) and any(v in mapping for v in value if isinstance(v, str)):
            out[name] = list(dict.fromkeys(mapping.get(v, v) if isinstance(v, str) else v for v in value))
    return out


def _ids_rewritten(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, list):
        return [_ids_rewritten(v, mapping) for v in value]
    if isinstance(value, dict):
        return {k: _ids_rewritten(v, mapping) for k, v in value.items()}
    return value


def _bulk(es, actions: list[dict[str, Any]], report: IdUpgradeReport) -> None:
    """Run the copies (``create``) and relinks (``update``); a copy whose id is taken keeps what is there."""
    failed = []
    with es_errors("move memories to their owner's ids"):
        for ok, result in helpers.streaming_bulk(
            es, actions, chunk_size=BATCH, raise_on_error=False, raise_on_exception=False, refresh="wait_for"
        ):
            op, info = next(iter(result.items()))
            if ok and op == "create":
                report.moved[_label(info["_index"])] = report.moved.get(_label(info["_index"]), 0) + 1
            elif ok:
                report.relinked += 1
            elif op == "create" and info.get("status") == 409:
                report.kept_newer += 1
            else:
                failed.append(result)
    if failed:
        raise RuntimeError(f"{len(failed)} document(s) could not be written (nothing deleted; run again): {failed[:2]}")


def _database_rewrite(mapping: dict[str, str], report: IdUpgradeReport) -> None:
    """The memory ids the database keeps: consolidation plans, changes, windows and watermarks."""
    for run in ConsolidationRun.objects.iterator():
        fields = {
            "plan": _ids_rewritten(run.plan, mapping),
            "changes": _ids_rewritten(run.changes, mapping),
            "window_start_id": mapping.get(run.window_start_id, run.window_start_id),
            "window_end_id": mapping.get(run.window_end_id, run.window_end_id),
        }
        if any(getattr(run, name) != value for name, value in fields.items()):
            ConsolidationRun.objects.filter(pk=run.pk).update(**fields)
            report.runs_rewritten += 1
    for state in ConsolidationState.objects.exclude(watermark_id="").iterator():
        if state.watermark_id in mapping:
            ConsolidationState.objects.filter(pk=state.pk).update(watermark_id=mapping[state.watermark_id])
            report.watermarks_rewritten += 1


def _legacy_find(es, progress: Progress | None) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """({legacy id: new id}, [(concrete index, legacy id)]) of every document still under a legacy id."""
    derived = _derived_candidates()
    query = {"bool": {"should": [{"exists": {"field": "external_id"}}, {"ids": {"values": sorted(derived)}}]}}
    total = store.memories_count(es, memory_types=SUBJECT_INDICES, query=query)
    mapping: dict[str, str] = {}
    places: list[tuple[str, str]] = []
    for n, hit in enumerate(store.memories_scan(es, memory_types=SUBJECT_INDICES, query=query), start=1):
        new_id = _new_id(hit, derived)
        if new_id is not None:
            mapping[hit["_id"]] = new_id
            places.append((hit["_index"], hit["_id"]))
        if progress and (n % 500 == 0 or n == total):
            progress("scanned", n, total)
    return mapping, places


Progress = Callable[[str, int, int], None]


def memory_ids_upgrade(*, dry_run: bool = False, progress: Progress | None = None) -> IdUpgradeReport:
    """Move every memory still under a legacy id to its owner-scoped id (the module's steps 1–4).

    ``dry_run``: only find them. ``progress(step, done, total)`` is called as the work goes."""
    es = bootstrap_client()
    report = IdUpgradeReport()
    mapping, places = _legacy_find(es, progress)
    for index, _ in places:
        report.legacy[_label(index)] = report.legacy.get(_label(index), 0) + 1
    if dry_run or not mapping:
        return report
    old_ids = sorted(mapping)
    for start in range(0, len(old_ids), BATCH):
        chunk = old_ids[start : start + BATCH]
        # 1. the copies, with their own links rewritten
        legacy = store.memories_scan(
            es, memory_types=SUBJECT_INDICES, query={"ids": {"values": chunk}}, include_embedding=True
        )
        copies = [
            {
                "_op_type": "create",
                "_index": hit["_index"],
                "_id": mapping[hit["_id"]],
                "_source": {**hit["_source"], **_relinked(hit["_source"], mapping), "memory_id": mapping[hit["_id"]]},
            }
            for hit in legacy
        ]
        _bulk(es, copies, report)
        # 2. every other document naming one of these ids (a relinked one no longer matches: the scan's
        # search_after does not skip past it)
        naming = {"bool": {"should": [{"terms": {name: chunk}} for name in LINK_FIELDS]}}
        relinks = [
            {"_op_type": "update", "_index": hit["_index"], "_id": hit["_id"], "doc": links}
            for hit in store.memories_scan(es, memory_types=SUBJECT_INDICES, query=naming)
            if hit["_id"] not in mapping and (links := _relinked(hit["_source"], mapping))
        ]
        _bulk(es, relinks, report)
        if progress:
            progress("moved", min(start + BATCH, len(old_ids)), len(old_ids))
    # 3. the database's ids, 4. the legacy documents
    _database_rewrite(mapping, report)
    report.deleted = store.memories_delete(es, places)
    return report
