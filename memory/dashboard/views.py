"""The dashboard's pages: validate the form → one selector or service, as the logged-in person's
subject (``access.dashboard_view``) → a template. Reads run with the subject's own Elasticsearch key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import groupby
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponsePermanentRedirect, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from atlas_site.error_pages import error_page
from atlas_site.errors import AtlasError, Conflict, NotFound, PermissionDenied, PreconditionFailed
from atlas_site.streaming import primed, streamed
from memory import on_behalf, selectors
from memory.authority import by_person, person_principal
from memory.consolidation.run import consolidation_runs_settle
from memory.glance import subject_glance
from memory.on_behalf import provenance_linked
from memory.portable.export import export_line, memories_export
from memory.provenance import episode_orphans, memory_provenance, proposals_cited, runs_started_by
from memory.recall import memory_recall
from memory.services import forget, writes
from memory.services import review as review_service
from memory.tasks import recall_usage_schedule
from tenants import tokens
from tenants.issued import issued_keep, issued_take

from .access import actor_of, dashboard_view, subject_choose, subject_current
from .forms import (
    TYPE_LABELS,
    TYPE_NAMES,
    FactEditForm,
    ForgetAllForm,
    ListFilterForm,
    ProposalAcceptForm,
    ProposalRejectForm,
    ProposalsDecideForm,
    SearchForm,
    TokenCreateForm,
)
from .pictures.timeline import FORGOTTEN, glance_svg
from .pictures.versions import versions_svg

PAGE_SIZE = 25
EXPORT_PAGE_SIZE = 200
TABS = {"facts": "semantic", "playbooks": "procedural", "episodes": "episodic", "catalog": "catalog"}
EXPORT_TYPES = ("episodic", "semantic", "procedural", "archive")


def home(request: HttpRequest) -> HttpResponse:
    """``/``: the landing page for visitors, the person's facts once logged in."""
    if not request.user.is_authenticated:
        return render(request, "home.html")
    return memories(request, tab="facts")


@dashboard_view
def memories(request: HttpRequest, tab: str) -> HttpResponse:
    if tab not in TABS:
        raise Http404("no such tab")
    context: dict[str, Any] = {"tab": tab, "tabs": TABS, "type_labels": TYPE_LABELS}
    if (renamed := on_behalf.query_renamed(request.GET)) is not None:
        return HttpResponsePermanentRedirect(f"{request.path}?{renamed}")
    if "q" in request.GET:
        return _search(request, context)
    form = ListFilterForm(request.GET)
    context.update(filters=form, search=SearchForm())  # the search bar stays, labelled, on a refused list
    if not form.is_valid():
        return render(request, "dashboard/memories.html", context, status=400)
    data = form.cleaned_data
    since, until = form.bounds()
    memory_type = TABS[tab]
    include_superseded = memory_type == "semantic" and data["include_superseded"]
    page = selectors.memory_list(
        subject=request.subject,
        memory_types=[memory_type, *(["archive"] if include_superseded else [])],
        include_superseded=include_superseded,
        fact_type=(data["fact_type"] or None) if memory_type == "semantic" else None,
        session_id=(data["session"] or None) if memory_type == "episodic" else None,
        since=since,
        until=until,
        authority=(data["authority"] or None) if memory_type in ("semantic", "procedural") else None,
        filters=form.scope_filters(),
        page_size=PAGE_SIZE,
        cursor=data["cursor"] or None,
    )
    context.update(
        page=page,
        memories=page["memories"],
        first_page=not data["cursor"],
        next_query=_query_with(request, cursor=page["next_cursor"]) if page["next_cursor"] else None,
        # The list's filters without its page: the first page, and every other tab (switching the type
        # resets only where the list was, as the support pages' tabs do).
        filters_query=_query_with(request, cursor=None),
        session=data["session"] if memory_type == "episodic" else "",
    )
    if memory_type == "episodic":
        # Newest first; a page's turns grouped by conversation (a session spans pages when it is long).
        context["sessions"] = [
            (session_id, list(turns))
            for session_id, turns in groupby(page["memories"], key=lambda m: m.get("session_id") or "")
        ]
    return render(request, "dashboard/memories.html", context)


