from django.apps import AppConfig


class GovernanceConfig(AppConfig):
    """The model lifecycle: activation (and rollback), threshold variants, shadow challengers,
    comparisons, and the Models pages. No models of its own: it governs scoring's ModelVersion,
    ModelActivation and ModelComparison."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "governance"
