"""Create the role groups: reviewer, auditor, compliance_admin, ingest_service."""

from django.db import migrations

ROLES = ["reviewer", "auditor", "compliance_admin", "ingest_service"]


def create_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ROLES:
        Group.objects.get_or_create(name=name)


def drop_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [("reviews", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length")]
    operations = [migrations.RunPython(create_groups, drop_groups)]
