"""Personal tokens name their person (issue 24, finding 3).

A subject token made in the dashboard was recorded with ``created_by = "person:<email>"`` only, so
nothing tied it to the person: relinking the subject left it working for the person who made it. This
adds ``ApiToken.person`` and fills it for those tokens; one whose person is gone, inactive or no longer
linked to its subject is revoked here (with an audit record), as the services now do at once.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.utils import timezone

DASHBOARD_ACTOR = "person:"


def personal_tokens_attach(apps, schema_editor):
    ApiToken = apps.get_model("tenants", "ApiToken")
    AuditRecord = apps.get_model("tenants", "AuditRecord")
    Person = apps.get_model("tenants", "Person")
    now = timezone.now()
    personal = ApiToken.objects.filter(kind="subject", created_by__startswith=DASHBOARD_ACTOR).select_related(
        "subject", "tenant"
    )
    for token in personal:
        email = token.created_by[len(DASHBOARD_ACTOR) :]
        person = Person.objects.filter(email=email).first()
        if person is not None:
            token.person = person
            token.save(update_fields=["person"])
        still_theirs = person is not None and person.is_active and token.subject.person_id == person.pk
        if token.revoked_at is None and not still_theirs:
            ApiToken.objects.filter(pk=token.pk).update(revoked_at=now)
            AuditRecord.objects.create(
                tenant=token.tenant,
                actor="migration:0006_apitoken_person",
                action="token.revoke",
                target=f"{token.tenant.slug}/{token.subject.external_id}",
                detail={"prefix": token.prefix, "name": token.name, "reason": "person.not_linked"},
            )


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0005_tenant_episode_retention_days"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="person",
            field=models.ForeignKey(
                blank=True,
                help_text="Set on a personal token (made by the subject's own person): it works only while they "
                "are active and linked to the subject.",
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="personal_tokens",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddConstraint(
            model_name="apitoken",
            constraint=models.CheckConstraint(
                condition=models.Q(("person__isnull", True), ("kind", "subject"), _connector="OR"),
                name="api_token_person_only_on_subject_tokens",
            ),
        ),
        migrations.RunPython(personal_tokens_attach, migrations.RunPython.noop),
    ]
