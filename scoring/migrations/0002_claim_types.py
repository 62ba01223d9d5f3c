"""Seed the four regulated claim types. Codes are fixed; names and descriptions are editable."""

from django.db import migrations

CLAIM_TYPES = [
    (
        1,
        "guaranteed_returns",
        "Guaranteed returns",
        "Returns, yield or profit promised as certain.",
    ),
    (2, "risk_free", "Risk-free", "Capital presented as safe from loss."),
    (
        3,
        "performance_forecast",
        "Performance forecast",
        "A specific future gain presented as expected.",
    ),
    (
        4,
        "regulatory_endorsement",
        "Regulatory endorsement",
        "A regulator presented as approving, endorsing or backing the product.",
    ),
]


def seed(apps, schema_editor):
    ClaimType = apps.get_model("scoring", "ClaimType")
    for position, code, name, description in CLAIM_TYPES:
        ClaimType.objects.update_or_create(
            code=code, defaults={"name": name, "description": description, "position": position}
        )


def unseed(apps, schema_editor):
    apps.get_model("scoring", "ClaimType").objects.filter(
        code__in=[code for _, code, _, _ in CLAIM_TYPES]
    ).delete()


class Migration(migrations.Migration):
    dependencies = [("scoring", "0001_initial")]
    operations = [migrations.RunPython(seed, unseed)]