#: What recall took the search for (memory/recall/turn_kind.py), as the person reads it.
TURN_KIND_WORDS = {
    "request": "a request",
    "question": "a question",
    "statement": "a statement",
    "small_talk": "small talk",
}


def _search(request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
    form = SearchForm(request.GET)
    context["search"] = form
    context["filters"] = ListFilterForm()
    if not form.is_valid():
        context["options_open"] = True  # the error may be in one of them
        return render(request, "dashboard/memories.html", context, status=400)
    data = form.cleaned_data
    context["options_open"] = any(
        data[name]
        for name in ("types", "fact_type", "since", "until", "include_superseded", "turns_apart", *form.SCOPE_FIELDS)
    )
    since, until = form.bounds()
    result = memory_recall(
        subject=request.subject,
        query=data["q"],
        k=20,
        memory_types=data["types"] or None,
        include_superseded=data["include_superseded"],
        fact_type=data["fact_type"] or None,
        since=since,
        until=until,
        fold_evidence=not data["turns_apart"],
        filters=form.scope_filters(),
        explain=True,  # "why this result" under each hit: computed from what the recall holds, no search
    )
    recall_usage_schedule(subject=request.subject, targets=result.targets, agent_use=False)
    context.update(
        results=result.hits,
        legs=result.legs,
        took_ms=round(result.timings_ms.get("total", 0.0)),
        turn_kind=TURN_KIND_WORDS.get((result.explain or {}).get("turn_kind"), "a search"),
        floor=(result.explain or {}).get("floor"),
    )
    return render(request, "dashboard/memories.html", context)


def _query_with(request: HttpRequest, **changes: str | None) -> str:
    query = request.GET.copy()
    for name, value in changes.items():
        query.pop(name, None)
        if value:
            query[name] = value
    return query.urlencode()


def _chain_steps(chain: list[dict[str, Any]], memory_id: str) -> list[dict[str, Any]]:
    """The chain oldest first, each step with how it was replaced (natural or harsh) and whether it is this one."""
    by_id = {m["id"]: m for m in chain}
    steps = []
    for memory in chain:
        newer = [by_id[i] for i in _as_list(memory.get("superseded_by")) if i in by_id]
        steps.append(
            {
                "memory": memory,
                "current": memory["id"] == memory_id,
                "replaced": "harsh" if memory.get("retracted") else ("natural" if memory.get("superseded_by") else ""),
                "replaced_by": newer,
            }
        )
    return steps


def _memory_url(memory_id: str) -> str:
    return reverse("dashboard:memory", kwargs={"memory_id": memory_id})


def _session_url(session_id: str) -> str:
    return f"{reverse('dashboard:tab', kwargs={'tab': 'episodes'})}?session={quote(session_id, safe='')}"


@dashboard_view
def glance(request: HttpRequest) -> HttpResponse:
    """**My memory at a glance**: the last 90 days as one picture (conversations, the facts and playbooks
    learnt from them, corrections, forgets), each mark linked to its memory, and the same as a list."""
    seen = subject_glance(subject=request.subject)
    context = {
        "glance": seen,
        "picture": glance_svg(glance=seen, memory_url=_memory_url, session_url=_session_url),
        "corrections": [f for f in seen.facts if f.get("supersedes")],
        "facts": [f for f in seen.facts if not f.get("supersedes")],
        "forgets": [{**f, "words": FORGOTTEN.get(f["what"], "a memory")} for f in seen.forgets],
    }
    return render(request, "dashboard/glance.html", context)


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _memory_context(request: HttpRequest, memory_id: str) -> dict[str, Any]:
    hit = selectors.memory_hit(subject=request.subject, memory_id=memory_id)
    memory = selectors.memory_shape(hit)
    context: dict[str, Any] = {"memory": memory, "etag": writes.memory_etag(hit["_source"]), "type_names": TYPE_NAMES}
    if memory["type"] in ("semantic", "archive"):
        chain = selectors.memory_chain_get(subject=request.subject, memory_id=memory["id"])
        steps = _chain_steps(chain, memory["id"])
        position = next(i for i, step in enumerate(steps) if step["current"])
        cited = [i for step in steps for i in step["memory"].get("source_episodes") or [] if isinstance(i, str)]
        context.update(
            steps=steps,
            versions_picture=versions_svg(
                steps=steps,
                cited=selectors.memories_get(subject=request.subject, memory_ids=cited) if cited else {},
                memory_url=_memory_url,
            ),
            older=steps[position - 1]["memory"] if position > 0 else None,
            newer=steps[position + 1]["memory"] if position + 1 < len(steps) else None,
            # A proposal is decided (accepted, edited then accepted, rejected) in the To review tab.
            editable=memory["type"] == "semantic"
            and not memory.get("superseded_by")
            and memory.get("status") != "pending",
        )
    if not memory["shared"]:
        provenance = memory_provenance(subject=request.subject, hit=hit)
        context["provenance"] = provenance_linked(
            provenance, lambda view, memory_id: reverse(f"dashboard:{view}", kwargs={"memory_id": memory_id})
        )
    return context


@never_cache
@require_http_methods(["GET", "POST"])
@dashboard_view
def memory_detail(request: HttpRequest, memory_id: str) -> HttpResponse:
    if request.method == "GET":
        context = _memory_context(request, memory_id)
        if context.get("editable"):
            context["form"] = FactEditForm(initial={"text": context["memory"]["text"], "etag": context["etag"]})
        return render(request, "dashboard/memory.html", context)
    form = FactEditForm(request.POST)
    if form.is_valid():
        try:
            edited = writes.fact_edit(
                subject=request.subject,
                memory_id=memory_id,
                text=form.cleaned_data["text"],
                if_match=form.cleaned_data["etag"],
                contradiction=form.cleaned_data["contradiction"],
                **by_person(request.user),
            )
        except (PreconditionFailed, Conflict) as error:
            # Someone (or another tab) changed it: show the current version and say so; nothing was written.
            context = _memory_context(request, memory_id)
            context["edit_error"] = error.message
            if context.get("editable"):
                context["form"] = FactEditForm(
                    initial={
                        "text": form.cleaned_data["text"],
                        "contradiction": form.cleaned_data["contradiction"],
                        "etag": context["etag"],
                    }
                )
            return render(request, "dashboard/memory.html", context, status=error.status)
        except AtlasError as error:
            if error.status != 400:
                raise
            form.add_error("text", error.message)
        else:
            marked = ", marked as wrong" if form.cleaned_data["contradiction"] == "harsh" else ""
            messages.success(request, f"Saved. The earlier version stays in this fact's history{marked}.")
            return redirect("dashboard:memory", memory_id=edited["id"])
    context = _memory_context(request, memory_id)
    context["form"] = form
    return render(request, "dashboard/memory.html", context, status=400)


@require_http_methods(["GET", "POST"])
@dashboard_view
def memory_forget(request: HttpRequest, memory_id: str) -> HttpResponse:
    hit = selectors.memory_hit(subject=request.subject, memory_id=memory_id)
    memory = selectors.memory_shape(hit)
    if memory["shared"]:
        raise NotFound("catalog entries belong to the whole tenant: they are not yours to forget")
    if request.method == "POST":
        result = forget.episode_forget_with_orphans(
            subject=request.subject,
            memory_id=memory["id"],
            actor=actor_of(request),
            orphans=request.POST.getlist("also_forget"),
        )
        also = len(result["orphans_forgotten"])
        with_them = (
            f" Also forgotten: {also} memor{'y' if also == 1 else 'ies'} it was the only source of." if also else ""
        )
        messages.success(
            request,
            f"Forgotten: that memory is deleted, with every copy of its text. Removed — {forget.receipt_summary(result['receipt'])}.{with_them}",
        )
        tab = {v: k for k, v in TABS.items()}.get(memory["type"], "facts")
        return redirect("dashboard:tab", tab=tab)
    chain = []
    if memory["type"] in ("semantic", "archive"):
        chain = selectors.memory_chain_get(subject=request.subject, memory_id=memory["id"])
    orphans = episode_orphans(subject=request.subject, episode_id=memory["id"]) if memory["type"] == "episodic" else []
    return render(
        request,
        "dashboard/forget.html",
        {"memory": memory, "chain_length": len(chain), "type_names": TYPE_NAMES, "orphans": orphans},
    )


@never_cache
@require_http_methods(["GET", "POST"])
@dashboard_view
def forget_all(request: HttpRequest) -> HttpResponse:
    subject = request.subject
    form = ForgetAllForm(request.POST or None, expected=subject.external_id)
    if request.method == "POST" and form.is_valid():
        result = forget.subject_memories_forget(subject=subject, actor=actor_of(request))
        counts = result["counts"]
        return render(
            request,
            "dashboard/forgotten_all.html",
            {"counts": counts, "total": sum(counts.values()), "receipt": result["receipt"]},
        )
    counts = selectors.memory_counts(subject=subject)
    return render(
        request,
        "dashboard/forget_all.html",
        {"form": form, "counts": counts, "total": sum(counts.values()), "type_labels": TYPE_LABELS},
        status=400 if request.method == "POST" else 200,
    )


@dashboard_view
def export(request: HttpRequest) -> HttpResponse:
    """All the subject's memories as one JSON document, streamed a page (≤ 200) at a time per index.

    The first page of each index is read before the response starts, so an Elasticsearch outage
    is a 503 page, not a truncated download.
    """
    subject = request.subject
    first_pages = {t: _export_page(subject, t, None) for t in EXPORT_TYPES}

    def body() -> Iterator[str]:
        head = {
            "subject": subject.external_id,
            "tenant": subject.tenant.slug,
            "exported_at": timezone.now().isoformat(),
        }
        yield json.dumps(head)[:-1] + ', "memories": {'
        for n, memory_type in enumerate(EXPORT_TYPES):
            yield ("" if n == 0 else ", ") + json.dumps(memory_type) + ": ["
            page, first = first_pages[memory_type], True
            while True:
                for memory in page["memories"]:
                    yield ("" if first else ", ") + json.dumps(memory, default=str)
                    first = False
                if not page["next_cursor"]:
                    break
                page = _export_page(subject, memory_type, page["next_cursor"])
            yield "]"
        yield "}}\n"

    response = StreamingHttpResponse(streamed(request, body()), content_type="application/json")
    stamp = timezone.now().strftime("%Y%m%d")
    response["Content-Disposition"] = f'attachment; filename="atlas-memories-{subject.external_id}-{stamp}.json"'
    response["Cache-Control"] = "no-store"
    return response


@dashboard_view
def export_lines(request: HttpRequest) -> HttpResponse:
    """The subject's memories in the documented export format (docs/export-format.md), streamed; the
    header and the first memory are read before the response starts (an outage is a 503 page)."""
    subject = request.subject
    lines = map(export_line, primed(memories_export(tenant=subject.tenant, subject=subject)))
    response = StreamingHttpResponse(streamed(request, lines), content_type="application/x-ndjson")
    stamp = timezone.now().strftime("%Y%m%d")
    response["Content-Disposition"] = f'attachment; filename="atlas-memories-{subject.external_id}-{stamp}.jsonl"'
    response["Cache-Control"] = "no-store"
    return response


def _export_page(subject, memory_type: str, cursor: str | None) -> dict[str, Any]:
    return selectors.memory_list(
        subject=subject,
        memory_types=[memory_type],
        include_superseded=True,
        page_size=EXPORT_PAGE_SIZE,
        cursor=cursor,
    )


@never_cache
@require_http_methods(["GET", "POST"])
@dashboard_view
def connect(request: HttpRequest) -> HttpResponse:
    subject = request.subject
    form = TokenCreateForm(request.POST or None)
    context: dict[str, Any] = {"form": form}
    status = 200
    if request.method == "POST":
        if form.is_valid():
            issued = tokens.token_create(
                tenant=subject.tenant,
                subject=subject,
                name=form.cleaned_data["name"],
                scopes=form.cleaned_data["scopes"],
                actor=actor_of(request),
                person=request.user,  # a personal token: it stops when they lose this subject
            )
            # Post/redirect/get: a reload of the page that shows the secret creates nothing again.
            issued_keep(session=request.session, issued=issued)
            return redirect("dashboard:connect")
        status = 400
    issued = issued_take(session=request.session, tenant=subject.tenant)
    if issued is not None:
        configs = tokens.mcp_client_configs(secret=issued.secret, server_url=settings.ATLAS_PUBLIC_URL)
        context.update(
            issued=issued, configs=[(name, json.dumps(config, indent=2)) for name, config in configs.items()]
        )
    context["tokens"] = tokens.tokens_list(tenant=subject.tenant, subject=subject)
    context["mcp_url"] = settings.ATLAS_PUBLIC_URL.rstrip("/") + "/mcp/"
    return render(request, "dashboard/connect.html", context, status=status)


@require_POST
@dashboard_view
def token_revoke(request: HttpRequest, prefix: str) -> HttpResponse:
    subject = request.subject
    token = tokens.token_get(tenant=subject.tenant, prefix=prefix)
    if token.subject_id != subject.pk:
        raise NotFound(f"no token '{prefix}'", field="token")
    if tokens.token_revoke(token=token, actor=actor_of(request)):
        messages.success(request, f"Revoked “{token.name}”: agents using it are refused from now on.")
    else:
        messages.info(request, f"“{token.name}” was revoked already.")
    return redirect("dashboard:connect")


@login_required
@require_http_methods(["GET", "POST"])
def subjects(request: HttpRequest) -> HttpResponse:
    """Pick which of the person's memory profiles (one per tenant) the dashboard shows."""
    current, mine = subject_current(request)
    if request.method == "POST":
        try:
            subject_choose(request, subject_id=request.POST.get("subject", ""))
        except AtlasError as error:
            return error_page(request, error)
        return redirect(reverse("dashboard:memories"))
    if not mine:
        return render(request, "dashboard/no_subject.html")
    return render(request, "dashboard/subjects.html", {"subjects": mine, "current": current})


# ---------------------------------------------------------------------------------------- to review
RUN_LABELS = {
    "nightly": "Nightly consolidation (run {name})",
    "early": "Consolidation of many new turns (run {name})",
    "manual": "Consolidation started by hand (run {name})",
}


def _writer_label(written_by: str, started_by: dict[str, str]) -> str:
    """Who proposed a group of proposals, in words; a consolidation run by how it was started."""
    kind, _, name = (written_by or "").partition(":")
    labels = {
        "run": RUN_LABELS.get(started_by.get(name, ""), "Consolidation (run {name})").format(name=name),
        "token": f"Agent “{name}”",
        "import": f"An import by {name}",
        "operator": f"Operator {name}",
        "person": "You",
    }
    return labels.get(kind, written_by or "unknown")


@never_cache
@dashboard_view
def review(request: HttpRequest) -> HttpResponse:
    """The **To review** tab: what agents and the nightly job proposed, grouped by who proposed it (a
    consolidation run, an agent's token), each replacement beside the fact it would replace, each with the
    turns it was learnt from."""
    page = selectors.proposals_list(subject=request.subject, page_size=200)
    proposals = proposals_cited(subject=request.subject, proposals=page["proposals"])
    groups: dict[str, list[dict[str, Any]]] = {}
    for proposal in proposals:
        groups.setdefault(proposal.get("written_by") or "", []).append(proposal)
    runs = [writer.partition(":")[2] for writer in groups if writer.startswith("run:")]
    started_by = runs_started_by(subject=request.subject, run_ids=runs)
    context = {
        "groups": [(writer, _writer_label(writer, started_by), items) for writer, items in groups.items()],
        "count": len(page["proposals"]),
        "more": page["next_cursor"] is not None,
        "type_names": TYPE_NAMES,
    }
    return render(request, "dashboard/review.html", context)


def _decided(request: HttpRequest, decide: Any, done: str) -> HttpResponse:
    """Run one decision, and finish the consolidation run it completed; a refusal (decided meanwhile, its
    fact replaced since) is said on the tab."""
    try:
        decided = decide()
        consolidation_runs_settle(subject=request.subject, run_ids=decided.runs_complete, actor=actor_of(request))
    except (Conflict, NotFound, PermissionDenied) as error:
        messages.error(request, f"{error.message}. Nothing was changed.")
    else:
        messages.success(request, done)
    return redirect("dashboard:review")


@require_POST
@dashboard_view
def review_accept(request: HttpRequest, proposal_id: str) -> HttpResponse:
    form = ProposalAcceptForm(request.POST)
    if not form.is_valid():
        if "version" in form.errors:
            messages.error(request, "Reload the page: it did not say which version of the proposal you saw.")
        else:
            messages.error(request, "The corrected text cannot be empty or longer than 8000 characters.")
        return redirect("dashboard:review")
    text = form.cleaned_data["text"] or None
    edited = text is not None and text != form.cleaned_data["original"]
    return _decided(
        request,
        lambda: review_service.proposal_accept(
            subject=request.subject,
            proposal_id=proposal_id,
            text=text if edited else None,
            actor=actor_of(request),
            reviewer=person_principal(request.user),
            version=form.cleaned_data["version"],
        ),
        "Accepted, with your correction: agents now use it." if edited else "Accepted: agents now use it.",
    )


@require_POST
@dashboard_view
def review_reject(request: HttpRequest, proposal_id: str) -> HttpResponse:
    form = ProposalRejectForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Reload the page: it did not say which version of the proposal you saw.")
        return redirect("dashboard:review")
    return _decided(
        request,
        lambda: review_service.proposal_reject(
            subject=request.subject,
            proposal_id=proposal_id,
            actor=actor_of(request),
            reviewer=person_principal(request.user),
            version=form.cleaned_data["version"],
        ),
        "Rejected: it is deleted, and the nightly job will not propose it again.",
    )


@require_POST
@dashboard_view
def review_all(request: HttpRequest) -> HttpResponse:
    form = ProposalsDecideForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose accept or reject, for one group of proposals.")
        return redirect("dashboard:review")
    decision, writer = form.cleaned_data["decision"], form.cleaned_data["written_by"]
    outcome = review_service.proposals_decide(
        subject=request.subject,
        decision=decision,
        written_by=writer,
        actor=actor_of(request),
        reviewer=person_principal(request.user),
        shown=form.shown(request.POST),
    )
    consolidation_runs_settle(subject=request.subject, run_ids=outcome.runs_complete, actor=actor_of(request))
    result = outcome.shown
    decided = result["accepted" if decision == "accept" else "rejected"]
    verb = "Accepted" if decision == "accept" else "Rejected"
    started_by = runs_started_by(subject=request.subject, run_ids=[writer.partition(":")[2]])
    label = _writer_label(writer, started_by)
    messages.success(request, f"{verb} {len(decided)} proposal{'s' if len(decided) != 1 else ''} from {label}.")
    for refused in result["refused"]:
        messages.error(request, f"Not decided: {refused['detail']}.")
    return redirect("dashboard:review")
