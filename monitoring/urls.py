"""The monitoring page (mounted under /monitoring/)."""

from django.urls import path

from monitoring import failed, views

app_name = "monitoring"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("failed/", failed.failed_list, name="failed"),
    path("failed/<int:pk>/retry", failed.failed_retry, name="failed_retry"),
    path("reviewers/", views.reviewers, name="reviewers"),
    path("rule-drafts/", views.rule_drafts, name="rule_drafts"),
    path("rule-drafts/<int:pk>/", views.rule_draft, name="rule_draft"),
    path("rule-drafts/<int:pk>/backtest", views.rule_draft_backtest, name="rule_draft_backtest"),
    path("rule-drafts/<int:pk>/publish", views.rule_draft_publish, name="rule_draft_publish"),
    path("backtests/<int:pk>/progress", views.backtest_progress, name="backtest_progress"),
]
