"""API tokens move from DRF's authtoken table, which stored each token in clear, to
django-rest-knox's, which stores a SHA-512 digest. Existing tokens keep working (the digest of
each old key is stored, with API_TOKEN_TTL_DAYS from now as its expiry); then the clear table is
dropped. A database that never had it (a new install) has nothing to move."""

from datetime import timedelta

from django.conf import settings
from django.db import migrations
from django.utils import timezone

OLD_TABLE = "authtoken_token"


def hash_clear_tokens(apps, schema_editor):
    from knox.crypto import hash_token
    from knox.settings import CONSTANTS

    connection = schema_editor.connection
    if OLD_TABLE not in connection.introspection.table_names():
        return
    AuthToken = apps.get_model("knox", "AuthToken")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, user_id FROM {OLD_TABLE}")  # noqa: S608 - a constant
        rows = cursor.fetchall()
    expiry = timezone.now() + timedelta(days=settings.API_TOKEN_TTL_DAYS)
    AuthToken.objects.bulk_create(
        AuthToken(
            digest=hash_token(key),
            token_key=key[: CONSTANTS.TOKEN_KEY_LENGTH],
            user_id=user_id,
            expiry=expiry,
        )
        for key, user_id in rows
    )
    schema_editor.execute(f"DROP TABLE {OLD_TABLE}")
    schema_editor.execute("DELETE FROM django_migrations WHERE app = %s", ["authtoken"])


class Migration(migrations.Migration):
    dependencies = [
        ("reviews", "0004_evidence_immutable_and_no_truncate"),
        ("knox", "0009_extend_authtoken_field"),
    ]

    operations = [migrations.RunPython(hash_clear_tokens, migrations.RunPython.noop)]
