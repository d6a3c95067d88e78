"""The operators' memory pages in the Django admin: a subject's memories (Elasticsearch documents, not models)
browsed, searched, opened, edited, forgotten and followed along their chains, under the subject's admin URL.

:class:`SubjectWithMemoriesAdmin` (tenants' subject admin, which knows nothing of memories, registered in
its place by memory/admin.py) mounts :func:`memory_admin_urls`. Every view runs through
``admin_site.admin_view`` (staff only) and checks the Django permission it needs —
``tenants.view_memory``, ``tenants.change_memory``, ``tenants.forget_memory`` (declared on
``MemorySubject``, the model memories belong to) — with :func:`memory_permitted`, the check every other
admin page that shows memory text asks too, then calls :mod:`memory.on_behalf`, which reads with the
subject's own key and audits.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse

from atlas_site.errors import AtlasError, NotFound
from memory import on_behalf
from memory.services.forget import receipt_summary
from memory.validation import MAX_TEXT_CHARS
from tenants.admin import MemorySubjectAdmin
from tenants.models import MemorySubject
from tenants.permissions import CHANGE, FORGET, VIEW

URL_NAMES = {
    "browse": "tenants_memorysubject_memories",
    "memory": "tenants_memorysubject_memory",
    "chain": "tenants_memorysubject_memory_chain",
    "forget": "tenants_memorysubject_memory_forget",
}


def _actor(request: HttpRequest) -> str:
    return f"admin:{request.user.email}"


def memory_permitted(request: HttpRequest, permission: str = VIEW) -> bool:
    """Whether the operator holds the memory permission: the one check of every admin page that shows
    memory text (these pages, the consolidation runs' plans and dropped items) or changes memories."""
    return request.user.has_perm(permission)


def _link(subject: MemorySubject) -> Callable[..., str]:
    def link(view: str, memory_id: str | None = None) -> str:
        args = [subject.pk] if memory_id is None else [subject.pk, memory_id]
        return reverse(f"admin:{URL_NAMES[view]}", args=args)

    return link


class MemoryAdminViews:
    def __init__(self, model_admin: admin.ModelAdmin) -> None:
        self.model_admin = model_admin
        self.site = model_admin.admin_site

    def urls(self) -> list[URLPattern]:
        wrap = self.site.admin_view
        return [
            path("<int:subject_pk>/memories/", wrap(self.browse), name=URL_NAMES["browse"]),
            path("<int:subject_pk>/memories/<str:memory_id>/", wrap(self.memory), name=URL_NAMES["memory"]),
            path("<int:subject_pk>/memories/<str:memory_id>/chain/", wrap(self.chain), name=URL_NAMES["chain"]),
            path("<int:subject_pk>/memories/<str:memory_id>/forget/", wrap(self.forget), name=URL_NAMES["forget"]),
        ]

    # ------------------------------------------------------------------ helpers
    def _subject(self, request: HttpRequest, subject_pk: int, permission: str) -> MemorySubject:
        if not memory_permitted(request, permission):
            raise PermissionDenied(f"you need the permission {permission}")
        subject = MemorySubject.objects.select_related("tenant", "person").filter(pk=subject_pk).first()
        if subject is None:
            raise NotFound(f"no subject {subject_pk}")
        return subject

    def _render(
        self,
        request: HttpRequest,
        template: str,
        subject: MemorySubject | None,
        title: str,
        status: int = 200,
        **context,
    ) -> TemplateResponse:
        opts = MemorySubject._meta
        return TemplateResponse(
            request,
            f"admin/memory/{template}",
            {
                **self.site.each_context(request),
                "opts": opts,
                "subject": subject,
                "title": title,
                "subject_url": reverse("admin:tenants_memorysubject_change", args=[subject.pk]) if subject else None,
                "browse_url": _link(subject)("browse") if subject else None,
                "can_change": memory_permitted(request, CHANGE),
                "can_forget": memory_permitted(request, FORGET),
                **context,
            },
            status=status,
        )

    def _failed(self, request: HttpRequest, subject: MemorySubject | None, err: AtlasError) -> HttpResponse:
        return self._render(request, "error.html", subject, "Cannot show this", status=err.status, error=err.message)

    # -------------------------------------------------------------------- views
    def browse(self, request: HttpRequest, subject_pk: int) -> HttpResponse:
        subject = None
        try:
            subject = self._subject(request, subject_pk, VIEW)
            if (renamed := on_behalf.query_renamed(request.GET)) is not None:
                return HttpResponsePermanentRedirect(f"{request.path}?{renamed}")
            context = on_behalf.browse(subject=subject, query=request.GET, actor=_actor(request), link=_link(subject))
        except AtlasError as err:
            return self._failed(request, subject, err)
        return self._render(request, "browse.html", subject, f"Memories of {subject}", **context)

    def memory(self, request: HttpRequest, subject_pk: int, memory_id: str) -> HttpResponse:
        subject = None
        try:
            subject = self._subject(request, subject_pk, CHANGE if request.method == "POST" else VIEW)
            if request.method == "POST":
                edited = on_behalf.edit(
                    subject=subject, memory_id=memory_id, form=request.POST, actor=_actor(request), editor=request.user
                )
                marked = ", marked as wrong" if edited.get("contradiction") == "harsh" else ""
                messages.success(request, f"Saved as a new version; the old one stays in the chain{marked}.")
                return redirect(_link(subject)("memory", memory_id=edited["id"]))
            context = on_behalf.detail(subject=subject, memory_id=memory_id, actor=_actor(request), link=_link(subject))
        except AtlasError as err:
            return self._failed(request, subject, err)
        links = _link(subject)
        context.update(
            chain_url=links("chain", memory_id=memory_id),
            forget_url=links("forget", memory_id=memory_id),
            contradiction_choices=on_behalf.CONTRADICTION_CHOICES,
            text_max_chars=MAX_TEXT_CHARS,  # the service's limit, so the form refuses what it would
        )
        return self._render(request, "memory.html", subject, f"Memory {context['memory']['id']}", **context)

    def chain(self, request: HttpRequest, subject_pk: int, memory_id: str) -> HttpResponse:
        subject = None
        try:
            subject = self._subject(request, subject_pk, VIEW)
            context = on_behalf.chain(subject=subject, memory_id=memory_id, actor=_actor(request), link=_link(subject))
        except AtlasError as err:
            return self._failed(request, subject, err)
        return self._render(request, "chain.html", subject, "Supersession chain", **context)

    def forget(self, request: HttpRequest, subject_pk: int, memory_id: str) -> HttpResponse:
        subject = None
        try:
            subject = self._subject(request, subject_pk, FORGET)
            if request.method == "POST":
                result = on_behalf.forget_one(subject=subject, memory_id=memory_id, actor=_actor(request))
                messages.success(
                    request, f"Memory {memory_id} is forgotten. Removed — {receipt_summary(result['receipt'])}."
                )
                return redirect(_link(subject)("browse"))
            context = on_behalf.detail(subject=subject, memory_id=memory_id, actor=_actor(request), link=_link(subject))
        except AtlasError as err:
            return self._failed(request, subject, err)
        return self._render(request, "forget.html", subject, "Forget this memory?", **context)


def memory_admin_urls(model_admin: admin.ModelAdmin) -> list[URLPattern]:
    return MemoryAdminViews(model_admin).urls()


class SubjectWithMemoriesAdmin(MemorySubjectAdmin):
    """The subject's admin with the subject's memory pages under its URLs."""

    def get_urls(self) -> list[URLPattern]:
        return memory_admin_urls(self) + super().get_urls()
