from django.db import migrations, models


def refold_decisions(apps, schema_editor):
    """The decision roll-up's rows were counted without the new column: they are dropped, and the
    next refresh folds every decision in again from the first (monitoring.services
    ._refresh_decisions); the message roll-up, whose shape did not change, stays."""
    apps.get_model("monitoring", "DecisionDayRollup").objects.all().delete()
    apps.get_model("monitoring", "RollupState").objects.update(decision_sequence=0)


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
        migrations.RunPython(refold_decisions, migrations.RunPython.noop),
    ]
