"""Who a dashboard request acts for — decided once; its errors become pages (atlas_site.error_pages).

The subject is never taken from a URL or a form: it is one of the logged-in person's own active
subjects, the one they picked (kept in the session and re-checked on every request, so a subject
unlinked or deactivated since is dropped at once), or their only one.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from atlas_site.error_pages import error_page
from atlas_site.errors import AtlasError, NotFound
from tenants.models import MemorySubject
from tenants.selectors import person_subjects

SESSION_KEY = "dashboard_subject"


def subject_choose(request: HttpRequest, *, subject_id: object) -> MemorySubject:
    """Make one of the person's own subjects the one the dashboard shows; any other id is "not found"."""
    for subject in person_subjects(person=request.user):
        if str(subject.pk) == str(subject_id):
            request.session[SESSION_KEY] = subject.pk
            return subject
    raise NotFound("no such memory profile for your account", field="subject")


def subject_current(request: HttpRequest) -> tuple[MemorySubject | None, list[MemorySubject]]:
    """(the subject this request acts for or None when the person must pick one, all of theirs)."""
    subjects = person_subjects(person=request.user)
    chosen = request.session.get(SESSION_KEY)
    for subject in subjects:
        if subject.pk == chosen:
            return subject, subjects
    if chosen is not None:
        del request.session[SESSION_KEY]
    return (subjects[0] if len(subjects) == 1 else None), subjects


def actor_of(request: HttpRequest) -> str:
    """How the audit trail names a person acting in the dashboard."""
    return f"person:{request.user.email}"


def dashboard_view(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Log-in required; resolves ``request.subject`` (or sends the person to pick one) and maps AtlasError."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        subject, subjects = subject_current(request)
        request.subjects = subjects
        if subject is None:
            return redirect("dashboard:subjects") if subjects else render(request, "dashboard/no_subject.html")
        request.subject = subject
        try:
            return view(request, *args, **kwargs)
        except AtlasError as error:
            return error_page(request, error)

    return wrapped
