"""The REST API's operations, one method each, named as the API's operationIds: written once, run by the
sync client (``Atlas``) and the async one (``AsyncAtlas``, whose methods return awaitables of the same)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any
from urllib.parse import quote

import httpx

from ._retry import Kind
from .models import (
    Answer,
    Chain,
    Delivery,
    DeliveryPage,
    Forgotten,
    ForgottenAll,
    Me,
    Memory,
    MemoryDetail,
    MemoryPage,
    Proposal,
    ProposalPage,
    ProposalRejected,
    Recall,
    RecallOptions,
    Subject,
    SubjectPage,
    Turn,
    Usage,
    Webhook,
    WebhookCreated,
    WebhookList,
    WebhookSecret,
    build,
    wire,
)

Time = datetime | str
Day = date | str
Step = str | dict[str, Any]


@dataclass(frozen=True)
class Call:
    """One operation's request, how it may be retried, and how its answer is read."""

    method: str
    path: str
    kind: Kind
    model: type[Answer] | None  # the answer's class (None: no JSON answer, as a 204 or the export's lines)
    params: dict[str, Any] | None = None
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)

    def answer(self, response: httpx.Response) -> Any:
        if response.status_code == 204:  # no content: a delete that answers nothing
            return None
        if self.model is None:
            raise TypeError(f"{self.method} {self.path} is read as a stream")
        return build(self.model, response.json(), etag=response.headers.get("ETag"))


def _path(*segments: str | int) -> str:
    """``/api/v1/…`` with each caller-given segment escaped (a subject id may hold ``@``, ``:`` or ``+``)."""
    return "/api/v1/" + "/".join(quote(str(s), safe="") for s in segments)


def _query(values: dict[str, Any]) -> dict[str, Any]:
    return {k: ("true" if v is True else "false" if v is False else v) for k, v in wire(values).items()}


def _read(path: str, cls: type[Answer], *, params: dict[str, Any] | None = None, json: Any = None) -> Call:
    return Call("POST" if json is not None else "GET", path, Kind.READ, cls, _query(params or {}), json)


def _keyed(path: str, cls: type[Answer], body: dict[str, Any], key: str | None) -> Call:
    """A POST the server replays for a retry with the same Idempotency-Key (a fresh one unless given)."""
    return Call("POST", path, Kind.KEYED, cls, json=wire(body), headers={"Idempotency-Key": key or _new_key()})


def _unkeyed(
    method: str, path: str, cls: type[Answer] | None, *, json: Any = None, if_match: str | None = None
) -> Call:
    headers = {"If-Match": if_match} if if_match else {}
    return Call(method, path, Kind.UNKEYED, cls, json=json, headers=headers)


def _given(arguments: dict[str, Any], *outside: str) -> dict[str, Any]:
    """A method's own arguments (its ``locals()`` on entry) as the request's fields: the names are the
    API's, so the body or query is the arguments less those sent elsewhere (path, headers)."""
    return {k: v for k, v in arguments.items() if k != "self" and k not in outside}


def _filters_sent(query: dict[str, Any]) -> dict[str, Any]:
    """A GET's ``filters`` travel as one query parameter holding their JSON."""
    if query.get("filters") is not None:
        query["filters"] = json.dumps(query["filters"], separators=(",", ":"), default=str)
    return query


def _new_key() -> str:
    return f"atlas-py-{uuid.uuid4().hex}"


