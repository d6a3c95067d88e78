"""Operators' admin: tenants, people, memberships, subjects, credential status (never a secret).

Whatever hands a person a subject's memories — linking them to the subject, an owner or admin membership
(the tenant section), an API token (its secret is shown to whoever makes it) — needs the permissions the
admin's own memory pages need, and goes through the audited service; so does anything that hands out a
person's login or permissions (superuser only). Default-deny: a field is read-only unless allowed.
"""

from __future__ import annotations

from allauth.account.admin import EmailAddressAdmin
from allauth.account.models import EmailAddress
from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from atlas_site.errors import AtlasError

from . import services, tokens
from .models import ApiKeyCredential, ApiToken, AuditRecord, Membership, MemorySubject, Person, Tenant, UsageDay
from .permissions import CHANGE, FORGET, VIEW
from .usage import USAGE_COLUMNS, tenant_budgets_set

#: The budgets a tenant's page edits, saved through the audited service (tenants/usage.py).
BUDGET_FIELDS = ("llm_token_budget", "daily_write_quota")

# A link to a subject opens its memories in the dashboard (read, edit, forget, export): all three.
MEMORY_PERMISSIONS = (VIEW, CHANGE, FORGET)
SCOPE_PERMISSIONS = {
    ApiToken.Scope.READ: VIEW,
    ApiToken.Scope.WRITE: CHANGE,
    ApiToken.Scope.FORGET: FORGET,
    ApiToken.Scope.REVIEW: CHANGE,
}
# What makes a login or grants permissions: only a superuser changes these (for anyone else, own or not).
ACCOUNT_FIELDS = ("is_staff", "is_superuser", "groups", "user_permissions")


def _actor(request: HttpRequest) -> str:
    return f"admin:{request.user.email}"


def _may_hand_out_memories(request: HttpRequest) -> bool:
    return request.user.has_perms(MEMORY_PERMISSIONS)


def _run_per_object(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet, verb: str, fn) -> None:
    """Apply one service per selected object, reporting each failure as a message, not a 500."""
    done = 0
    for obj in queryset:
        try:
            fn(obj)
            done += 1
        except AtlasError as err:
            modeladmin.message_user(request, f"{obj}: {err.message}", level=messages.ERROR)
    if done:
        modeladmin.message_user(request, f"{verb} {done} of {queryset.count()}.", level=messages.SUCCESS)


def _memories_link(subject: MemorySubject) -> str:
    if subject.pk is None:
        return "—"
    url = reverse("admin:tenants_memorysubject_memories", args=[subject.pk])
    return format_html('<a href="{}">Memories of {}</a>', url, subject.external_id)


def _key_status(credential: ApiKeyCredential | None) -> str:
    if credential is None:
        return "no key"
    return f"{credential.es_key_id} (since {credential.created_at:%Y-%m-%d %H:%M})"


@admin.register(Person)
class PersonAdmin(UserAdmin):
    ordering = ["email"]
    list_display = ["email", "full_name", "is_staff", "is_active", "date_joined"]
    search_fields = ["email", "full_name"]
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Profile", {"fields": ("full_name",)}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")}),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),)

    def get_readonly_fields(self, request, obj=None):
        if request.user.is_superuser:
            return self.readonly_fields
        # Another person's e-mail is their login (and where their password reset goes).
        theirs = ["email"] if obj is not None and obj.pk != request.user.pk else []
        return [*self.readonly_fields, *ACCOUNT_FIELDS, *theirs]

    def user_change_password(self, request, id, form_url=""):
        if not request.user.is_superuser and str(id) != str(request.user.pk):
            raise PermissionDenied("only a superuser sets another person's password")
        return super().user_change_password(request, id, form_url)

    def save_model(self, request, obj: Person, form, change: bool) -> None:
        deactivating = change and "is_active" in form.changed_data and not obj.is_active
        if deactivating:
            obj.is_active = True  # the service deactivates, and revokes their personal tokens
        super().save_model(request, obj, form, change)
        if deactivating:
            services.person_deactivate(person=obj, actor=_actor(request))
            obj.is_active = False

    def get_deleted_objects(self, objs, request):
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        # Their personal tokens: revoked (audited) by person_delete, then deleted with them.
        perms_needed.discard(ApiToken._meta.verbose_name)
        return deleted, counts, perms_needed, protected

    def delete_model(self, request, obj: Person) -> None:
        services.person_delete(person=obj, actor=_actor(request))

    def delete_queryset(self, request, queryset) -> None:
        for person in queryset:
            services.person_delete(person=person, actor=_actor(request))


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    # A raw id input with the admin's lookup link, not select2's autocomplete: select2's combobox has no
    # accessible name (axe-core: aria-input-field-name, serious) and sets inline styles the site's
    # Content-Security-Policy blocks.
    raw_id_fields = ["person"]

    # An owner or admin membership opens the tenant section: every subject's memories, tokens, links.
    def has_add_permission(self, request, obj=None) -> bool:
        return super().has_add_permission(request, obj) and _may_hand_out_memories(request)

    def has_change_permission(self, request, obj=None) -> bool:
        return super().has_change_permission(request, obj) and _may_hand_out_memories(request)

    def has_delete_permission(self, request, obj=None) -> bool:
        return super().has_delete_permission(request, obj) and _may_hand_out_memories(request)


