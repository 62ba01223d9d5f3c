from django.apps import AppConfig


class ExplanationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "explanations"
