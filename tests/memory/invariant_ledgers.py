"""The invariant machine's (tests/memory/test_invariants.py) ledgers beside the memories: the tenant's daily
write quota and the usage ledger that enforces it, and the webhook events every write, supersession and
forget records. A mixin of the machine: its rules set the quota, its invariants hold after every step.

What the usage ledger counts (tenants/usage.py, docs/operations.md "writes"): one per new memory an agent
or a person stores — over REST, MCP, the dashboard or the admin; a correction's new version and a pending
proposal included — and nothing for consolidation's writes, imports, decisions on proposals, steps applied
in place, forgetting, or the same write again (an Idempotency-Key retry, a repeated external id)."""

from __future__ import annotations

import io
import json
from collections import Counter
from typing import Any

from django.conf import settings as django_settings
from django.core.management import call_command
from django.db.models import Sum, TextField
from django.db.models.functions import Cast
from django.test import Client
from django.urls import reverse
from elasticsearch import helpers
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from memory.elastic.mappings import VECTOR_FIELDS
from tenants.models import Person, Tenant, UsageDay
from tenants.services import membership_add
from tenants.usage import usage_today
from tests.memory.invariant_world import STATS, Known
from webhooks.events import EVENT_TYPES, MEMORY_CREATED, MEMORY_FORGOTTEN, MEMORY_SUPERSEDED, PROPOSAL_CREATED
from webhooks.models import WebhookEvent

#: Never listened on: events are recorded at write time, and no worker runs here to deliver them.
HOOK_URL = "http://127.0.0.1:9/atlas-hooks"
QUOTA_PROBLEM = "urn:atlas-memory:problem:quota_exceeded"


