from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The ground floor: roles, access helpers, the API's error body, parsers, throttling and the
    database and process helpers every app uses. It has no models and imports no project app."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "core"