class Operations:
    """Every operation of the API. Subclasses say how a call is sent (``_run``), a paged list walked
    (``_pages``) and a stream read (``_lines``). Each method's first line takes its arguments
    (``locals()``) as the request's fields: keep it first."""

    def _run(self, call: Call) -> Any:
        raise NotImplementedError

    def _pages(self, page: Callable[[Any], Call], items: str, by: str = "cursor") -> Any:
        """Every item of a paged list: ``page(marker)`` reads the page after ``marker`` (None: the first),
        each page names the next marker in ``next_<by>`` (``cursor``; the delivery log's ``before``)."""
        raise NotImplementedError

    def _lines(self, call: Call) -> Any:
        raise NotImplementedError

    # --- the token ---------------------------------------------------------------------------------
    def me(self) -> Me:
        """What this token is and may do."""
        return self._run(_read(_path("me"), Me))

    # --- usage (tenant tokens) ---------------------------------------------------------------------
    def usage_get(self, *, since: Day | None = None, until: Day | None = None) -> Usage:
        """The tenant's usage per UTC day (the last 30 unless ``since``/``until``) and its budgets."""
        return self._run(_read(_path("usage"), Usage, params=wire(_given(locals()))))

    # --- subjects (tenant tokens) ------------------------------------------------------------------
    def subject_list(self, *, page_size: int | None = None, cursor: str | None = None) -> SubjectPage:
        return self._run(_read(_path("subjects"), SubjectPage, params=_given(locals())))

    def subject_list_iter(self, *, page_size: int | None = None) -> Iterator[Subject]:
        """Every subject, page after page."""
        query = _given(locals())
        return self._pages(
            lambda cursor: _read(_path("subjects"), SubjectPage, params={**query, "cursor": cursor}), "subjects"
        )

    def subject_create(self, *, id: str, display_name: str | None = None) -> Subject:
        return self._run(_unkeyed("POST", _path("subjects"), Subject, json=wire(_given(locals()))))

    # --- a subject's memories: writes --------------------------------------------------------------
    def episode_write(
        self,
        *,
        subject: str,
        text: str,
        session_id: str | None = None,
        agent_id: str | None = None,
        app_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        role: str | None = None,
        event_type: str | None = None,
        timestamp: Time | None = None,
        external_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Memory:
        """Store one user turn."""
        body = _given(locals(), "subject", "idempotency_key")
        return self._run(_keyed(_path("subjects", subject, "episodes"), Memory, body, idempotency_key))

    def turn(
        self,
        *,
        subject: str,
        text: str,
        session_id: str | None = None,
        agent_id: str | None = None,
        app_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        role: str | None = None,
        event_type: str | None = None,
        timestamp: Time | None = None,
        external_id: str | None = None,
        recall: RecallOptions | None = None,
        idempotency_key: str | None = None,
    ) -> Turn:
        """Store the user's turn and recall for it in one round trip: ``.episode`` and ``.hits``."""
        body = _given(locals(), "subject", "idempotency_key")
        return self._run(_keyed(_path("subjects", subject, "turn"), Turn, body, idempotency_key))

    def fact_write(
        self,
        *,
        subject: str,
        text: str,
        fact_type: str | None = None,
        confidence: float | None = None,
        source_episodes: list[str] | None = None,
        valid_from: Time | None = None,
        valid_to: Time | None = None,
        supersedes: list[str] | None = None,
        contradiction: str | None = None,
        external_id: str | None = None,
        agent_id: str | None = None,
        app_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Memory:
        """Store a fact, optionally replacing older ones (``supersedes``); ``status`` pending when it waits
        for the person's review."""
        body = _given(locals(), "subject", "idempotency_key")
        return self._run(_keyed(_path("subjects", subject, "facts"), Memory, body, idempotency_key))

    def fact_edit(
        self,
        *,
        subject: str,
        memory_id: str,
        text: str | None = None,
        fact_type: str | None = None,
        confidence: float | None = None,
        contradiction: str | None = None,
        source_episodes: list[str] | None = None,
        if_match: str | None = None,
    ) -> Memory:
        """Edit a fact: a new version replaces it (the old one stays in its chain). ``if_match``: the ETag
        you read (``memory_get(...).etag``); a change since is a PreconditionFailed. ``source_episodes``: the
        turns that say the new version (a natural change keeps the old version's too, a harsh one not)."""
        body = wire(_given(locals(), "subject", "memory_id", "if_match"))
        path = _path("subjects", subject, "facts", memory_id)
        return self._run(_unkeyed("PATCH", path, Memory, json=body, if_match=if_match))

    def playbook_write(
        self,
        *,
        subject: str,
        name: str,
        trigger_text: str,
        steps: list[Step],
        description: str | None = None,
        external_id: str | None = None,
        agent_id: str | None = None,
        app_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Memory:
        """Store a playbook: steps that worked, each an instruction or ``{instruction, tool, order}``."""
        body = _given(locals(), "subject", "idempotency_key")
        return self._run(_keyed(_path("subjects", subject, "playbooks"), Memory, body, idempotency_key))

    def playbook_outcome(
        self,
        *,
        subject: str,
        memory_id: str,
        success: bool,
        refined_steps: list[Step] | None = None,
        idempotency_key: str | None = None,
    ) -> Memory:
        """Record how a playbook went; refined steps replace its steps (version + 1)."""
        body = _given(locals(), "subject", "memory_id", "idempotency_key")
        path = _path("subjects", subject, "playbooks", memory_id, "outcome")
        return self._run(_keyed(path, Memory, body, idempotency_key))

    # --- a subject's memories: reads ---------------------------------------------------------------
    def recall(
        self,
        *,
        subject: str,
        query: str,
        k: int | None = None,
        types: list[str] | None = None,
        include_superseded: bool | None = None,
        as_of: Time | None = None,
        known_at: Time | None = None,
        fact_type: str | None = None,
        since: Time | None = None,
        until: Time | None = None,
        rerank: bool | None = None,
        fold_evidence: bool | None = None,
        explain: bool | None = None,
        expect: list[str] | None = None,
        min_score: float | None = None,
        filters: dict[str, Any] | None = None,
    ) -> Recall:
        """One search over every memory type and the catalog: fewer than ``k`` hits, or none, when fewer fit
        (``min_score``: your own floor on the score instead). ``explain=True``: why each hit ranked there;
        ``expect=[ids]``: what kept those memories out (in ``.explain``). ``filters``: only memories of a scope,
        e.g. ``{"agent_id": "planner", "metadata.priority": {"gte": 2}}`` (no catalog then)."""
        body = wire(_given(locals(), "subject"))
        return self._run(_read(_path("subjects", subject, "recall"), Recall, json=body))

    def memory_list(
        self,
        *,
        subject: str,
        types: list[str] | None = None,
        fact_type: str | None = None,
        include_superseded: bool | None = None,
        session_id: str | None = None,
        authority: str | None = None,
        since: Time | None = None,
        until: Time | None = None,
        page_size: int | None = None,
        cursor: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> MemoryPage:
        """One page of the subject's memories, newest first (``next_cursor`` for the next); ``filters``: only
        those of a scope (as recall's)."""
        query = _filters_sent(_given(locals(), "subject"))
        return self._run(_read(_path("subjects", subject, "memories"), MemoryPage, params=query))

    def memory_list_iter(
        self,
        *,
        subject: str,
        types: list[str] | None = None,
        fact_type: str | None = None,
        include_superseded: bool | None = None,
        session_id: str | None = None,
        authority: str | None = None,
        since: Time | None = None,
        until: Time | None = None,
        page_size: int | None = None,
        filters: dict[str, Any] | None = None,
    ) -> Iterator[Memory]:
        """Every memory ``memory_list`` would page through, one at a time."""
        query = _filters_sent(_given(locals(), "subject"))
        path = _path("subjects", subject, "memories")
        return self._pages(lambda cursor: _read(path, MemoryPage, params={**query, "cursor": cursor}), "memories")

    def memory_get(self, *, subject: str, memory_id: str) -> MemoryDetail:
        """One memory with its provenance, and its ``etag`` for an edit."""
        return self._run(_read(_path("subjects", subject, "memories", memory_id), MemoryDetail))

    def memory_chain(self, *, subject: str, memory_id: str) -> Chain:
        """A fact's versions, oldest first."""
        return self._run(_read(_path("subjects", subject, "memories", memory_id, "chain"), Chain))

    def memory_export(self, *, subject: str, filters: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """The subject's export (docs/export-format.md), line by line as it streams: the header, then one
        memory per line (``filters``: of one scope only). Opening it is retried as a read; a break once lines
        came is a ConnectionFailed (a stream cannot resume where it broke)."""
        query = _query(_filters_sent({"filters": filters}))
        return self._lines(Call("GET", _path("subjects", subject, "export"), Kind.READ, None, params=query))

    # --- forgetting --------------------------------------------------------------------------------
    def memory_forget(self, *, subject: str, memory_id: str) -> Forgotten:
        """Forget one memory, with a receipt of every copy removed."""
        return self._run(_unkeyed("DELETE", _path("subjects", subject, "memories", memory_id), Forgotten))

    def memory_forget_all(self, *, subject: str, confirm: str, filters: dict[str, Any] | None = None) -> ForgottenAll:
        """Forget everything about the subject, or with ``filters`` what they match (everything one agent
        wrote: ``{"agent_id": "planner"}``; ``.ids`` lists them); ``confirm`` repeats the subject's id."""
        path = _path("subjects", subject, "memories")
        return self._run(_unkeyed("DELETE", path, ForgottenAll, json=wire({"confirm": confirm, "filters": filters})))

    # --- proposals waiting for the person's review -------------------------------------------------
    def proposal_list(
        self,
        *,
        subject: str,
        written_by: str | None = None,
        page_size: int | None = None,
        cursor: str | None = None,
    ) -> ProposalPage:
        query = _given(locals(), "subject")
        return self._run(_read(_path("subjects", subject, "proposals"), ProposalPage, params=query))

    def proposal_list_iter(
        self, *, subject: str, written_by: str | None = None, page_size: int | None = None
    ) -> Iterator[Proposal]:
        query = _given(locals(), "subject")
        path = _path("subjects", subject, "proposals")
        return self._pages(lambda cursor: _read(path, ProposalPage, params={**query, "cursor": cursor}), "proposals")

    def proposal_accept(
        self,
        *,
        subject: str,
        proposal_id: str,
        version: str,
        text: str | None = None,
        idempotency_key: str | None = None,
    ) -> Memory:
        """Accept a proposal (``text``: as you corrected it); ``version`` is the one you reviewed."""
        body = _given(locals(), "subject", "proposal_id", "idempotency_key")
        path = _path("subjects", subject, "proposals", proposal_id, "accept")
        return self._run(_keyed(path, Memory, body, idempotency_key))

    def proposal_reject(
        self, *, subject: str, proposal_id: str, version: str, idempotency_key: str | None = None
    ) -> ProposalRejected:
        body = _given(locals(), "subject", "proposal_id", "idempotency_key")
        path = _path("subjects", subject, "proposals", proposal_id, "reject")
        return self._run(_keyed(path, ProposalRejected, body, idempotency_key))

    # --- the tenant's catalog (tenant tokens) ------------------------------------------------------
    def catalog_list(self, *, page_size: int | None = None, cursor: str | None = None) -> MemoryPage:
        return self._run(_read(_path("catalog"), MemoryPage, params=_given(locals())))

    def catalog_list_iter(self, *, page_size: int | None = None) -> Iterator[Memory]:
        query = _given(locals())
        return self._pages(
            lambda cursor: _read(_path("catalog"), MemoryPage, params={**query, "cursor": cursor}), "memories"
        )

    def catalog_write(
        self,
        *,
        title: str,
        text: str,
        category: str | None = None,
        tags: list[str] | None = None,
        external_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Memory:
        body = _given(locals(), "idempotency_key")
        return self._run(_keyed(_path("catalog"), Memory, body, idempotency_key))

    def catalog_get(self, *, entry_id: str) -> Memory:
        return self._run(_read(_path("catalog", entry_id), Memory))

    def catalog_edit(
        self,
        *,
        entry_id: str,
        title: str | None = None,
        text: str | None = None,
        category: str | None = None,
        tags: list[str] | None = None,
        if_match: str | None = None,
    ) -> Memory:
        body = wire(_given(locals(), "entry_id", "if_match"))
        return self._run(_unkeyed("PATCH", _path("catalog", entry_id), Memory, json=body, if_match=if_match))

    def catalog_delete(self, *, entry_id: str) -> Forgotten:
        return self._run(_unkeyed("DELETE", _path("catalog", entry_id), Forgotten))

    # --- the tenant's webhook endpoints (tenant tokens that may read and write) ---------------------
    def webhook_list(self) -> WebhookList:
        """Every endpoint of the tenant (never their secrets)."""
        return self._run(_read(_path("webhooks"), WebhookList))

    def webhook_create(self, *, url: str, events: list[str], description: str | None = None) -> WebhookCreated:
        """Register an https endpoint for ``events``; ``.secret``, its signing secret, is in this answer only.
        Not retried once sent (the server replays no key for it: the answer holds the secret): after a
        lost answer, list the endpoints before trying again."""
        return self._run(_unkeyed("POST", _path("webhooks"), WebhookCreated, json=wire(_given(locals()))))

    def webhook_get(self, *, webhook_id: int) -> Webhook:
        return self._run(_read(_path("webhooks", webhook_id), Webhook))

    def webhook_update(
        self,
        *,
        webhook_id: int,
        url: str | None = None,
        events: list[str] | None = None,
        description: str | None = None,
        enabled: bool | None = None,
    ) -> Webhook:
        """Change what is given (at least one); ``enabled=True`` also queues the deliveries still waiting."""
        body = wire(_given(locals(), "webhook_id"))
        return self._run(_unkeyed("PATCH", _path("webhooks", webhook_id), Webhook, json=body))

    def webhook_delete(self, *, webhook_id: int) -> None:
        """Remove the endpoint and its delivery log."""
        return self._run(_unkeyed("DELETE", _path("webhooks", webhook_id), None))

    def webhook_secret_rotate(self, *, webhook_id: int) -> WebhookSecret:
        """A new signing secret (``.secret``, shown this once); the previous one keeps signing beside it
        until ``.previous_secret_expires_at``."""
        return self._run(_unkeyed("POST", _path("webhooks", webhook_id, "rotate-secret"), WebhookSecret))

    def webhook_deliveries(
        self, *, webhook_id: int, page_size: int | None = None, before: int | None = None
    ) -> DeliveryPage:
        """The endpoint's delivery log, newest first; ``before=page.next_before`` for the older ones."""
        query = _given(locals(), "webhook_id")
        return self._run(_read(_path("webhooks", webhook_id, "deliveries"), DeliveryPage, params=query))

    def webhook_deliveries_iter(self, *, webhook_id: int, page_size: int | None = None) -> Iterator[Delivery]:
        """Every delivery of the endpoint's log, newest first, page after page."""
        query = _given(locals(), "webhook_id")
        path = _path("webhooks", webhook_id, "deliveries")
        return self._pages(
            lambda before: _read(path, DeliveryPage, params={**query, "before": before}), "deliveries", "before"
        )

    def webhook_redeliver(self, *, webhook_id: int, delivery_id: int) -> Delivery:
        """Send a delivery's event again: a new delivery of the same event (the same ``event_id``)."""
        path = _path("webhooks", webhook_id, "deliveries", delivery_id, "redeliver")
        return self._run(_unkeyed("POST", path, Delivery))
