"""One subject's memories as web pages show them to someone looking on the subject's behalf (an operator in
the admin, a tenant admin answering a support request): browse, search, a memory, its chain, edit, forget.

Each function parses what the page was given, calls one selector or service (every read with the subject's
own Elasticsearch key) and audits who looked at or changed what — the audit names memories by id, never by
their text. Views around it are thin: they resolve the subject the viewer may act for, check the viewer's
permission, and render; ``link(view, memory_id)`` is how they tell the shared templates where things are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict

from atlas_site.errors import ValidationFailed
from memory import selectors
from memory.authority import by_operator
from memory.elastic.queries import FORGOTTEN_LINK
from memory.models import ConsolidationRun
from memory.provenance import memory_provenance
from memory.recall import memory_recall
from memory.scope_facet import ScopeFacetForm
from memory.services import forget, writes
from memory.tasks import recall_usage_schedule
from tenants.models import MemorySubject, Tenant
from tenants.services import audit_record

PAGE_SIZE = 25
SEARCH_K = 20
# (type, tab label): the subject's own memories first, then the tenant catalog they also recall.
TABS = (
    ("semantic", "Facts"),
    ("procedural", "Playbooks"),
    ("episodic", "Episodes"),
    ("catalog", "Catalog"),
    ("archive", "Archive"),
)
# One memory's kind, in words ("Kind: Fact", "this fact … is deleted"): every page that shows one.
KIND_NAMES = {
    "semantic": "fact",
    "archive": "fact",
    "procedural": "playbook",
    "episodic": "conversation turn",
    "catalog": "catalog entry",
}
BROWSE_PARAMS = frozenset({"types", "cursor", "include_superseded", "q", *ScopeFacetForm.SCOPE_FIELDS})
#: The names the memory pages took before REST's became every interface's: a link or bookmark with them
#: is sent on (301) to the same page under today's names, for one release.
RENAMED_PARAMS = {"type": "types", "superseded": "include_superseded"}


def query_renamed(query: QueryDict) -> str | None:
    """The query string under today's parameter names, or None when it already uses them. A name given
    both ways is left alone: the page's own check refuses the old one."""
    if not any(old in query and new not in query for old, new in RENAMED_PARAMS.items()):
        return None
    renamed = QueryDict(mutable=True)
    for name, values in query.lists():
        target = RENAMED_PARAMS.get(name, name) if RENAMED_PARAMS.get(name) not in query else name
        renamed.setlist(target, values)
    return renamed.urlencode()


# How a correction replaces the old version (``writes.fact_edit``'s contradiction), in the words the
# correction forms (the dashboard's, the admin's) offer; natural first, the default.
CONTRADICTION_CHOICES = (
    (
        "natural",
        "It changed: the old version was true until now (a move, a changed mind). It stays in the history as it was.",
    ),
    (
        "harsh",
        "It was wrong: the old version was never true (a mistake, a misunderstanding). It stays in the history "
        "marked as wrong, and the correction starts a little less certain.",
    ),
)
Link = Callable[..., str]  # link("memory" | "chain" | "forget" | "browse", memory_id=None) -> URL


def _params(query: Mapping[str, str], allowed: frozenset[str]) -> dict[str, str]:
    unknown = sorted(set(query) - allowed)
    if unknown:
        raise ValidationFailed(f"this page takes no parameter '{unknown[0]}'", field=unknown[0])
    return {name: query.get(name, "") for name in allowed}


#: A memory's fields as a person reads them, in this order; those that name memories are links.
FIELD_LABELS = {
    "external_id": "External id",
    "created_at": "Stored",
    "authority": "Authority",
    "written_by": "Written by",
    "status": "Status",
    "proposal_for": "Would replace (once accepted)",
    "fact_type": "Fact type",
    "confidence": "Confidence",
    "contradiction": "Correction of the version before",
    "supersedes": "Replaces",
    "superseded_by": "Replaced by",
    "superseded_at": "Replaced at",
    "retracted": "Retracted (it was wrong)",
    "valid_from": "Valid from",
    "valid_to": "Valid until",
    "session_id": "Conversation",
    "previous_turn_id": "Previous turn",
    "agent_id": "Agent",
    "role": "Said by",
    "event_type": "Event",
    "timestamp": "Said at",
    "name": "Name",
    "trigger_text": "When to use it",
    "description": "Description",
    "version": "Version",
    "success_count": "Worked",
    "failure_count": "Failed",
    "last_success_at": "Last worked",
    "outcome_score": "Outcome score",
    "use_count": "Recalled for agents",
    "last_used_at": "Last recalled",
    "title": "Title",
    "category": "Category",
    "tags": "Tags",
}
LINKED_FIELDS = ("supersedes", "superseded_by", "previous_turn_id", "proposal_for")
DATE_FIELDS = ("created_at", "superseded_at", "valid_from", "valid_to", "timestamp", "last_success_at", "last_used_at")