class SubjectInline(admin.TabularInline):
    model = MemorySubject
    extra = 0
    fields = ["external_id", "display_name", "person", "is_active", "memories"]
    readonly_fields = ["external_id", "person", "is_active", "memories"]  # link on the subject's own page
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False  # subjects are created through the subject page, which mints their key

    @admin.display(description="memories")
    def memories(self, obj: MemorySubject) -> str:
        return _memories_link(obj)


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = [
        "slug",
        "name",
        "is_active",
        "review_mode",
        "llm_token_budget",
        "daily_write_quota",
        "key",
        "created_at",
    ]
    list_filter = ["is_active", "review_mode"]
    search_fields = ["slug", "name"]
    # The flag is kept by writes and atlas_language_census; set by hand it could hide memories from a leg.
    readonly_fields = ["es_id", "is_active", "created_at", "deactivated_at", "key", "non_english_catalog"]
    inlines = [MembershipInline, SubjectInline]
    actions = ["rotate_key", "deactivate"]

    def get_readonly_fields(self, request, obj=None):
        return [*self.readonly_fields, "slug"] if obj else self.readonly_fields

    @admin.display(description="API key")
    def key(self, obj: Tenant) -> str:
        return _key_status(obj.credentials.filter(kind="tenant", invalidated_at__isnull=True).first())

    def save_model(self, request, obj: Tenant, form, change: bool) -> None:
        if change:
            obj.save(update_fields=["name"])
            if "review_mode" in form.changed_data:  # through the audited service
                services.tenant_review_mode_set(tenant=obj, review_mode=obj.review_mode, actor=_actor(request))
            if "consolidation_merge_scopes" in form.changed_data:
                services.tenant_consolidation_merge_scopes_set(
                    tenant=obj, merge=obj.consolidation_merge_scopes, actor=_actor(request)
                )
            budgets = {name: getattr(obj, name) for name in BUDGET_FIELDS if name in form.changed_data}
            if budgets:  # through the audited service too, from the stored row (obj holds the form's values)
                tenant_budgets_set(tenant=Tenant.objects.get(pk=obj.pk), actor=_actor(request), **budgets)
            return
        created = services.tenant_create(slug=obj.slug, name=obj.name, actor=_actor(request))
        if obj.review_mode != created.review_mode:
            created = services.tenant_review_mode_set(
                tenant=created, review_mode=obj.review_mode, actor=_actor(request)
            )
        if obj.consolidation_merge_scopes:
            created = services.tenant_consolidation_merge_scopes_set(tenant=created, merge=True, actor=_actor(request))
        budgets = {name: getattr(obj, name) for name in BUDGET_FIELDS if getattr(obj, name) is not None}
        if budgets:
            created = tenant_budgets_set(tenant=created, actor=_actor(request), **budgets)
        obj.pk, obj.es_id, obj.created_at = created.pk, created.es_id, created.created_at

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # deactivate instead: it revokes keys and keeps the audit trail

    def save_formset(self, request, form, formset, change: bool) -> None:
        if formset.model is Membership:
            self._memberships_save(request, form.instance, formset)
        elif formset.model is MemorySubject:
            for subject in formset.save(commit=False):
                subject.save(update_fields=["display_name"])  # the only field the rows edit
        else:
            super().save_formset(request, form, formset, change)

    def _memberships_save(self, request, tenant: Tenant, formset) -> None:
        """Every membership change through the audited services: a removal unlinks and revokes."""
        formset.save(commit=False)
        changed = [m for m, _fields in formset.changed_objects]
        if (formset.new_objects or changed or formset.deleted_objects) and not _may_hand_out_memories(request):
            raise PermissionDenied("changing a tenant's members needs the memory permissions")
        actor = _actor(request)
        for membership in formset.deleted_objects:
            services.membership_remove(tenant=tenant, email=membership.person.email, actor=actor)
        for membership, fields in formset.changed_objects:
            if "person" in fields:  # another person on the row: the first leaves, the second joins
                before = Membership.objects.select_related("person").get(pk=membership.pk)
                services.membership_remove(tenant=tenant, email=before.person.email, actor=actor)
        for membership in [*formset.new_objects, *changed]:
            services.membership_add(tenant=tenant, email=membership.person.email, role=membership.role, actor=actor)

    @admin.action(description="Rotate the tenant's API key")
    def rotate_key(self, request, queryset) -> None:
        _run_per_object(
            self, request, queryset, "Rotated", lambda t: services.credential_rotate(actor=_actor(request), tenant=t)
        )

    @admin.action(description="Deactivate (revokes the tenant's and its subjects' keys)")
    def deactivate(self, request, queryset) -> None:
        _run_per_object(
            self,
            request,
            queryset,
            "Deactivated",
            lambda t: services.tenant_deactivate(tenant=t, actor=_actor(request)),
        )


