"""Other memory products' dumps as export records (docs/export-format.md, "Other products' dumps").

Pure conversion: each item becomes the record the export format would hold for it, or an error that
names the item and the product's own field (``results[2].memory: …``). ``importing.records_import``
then checks and stores the records like any export's, all or nothing.

- mem0: what ``get_all`` returns — ``{"results": [...]}`` from the open-source ``Memory`` (mem0ai/mem0,
  ``mem0/memory/main.py``: MemoryItem id, memory, hash, created_at, updated_at, plus user_id, agent_id,
  run_id, actor_id, role and metadata) or the platform API's list
  (https://docs.mem0.ai/api-reference/memory/v1-get-memories: id, memory, created_at, updated_at,
  expiration_date, categories, metadata…). Each memory is a fact.
- Graphiti / Zep: ``{"episodes": [...], "edges": [...]}`` of Graphiti's models as they serialise
  (getzep/graphiti ``graphiti_core/nodes.py`` EpisodicNode: uuid, name, group_id, created_at, source,
  source_description, content, valid_at; ``graphiti_core/edges.py`` EntityEdge: uuid, group_id,
  source_node_uuid, target_node_uuid, created_at, name, fact, episodes, expired_at, valid_at,
  invalid_at). Episodes are episodes, entity edges facts citing them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from atlas_site.errors import ValidationFailed
from memory.validation import MAX_TEXT_CHARS, timestamp

from . import FORMAT, VERSION

SOURCES = ("mem0", "graphiti")
# mem0's default custom categories (its docs' "Custom Categories" list), by the fact type they describe.
MEM0_CATEGORY_TYPES = {
    "personal_details": "identity",
    "family": "identity",
    "professional_details": "identity",
    "milestones": "identity",
    "food": "preference",
    "music": "preference",
    "sports": "preference",
    "travel": "preference",
    "hobbies": "preference",
    "fashion": "preference",
    "entertainment": "preference",
    "user_preferences": "preference",
}
Converted = tuple[list[tuple[int, dict[str, Any]]], list[tuple[int, str]], dict[int, str]]


def foreign_header(source: str) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": datetime.now().astimezone().isoformat(),
        "source": source,
    }


def _text(item: dict[str, Any], name: str, where: str, *, required: bool = True) -> str | None:
    value = item.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValidationFailed(f"{where}.{name}: a non-empty string is required")
    if len(value.strip()) > MAX_TEXT_CHARS:
        raise ValidationFailed(f"{where}.{name}: longer than {MAX_TEXT_CHARS} characters")
    return value.strip()


def _moment(item: dict[str, Any], name: str, where: str, *, required: bool = False) -> str | None:
    value = item.get(name)
    if value is None:
        if required:
            raise ValidationFailed(f"{where}.{name}: a date-time is required")
        return None
    try:
        return timestamp(value, field_name=name).isoformat()
    except ValidationFailed as err:
        raise ValidationFailed(f"{where}.{name}: {err.message}") from None


def _owner(item: dict[str, Any], name: str, where: str, subject_name: str | None) -> str:
    if subject_name is not None:
        return subject_name
    owner = item.get(name)
    if not isinstance(owner, str) or not owner:
        raise ValidationFailed(f"{where}.{name}: whose memory this is is not said (give --subject)")
    return owner


def mem0_records(data: Any, *, subject_name: str | None) -> Converted:
    """mem0 memories as fact records, numbered from 1 in the file's order."""
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        items, path = data["results"], "results"
    elif isinstance(data, list):
        items, path = data, ""
    else:
        raise ValidationFailed('a mem0 export is the JSON get_all returns: {"results": [...]} or a list of memories')
    records, errors, places = [], [], {}
    for n, item in enumerate(items, start=1):
        where = f"{path}[{n - 1}]"
        places[n] = where
        try:
            if not isinstance(item, dict):
                raise ValidationFailed(f"{where}: a memory is a JSON object")
            memory_id = item.get("id")
            if not isinstance(memory_id, str) or not memory_id:
                raise ValidationFailed(f"{where}.id: a memory's id (a string) is required")
            created = _moment(item, "created_at", where) or _moment(item, "updated_at", where, required=True)
            categories = item.get("categories") if isinstance(item.get("categories"), list) else []
            types = [MEM0_CATEGORY_TYPES[c] for c in categories if c in MEM0_CATEGORY_TYPES]
            record = {
                "id": memory_id,
                "type": "semantic",
                "subject": _owner(item, "user_id", where, subject_name),
                "text": _text(item, "memory", where),
                "created_at": created,
                "fact_type": types[0] if types else "world",
            }
            expires = _moment(item, "expiration_date", where)
            if expires:
                record["valid_to"] = expires
        except ValidationFailed as err:
            errors.append((n, err.message))
            continue
        records.append((n, record))
    return records, errors, places


