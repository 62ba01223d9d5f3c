from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _ensure_sqlite_triggers(sender, using: str = "default", **kwargs) -> None:
    from django.db import connections

    from reviews.triggers import sqlite_triggers_ensure

    sqlite_triggers_ensure(connections[using])


class ReviewsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "reviews"

    def ready(self) -> None:
        # SQLite drops a table's triggers when a migration rebuilds the table: put back the audit
        # trail's guards after every migrate (reviews.triggers).
        post_migrate.connect(_ensure_sqlite_triggers, sender=self, dispatch_uid="reviews_sqlite_triggers")
