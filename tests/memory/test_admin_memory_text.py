"""Issue 32 finding 5: no admin or dashboard page shows memory text to an operator without the memory view
permission. A unique canary is planted in every store that can hold memory text — a fact, an episode, a
catalog entry, a pending proposal, a rejected proposal, a consolidation run's plan, dropped items and
error, an idempotency record, a forget (its receipt and audit entry) — then EVERY admin URL (each
registered ModelAdmin's own URLs, the subject admin's memory pages among them, for every object) and every
tenant and personal dashboard URL is opened as two operators: staff holding every permission but the three
memory ones see the canary nowhere (and no changelist search finds it); staff holding them too see it
exactly where memories are shown, and each of those reads is audited."""

from __future__ import annotations

import itertools
import re
import uuid

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.db.models import Q
from django.urls import URLPattern, reverse
from django.utils import timezone

from atlas_site.idempotency import idempotency_record_get, idempotency_record_store
from memory import on_behalf
from memory.dashboard import tenant_urls as memory_tenant_urls
from memory.dashboard import urls as dashboard_urls
from memory.dashboard.views import TABS as DASHBOARD_TABS
from memory.models import ConsolidationRun, RejectedProposal
from memory.services import forget, writes
from memory.services.catalog import catalog_entry_delete, catalog_entry_write
from tenants import services, tokens
from tenants.dashboard import urls as tenant_dashboard_urls
from tenants.models import AuditRecord, MemorySubject, Person, Tenant
from tests.fake_llm import empty_plan, fact
from tests.memory.reviewing import accept, reject

MEMORY_PERMISSIONS = ("view_memory", "change_memory", "forget_memory")
OK_STATUSES = {200, 302, 403, 404, 405}
#: A run's page without the memory view permission: what it did, in numbers.
SUMMARY_LABELS = [
    "Tenant", "Subject", "Status", "Worker", "Window start at", "Window start id", "Window end at", "Window end id",
    "Window key", "Episodes", "Changes", "Dropped", "Attempts", "Llm model", "Prompt tokens", "Completion tokens",
    "Llm requests", "Cost", "Duration ms", "Started at", "Finished at",
]  # fmt: skip


@pytest.fixture
def planted(tenant, maya, tom) -> dict:
    canary = f"zq{uuid.uuid4().hex}"
    said = writes.episode_write(subject=maya, text=f"my locker code is {canary}", session_id="s1")
    known = writes.fact_write(subject=maya, text=f"Maya's locker code is {canary}", fact_type="identity")
    entry = catalog_entry_write(tenant=tenant, title="Lockers", text=f"Lockers open with {canary}", actor="test")
    gone = writes.fact_write(subject=maya, text=f"Maya's old locker code was {canary}")
    forgotten = forget.memory_forget(subject=maya, memory_id=gone["id"], actor="test")
    Tenant.objects.filter(pk=tenant.pk).update(review_mode="agents")
    maya.tenant.refresh_from_db()
    proposal = writes.fact_write(subject=maya, text=f"Maya keeps {canary} in her locker", written_by="token:svc")
    refused = writes.fact_write(subject=maya, text=f"Maya left {canary} at the gym", written_by="token:svc")
    reject(maya, refused["id"])
    # Decisions, edits and deletes write audit records too (ids and flags, never the words).
    draft = writes.fact_write(subject=maya, text=f"Maya's gym is near {canary}", written_by="token:svc")
    accept(maya, draft["id"], text=f"Maya's gym is by {canary}")
    old_entry = catalog_entry_write(tenant=tenant, title="Old rules", text=f"Lockers used {canary}", actor="test")
    catalog_entry_delete(tenant=tenant, entry_id=old_entry["id"], actor="test")
    run = ConsolidationRun.objects.create(
        tenant=tenant,
        subject=maya,
        status=ConsolidationRun.Status.NEEDS_REVIEW,
        episodes=1,
        window_end_id=said["id"],
        plan=empty_plan(facts=[fact(f"Maya's locker code is {canary}", [said["id"]])]),
        rejected=[{"kind": "fact", "reason": "below the confidence floor", "text": f"Maya may like {canary}"}],
        changes={"pending": [proposal["id"]]},
        error=f"ValidationError: facts[1].text {canary!r} is not a fact",
        llm_model="fake-model",
        prompt_tokens=812,
        completion_tokens=93,
        finished_at=timezone.now(),
    )
    answer = {"state": "done", "digest": "d", "status": 201, "body": {"id": known["id"], "text": known["text"]}}
    idempotency_record_store(slot="idem:walk", record=answer, tenant_id=str(tenant.es_id), subject="maya")
    writes.fact_write(subject=tom, text="Tom likes tea", authority="person")
    tokens.token_create(tenant=tenant, name="svc", scopes="read", actor="test")
    return {
        "canary": canary,
        "memories": {
            "episode": said["id"],
            "fact": known["id"],
            "catalog": entry["id"],
            "proposal": proposal["id"],
            "accepted": draft["id"],
        },
        "run": run,
        "receipt": forgotten["receipt"],
    }


