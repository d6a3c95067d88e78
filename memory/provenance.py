"""Where a memory came from, and what forgetting an episode leaves without evidence. Selectors: reads
only, with the subject's own key (the consolidation run is read from SQL, limited to the subject)."""

from __future__ import annotations

from typing import Any

from memory import selectors
from memory.authority import memory_authority
from memory.elastic import queries, store
from memory.models import ConsolidationRun
from memory.scope import SubjectScope
from tenants.models import MemorySubject

# How much of a cited episode a provenance answer quotes.
EPISODE_QUOTE_CHARS = 200
WRITER_KINDS = ("token", "person", "run", "operator", "import")


def writer_described(written_by: Any) -> dict[str, Any] | None:
    """``written_by`` (``token:<name>``, ``person:<id>``, ``run:<id>``, ``operator:<username>``,
    ``import:<actor>``) as {kind, name, label}; None when the document does not say."""
    if not isinstance(written_by, str) or ":" not in written_by:
        return None
    kind, name = written_by.split(":", 1)
    if kind not in WRITER_KINDS or not name:
        return {"kind": "unknown", "name": written_by, "label": written_by}
    labels = {
        "token": f"an agent using the token “{name}”",
        "person": "a person, in the dashboard",
        "run": f"nightly consolidation, run {name}",
        "operator": f"an operator ({name}), in the admin",
        "import": f"an import ({name})",
    }
    return {"kind": kind, "name": name, "label": labels[kind]}


def _run_described(subject: MemorySubject, writer: dict[str, Any] | None) -> dict[str, Any] | None:
    """The consolidation run that wrote the memory: its id and times, or ``gone`` when its record was
    deleted (forgetting a subject deletes its runs). A run of another subject is never shown."""
    if writer is None or writer["kind"] != "run":
        return None
    run_id = writer["name"]
    run = ConsolidationRun.objects.filter(pk=int(run_id), subject=subject).first() if run_id.isdigit() else None
    if run is None:
        return {"id": run_id, "gone": True}
    return {
        "id": str(run.pk),
        "gone": False,
        "status": run.status,
        "started_at": run.started_at.isoformat(),
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }


def memory_provenance(
    *, subject: MemorySubject, memory_id: Any = None, hit: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """Where the memory came from: its authority, its writer, the episodes it cites (each with its id,
    time and the start of its text; an episode forgotten since is listed as gone) and, for what
    consolidation wrote, the run. ``hit``: the memory as just read (saves reading it again). None for
    a tenant catalog entry: the tenant's shared data, written by no subject's conversation."""
    if hit is None:
        hit = selectors.memory_hit(subject=subject, memory_id=memory_id)
    source = hit["_source"]
    if "user_id" not in source:
        return None
    writer = writer_described(source.get("written_by"))
    cited = [i for i in source.get("source_episodes") or [] if isinstance(i, str)]
    stored = [i for i in cited if i != queries.FORGOTTEN_LINK]  # a turn forgotten since: listed as gone
    found = selectors.memories_get(subject=subject, memory_ids=stored) if stored else {}
    episodes = []
    for episode_id in cited:
        episode = found.get(episode_id)
        if episode is None:
            episodes.append({"id": episode_id, "gone": True})
            continue
        text = episode.get("text") or ""
        episodes.append(
            {
                "id": episode["id"],
                "gone": False,
                "timestamp": episode.get("timestamp") or episode.get("created_at"),
                "text": text if len(text) <= EPISODE_QUOTE_CHARS else text[: EPISODE_QUOTE_CHARS - 1] + "…",
            }
        )
    return {
        "authority": memory_authority(source),
        "written_by": writer,
        "episodes": episodes,
        "run": _run_described(subject, writer),
    }


def proposals_cited(*, subject: MemorySubject, proposals: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``proposals`` (shaped), each with ``cited``: the episodes it was learnt from that still exist, in its
    order, each {id, timestamp, text} (the start of the turn, as provenance quotes it) — the turns a person
    reviewing it wants to see. Read with the subject's key, 100 ids at a time."""
    wanted = list(dict.fromkeys(i for p in proposals for i in p.get("source_episodes") or [] if isinstance(i, str)))
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(wanted), 100):
        found |= selectors.memories_get(subject=subject, memory_ids=wanted[start : start + 100])
    quoted = {
        episode_id: {
            "id": episode_id,
            "timestamp": episode.get("timestamp") or episode.get("created_at"),
            "text": _quoted(episode.get("text") or ""),
        }
        for episode_id, episode in found.items()
        if episode.get("type") == "episodic"
    }
    return [{**p, "cited": [quoted[i] for i in p.get("source_episodes") or [] if i in quoted]} for p in proposals]


def runs_started_by(*, subject: MemorySubject, run_ids: list[str]) -> dict[str, str]:
    """{run id: how it was started (nightly, early, manual; blank for a run older than that record)} for
    those of ``run_ids`` that are this subject's runs."""
    ids = [int(i) for i in run_ids if isinstance(i, str) and i.isdigit()]
    runs = ConsolidationRun.objects.filter(subject=subject, pk__in=ids).values_list("pk", "started_by")
    return {str(pk): started_by for pk, started_by in runs}


def _quoted(text: str) -> str:
    return text if len(text) <= EPISODE_QUOTE_CHARS else text[: EPISODE_QUOTE_CHARS - 1] + "…"


def episode_orphans(*, subject: MemorySubject, episode_id: str) -> list[dict[str, Any]]:
    """The current facts and playbooks that cite ``episode_id`` and nothing else that still exists:
    forgetting the episode leaves them with no evidence. Each as the memory's shape (id, type, text…)."""
    scope = SubjectScope.of(subject)
    filters = [
        *scope.read_filters(),
        *queries.visibility_filter(include_superseded=False, as_of=None),
        queries.field_equals("source_episodes", episode_id),
    ]
    body = {"query": queries.list_query(filters=filters, memory_types=None), "size": 200}
    hits = store.memories_search(scope.reader(), memory_types=("semantic", "procedural"), body=body)["hits"]["hits"]
    others = {i for hit in hits for i in hit["_source"].get("source_episodes") or [] if i != episode_id}
    existing: set[str] = set()
    listed = sorted(others)
    for start in range(0, len(listed), 100):  # memories_get reads at most 100 ids at a time
        existing |= set(selectors.memories_get(subject=subject, memory_ids=listed[start : start + 100]))
    orphans = [hit for hit in hits if not (set(hit["_source"].get("source_episodes") or []) - {episode_id}) & existing]
    return sorted((selectors.memory_shape(h) for h in orphans), key=lambda m: (m.get("created_at") or "", m["id"]))