class MemorySubjectForm(forms.ModelForm):
    def clean_person(self):
        person = self.cleaned_data.get("person")
        if person is not None and not person.is_active:
            raise forms.ValidationError("choose an active person: this one is deactivated")
        return person


@admin.register(MemorySubject)
class MemorySubjectAdmin(admin.ModelAdmin):
    form = MemorySubjectForm
    # The memory pages are the row's first action: at 1,280 px a last column was cut off.
    list_display = ["external_id", "memories", "tenant", "display_name", "person", "is_active", "key"]
    list_filter = ["is_active", "tenant"]
    search_fields = ["external_id", "display_name", "tenant__slug"]
    raw_id_fields = ["person"]  # not select2's autocomplete: see MembershipInline
    readonly_fields = ["es_id", "is_active", "created_at", "deactivated_at", "key", "non_english_memories", "memories"]
    actions = ["rotate_key", "deactivate"]

    def get_readonly_fields(self, request, obj=None):
        fields = [*self.readonly_fields, "tenant", "external_id"] if obj else [*self.readonly_fields]
        # The person who logs in as this subject sees, edits, forgets and exports its memories.
        return fields if _may_hand_out_memories(request) else [*fields, "person"]

    @admin.display(description="memories")
    def memories(self, obj: MemorySubject) -> str:
        return _memories_link(obj)

    @admin.display(description="API key")
    def key(self, obj: MemorySubject) -> str:
        return _key_status(obj.credentials.filter(invalidated_at__isnull=True).first())

    def save_model(self, request, obj: MemorySubject, form, change: bool) -> None:
        person = form.cleaned_data.get("person")  # absent when the field is read-only
        if "person" in form.cleaned_data and not _may_hand_out_memories(request):
            raise PermissionDenied("linking a person needs the memory permissions")
        if change:
            obj.save(update_fields=["display_name"])
            if "person" in form.changed_data:
                services.subject_person_set(subject=obj, person=person, actor=_actor(request))
            return
        created = services.subject_create(
            tenant=obj.tenant,
            external_id=obj.external_id,
            display_name=obj.display_name,
            person=person,
            actor=_actor(request),
        )
        obj.pk, obj.es_id, obj.created_at = created.pk, created.es_id, created.created_at

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.action(description="Rotate the subject's API key")
    def rotate_key(self, request, queryset) -> None:
        _run_per_object(
            self, request, queryset, "Rotated", lambda s: services.credential_rotate(actor=_actor(request), subject=s)
        )

    @admin.action(description="Deactivate (revokes the subject's key)")
    def deactivate(self, request, queryset) -> None:
        _run_per_object(
            self,
            request,
            queryset,
            "Deactivated",
            lambda s: services.subject_deactivate(subject=s, actor=_actor(request)),
        )


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows the services keep: the admin shows them and changes nothing."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ApiKeyCredential)
class ApiKeyCredentialAdmin(ReadOnlyAdmin):
    """Status only: key id, owner, dates. The secret is never displayed, anywhere."""

    list_display = ["es_key_id", "kind", "tenant", "subject", "created_at", "invalidated_at", "status"]
    list_filter = ["kind", ("invalidated_at", admin.EmptyFieldListFilter)]
    search_fields = ["es_key_id", "es_key_name", "tenant__slug", "subject__external_id"]
    fields = ["es_key_id", "es_key_name", "kind", "tenant", "subject", "created_at", "invalidated_at", "status"]
    readonly_fields = fields

    @admin.display(description="status")
    def status(self, obj: ApiKeyCredential) -> str:
        return "valid" if obj.is_active else "invalidated"


class ApiTokenAddForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(
        choices=ApiToken.Scope.choices, widget=forms.CheckboxSelectMultiple, initial=["read", "write"]
    )

    class Meta:
        model = ApiToken
        fields = ["tenant", "subject", "name", "scopes", "expires_at"]
        help_texts = {"subject": "Leave empty for a tenant service token (it names the subject per call)."}

    user = None  # the operator asking: set by ApiTokenAdmin.get_form

    def clean(self):
        data = super().clean()
        needed = [SCOPE_PERMISSIONS[scope] for scope in data.get("scopes") or []]
        missing = [p for p in needed if self.user is None or not self.user.has_perm(p)]
        if missing:
            self.add_error("scopes", f"a token with these scopes needs the permission {', '.join(missing)}")
        tenant, subject = data.get("tenant"), data.get("subject")
        if tenant is not None and not tenant.is_active:
            self.add_error("tenant", "this tenant is deactivated")
        if subject is not None and (subject.tenant_id != getattr(tenant, "pk", None) or not subject.is_active):
            self.add_error("subject", "choose an active subject of the chosen tenant")
        return data


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens by prefix, owner, scopes and dates. A new token is shown once, in the message after saving."""

    list_display = [
        "prefix_shown",
        "name",
        "kind",
        "tenant",
        "subject",
        "scope_list",
        "expires_at",
        "last_used_at",
        "status",
    ]
    list_filter = ["kind", ("revoked_at", admin.EmptyFieldListFilter), "tenant"]
    search_fields = ["prefix", "name", "tenant__slug", "subject__external_id"]
    raw_id_fields = ["tenant", "subject"]  # not select2's autocomplete: see MembershipInline
    readonly = [
        "prefix_shown", "name", "kind", "tenant", "subject", "person", "scope_list", "created_at", "created_by"
    ]  # fmt: skip
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        # Its secret is shown to whoever makes it: a read token reads memories.
        return super().has_add_permission(request) and request.user.has_perm(VIEW)

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = ApiTokenAddForm
        form = super().get_form(request, obj, **kwargs)
        form.user = request.user  # modelform_factory made this class for this request alone
        return form

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["tenant", "subject", "name", "scopes", "expires_at"]
        return [*self.readonly, "expires_at", "last_used_at", "revoked_at", "status"]

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else [*self.readonly, "expires_at", "last_used_at", "revoked_at", "status"]

    @admin.display(description="token")
    def prefix_shown(self, obj: ApiToken) -> str:
        return f"atlas_{obj.prefix}_…"

    @admin.display(description="scopes")
    def scope_list(self, obj: ApiToken) -> str:
        return ",".join(obj.scopes)

    @admin.display(description="status")
    def status(self, obj: ApiToken) -> str:
        return "active" if obj.is_active else ("revoked" if obj.revoked_at else "expired")

    def save_model(self, request, obj: ApiToken, form, change: bool) -> None:
        if not all(request.user.has_perm(SCOPE_PERMISSIONS[s]) for s in form.cleaned_data["scopes"]):
            raise PermissionDenied("a token's scopes need the matching memory permissions")
        issued = tokens.token_create(
            tenant=form.cleaned_data["tenant"],
            subject=form.cleaned_data.get("subject"),
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            expires_at=form.cleaned_data.get("expires_at"),
            actor=_actor(request),
        )
        obj.pk = issued.token.pk
        self.message_user(
            request,
            f"Token (shown once, copy it now): {issued.secret} — MCP endpoint {settings.ATLAS_PUBLIC_URL.rstrip('/')}/mcp/",
            level=messages.WARNING,
        )

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # a token's grants never change; revoke it and issue another

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # revoke instead: the row stays for the audit trail

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset) -> None:
        _run_per_object(
            self, request, queryset, "Revoked", lambda t: tokens.token_revoke(token=t, actor=_actor(request))
        )


@admin.register(UsageDay)
class UsageDayAdmin(ReadOnlyAdmin):
    """The usage ledger, read only: its counters are kept by the services (tenants/usage.py)."""

    list_display = ["tenant", *USAGE_COLUMNS]
    list_filter = ["tenant"]
    # A search finds tenants by slug or name; without search fields the admin ignores the query and lists
    # every row, as if everything matched it.
    search_fields = ["tenant__slug", "tenant__name"]
    date_hierarchy = "day"


@admin.register(AuditRecord)
class AuditRecordAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "actor", "action", "target", "tenant"]
    list_filter = ["action"]
    search_fields = ["actor", "target"]


# Granting permissions (a group's) or another person's login (an e-mail address to log in or reset a password
# with) hands out whatever that person or group may see: superusers only. Removing an address stays with its
# delete permission (deleting a person removes theirs).
class SuperuserGrantsGroupAdmin(GroupAdmin):
    def has_add_permission(self, request) -> bool:
        return request.user.is_superuser

    def has_change_permission(self, request, obj=None) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None) -> bool:
        return request.user.is_superuser


class SuperuserEmailAddressAdmin(EmailAddressAdmin):
    def has_add_permission(self, request) -> bool:
        return request.user.is_superuser

    def has_change_permission(self, request, obj=None) -> bool:
        return request.user.is_superuser


admin.site.unregister(Group)
admin.site.register(Group, SuperuserGrantsGroupAdmin)
admin.site.unregister(EmailAddress)
admin.site.register(EmailAddress, SuperuserEmailAddressAdmin)
