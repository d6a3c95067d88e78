"""Which subjects and tenant catalogs hold a memory that does not read as English.

Recall needs to know so it can leave out the cross-lingual leg where that leg would judge nothing: under
language-aware fusion it judges only memories that do not read as English, or any memory under a
question that does not (memory.recall.fusion.fuse). For an English question over a subject whose memories — and
whose tenant's catalog — all read as English, its four kNN searches are pure cost (≈ 80 ms p50 on the
embedded engine, which scans every document per search).

The flags live on the SQL rows (MemorySubject.non_english_memories, Tenant.non_english_catalog):
- False: nothing recall sees reads otherwise; True: something does; None: not known (rows from before
  the flags were kept, or a census under way) — recall treats None as True.
- Writes only ever set True, before the memory is stored (a store that then fails leaves a flag too
  many, which costs searches, never one too few, which would cost quality) and again after it (so a
  census that ran meanwhile and did not yet see the memory cannot leave it unflagged; see
  ``non_english_census``).
- Only a census sets False: after forget-all, or to fill rows from before the flags were kept
  (``atlas_language_census``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from memory.elastic import store
from memory.elastic.indices import MEMORY_TYPES
from memory.inference.language_detection import memory_reads_as_english
from tenants.models import MemorySubject, Tenant
from tenants.selectors import tenant_es_client

if TYPE_CHECKING:
    from .prepare import PreparedMemory

CENSUS_BATCH = 500


def _owners(items: Iterable[PreparedMemory]) -> tuple[set[str], set[str]]:
    """The user_ids and catalog tenant_ids of the items that do not read as English."""
    users: set[str] = set()
    catalogs: set[str] = set()
    for item in items:
        if memory_reads_as_english(item.source):
            continue
        if item.memory_type == "catalog":
            catalogs.add(item.source["tenant_id"])
        else:
            users.add(item.source["user_id"])
    return users, catalogs


def _mark(users: set[str], catalogs: set[str]) -> None:
    if users:
        MemorySubject.objects.filter(es_id__in=users).exclude(non_english_memories=True).update(
            non_english_memories=True
        )
    if catalogs:
        Tenant.objects.filter(es_id__in=catalogs).exclude(non_english_catalog=True).update(non_english_catalog=True)


@contextmanager
def non_english_marked(items: Iterable[PreparedMemory]) -> Iterator[None]:
    """Wrap the storing of ``items``: flags their owners before and after (see the module's docstring)."""
    users, catalogs = _owners(items)
    _mark(users, catalogs)
    yield
    _mark(users, catalogs)


def non_english_census(*, tenant: Tenant, subjects: Iterable[MemorySubject] | None = None) -> dict[str, int]:
    """Recompute the flags from what is stored: the given subjects' (the catalog's too when ``subjects``
    is None, which means every subject of the tenant).

    The rows are set to None (not known) first and given the census's answer only where they are still
    None at the end: a write that marks a row meanwhile — before storing, and again after — wins, so a
    memory stored while the scan ran is never left unflagged. Returns how many subjects and catalogs
    were found to hold a memory that does not read as English."""
    whole_tenant = subjects is None
    chosen = MemorySubject.objects.filter(tenant=tenant)
    if not whole_tenant:
        chosen = chosen.filter(pk__in=[subject.pk for subject in subjects])
    user_ids = {str(es_id) for es_id in chosen.values_list("es_id", flat=True)}
    chosen.update(non_english_memories=None)
    if whole_tenant:
        Tenant.objects.filter(pk=tenant.pk).update(non_english_catalog=None)
    query: dict = {"bool": {"filter": [{"term": {"tenant_id": str(tenant.es_id)}}]}}
    memory_types = tuple(MEMORY_TYPES)
    if not whole_tenant:
        query["bool"]["filter"].append({"terms": {"user_id": sorted(user_ids)}})
        memory_types = tuple(t for t in MEMORY_TYPES if t != "catalog")
    foreign_users: set[str] = set()
    foreign_catalog = False
    if user_ids or whole_tenant:
        for hit in store.memories_scan(tenant_es_client(tenant=tenant), memory_types=memory_types, query=query):
            source = hit["_source"]
            if memory_reads_as_english(source):
                continue
            if source.get("memory_type") == "catalog":
                foreign_catalog = True
            elif source.get("user_id") in user_ids:
                foreign_users.add(source["user_id"])
    unknown = chosen.filter(non_english_memories__isnull=True)
    found = sorted(foreign_users)
    for start in range(0, len(found), CENSUS_BATCH):  # bounded IN lists (SQLite caps a statement's variables)
        unknown.filter(es_id__in=found[start : start + CENSUS_BATCH]).update(non_english_memories=True)
    unknown.update(non_english_memories=False)  # the rest: still not known, so nothing marked them meanwhile
    if whole_tenant:
        Tenant.objects.filter(pk=tenant.pk, non_english_catalog__isnull=True).update(
            non_english_catalog=foreign_catalog
        )
    return {"subjects": len(foreign_users), "catalogs": int(foreign_catalog)}
