"""The memory routes of ``/api/v1/``: validate → one service or selector → shape. Nothing else lives here.

``{subject}`` is the subject's external id; ``TokenPrincipal.subject_for`` resolves it, so another
tenant's subject, or anyone but itself for a subject token, is the same 404 as a missing one.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from atlas_site.api import (
    actor_of,
    deprecation_mark,
    flag_param,
    idempotent,
    int_param,
    principal_of,
    query_params,
    renamed,
    retry_key,
)
from atlas_site.errors import ValidationFailed
from atlas_site.observability.hooks import subject_tagged
from atlas_site.serializers import EDIT_PROBLEMS, PROBLEM, WRITE_PROBLEMS, Strict, problems
from atlas_site.streaming import primed, streamed
from memory import selectors
from memory.authority import AUTHORITIES, by_token, token_principal
from memory.consolidation.run import consolidation_runs_settle
from memory.portable.export import export_line, memories_export
from memory.provenance import memory_provenance
from memory.recall import RecallOptions, memory_recall
from memory.services import forget, review, writes
from memory.tasks import recall_usage_schedule

from . import serializers as s

SUBJECT = OpenApiParameter("subject", OpenApiTypes.STR, OpenApiParameter.PATH, description="The subject's external id.")
MEMORY_ID = OpenApiParameter("memory_id", OpenApiTypes.STR, OpenApiParameter.PATH, description="A memory id.")
IF_MATCH = OpenApiParameter(
    "If-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    description="The ETag you read: refuse the edit (412) if it changed.",
)
PROPOSAL_VERSION = OpenApiParameter(
    "If-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    description="The proposal's version you reviewed (or 'version' in the body).",
)
IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    description="Any unique string: a retry with the same key and body returns the first answer and stores nothing twice.",
)
FILTERS = OpenApiParameter(
    "filters",
    OpenApiTypes.STR,
    description='Scope filters as JSON, e.g. {"agent_id":"planner","metadata.priority":{"gte":2}} (docs/scoping.md); '
    "only the subject's own memories (no catalog) then.",
)
PAGE_PARAMS = (
    OpenApiParameter("page_size", OpenApiTypes.INT, description="1 to 200 (default 50)."),
    OpenApiParameter("cursor", OpenApiTypes.STR, description="next_cursor of the previous page."),
)


def _valid(serializer_class: type[Strict], data: Any) -> dict[str, Any]:
    if data is not None and not isinstance(data, dict):
        raise ValidationFailed("the request body must be a JSON object")
    serializer = serializer_class(data=data or {})
    serializer.is_valid(raise_exception=True)
    return serializer.given()


def _shaped(stored: dict[str, Any]) -> dict[str, Any]:
    """A service's answer about a stored memory, in the shape every read route returns."""
    return selectors.memory_shape({"_id": stored["id"], "_source": stored})


def _written(stored: dict[str, Any]) -> Response:
    """A write's answer: 201, or 202 when what was written waits for the person's review (pending)."""
    shaped = _shaped(stored)
    return Response(shaped, status=202 if shaped.get("status") == "pending" else 201)


def _iso(fields: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: (v.isoformat() if k in names and hasattr(v, "isoformat") else v) for k, v in fields.items()}


