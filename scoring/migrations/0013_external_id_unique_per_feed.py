"""external_id becomes unique per feed (the submitting account; messages without one form a feed
of their own) instead of across every feed, so that one feed's 409 says nothing about another's
ids. Existing rows are unique across all feeds, hence within each: the new constraints are added
first (they cannot fail on existing data), then the global uniqueness is relaxed to an index.
A feed's account can no longer be deleted while it has messages (PROTECT): its messages would
fall into the feed without an account, where their ids could collide."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("scoring", "0012_work_claims_and_retries"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddConstraint(
            model_name="message",
            constraint=models.UniqueConstraint(
                fields=("submitted_by", "external_id"), name="message_external_id_per_feed"
            ),
        ),
        migrations.AddConstraint(
            model_name="message",
            constraint=models.UniqueConstraint(
                condition=models.Q(("submitted_by__isnull", True)),
                fields=("external_id",),
                name="message_external_id_without_feed",
            ),
        ),
        migrations.AlterField(
            model_name="message",
            name="external_id",
            field=models.CharField(db_index=True, max_length=200),
        ),
        migrations.AlterField(
            model_name="message",
            name="submitted_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
    ]
