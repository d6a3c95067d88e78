"""Personal tokens name their person (issue 24, finding 3).

A subject token made in the dashboard was recorded with ``created_by = "person:<email>"`` only, so
nothing tied it to the person: relinking the subject left it working for the person who made it. This
adds ``ApiToken.person``; 0007 fills it for those tokens (a migration of its own: PostgreSQL will not
build this one's index while rows changed in the same transaction have pending trigger events).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


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
    ]