def graphiti_records(data: Any, *, subject_name: str | None) -> Converted:
    """Graphiti episodes then entity edges as episode and fact records, numbered from 1 in that order.

    An expired edge was contradicted by a newer one: Graphiti sets the old edge's ``invalid_at`` to the
    new edge's ``valid_at`` and ``expired_at`` to when it noticed (``resolve_edge_contradictions``,
    ``graphiti_core/utils/maintenance/edge_operations.py``). When exactly one other edge from the same
    entity became valid at that moment, it is the successor (a natural supersession at ``expired_at``);
    otherwise the old fact is retracted at ``expired_at``."""
    if not isinstance(data, dict) or not isinstance(data.get("episodes", []), list):
        raise ValidationFailed('a Graphiti dump is a JSON object {"episodes": [...], "edges": [...]}')
    edges_key = "entity_edges" if "entity_edges" in data and "edges" not in data else "edges"
    if not isinstance(data.get(edges_key, []), list):
        raise ValidationFailed(f"{edges_key} must be a list of entity edges")
    episodes, edges = data.get("episodes", []), data.get(edges_key, [])
    if not episodes and not edges:
        raise ValidationFailed("the dump holds no episodes and no edges")
    records: list[tuple[int, dict[str, Any]]] = []
    errors: list[tuple[int, str]] = []
    places: dict[int, str] = {}
    n = 0
    for i, item in enumerate(episodes):
        n += 1
        where = places[n] = f"episodes[{i}]"
        try:
            records.append((n, _graphiti_episode(item, where, subject_name)))
        except ValidationFailed as err:
            errors.append((n, err.message))
    facts: list[tuple[int, dict[str, Any], dict[str, Any]]] = []
    for i, item in enumerate(edges):
        n += 1
        where = places[n] = f"{edges_key}[{i}]"
        try:
            facts.append((n, _graphiti_fact(item, where, subject_name), item))
        except ValidationFailed as err:
            errors.append((n, err.message))
    _graphiti_successions(facts)
    records += [(number, record) for number, record, _ in facts]
    return records, errors, places


def _uuid(item: dict[str, Any], where: str, what: str) -> str:
    uuid = item.get("uuid")
    if not isinstance(uuid, str) or not uuid:
        raise ValidationFailed(f"{where}.uuid: {what}'s uuid (a string) is required")
    return uuid


def _graphiti_episode(item: Any, where: str, subject_name: str | None) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise ValidationFailed(f"{where}: an episode is a JSON object")
    uuid = _uuid(item, where, "an episode")
    said = _moment(item, "valid_at", where, required=True)
    record = {
        "id": uuid,
        "type": "episodic",
        "subject": _owner(item, "group_id", where, subject_name),
        "text": _text(item, "content", where),
        "created_at": _moment(item, "created_at", where) or said,
        "timestamp": said,
    }
    source = item.get("source")
    if source is not None:
        if source not in ("message", "json", "text"):
            raise ValidationFailed(f"{where}.source: one of message, json, text (Graphiti's EpisodeType)")
        record["event_type"] = source
    return record


def _graphiti_fact(item: Any, where: str, subject_name: str | None) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise ValidationFailed(f"{where}: an entity edge is a JSON object")
    uuid = _uuid(item, where, "an edge")
    cited = item.get("episodes", [])
    if not isinstance(cited, list) or not all(isinstance(e, str) and e for e in cited):
        raise ValidationFailed(f"{where}.episodes: a list of episode uuids")
    record = {
        "id": uuid,
        "type": "semantic",
        "subject": _owner(item, "group_id", where, subject_name),
        "text": _text(item, "fact", where),
        "created_at": _moment(item, "created_at", where, required=True),
        "fact_type": "world",
    }
    if cited:
        record["source_episodes"] = list(dict.fromkeys(cited))
    valid_from, valid_to = _moment(item, "valid_at", where), _moment(item, "invalid_at", where)
    if valid_from:
        record["valid_from"] = valid_from
    # Graphiti may close an edge the moment it opened; a validity with no length is no validity here.
    if valid_to and (valid_from is None or timestamp(valid_to, field_name="") > timestamp(valid_from, field_name="")):
        record["valid_to"] = valid_to
    expired = _moment(item, "expired_at", where)
    if expired:
        record["superseded_at"] = expired
    return record


def _graphiti_successions(facts: list[tuple[int, dict[str, Any], dict[str, Any]]]) -> None:
    """Link each expired edge to the one edge that invalidated it, or retract it (see graphiti_records)."""
    for _, old, item in facts:
        if "superseded_at" not in old:
            continue
        ended = item.get("invalid_at")
        successors = [
            new
            for _, new, other in facts
            if new is not old
            and new["subject"] == old["subject"]
            and ended is not None
            and other.get("source_node_uuid") == item.get("source_node_uuid")
            and new.get("valid_from") == timestamp(ended, field_name="").isoformat()
        ]
        if len(successors) == 1:
            new = successors[0]
            old["superseded_by"] = new["id"]
            old["retracted"] = False
            new.setdefault("supersedes", []).append(old["id"])
            new["contradiction"] = "natural"
        else:
            old["retracted"] = True
