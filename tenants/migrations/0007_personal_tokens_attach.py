"""Personal tokens name their person (issue 24, finding 3): fill ``ApiToken.person`` for the subject tokens
made in the dashboard (``created_by = "person:<email>"``); one whose person is gone, inactive or no longer
linked to its subject is revoked here (with an audit record), as the services now do at once.
"""

from django.db import migrations
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
                actor="migration:0007_personal_tokens_attach",
                action="token.revoke",
                target=f"{token.tenant.slug}/{token.subject.external_id}",
                detail={"prefix": token.prefix, "name": token.name, "reason": "person.not_linked"},
            )


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0006_apitoken_person"),
    ]

    operations = [
        migrations.RunPython(personal_tokens_attach, migrations.RunPython.noop),
    ]