def _operator(email: str, tenant: Tenant, *, memory: bool) -> Person:
    person = Person.objects.create_user(email=email, password="walk-password-123", is_staff=True)
    memory_perms = Q(content_type__app_label="tenants", codename__in=MEMORY_PERMISSIONS)
    person.user_permissions.set(Permission.objects.all() if memory else Permission.objects.exclude(memory_perms))
    services.membership_add(tenant=tenant, email=email, role="member", actor="test")  # a member, not an admin
    return person


def _filled(pattern: URLPattern, values: dict[str, list[str]]) -> list[dict[str, str]]:
    """Every way to fill the pattern's parameters; a parameter the walk does not know fails it."""
    names = list(pattern.pattern.converters)
    unknown = [n for n in names if n not in values]
    assert not unknown, f"the walk does not know how to fill {unknown} of {pattern.pattern}: teach it"
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(values[n] for n in names))]


def _admin_urls(memory_ids: list[str]) -> list[str]:
    """Each registered ModelAdmin's named URLs (changelist, add, change, history, delete, and the custom
    ones: a subject's memory pages, a person's password), for every object of its model."""
    subjects = [str(pk) for pk in MemorySubject.objects.values_list("pk", flat=True)]
    urls = [reverse("admin:index")]
    for model, model_admin in admin.site._registry.items():
        pks = [str(pk) for pk in model._default_manager.values_list("pk", flat=True)]
        urls.append(reverse("admin:app_list", args=[model._meta.app_label]))
        values = {"object_id": pks, "id": pks, "subject_pk": subjects, "memory_id": memory_ids}
        for pattern in model_admin.get_urls():
            if pattern.name is None:  # the old-style "<id>/" redirect to the change page
                continue
            urls += [reverse(f"admin:{pattern.name}", kwargs=kwargs) for kwargs in _filled(pattern, values)]
    browse = [u for u in urls if u.endswith("/memories/")]
    urls += [f"{u}?types={memory_type}" for u in browse for memory_type, _label in on_behalf.TABS]
    return list(dict.fromkeys(urls))


def _dashboard_urls(tenant: Tenant, memory_ids: list[str]) -> list[str]:
    """Every tenant-section and personal dashboard page, for every subject, memory and token of the tenant."""
    values = {
        "slug": [tenant.slug],
        "external_id": list(MemorySubject.objects.filter(tenant=tenant).values_list("external_id", flat=True)),
        "memory_id": memory_ids,
        "entry_id": memory_ids,
        "proposal_id": memory_ids,
        "prefix": list(tenant.api_tokens.values_list("prefix", flat=True)),
        "tab": list(DASHBOARD_TABS),
    }
    urls = []
    for namespace, module in (
        ("tenant", tenant_dashboard_urls),
        ("tenant", memory_tenant_urls),
        ("dashboard", dashboard_urls),
    ):
        for pattern in module.urlpatterns:
            urls += [reverse(f"{namespace}:{pattern.name}", kwargs=kw) for kw in _filled(pattern, values)]
    return urls


def page_labels(page: str) -> list[str]:
    """The field labels of an admin change page."""
    return re.findall(r"<label[^>]*>([^<]*):</label>", page)


def _walk(client, person: Person, urls: list[str], canary: str) -> set[str]:
    """The URLs whose page shows the canary; every page answers without an error."""
    client.force_login(person)
    seen = set()
    for url in urls:
        response = client.get(url)
        assert response.status_code in OK_STATUSES, (url, response.status_code)
        if canary in response.content.decode():
            seen.add(url)
    return seen


