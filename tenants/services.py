"""Services that change tenancy: tenants, members, memory subjects and their API keys.

Every credential write follows mint → record → invalidate-the-old, inside one
database transaction holding the owner's row lock, so two rotations of the same
owner serialise. What a crash can leave behind (a minted key never recorded, an
old key recorded as invalid but still valid in the cluster) is repaired by
``credentials_reconcile``, which the beat schedule runs.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from atlas_site.elastic import keys as es_keys
from atlas_site.elastic.client import api_key_client_forget
from atlas_site.elastic.licence import isolation_ensure, isolation_mode
from atlas_site.errors import Conflict, NotFound, ValidationFailed

from .models import ApiKeyCredential, ApiToken, AuditRecord, Membership, MemorySubject, Person, Tenant
from .secrets import secret_encrypt

log = logging.getLogger(__name__)
ORPHAN_GRACE_SECONDS = 600
EXTERNAL_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:+-]{0,127}$")


def audit_record(
    *, tenant: Tenant | None, actor: str, action: str, target: str, detail: dict | None = None
) -> AuditRecord:
    return AuditRecord.objects.create(tenant=tenant, actor=actor, action=action, target=target, detail=detail or {})


# ------------------------------------------------------------------ credentials
def _key_name(kind: str, tenant: Tenant | None, subject: MemorySubject | None) -> str:
    parts = ["atlas", kind]
    if tenant is not None:
        parts.append(tenant.slug)
    if subject is not None:
        parts.append(subject.external_id)
    parts.append(timezone.now().strftime("%Y%m%dT%H%M%S"))
    return "-".join(parts)[:256]


def _role_for(kind: str, tenant: Tenant | None, subject: MemorySubject | None) -> dict:
    if kind == ApiKeyCredential.Kind.TENANT:
        return es_keys.tenant_reader_role(tenant_id=str(tenant.es_id))
    if kind == ApiKeyCredential.Kind.SUBJECT:
        return es_keys.subject_reader_role(tenant_id=str(tenant.es_id), user_id=str(subject.es_id))
    if kind == ApiKeyCredential.Kind.WRITER:
        return es_keys.writer_role()
    if kind == ApiKeyCredential.Kind.READER:
        return es_keys.shared_reader_role()
    raise ValueError(f"unknown credential kind {kind!r}")


def _credential_mint(
    *, kind: str, tenant: Tenant | None = None, subject: MemorySubject | None = None
) -> ApiKeyCredential:
    """Mint a key in the cluster and record it; if recording fails, the key is invalidated again."""
    metadata = {"kind": kind}
    if tenant is not None:
        metadata["tenant_id"] = str(tenant.es_id)
    if subject is not None:
        metadata["user_id"] = str(subject.es_id)
    minted = es_keys.api_key_mint(
        name=_key_name(kind, tenant, subject), role_descriptors=_role_for(kind, tenant, subject), metadata=metadata
    )
    try:
        return ApiKeyCredential.objects.create(
            kind=kind,
            tenant=tenant,
            subject=subject,
            es_key_id=minted.id,
            es_key_name=minted.name,
            secret_encrypted=secret_encrypt(minted.encoded),
        )
    except Exception:
        es_keys.api_keys_invalidate(ids=[minted.id])
        raise


def _active_credentials(*, kind: str, tenant: Tenant | None, subject: MemorySubject | None):
    return ApiKeyCredential.objects.select_for_update().filter(
        kind=kind, tenant=tenant, subject=subject, invalidated_at__isnull=True
    )


def _credentials_invalidate(credentials: list[ApiKeyCredential], *, when: datetime) -> list[str]:
    ids = [c.es_key_id for c in credentials]
    ApiKeyCredential.objects.filter(pk__in=[c.pk for c in credentials]).update(invalidated_at=when)
    # Invalidate in the cluster before the transaction commits: if the cluster
    # refuses, nothing is recorded and the old key stays the active one.
    es_keys.api_keys_invalidate(ids=ids)
    for key_id in ids:
        api_key_client_forget(key_id=key_id)
    return ids


def _owner(
    tenant: Tenant | None, subject: MemorySubject | None, shared_kind: str = ApiKeyCredential.Kind.WRITER
) -> tuple[str, Tenant | None, MemorySubject | None]:
    if subject is not None:
        return ApiKeyCredential.Kind.SUBJECT, subject.tenant, subject
    if tenant is not None:
        return ApiKeyCredential.Kind.TENANT, tenant, None
    return shared_kind, None, None


def _lock_owner(tenant: Tenant | None, subject: MemorySubject | None) -> None:
    if subject is not None:
        MemorySubject.objects.select_for_update().get(pk=subject.pk)
    elif tenant is not None:
        Tenant.objects.select_for_update().get(pk=tenant.pk)


def credential_rotate(
    *,
    actor: str,
    tenant: Tenant | None = None,
    subject: MemorySubject | None = None,
    shared_kind: str = ApiKeyCredential.Kind.WRITER,
) -> ApiKeyCredential:
    """Mint a new key for the owner (a subject, a tenant, or — with neither — the shared writer or
    reader), then invalidate the old.

    The new key is recorded before the old one is invalidated, so readers never
    find the owner without a working key.
    """
    kind, tenant, subject = _owner(tenant, subject, shared_kind)
    if kind in (ApiKeyCredential.Kind.TENANT, ApiKeyCredential.Kind.SUBJECT) and isolation_mode() != "dls":
        raise ValidationFailed("per-tenant and per-subject keys only exist in ATLAS_ISOLATION_MODE=dls")
    if tenant is not None and not tenant.is_active:
        raise ValidationFailed(f"tenant {tenant.slug} is deactivated; its keys cannot be rotated")
    if subject is not None and not subject.is_active:
        raise ValidationFailed(f"subject {subject} is deactivated; its keys cannot be rotated")
    with transaction.atomic():
        _lock_owner(tenant, subject)
        old = list(_active_credentials(kind=kind, tenant=tenant, subject=subject))
        new = _credential_mint(kind=kind, tenant=tenant, subject=subject)
        invalidated = _credentials_invalidate(old, when=timezone.now()) if old else []
        audit_record(
            tenant=tenant,
            actor=actor,
            action="credential.rotate",
            target=str(subject or tenant or "writer"),
            detail={"kind": kind, "new_key_id": new.es_key_id, "invalidated_key_ids": invalidated},
        )
    log.info("rotated %s key for %s: new key id %s", kind, subject or tenant or "writer", new.es_key_id)
    return new


def credential_revoke(*, actor: str, tenant: Tenant | None = None, subject: MemorySubject | None = None) -> list[str]:
    """Invalidate every active key of the owner; returns the invalidated key ids."""
    kind, tenant, subject = _owner(tenant, subject)
    with transaction.atomic():
        _lock_owner(tenant, subject)
        active = list(_active_credentials(kind=kind, tenant=tenant, subject=subject))
        ids = _credentials_invalidate(active, when=timezone.now()) if active else []
        audit_record(
            tenant=tenant,
            actor=actor,
            action="credential.revoke",
            target=str(subject or tenant or "writer"),
            detail={"kind": kind, "invalidated_key_ids": ids},
        )
    return ids


def shared_credential_ensure(*, kind: str, actor: str) -> ApiKeyCredential:
    """The service writer key (or app-filter mode's shared reader): minted once, reused after — and
    replaced when its role is no longer the one the code defines (the writer lost ``write``'s by-query
    actions; an older deployment's key is rotated at the next bootstrap)."""
    with transaction.atomic():
        existing = _active_credentials(kind=kind, tenant=None, subject=None).first()
        role = _role_for(kind, None, None)
        if existing is not None and es_keys.api_key_is_valid(key_id=existing.es_key_id, role_descriptors=role):
            return existing
    return credential_rotate(actor=actor, shared_kind=kind)


# ---------------------------------------------------------------------- tenants
def _validate_slug(slug: str) -> str:
    if not isinstance(slug, str) or not slug:
        raise ValidationFailed("a tenant slug is required", field="slug")
    if len(slug) > 50:
        raise ValidationFailed("a tenant slug has at most 50 characters", field="slug")
    if slugify(slug) != slug:
        raise ValidationFailed(
            f"'{slug}' is not a valid slug: use lowercase letters, digits, hyphens and underscores", field="slug"
        )
    return slug


def _validate_name(name: str, *, what: str, max_length: int = 200) -> str:
    name = (name or "").strip()
    if not name:
        raise ValidationFailed(f"a {what} name is required", field="name")
    if len(name) > max_length:
        raise ValidationFailed(f"a {what} name has at most {max_length} characters", field="name")
    return name


def tenant_create(*, slug: str, name: str, actor: str) -> Tenant:
    slug = _validate_slug(slug)
    name = _validate_name(name, what="tenant")
    status = isolation_ensure()
    try:
        with transaction.atomic():
            tenant = Tenant.objects.create(slug=slug, name=name)
            if status.mode == "dls":
                _credential_mint(kind=ApiKeyCredential.Kind.TENANT, tenant=tenant)
            audit_record(tenant=tenant, actor=actor, action="tenant.create", target=slug)
    except IntegrityError:
        raise Conflict(f"a tenant with the slug '{slug}' already exists", field="slug") from None
    return tenant


def tenant_review_mode_set(*, tenant: Tenant, review_mode: str, actor: str) -> Tenant:
    """Set which writers' facts and playbooks wait for the person's review (Tenant.ReviewMode); audited.
    What is already pending stays pending: turning review off accepts nothing on anyone's behalf."""
    if review_mode not in Tenant.ReviewMode.values:
        raise ValidationFailed(f"review mode must be one of {', '.join(Tenant.ReviewMode.values)}", field="review_mode")
    return _tenant_setting_set(tenant=tenant, name="review_mode", value=review_mode, actor=actor)


def _tenant_setting_set(*, tenant: Tenant, name: str, value: Any, actor: str) -> Tenant:
    """Set one of the tenant's settings under a row lock; audited as ``tenant.<name>`` when it changed."""
    with transaction.atomic():
        tenant = Tenant.objects.select_for_update().get(pk=tenant.pk)
        before = getattr(tenant, name)
        if before != value:
            setattr(tenant, name, value)
            tenant.save(update_fields=[name])
            audit_record(
                tenant=tenant,
                actor=actor,
                action=f"tenant.{name}",
                target=tenant.slug,
                detail={"from": before, "to": value},
            )
    return tenant


def tenant_consolidation_merge_scopes_set(*, tenant: Tenant, merge: bool, actor: str) -> Tenant:
    """Let consolidation distil one fact from episodes of different scopes, or not (the default); audited."""
    if not isinstance(merge, bool):
        raise ValidationFailed("consolidation_merge_scopes is true or false", field="consolidation_merge_scopes")
    return _tenant_setting_set(tenant=tenant, name="consolidation_merge_scopes", value=merge, actor=actor)


def tenant_deactivate(*, tenant: Tenant, actor: str) -> Tenant:
    """Deactivate a tenant and revoke its key, every subject's key and every API token. Idempotent."""
    with transaction.atomic():
        tenant = Tenant.objects.select_for_update().get(pk=tenant.pk)
        for subject in tenant.subjects.filter(is_active=True):
            _subject_deactivate_locked(subject=subject, actor=actor)
        credential_revoke(actor=actor, tenant=tenant)
        ApiToken.objects.filter(tenant=tenant, revoked_at__isnull=True).update(revoked_at=timezone.now())
        if tenant.is_active:
            tenant.is_active = False
            tenant.deactivated_at = timezone.now()
            tenant.save(update_fields=["is_active", "deactivated_at"])
            audit_record(tenant=tenant, actor=actor, action="tenant.deactivate", target=tenant.slug)
    return tenant


def membership_add(*, tenant: Tenant, email: str, role: str, actor: str) -> Membership:
    if role not in Membership.Role.values:
        raise ValidationFailed(f"role must be one of {', '.join(Membership.Role.values)}, not '{role}'", field="role")
    email = (email or "").strip().lower()
    try:
        person = Person.objects.get(email=email)
    except Person.DoesNotExist:
        raise NotFound(f"no person with the email '{email}'; they must sign up first", field="email") from None
    with transaction.atomic():
        membership, created = Membership.objects.select_for_update().get_or_create(
            person=person, tenant=tenant, defaults={"role": role}
        )
        if not created and membership.role != role:
            membership.role = role
            membership.save(update_fields=["role"])
        audit_record(tenant=tenant, actor=actor, action="membership.set", target=email, detail={"role": role})
    return membership


def membership_role_set(*, tenant: Tenant, email: str, role: str, by: Membership, actor: str) -> Membership:
    """A tenant admin adds a member or changes a role. Admins manage members and admins; only an owner
    may make an owner or change an owner's role, and the tenant always keeps one owner."""
    if by.tenant_id != tenant.pk or by.role not in (Membership.Role.OWNER, Membership.Role.ADMIN):
        raise NotFound(f"no tenant '{tenant.slug}'")
    existing = Membership.objects.filter(tenant=tenant, person__email=(email or "").strip().lower()).first()
    touches_owner = role == Membership.Role.OWNER or (existing is not None and existing.role == Membership.Role.OWNER)
    if touches_owner and by.role != Membership.Role.OWNER:
        raise ValidationFailed("only an owner may make an owner or change an owner's role", field="role")
    if existing is not None and existing.role == Membership.Role.OWNER and role != Membership.Role.OWNER:
        if not Membership.objects.filter(tenant=tenant, role=Membership.Role.OWNER).exclude(pk=existing.pk).exists():
            raise ValidationFailed("a tenant keeps at least one owner: make someone else owner first", field="role")
    return membership_add(tenant=tenant, email=email, role=role, actor=actor)


def membership_remove(*, tenant: Tenant, email: str, actor: str, by: Membership | None = None) -> None:
    """Remove a person from ``tenant``: their membership goes, the tenant's subjects linked to them are
    unlinked and the personal tokens they made in the tenant are revoked — at once, each audited.

    ``by`` is the tenant admin asking (the tenant section): admins remove members and admins, only an
    owner removes an owner, and the tenant keeps one owner. Without it (an operator) only the last rule
    is waived. The tenant's service tokens the person issued stay: they are the tenant's (its agents use
    them), and the owner revokes them in the tenant section; the audit record lists their prefixes.
    """
    email = (email or "").strip().lower()
    if by is not None and (by.tenant_id != tenant.pk or by.role not in (Membership.Role.OWNER, Membership.Role.ADMIN)):
        raise NotFound(f"no tenant '{tenant.slug}'")
    with transaction.atomic():
        membership = (
            Membership.objects.select_for_update()
            .select_related("person")
            .filter(tenant=tenant, person__email__iexact=email)
        ).first()
        if membership is None:
            raise NotFound(f"'{email}' is not a member of {tenant.slug}", field="email")
        if by is not None and membership.role == Membership.Role.OWNER:
            if by.role != Membership.Role.OWNER:
                raise ValidationFailed("only an owner may remove an owner", field="email")
            if (
                not Membership.objects.filter(tenant=tenant, role=Membership.Role.OWNER)
                .exclude(pk=membership.pk)
                .exists()
            ):
                raise ValidationFailed(
                    "a tenant keeps at least one owner: make someone else owner first", field="email"
                )
        person = membership.person
        membership.delete()
        for subject in (
            MemorySubject.objects.select_for_update().select_related("tenant").filter(tenant=tenant, person=person)
        ):
            _subject_person_set_locked(subject=subject, person=None, actor=actor, reason="membership.remove")
        revoked = _personal_tokens_revoke(person_id=person.pk, tenant=tenant, actor=actor, reason="membership.remove")
        service_tokens = list(
            ApiToken.objects.filter(
                tenant=tenant, kind=ApiToken.Kind.TENANT, revoked_at__isnull=True, created_by__endswith=f":{email}"
            ).values_list("prefix", flat=True)
        )
        audit_record(
            tenant=tenant,
            actor=actor,
            action="membership.remove",
            target=email,
            detail={"role": membership.role, "revoked_tokens": revoked, "service_tokens_kept": service_tokens},
        )


def person_deactivate(*, person: Person, actor: str) -> Person:
    """Deactivate a person: they can no longer log in (their sessions end at their next request) and
    every personal token they made is revoked at once, each audited. Their subject links stay, unused
    while they are inactive; reactivating them brings no token back. Idempotent."""
    with transaction.atomic():
        person = Person.objects.select_for_update().get(pk=person.pk)
        if person.is_active:
            person.is_active = False
            person.save(update_fields=["is_active"])
            audit_record(tenant=None, actor=actor, action="person.deactivate", target=person.email)
        _personal_tokens_revoke(person_id=person.pk, actor=actor, reason="person.deactivate")
    return person


def person_delete(*, person: Person, actor: str) -> None:
    """Delete a person: removed from each tenant and unlinked from each subject first (audited, their
    personal tokens revoked), so nothing of theirs is left working or unexplained."""
    with transaction.atomic():
        person = Person.objects.select_for_update().get(pk=person.pk)
        for membership in Membership.objects.filter(person=person).select_related("tenant"):
            membership_remove(tenant=membership.tenant, email=person.email, actor=actor)
        for subject in MemorySubject.objects.select_for_update().select_related("tenant").filter(person=person):
            _subject_person_set_locked(subject=subject, person=None, actor=actor, reason="person.delete")
        _personal_tokens_revoke(person_id=person.pk, actor=actor, reason="person.delete")
        audit_record(tenant=None, actor=actor, action="person.delete", target=person.email)
        person.delete()


# --------------------------------------------------------------------- subjects
def subject_create(
    *, tenant: Tenant, external_id: str, actor: str, display_name: str = "", person: Person | None = None
) -> MemorySubject:
    if not isinstance(external_id, str) or not EXTERNAL_ID_PATTERN.match(external_id):
        raise ValidationFailed(
            "an external id is 1-128 characters: letters, digits and . _ @ : + - (not starting with a symbol)",
            field="external_id",
        )
    if len(display_name) > 200:
        raise ValidationFailed("a display name has at most 200 characters", field="display_name")
    if person is not None and not person.is_active:
        raise NotFound(f"no person with the email '{person.email}'; they must sign up first", field="email")
    status = isolation_ensure()
    try:
        with transaction.atomic():
            # Re-read under lock: a concurrent deactivation must win, not be raced past.
            tenant = Tenant.objects.select_for_update().get(pk=tenant.pk)
            if not tenant.is_active:
                raise ValidationFailed(f"tenant {tenant.slug} is deactivated", field="tenant")
            subject = MemorySubject.objects.create(
                tenant=tenant, external_id=external_id, display_name=display_name, person=person
            )
            if status.mode == "dls":
                _credential_mint(kind=ApiKeyCredential.Kind.SUBJECT, tenant=tenant, subject=subject)
            audit_record(tenant=tenant, actor=actor, action="subject.create", target=str(subject))
            if person is not None:
                audit_record(
                    tenant=tenant,
                    actor=actor,
                    action="subject.link",
                    target=str(subject),
                    detail={"email": person.email},
                )
    except IntegrityError:
        raise Conflict(f"tenant {tenant.slug} already has a subject '{external_id}'", field="external_id") from None
    return subject


def subject_person_link(*, subject: MemorySubject, email: str | None, actor: str) -> MemorySubject:
    """Link the person who logs in as ``subject`` (their dashboard shows its memories), by email; an empty
    email unlinks. The person must have signed up already; a subject has at most one person."""
    email = (email or "").strip().lower()
    person = None
    if email:
        person = Person.objects.filter(email=email, is_active=True).first()
        if person is None:
            raise NotFound(f"no person with the email '{email}'; they must sign up first", field="email")
    return subject_person_set(subject=subject, person=person, actor=actor)


def subject_person_set(
    *, subject: MemorySubject, person: Person | None, actor: str, reason: str | None = None
) -> MemorySubject:
    """Make ``person`` (None: nobody) the one who logs in as ``subject`` — the only way a link changes.

    Each link and each unlink is one audit record; the person who loses the subject (unlinked, or
    replaced by another) loses at once the personal tokens they made for it, each revocation audited.
    Who may call this is the interface's decision: a tenant's owner or admin, an operator holding the
    memory permissions, or the command line.
    """
    if person is not None and not person.is_active:
        raise NotFound(f"no person with the email '{person.email}'; they must sign up first", field="email")
    with transaction.atomic():
        subject = MemorySubject.objects.select_for_update().select_related("tenant").get(pk=subject.pk)
        _subject_person_set_locked(subject=subject, person=person, actor=actor, reason=reason)
    return subject


def _subject_person_set_locked(
    *, subject: MemorySubject, person: Person | None, actor: str, reason: str | None = None
) -> None:
    previous_id = subject.person_id
    if previous_id == (person.pk if person else None):
        return
    if previous_id is not None:
        old_email = Person.objects.filter(pk=previous_id).values_list("email", flat=True).first() or ""
        detail = {"email": old_email, **({"reason": reason} if reason else {})}
        audit_record(tenant=subject.tenant, actor=actor, action="subject.unlink", target=str(subject), detail=detail)
    subject.person = person
    subject.save(update_fields=["person"])
    if person is not None:
        detail = {"email": person.email, **({"reason": reason} if reason else {})}
        audit_record(tenant=subject.tenant, actor=actor, action="subject.link", target=str(subject), detail=detail)
    if previous_id is not None:
        _personal_tokens_revoke(person_id=previous_id, subject=subject, actor=actor, reason="subject.unlink")


def _personal_tokens_revoke(
    *, person_id: int, actor: str, reason: str, subject: MemorySubject | None = None, tenant: Tenant | None = None
) -> list[str]:
    """Revoke the active personal tokens the person made (for ``subject``, in ``tenant``, or all of
    them); one ``token.revoke`` audit record each, naming why. Returns their prefixes."""
    found = ApiToken.objects.filter(person_id=person_id, revoked_at__isnull=True)
    if subject is not None:
        found = found.filter(subject=subject)
    if tenant is not None:
        found = found.filter(tenant=tenant)
    revoked = []
    for token in found.select_related("tenant", "subject"):
        # Conditional, like token_revoke: a concurrent revocation is not audited twice.
        if ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now()):
            audit_record(
                tenant=token.tenant,
                actor=actor,
                action="token.revoke",
                target=str(token.subject),
                detail={"prefix": token.prefix, "name": token.name, "reason": reason},
            )
            revoked.append(token.prefix)
    return revoked


def _subject_deactivate_locked(*, subject: MemorySubject, actor: str) -> None:
    credential_revoke(actor=actor, subject=subject)
    ApiToken.objects.filter(subject=subject, revoked_at__isnull=True).update(revoked_at=timezone.now())
    if subject.is_active:
        subject.is_active = False
        subject.deactivated_at = timezone.now()
        subject.save(update_fields=["is_active", "deactivated_at"])
        audit_record(tenant=subject.tenant, actor=actor, action="subject.deactivate", target=str(subject))


def subject_deactivate(*, subject: MemorySubject, actor: str) -> MemorySubject:
    """Deactivate a subject and revoke its key and its API tokens. Idempotent."""
    with transaction.atomic():
        subject = MemorySubject.objects.select_for_update().select_related("tenant").get(pk=subject.pk)
        _subject_deactivate_locked(subject=subject, actor=actor)
    return subject


# ------------------------------------------------------------------- reconciler
def credentials_reconcile(*, actor: str = "reconciler") -> dict[str, list[str]]:
    """Repair what a crash between the cluster and the database can leave behind.

    - a managed key the database does not hold as active (minted, never recorded;
      or recorded invalid but still valid in the cluster) is invalidated;
    - an owner with several active rows keeps the newest;
    - an active row whose key the cluster no longer accepts is rotated.
    """
    report: dict[str, list[str]] = {"invalidated_orphans": [], "deduplicated": [], "replaced": []}
    managed = es_keys.api_keys_managed(active_only=True)
    cluster_active = {k["id"] for k in managed}
    # A key minted moments ago may belong to a rotation that has not committed yet.
    settled_before_ms = (timezone.now().timestamp() - ORPHAN_GRACE_SECONDS) * 1000
    settled = {k["id"] for k in managed if k["creation"] < settled_before_ms}
    db_active = set(ApiKeyCredential.objects.filter(invalidated_at__isnull=True).values_list("es_key_id", flat=True))
    orphans = sorted(settled - db_active)
    if orphans:
        # Re-read: a rotation may have recorded one of them since we listed.
        recorded = set(
            ApiKeyCredential.objects.filter(es_key_id__in=orphans, invalidated_at__isnull=True).values_list(
                "es_key_id", flat=True
            )
        )
        orphans = [k for k in orphans if k not in recorded]
        report["invalidated_orphans"] = es_keys.api_keys_invalidate(ids=orphans) if orphans else []
    owners: dict[tuple, list[ApiKeyCredential]] = {}
    for cred in ApiKeyCredential.objects.filter(invalidated_at__isnull=True).order_by("-created_at", "-id"):
        owners.setdefault((cred.kind, cred.tenant_id, cred.subject_id), []).append(cred)
    for (kind, _tenant_id, _subject_id), creds in owners.items():
        newest, stale = creds[0], creds[1:]
        if stale:
            with transaction.atomic():
                report["deduplicated"] += _credentials_invalidate(stale, when=timezone.now())
        if newest.es_key_id not in cluster_active:
            subject, tenant = newest.subject, newest.tenant
            if (subject and not subject.is_active) or (tenant and not tenant.is_active):
                continue
            replacement = credential_rotate(actor=actor, tenant=tenant, subject=subject, shared_kind=kind)
            report["replaced"].append(replacement.es_key_id)
    if any(report.values()):
        audit_record(tenant=None, actor=actor, action="credential.reconcile", target="cluster", detail=report)
    return report


def site_sync(*, using: str = "default", **_signal) -> None:
    """The django.contrib.sites row from ATLAS_SITE_NAME and ATLAS_PUBLIC_URL: allauth's e-mails name the
    site by it ("[Atlas Memory] Please Confirm Your Email Address"), not by Django's "example.com"."""
    from urllib.parse import urlsplit

    from django.contrib.sites.models import Site

    domain = urlsplit(settings.ATLAS_PUBLIC_URL).netloc.rsplit("@", 1)[-1]
    Site.objects.using(using).update_or_create(
        pk=settings.SITE_ID, defaults={"domain": domain, "name": settings.ATLAS_SITE_NAME}
    )
