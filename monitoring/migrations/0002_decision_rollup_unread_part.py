from django.db import migrations, models


def refresh_in_full(apps, schema_editor):
    """The decision roll-up's rows were counted without the new column: the next refresh
    recomputes both roll-ups from the start (monitoring.services.rollup_refresh)."""
    apps.get_model("monitoring", "RollupState").objects.update(watermark=None)


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="decisiondayrollup",
            name="unread_part",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(refresh_in_full, migrations.RunPython.noop),
    ]