def test_memory_text_is_shown_only_to_operators_with_the_memory_view_permission(client, tenant, maya, tom, planted):
    canary, ids, run = planted["canary"], planted["memories"], planted["run"]
    # Where the canary is kept: the memories, the run record, the stored answer; never the audit trail
    # (ids and counts only), the rejected proposal (a hash of its text) or the forget receipt (ids).
    assert canary in str(ConsolidationRun.objects.values_list("plan", "rejected", "error").get(pk=run.pk))
    assert canary in idempotency_record_get(slot="idem:walk")["body"]["text"]  # the database's or Redis's
    assert canary not in str(list(AuditRecord.objects.values_list("actor", "action", "target", "detail")))
    assert canary not in str(list(RejectedProposal.objects.values()))
    assert canary not in str(planted["receipt"])
    memory_ids = [*ids.values(), "no-such-memory"]
    urls = _admin_urls(memory_ids) + _dashboard_urls(tenant, memory_ids)
    assert reverse("admin:memory_consolidationrun_change", args=[run.pk]) in urls
    assert reverse("admin:tenants_memorysubject_memory", args=[maya.pk, ids["fact"]]) in urls

    without = _operator("ops-without@example.com", tenant, memory=False)
    assert _walk(client, without, urls, canary) == set()
    # Nor can a search tell them what the texts say, nor the confirmation of deleting everything listed.
    client.force_login(without)
    for model, _model_admin in admin.site._registry.items():
        opts = model._meta
        changelist = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        found = client.get(changelist, {"q": canary})
        assert found.status_code in (200, 403), opts.label
        if found.status_code == 200:
            assert found.context["cl"].result_count == 0, opts.label
        every = [str(pk) for pk in model._default_manager.values_list("pk", flat=True)]
        confirm = client.post(changelist, {"action": "delete_selected", "_selected_action": every})
        assert confirm.status_code in (200, 302, 403) and canary not in confirm.content.decode(), opts.label
    # The run's harmless fields stay: status, counts, model and tokens, times.
    page = client.get(reverse("admin:memory_consolidationrun_change", args=[run.pk])).content.decode()
    assert page_labels(page) == SUMMARY_LABELS
    shown = dict(re.findall(r'<label>([^<]*):</label>\s*<div class="readonly">([^<]*)</div>', page))
    numbers = ("Status", "Episodes", "Changes", "Dropped", "Llm model", "Prompt tokens", "Completion tokens")
    assert [shown[label] for label in numbers] == ["needs review", "1", "1 pending", "1", "fake-model", "812", "93"]
    assert not AuditRecord.objects.filter(actor="admin:ops-without@example.com").exists()

    with_view = _operator("ops-with@example.com", tenant, memory=True)
    seen = _walk(client, with_view, urls, canary)
    run_page = reverse("admin:memory_consolidationrun_change", args=[run.pk])
    assert run_page in seen
    client.force_login(with_view)
    labels = page_labels(client.get(run_page).content.decode())
    assert labels == [*SUMMARY_LABELS, "Error", "Changes (ids)", "Dropped by validation", "Plan"]
    browse = reverse("admin:tenants_memorysubject_memories", args=[maya.pk])
    assert {browse, f"{browse}?types=semantic", f"{browse}?types=episodic", f"{browse}?types=catalog"} <= seen
    for memory_id in ids.values():
        assert reverse("admin:tenants_memorysubject_memory", args=[maya.pk, memory_id]) in seen, memory_id
    # Only memory pages and the run's page show it — Maya's, and the catalog entry on Tom's (the tenant's
    # catalog is every subject's) — no other admin page, no dashboard page (they are not the tenant's admins).
    toms = reverse("admin:tenants_memorysubject_memories", args=[tom.pk])
    entry = reverse("admin:tenants_memorysubject_memory", args=[tom.pk, ids["catalog"]])
    others = {run_page, f"{toms}?types=catalog", entry, f"{entry}forget/"}
    assert {url for url in seen if not url.startswith(browse)} == others
    viewed = AuditRecord.objects.filter(actor="admin:ops-with@example.com", action="memory.run_view")
    assert list(viewed.values_list("target", "detail")) == [(f"{maya}:run:{run.pk}", {})] * 2


def test_a_tenant_admin_sees_run_errors_on_the_jobs_page_and_each_look_is_audited(client, tenant, maya, planted):
    """The tenant section's job runs list each run's error, which can quote memories: its owners and
    admins may read them (the support view of memories is theirs), and each look is audited."""
    canary, run = planted["canary"], planted["run"]
    quiet = ConsolidationRun.objects.create(tenant=tenant, subject=maya, status="done", episodes=2)
    admin_person = Person.objects.create_user(email="admin@tenant.test", password="walk-password-123")
    services.membership_add(tenant=tenant, email=admin_person.email, role="admin", actor="test")
    client.force_login(admin_person)
    jobs = reverse("tenant:jobs", args=[tenant.slug])
    listing = client.get(jobs)
    assert listing.status_code == 200 and canary in listing.content.decode()
    assert [r.pk for r in listing.context["page"]] == [quiet.pk, run.pk]
    looks = AuditRecord.objects.filter(actor="tenant-admin:admin@tenant.test", action="memory.runs_list")
    assert list(looks.values_list("target", "detail")) == [(tenant.slug, {"runs": [run.pk]})]
    # A page without an error shows no memory text: nothing to audit.
    assert client.get(jobs, {"status": "done"}).status_code == 200
    assert looks.count() == 1