def _when(value: Any) -> str:
    """A stored time as people read it ("3 Dec 2026, 15:57 UTC"), not ISO 8601 with microseconds."""
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return str(value)
    return f"{moment.day} {moment:%b %Y, %H:%M} UTC"


def _field_rows(memory: dict[str, Any], link: Link) -> list[dict[str, Any]]:
    """(label, value or links) per field the memory has: no raw keys, no Python list text."""
    rows = []
    for name, label in FIELD_LABELS.items():
        value = memory.get(name)
        if value in (None, "", []):
            continue
        if name in LINKED_FIELDS:
            ids = [i for i in (value if isinstance(value, list) else [value]) if i != FORGOTTEN_LINK]
            if ids:
                rows.append({"label": label, "links": [(i, link("memory", memory_id=i)) for i in ids]})
            else:  # replaced by a version that was forgotten: no id to follow
                rows.append({"label": label, "value": "a newer version, since forgotten"})
        elif isinstance(value, list):
            rows.append({"label": label, "value": ", ".join(str(v) for v in value)})
        elif isinstance(value, bool):
            rows.append({"label": label, "value": "yes" if value else "no"})
        elif name in DATE_FIELDS:
            rows.append({"label": label, "value": _when(value)})
        else:
            rows.append({"label": label, "value": value})
    return rows


def _linked(memory: dict[str, Any], link: Link) -> dict[str, Any]:
    memory["url"] = link("memory", memory_id=memory["id"])
    return memory


def _view_audited(subject: MemorySubject, actor: str, action: str, target: str, **detail: Any) -> None:
    audit_record(tenant=subject.tenant, actor=actor, action=action, target=target, detail=detail)


def browse(*, subject: MemorySubject, query: Mapping[str, str], actor: str, link: Link) -> dict[str, Any]:
    """One page of a type's memories (newest first, a cursor to the next page), or a recall's hits when
    the page was given a search (``q``) — the real hybrid recall, its use counts left alone. Either is
    narrowed by the Scope facet (agent, app, run, one metadata key), ANDed with the subject's own filter."""
    params = _params(query, BROWSE_PARAMS)
    tab = params["types"] or "semantic"
    if tab not in dict(TABS):
        raise ValidationFailed(f"no memory type '{tab}': choose one of {', '.join(t for t, _ in TABS)}", field="types")
    scope = _scope_parsed(params)
    superseded = params["include_superseded"] in ("1", "true", "on")
    text = params["q"].strip()
    context: dict[str, Any] = {
        "tabs": TABS,
        "tab": tab,
        "superseded": superseded,
        "q": text,
        "search": bool(text),
        "scope_form": scope,
        # What a link to another tab keeps (the scope), and one to another page of this list (the tab and
        # the replaced versions too).
        "scope_query": urlencode(scope.scope_query()),
        "list_query": urlencode(
            {"types": tab, **({"include_superseded": "1"} if superseded else {}), **scope.scope_query()}
        ),
    }
    if text:
        result = memory_recall(
            subject=subject, query=text, k=SEARCH_K, include_superseded=superseded, filters=scope.scope_filters()
        )
        recall_usage_schedule(subject=subject, targets=result.targets, agent_use=False)
        context.update(memories=[_linked(hit, link) for hit in result.hits], legs=result.legs, next_cursor=None)
        _view_audited(subject, actor, "memory.search", str(subject), hits=len(result.hits))
        return context
    page = selectors.memory_list(
        subject=subject,
        memory_types=[tab],
        include_superseded=superseded or tab == "archive",
        filters=scope.scope_filters(),
        page_size=PAGE_SIZE,
        cursor=params["cursor"] or None,
    )
    context.update(memories=[_linked(m, link) for m in page["memories"]], next_cursor=page["next_cursor"])
    context["first_page"] = not params["cursor"]
    _view_audited(subject, actor, "memory.browse", str(subject), type=tab, shown=len(page["memories"]))
    return context


def _scope_parsed(params: Mapping[str, str]) -> ScopeFacetForm:
    """The page's Scope facet, checked as the dashboard search checks it: a refused field is the search's
    own message, and nothing is read."""
    scope = ScopeFacetForm({name: params[name] for name in ScopeFacetForm.SCOPE_FIELDS})
    if not scope.is_valid():
        field, message = scope.scope_errors()[0]
        raise ValidationFailed(message, field=field)
    return scope