def _episode_fields(fields: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """An episode's fields for the service (its time as ``at``), from ``timestamp`` or its old name ``at``;
    and the old names used."""
    when, old = renamed(fields, old="at", new="timestamp")
    named = {k: v for k, v in fields.items() if k not in ("at", "timestamp")}
    if when is not None:
        named["at"] = when.isoformat()
    return named, ["at"] if old else []


def _recall(subject, query: str, options: dict[str, Any]) -> dict[str, Any]:
    result = memory_recall(
        subject=subject,
        query=query,
        k=options.get("k", 10),
        memory_types=renamed(options, old="memory_types", new="types")[0],
        include_superseded=options.get("include_superseded", False),
        as_of=options["as_of"].isoformat() if options.get("as_of") else None,
        known_at=options["known_at"].isoformat() if options.get("known_at") else None,
        fact_type=options.get("fact_type"),
        since=options.get("since"),
        until=options.get("until"),
        filters=options.get("filters"),
        options=RecallOptions(rerank=options.get("rerank")),
        fold_evidence=options.get("fold_evidence", True),
        explain=options.get("explain", False),
        expect=options.get("expect"),
        min_score=options.get("min_score"),
    )
    recall_usage_schedule(subject=subject, targets=result.targets, agent_use=True)
    answer = {"hits": result.hits, "legs": result.legs, "took_ms": round(result.timings_ms.get("total", 0.0), 1)}
    if result.explain is not None:
        answer["explain"] = result.explain
    return answer


def _subject_named(data: Any, *, internal: str, external: str) -> Any:
    """``data`` with every memory's ``user_id`` (the subject's internal id in the cluster) replaced by
    ``subject``, the id the caller knows the subject by."""
    if isinstance(data, list):
        return [_subject_named(item, internal=internal, external=external) for item in data]
    if not isinstance(data, dict):
        return data
    named = {k: _subject_named(v, internal=internal, external=external) for k, v in data.items() if k != "user_id"}
    if data.get("user_id") is not None:  # a catalog entry has no owner
        named["subject"] = external if str(data["user_id"]) == internal else None
    return named


class SubjectView(APIView):
    # A route under ``subjects/{subject}/``: its answers name the subject by the caller's id for it, never
    # by the internal one (every memory in them is that subject's, or a catalog entry with no owner).
    # (A comment, not a docstring: the API documentation would show it as every route's description.)

    scope_needed = "read"

    def subject(self, request: Request, external_id: str, scope: str | None = None):
        principal = principal_of(request)
        principal.require(scope or self.scope_needed)
        self.subject_resolved = principal.subject_for(external_id)
        subject_tagged(self.subject_resolved)
        return self.subject_resolved

    def finalize_response(self, request: Request, response: Response, *args: Any, **kwargs: Any) -> Response:
        who = getattr(self, "subject_resolved", None)
        if who is None and response.status_code < 300 and "subject" in kwargs:
            # A replayed Idempotency-Key answer never ran the handler: resolve the subject it was for.
            who = principal_of(request).subject_for(kwargs["subject"])
        if who is not None and isinstance(getattr(response, "data", None), dict | list):  # a stream has none
            response.data = _subject_named(response.data, internal=str(who.es_id), external=who.external_id)
        return super().finalize_response(request, response, *args, **kwargs)


class EpisodesView(SubjectView):
    @extend_schema(
        operation_id="episode_write",
        summary="Store one user turn",
        parameters=[SUBJECT, IDEMPOTENCY_KEY],
        request=s.EpisodeIn,
        responses={201: s.MemoryOut, **WRITE_PROBLEMS},
        examples=[OpenApiExample("a turn", value={"text": "I moved to Lisbon last month", "session_id": "chat-42"})],
    )
    @idempotent
    def post(self, request: Request, subject: str) -> Response:
        who = self.subject(request, subject, "write")
        fields, old_names = _episode_fields(_valid(s.EpisodeIn, request.data))
        stored = writes.episode_write(subject=who, derived_key=retry_key(request, fields), **fields)
        return deprecation_mark(Response(_shaped(stored), status=201), names=old_names)


class TurnView(SubjectView):
    @extend_schema(
        operation_id="turn",
        summary="Store the user's turn and recall for it, in one round trip",
        description="What an agent does every turn: the turn is stored, then recall runs with its text as the "
        "query (the turn itself is not among the hits).",
        parameters=[SUBJECT, IDEMPOTENCY_KEY],
        request=s.TurnIn,
        responses={201: s.TurnOut, **WRITE_PROBLEMS},
        examples=[
            OpenApiExample("a turn", value={"text": "what wine goes with my favourite dish?", "recall": {"k": 5}})
        ],
    )
    @idempotent
    def post(self, request: Request, subject: str) -> Response:
        who = self.subject(request, subject, "write")
        principal_of(request).require("read")
        fields, old_names = _episode_fields(_valid(s.TurnIn, request.data))
        options = fields.pop("recall", {}) or {}
        episode = writes.episode_write(subject=who, derived_key=retry_key(request, fields), **fields)
        k = options.get("k", 10)
        recalled = _recall(who, episode["text"], {**options, "k": min(k + 1, 50)})
        others = [h for h in recalled["hits"] if h["id"] != episode["id"]][:k]
        recalled["hits"] = [{**hit, "rank": rank} for rank, hit in enumerate(others, start=1)]
        return deprecation_mark(
            Response({"episode": _shaped(episode), "recall": recalled}, status=201), names=old_names
        )


class FactsView(SubjectView):
    @extend_schema(
        operation_id="fact_write",
        summary="Store a fact (optionally replacing older ones)",
        description="A durable statement about the subject. `supersedes` names the facts it replaces (by id or "
        "external id; they stay in its chain); a fact that was replaced already is a 409 whose `newest` is the "
        "version to replace instead. 202 when the fact waits for the person's review (status pending).",
        parameters=[SUBJECT, IDEMPOTENCY_KEY],
        request=s.FactIn,
        responses={201: s.MemoryOut, 202: s.MemoryOut, **WRITE_PROBLEMS},
        examples=[
            OpenApiExample("a preference", value={"text": "Prefers window seats", "fact_type": "preference"}),
            OpenApiExample(
                "a correction",
                value={"text": "Lives in Lisbon", "supersedes": ["<old fact id>"], "contradiction": "natural"},
            ),
        ],
    )
    @idempotent
    def post(self, request: Request, subject: str) -> Response:
        who = self.subject(request, subject, "write")
        fields = _iso(_valid(s.FactIn, request.data), "valid_from", "valid_to")
        stored = writes.fact_write(
            subject=who, derived_key=retry_key(request, fields), **by_token(principal_of(request)), **fields
        )
        return _written(stored)


class FactView(SubjectView):
    @extend_schema(
        operation_id="fact_edit",
        summary="Edit a fact (a supersession: the old version stays in its chain)",
        description="contradiction natural (default) when things changed; harsh when the old version was wrong: "
        "it is retracted and the new version gets 0.1 less confidence.",
        parameters=[SUBJECT, MEMORY_ID, IF_MATCH],
        request=s.FactEditIn,
        responses={200: s.MemoryOut, 202: s.MemoryOut, **EDIT_PROBLEMS},
        examples=[
            OpenApiExample("a change", value={"text": "Lives in Porto"}),
            OpenApiExample(
                "it was wrong", value={"text": "Lives in Porto, never lived in Lisbon", "contradiction": "harsh"}
            ),
        ],
    )
    def patch(self, request: Request, subject: str, memory_id: str) -> Response:
        who = self.subject(request, subject, "write")
        fields = _valid(s.FactEditIn, request.data)
        edited = writes.fact_edit(
            subject=who,
            memory_id=memory_id,
            if_match=request.headers.get("If-Match"),
            **by_token(principal_of(request)),
            **fields,
        )
        shaped = _shaped(edited)
        response = Response(shaped, status=202 if shaped.get("status") == "pending" else 200)
        response["ETag"] = writes.memory_etag(edited)
        return response


class PlaybooksView(SubjectView):
    @extend_schema(
        operation_id="playbook_write",
        summary="Store a playbook (steps that worked)",
        parameters=[SUBJECT, IDEMPOTENCY_KEY],
        request=s.PlaybookIn,
        responses={201: s.MemoryOut, 202: s.MemoryOut, **WRITE_PROBLEMS},
        examples=[
            OpenApiExample(
                "a playbook",
                value={
                    "name": "router reset",
                    "trigger_text": "my internet is down",
                    "steps": [{"instruction": "unplug the router for 30 seconds"}, {"instruction": "plug it back in"}],
                },
            )
        ],
    )
    @idempotent
    def post(self, request: Request, subject: str) -> Response:
        who = self.subject(request, subject, "write")
        fields = _valid(s.PlaybookIn, request.data)
        stored = writes.playbook_write(
            subject=who, derived_key=retry_key(request, fields), **by_token(principal_of(request)), **fields
        )
        return _written(stored)


class OutcomeView(SubjectView):
    @extend_schema(
        operation_id="playbook_outcome",
        summary="Record how a playbook went (refined steps bump its version)",
        parameters=[SUBJECT, MEMORY_ID, IDEMPOTENCY_KEY],
        request=s.OutcomeIn,
        responses={200: s.MemoryOut, **WRITE_PROBLEMS},
        examples=[OpenApiExample("it worked", value={"success": True})],
    )
    @idempotent
    def post(self, request: Request, subject: str, memory_id: str) -> Response:
        who = self.subject(request, subject, "write")
        fields = _valid(s.OutcomeIn, request.data)
        recorded = writes.playbook_outcome_record(
            subject=who,
            playbook_id=memory_id,
            success=fields["success"],
            refined_steps=fields.get("refined_steps"),
            **by_token(principal_of(request)),
        )
        shaped = _shaped(recorded)
        return Response(shaped, status=202 if shaped.get("status") == "pending" else 200)


class RecallView(SubjectView):
    @extend_schema(
        operation_id="recall",
        summary="Hybrid recall over the subject's memories and the tenant catalog",
        description="The filters (types, fact_type, since/until on the time a memory was stored, "
        "include_superseded, as_of, and `filters` on a memory's scope: agent_id, app_id, run_id, session_id, "
        "metadata.<key>) narrow every leg of the search, keyword and vector alike; a bad value is a "
        "400 naming the field.",
        parameters=[SUBJECT],
        request=s.RecallIn,
        responses={200: s.RecallOut, **problems(413, 415)},
        examples=[
            OpenApiExample("a question", value={"query": "where does the user live?", "k": 5}),
            OpenApiExample(
                "preferences stored in March",
                value={
                    "query": "seats on trains",
                    "fact_type": "preference",
                    "since": "2026-03-01T00:00:00Z",
                    "until": "2026-04-01T00:00:00Z",
                },
            ),
        ],
    )
    def post(self, request: Request, subject: str) -> Response:
        who = self.subject(request, subject, "read")
        fields = _valid(s.RecallIn, request.data)
        old_names = ["memory_types"] if "memory_types" in fields else []
        return deprecation_mark(Response(_recall(who, fields.pop("query"), fields)), names=old_names)


class MemoriesView(SubjectView):
    delete_takes_body = True  # forgetting everything repeats the subject's id (atlas_site.openapi)

    @extend_schema(
        operation_id="memory_list",
        summary="List the subject's memories, newest first",
        parameters=[
            SUBJECT,
            OpenApiParameter("types", OpenApiTypes.STR, many=True, enum=s.LIST_TYPE_CHOICES),
            OpenApiParameter("fact_type", OpenApiTypes.STR, enum=s.FACT_TYPE_CHOICES),
            OpenApiParameter("include_superseded", OpenApiTypes.BOOL, description="Include replaced versions."),
            OpenApiParameter(
                "type",
                OpenApiTypes.STR,
                many=True,
                enum=s.LIST_TYPE_CHOICES,
                deprecated=True,
                description="The old name of types.",
            ),
            OpenApiParameter(
                "superseded", OpenApiTypes.BOOL, deprecated=True, description="The old name of include_superseded."
            ),
            OpenApiParameter("session_id", OpenApiTypes.STR),
            OpenApiParameter(
                "authority",
                OpenApiTypes.STR,
                enum=list(AUTHORITIES),
                description="Only facts and playbooks of this authority (who they speak for).",
            ),
            OpenApiParameter("since", OpenApiTypes.DATETIME),
            OpenApiParameter("until", OpenApiTypes.DATETIME),
            FILTERS,
            *PAGE_PARAMS,
        ],
        responses={200: s.MemoryPageOut, **PROBLEM},
    )
    def get(self, request: Request, subject: str) -> Response:
        who = self.subject(request, subject, "read")
        query = query_params(
            request,
            {"types", "type", "fact_type", "include_superseded", "superseded", "session_id", "since", "until"}
            | {"page_size", "cursor", "authority", "filters"},
        )
        lists = {name: request.query_params.getlist(name) for name in ("types", "type") if name in query}
        types, old_types = renamed(lists, old="type", new="types")
        superseded, old_superseded = renamed(query, old="superseded", new="include_superseded")
        old_names = [name for name, used in (("type", old_types), ("superseded", old_superseded)) if used]
        page = selectors.memory_list(
            subject=who,
            memory_types=types or None,
            include_superseded=flag_param(superseded, "superseded" if old_superseded else "include_superseded"),
            fact_type=query.get("fact_type"),
            session_id=query.get("session_id"),
            since=query.get("since"),
            until=query.get("until"),
            authority=query.get("authority"),
            filters=query.get("filters"),
            page_size=int_param(query.get("page_size", "50"), "page_size"),
            cursor=query.get("cursor"),
        )
        return deprecation_mark(Response(page), names=old_names)

    @extend_schema(
        operation_id="memory_forget_all",
        summary="Forget everything about the subject (every index, archive included), or what filters match",
        description="With `filters` (docs/scoping.md) only the memories they match go — everything one agent "
        'wrote: `{"confirm": "<subject>", "filters": {"agent_id": "planner"}}` — with every copy of their text; '
        "the answer lists their ids. Without, everything goes.",
        parameters=[SUBJECT],
        request=s.ForgetAllIn,
        responses={200: s.ForgottenAllOut, **problems(413, 415)},
        examples=[
            OpenApiExample("confirmed", value={"confirm": "alice"}),
            OpenApiExample("one agent's memories", value={"confirm": "alice", "filters": {"agent_id": "planner"}}),
        ],
    )
    def delete(self, request: Request, subject: str) -> Response:
        who = self.subject(request, subject, "forget")
        body = request.data
        given = _valid(s.ForgetAllIn, body) if isinstance(body, dict) and "confirm" in body else {}
        confirmed = given.get("confirm")
        if confirmed != who.external_id:
            expected = json.dumps({"confirm": who.external_id}, ensure_ascii=False)
            raise ValidationFailed(
                f"confirm must repeat the subject's id: send the body {expected} (forgetting everything cannot be "
                "undone)",
                field="confirm",
            )
        if "filters" in given:
            result = forget.scoped_memories_forget(subject=who, filters=given["filters"], actor=actor_of(request))
            return Response({"forgotten": result["counts"], "receipt": result["receipt"], "ids": result["ids"]})
        result = forget.subject_memories_forget(subject=who, actor=actor_of(request))
        return Response({"forgotten": result["counts"], "receipt": result["receipt"]})


class MemoryView(SubjectView):
    @extend_schema(
        operation_id="memory_get",
        summary="One memory, with where it came from",
        description=(
            "The memory and its `provenance`: its authority, who wrote it, the episodes it cites (with their "
            "time and text; forgotten ones as `gone`) and the consolidation run that wrote it. Lists and "
            "recall answers leave provenance out to stay small: ask for the memory."
        ),
        parameters=[SUBJECT, MEMORY_ID],
        responses={200: s.MemoryDetailOut, **PROBLEM},
    )
    def get(self, request: Request, subject: str, memory_id: str) -> Response:
        who = self.subject(request, subject, "read")
        hit = selectors.memory_hit(subject=who, memory_id=memory_id)
        provenance = memory_provenance(subject=who, hit=hit)
        response = Response(selectors.memory_shape(hit) | {"provenance": provenance})
        response["ETag"] = writes.memory_etag(hit["_source"])
        return response

    @extend_schema(
        operation_id="memory_forget",
        summary="Forget one memory",
        parameters=[SUBJECT, MEMORY_ID],
        responses={200: s.ForgottenOut, **PROBLEM},
    )
    def delete(self, request: Request, subject: str, memory_id: str) -> Response:
        who = self.subject(request, subject, "forget")
        return Response(forget.memory_forget(subject=who, memory_id=memory_id, actor=actor_of(request)))


class ChainView(SubjectView):
    @extend_schema(
        operation_id="memory_chain",
        summary="A fact's supersession chain, oldest first",
        parameters=[SUBJECT, MEMORY_ID],
        responses={200: s.ChainOut, **PROBLEM},
    )
    def get(self, request: Request, subject: str, memory_id: str) -> Response:
        who = self.subject(request, subject, "read")
        return Response({"chain": selectors.memory_chain_get(subject=who, memory_id=memory_id)})


PROPOSAL_ID = OpenApiParameter("proposal_id", OpenApiTypes.STR, OpenApiParameter.PATH, description="A proposal's id.")


class ProposalsView(SubjectView):
    @extend_schema(
        operation_id="proposal_list",
        summary="The subject's proposals waiting for review, newest first (each with the facts it replaces)",
        description="Pending facts and playbooks: stored, never recalled, until accepted. written_by narrows to "
        "one writer (run:<id> for a consolidation run, token:<name> for an agent).",
        parameters=[
            SUBJECT,
            OpenApiParameter("written_by", OpenApiTypes.STR),
            *PAGE_PARAMS,
        ],
        responses={200: s.ProposalPageOut, **PROBLEM},
    )
    def get(self, request: Request, subject: str) -> Response:
        who = self.subject(request, subject, "read")
        query = query_params(request, {"written_by", "page_size", "cursor"})
        return Response(
            selectors.proposals_list(
                subject=who,
                written_by=query.get("written_by"),
                page_size=int_param(query.get("page_size", "50"), "page_size"),
                cursor=query.get("cursor"),
            )
        )


class ProposalAcceptView(SubjectView):
    @extend_schema(
        operation_id="proposal_accept",
        summary="Accept a proposal (optionally with its text corrected): it becomes current",
        description="Deciding is the person's act: it needs a token with the 'review' scope (never implied by "
        "'write'), and a token never decides its own proposal (403). Name the version you reviewed ('version' or "
        "If-Match): a proposal changed since is a 409 showing what it says now. A proposal that replaces a fact the "
        "person wrote can only be accepted by the person (the dashboard, or their personal token holding 'review'). "
        "409 when it was decided already, or its fact was replaced meanwhile.",
        parameters=[SUBJECT, PROPOSAL_ID, IDEMPOTENCY_KEY, PROPOSAL_VERSION],
        request=s.ProposalAcceptIn,
        responses={200: s.MemoryOut, **WRITE_PROBLEMS},
        examples=[
            OpenApiExample("as proposed", value={}),
            OpenApiExample("corrected, then accepted", value={"text": "Lives in Porto, in Ribeira"}),
        ],
    )
    @idempotent
    def post(self, request: Request, subject: str, proposal_id: str) -> Response:
        who = self.subject(request, subject, "review")
        fields = _valid(s.ProposalAcceptIn, request.data)
        accepted = review.proposal_accept(
            subject=who,
            proposal_id=proposal_id,
            text=fields.get("text"),
            actor=actor_of(request),
            reviewer=token_principal(principal_of(request)),
            version=_version_shown(request, fields),
        )
        consolidation_runs_settle(subject=who, run_ids=accepted.runs_complete, actor=actor_of(request))
        return Response(_shaped(accepted.shown))


class ProposalRejectView(SubjectView):
    @extend_schema(
        operation_id="proposal_reject",
        summary="Reject a proposal: it is deleted, and consolidation does not propose it again",
        parameters=[SUBJECT, PROPOSAL_ID, IDEMPOTENCY_KEY, PROPOSAL_VERSION],
        request=s.ProposalDecideIn,
        responses={200: s.ProposalRejectedOut, **problems(403, 409)},
        examples=[OpenApiExample("the version you reviewed", value={"version": '"5f1c0e9a7b2d4c3e8a6b1d0f9e8c7b6a"'})],
    )
    @idempotent
    def post(self, request: Request, subject: str, proposal_id: str) -> Response:
        who = self.subject(request, subject, "review")
        fields = _valid(s.ProposalDecideIn, request.data)
        rejected = review.proposal_reject(
            subject=who,
            proposal_id=proposal_id,
            actor=actor_of(request),
            reviewer=token_principal(principal_of(request)),
            version=_version_shown(request, fields),
        )
        consolidation_runs_settle(subject=who, run_ids=rejected.runs_complete, actor=actor_of(request))
        return Response(rejected.shown)


def _version_shown(request: Request, fields: dict[str, Any]) -> str | None:
    """The proposal version the caller reviewed: the body's ``version`` or the If-Match header (not both,
    unless they agree)."""
    header, body = request.headers.get("If-Match"), fields.get("version")
    if header is not None and body is not None and header.strip() != body.strip():
        raise ValidationFailed("the If-Match header and the body's version differ: send one", field="version")
    return body if body is not None else header


class ExportView(SubjectView):
    @extend_schema(
        operation_id="memory_export",
        summary="Export the subject's memories (docs/export-format.md), streamed as JSON Lines",
        description=(
            "A header line (`format`: atlas-memory-export, `version`: 1), then one memory per line, oldest "
            "first: every type, replaced and archived facts, pending proposals, with their chains, "
            "authority, writer, source episodes and timestamps; no vectors. `atlas_import` reads it back."
        ),
        parameters=[SUBJECT, FILTERS],
        responses={(200, "application/x-ndjson"): OpenApiTypes.STR, **PROBLEM},
    )
    def get(self, request: Request, subject: str) -> StreamingHttpResponse:
        who = self.subject(request, subject, "read")
        query = query_params(request, {"filters"})
        lines = map(export_line, primed(memories_export(tenant=who.tenant, subject=who, filters=query.get("filters"))))
        response = StreamingHttpResponse(streamed(request, lines), content_type="application/x-ndjson")
        response["Cache-Control"] = "no-store"
        return response
