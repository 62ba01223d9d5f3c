"""/api/metrics/...: one JSON endpoint per chart of the monitoring page."""

from django.urls import path

from monitoring import api

urlpatterns = [
    path("disagreement/", api.DisagreementView.as_view(), name="metrics-disagreement"),
    path("alerts/", api.AlertsView.as_view(), name="metrics-alerts"),
    path("quality/", api.QualityView.as_view(), name="metrics-quality"),
    path("confusion/", api.ConfusionView.as_view(), name="metrics-confusion"),
    path("drift/length/", api.LengthDriftView.as_view(), name="metrics-length"),
    path("drift/scores/", api.ScoreDriftView.as_view(), name="metrics-scores"),
    path("drift/rules/", api.RulesDriftView.as_view(), name="metrics-rules"),
    path("explanations/", api.ExplanationHealthView.as_view(), name="metrics-explanations"),
    path("queue/", api.QueueHealthView.as_view(), name="metrics-queue"),
]

# name -> title, in page order (the page and the benchmark iterate over this).
ENDPOINTS: dict[str, str] = {
    "metrics-disagreement": "Disagreement per claim type",
    "metrics-alerts": "Alerts",
    "metrics-quality": "Precision and recall from reviews",
    "metrics-confusion": "Reviewer vs model",
    "metrics-length": "Message length",
    "metrics-scores": "Score distribution",
    "metrics-rules": "Rules vs model",
    "metrics-explanations": "Explanation health",
    "metrics-queue": "Queue health",
}