def detail(*, subject: MemorySubject, memory_id: str, actor: str, link: Link) -> dict[str, Any]:
    """A memory with its fields, its version (the ETag an edit must match) and where its chain and its
    source episodes are."""
    hit = selectors.memory_hit(subject=subject, memory_id=memory_id)
    memory = _linked(selectors.memory_shape(hit), link)
    fields = _field_rows(memory, link)
    is_fact = memory["type"] in ("semantic", "archive")
    context = {
        "memory": memory,
        "kind": KIND_NAMES[memory["type"]] + (" (an older version, archived)" if memory["type"] == "archive" else ""),
        "fields": fields,
        "etag": writes.memory_etag(hit["_source"]),
        "is_fact": is_fact,
        "editable": is_fact and not memory.get("superseded_by") and memory["type"] == "semantic",
        "forgettable": not memory["shared"],
        "provenance": None
        if memory["shared"]
        else provenance_linked(memory_provenance(subject=subject, hit=hit), link),
    }
    _view_audited(subject, actor, "memory.view", f"{subject}:{memory['id']}", memory_type=memory["type"])
    return context


def provenance_linked(provenance: dict[str, Any], link: Link) -> dict[str, Any]:
    """``provenance`` with a page link on each cited episode still there."""
    for episode in provenance["episodes"]:
        if not episode["gone"]:
            episode["url"] = link("memory", memory_id=episode["id"])
    return provenance


def chain(*, subject: MemorySubject, memory_id: str, actor: str, link: Link) -> dict[str, Any]:
    """A fact's supersession chain, oldest first, with the fact the page was opened on marked."""
    steps = [_linked(step, link) for step in selectors.memory_chain_get(subject=subject, memory_id=memory_id)]
    current = next((i for i, s in enumerate(steps) if memory_id in (s["id"], s.get("external_id"))), 0)
    for i, step in enumerate(steps):
        step["position"] = "older" if i < current else ("this" if i == current else "newer")
    _view_audited(subject, actor, "memory.chain", f"{subject}:{steps[current]['id']}", steps=len(steps))
    return {"chain": steps, "current": steps[current]}


def edit(*, subject: MemorySubject, memory_id: str, form: Mapping[str, str], actor: str, editor: Any) -> dict[str, Any]:
    """Correct a fact over the version the editor read (``etag``): a supersession, natural (it changed)
    unless the form says harsh (it was wrong; the old version is retracted). An operator's correction
    (authority ``operator``) replaces any fact, a person's too."""
    text, etag = (form.get("text") or "").strip(), (form.get("etag") or "").strip()
    contradiction = form.get("contradiction") or "natural"
    if not text:
        raise ValidationFailed("the corrected fact needs a text", field="text")
    if not etag:
        raise ValidationFailed("the form lost the version it was read at; open the fact again", field="etag")
    edited = writes.fact_edit(
        subject=subject,
        memory_id=memory_id,
        text=text,
        if_match=etag,
        contradiction=contradiction,
        **by_operator(editor),
    )
    audit_record(
        tenant=subject.tenant,
        actor=actor,
        action="memory.edit",
        target=f"{subject}:{memory_id}",
        detail={"new_id": edited["id"], "contradiction": contradiction},
    )
    return edited


def forget_one(*, subject: MemorySubject, memory_id: str, actor: str) -> dict[str, Any]:
    """Delete one of the subject's own memories for good (audited by the service)."""
    return forget.memory_forget(subject=subject, memory_id=memory_id, actor=actor)


def run_viewed(*, run: ConsolidationRun, actor: str) -> None:
    """Someone read a consolidation run's plan, dropped items and error (they quote the subject's memories):
    audited like every other look at them."""
    _view_audited(run.subject, actor, "memory.run_view", f"{run.subject}:run:{run.pk}")


def runs_listed(*, tenant: Tenant, runs: list[ConsolidationRun], actor: str) -> None:
    """Someone saw a list of the tenant's runs with their errors (an error can quote the LLM answer that
    failed, and the memories with it): audited, naming the runs whose error was shown."""
    shown = [run.pk for run in runs if run.error]
    if shown:
        audit_record(tenant=tenant, actor=actor, action="memory.runs_list", target=tenant.slug, detail={"runs": shown})


def proposals(*, subject: MemorySubject, actor: str, link: Link) -> dict[str, Any]:
    """What waits for the subject's review (support view, read only: deciding is the person's), each
    with the facts it would replace; audited like every support read."""
    page = selectors.proposals_list(subject=subject, page_size=200)
    listed = [{**_linked(p, link), "replaces": [_linked(r, link) for r in p["replaces"]]} for p in page["proposals"]]
    _view_audited(subject, actor, "memory.proposals", str(subject), shown=len(listed))
    return {"proposals": listed, "more": page["next_cursor"] is not None}
