from django.db import migrations, models

# Rows that exist before this migration get NULL ("not known": recall keeps searching the cross-lingual
# leg for them until atlas_language_census has looked); rows created after it start at False (nothing
# written yet). Hence the field is added with default None and only then given its default of False.


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="tenant",
            name="non_english_catalog",
            field=models.BooleanField(null=True, default=None),
        ),
        migrations.AddField(
            model_name="memorysubject",
            name="non_english_memories",
            field=models.BooleanField(null=True, default=None),
        ),
        migrations.AlterField(
            model_name="tenant",
            name="non_english_catalog",
            field=models.BooleanField(
                null=True,
                default=False,
                help_text="Whether some catalog entry does not read as English (unknown for entries written "
                "before this was kept: atlas_language_census fills it). While no memory recall sees does, "
                "recall skips the cross-lingual leg for English questions: it would judge nothing.",
            ),
        ),
        migrations.AlterField(
            model_name="memorysubject",
            name="non_english_memories",
            field=models.BooleanField(
                null=True,
                default=False,
                help_text="Whether some memory of the subject does not read as English (see "
                "Tenant.non_english_catalog).",
            ),
        ),
    ]