class Ledgers:
    """What the machine counted and expects announced, the quota rule, and the invariants over both."""

    tenant: Any
    tokens: dict[str, Any]
    known: dict[str, Known]
    forgotten: list[str]

    def _ledgers_open(self, world: dict[str, Any]) -> None:
        """An endpoint wanting every event, registered over REST before the first memory is written."""
        self.world = world
        self.quota: int | None = None
        self.counted = 0  # the acknowledged writes the usage ledger counts (the module's docstring)
        self.refused: list[str] = []  # the canaries of writes refused past the quota
        self.created: Counter[tuple[str, str]] = Counter()  # (event type, memory id) expected recorded
        self.superseded: Counter[tuple[str, str]] = Counter()  # (old id, new id)
        self.forgotten_events: Counter[str] = Counter()  # memory ids
        self.review_mode = self.tenant.review_mode
        # The tenant's admin, for the dashboard's settings form (one of the doors the settings rules use).
        admin = Person.objects.create_user(email=f"admin-{self.tenant.slug}@example.org", password="x")
        membership_add(tenant=self.tenant, email=admin.email, role="admin", actor="test")
        self.tenant_admin = Client()
        self.tenant_admin.force_login(admin)
        body = {"url": HOOK_URL, "events": list(EVENT_TYPES)}
        answer = self.tokens["writer"]("POST", "webhooks", json=body)
        assert answer.status_code == 201, answer.text

    # ------------------------------------------------------------------------ what the rules tell it
    def _acknowledged(self, known: Known, *, announced: bool = True) -> Known:
        """A new memory acknowledged: its event expected (imports announce nothing, docs/webhooks.md)."""
        self.known[known.id] = known
        self.forgotten_ids.discard(known.id)  # a forgotten id written again (the same external id): in use
        if announced:
            self.created[(PROPOSAL_CREATED if known.pending else MEMORY_CREATED, known.id)] += 1
        return known

    def _replaced(self, old: Known, *, by: str) -> None:
        old.replaced = True
        self.superseded[(old.id, by)] += 1

    def _forgotten_ids(self, ids: list[str]) -> None:
        self.forgotten_events.update(ids)

    def _spent(self) -> bool:
        return self.quota is not None and self.counted >= self.quota

    def _admitted(self, *, refused: bool, canary: str) -> bool:
        """A write that would store a new memory: refused (429 quota_exceeded) exactly when the day's quota
        is spent — and then no document holds its text — otherwise counted."""
        assert refused == self._spent(), (refused, self.quota, self.counted)
        if not refused:
            self.counted += 1
            return True
        STATS.operations["write refused past the quota"] += 1
        self.refused.append(canary)
        es = self.world["es"]
        tenant_docs = {"query": {"term": {"tenant_id": str(self.tenant.es_id)}}}
        index = f"{django_settings.ATLAS_ES_INDEX_PREFIX}-*"
        for hit in helpers.scan(es, index=index, query=tenant_docs, _source_excludes=sorted(VECTOR_FIELDS)):
            assert canary not in json.dumps(hit["_source"]), f"refused {canary} stored as {hit['_id']}"
        STATS.checks["a write refused past the quota stores nothing"] += 1
        return False

    @staticmethod
    def _refused_over_rest(answer: Any) -> bool:
        if answer.status_code != 429:
            return False
        assert answer.json()["type"] == QUOTA_PROBLEM and int(answer.headers["Retry-After"]) > 0, answer.text
        return True

    # -------------------------------------------------------------------------------------- the rule
    @rule(headroom=st.sampled_from([None, 0, 1, 3]), door=st.sampled_from(["cli", "dashboard"]))
    def operator_sets_the_write_quota(self, headroom: int | None, door: str) -> None:
        """A low daily quota (what was counted today plus ``headroom``), or none (lifted)."""
        STATS.operations[f"daily write quota ({door})"] += 1
        self.quota = None if headroom is None else self.counted + headroom
        self._tenant_settings_set(door, "daily_write_quota", self.quota)

    @rule(mode=st.sampled_from(["off", "consolidation", "agents"]), door=st.sampled_from(["cli", "dashboard"]))
    def admin_sets_the_review_mode(self, mode: str, door: str) -> None:
        STATS.operations[f"review mode ({door})"] += 1
        self.review_mode = mode
        self._tenant_settings_set(door, "review_mode", mode)

    def _tenant_settings_set(self, door: str, name: str, value: Any) -> None:
        """One tenant setting through an operator's CLI or the tenant admin's settings form (which sends
        every setting: the others as the form shows them)."""
        if door == "cli":
            said = io.StringIO()
            shown = "none" if value is None else str(value)
            call_command("atlas_tenant", "update", self.tenant.slug, f"--{name.replace('_', '-')}", shown, stdout=said)
            assert name.replace("_", " ") in said.getvalue(), said.getvalue()
            return
        url = reverse("tenant:settings", args=[self.tenant.slug])
        shown = self.tenant_admin.get(url).context["form"].initial
        form = {key: "" if shown.get(key) is None else shown[key] for key in shown} | {
            name: "" if value is None else value
        }
        answer = self.tenant_admin.post(url, form)
        assert answer.status_code == 302, answer.content[:500]

    # -------------------------------------------------------------------------------- the invariants
    @invariant()
    def the_usage_ledger_counts_what_was_acknowledged(self) -> None:
        """The ledger's writes are the acknowledged writes the model counted, and today's never pass the
        quota (set at or above what was counted when it was set)."""
        if not hasattr(self, "counted"):
            return
        days = UsageDay.objects.filter(tenant_id=self.tenant.pk)
        assert (days.aggregate(n=Sum("writes"))["n"] or 0) == self.counted, (self.counted, list(days.values()))
        today = days.filter(day=usage_today()).values_list("writes", flat=True).first() or 0
        assert self.quota is None or today <= self.quota, (today, self.quota)
        stored = Tenant.objects.values("daily_write_quota", "review_mode").get(pk=self.tenant.pk)
        assert stored == {"daily_write_quota": self.quota, "review_mode": self.review_mode}, stored
        STATS.checks["the usage ledger counts every acknowledged write, within the quota"] += 1

    @invariant()
    def every_change_has_exactly_one_event(self) -> None:
        """Every acknowledged write, supersession and forget has exactly one event of its type (none for a
        refused write), and no event row — read raw — holds a forgotten or refused text."""
        if not hasattr(self, "counted"):
            return
        events = WebhookEvent.objects.filter(tenant_id=self.tenant.pk)
        created = Counter(events.filter(type__in=(MEMORY_CREATED, PROPOSAL_CREATED)).values_list("type", "memory_id"))
        assert created == self.created, (created - self.created, self.created - created)
        superseded = Counter(
            (e["memory_id"], e["superseded_by"])
            for e in events.filter(type=MEMORY_SUPERSEDED).values_list("data", flat=True)
        )
        assert superseded == self.superseded, (superseded - self.superseded, self.superseded - superseded)
        forgotten = Counter(e["memory_id"] for e in events.filter(type=MEMORY_FORGOTTEN).values_list("data", flat=True))
        assert forgotten == self.forgotten_events, (forgotten, self.forgotten_events)
        STATS.checks["one event per acknowledged write, supersession and forget"] += 1
        # Each row's data column as the database holds it (cast to text), not as JSON decoding reads it.
        rows = list(events.annotate(raw=Cast("data", TextField())).values_list("raw", flat=True))
        for canary in (*self.forgotten, *self.refused):
            assert not any(canary in row for row in rows), f"{canary} in a webhook event"
        STATS.checks["no event holds a forgotten or refused text"] += 1
