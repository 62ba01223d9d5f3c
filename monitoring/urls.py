"""The monitoring page (mounted under /monitoring/)."""

from django.urls import path

from monitoring import failed, views

app_name = "monitoring"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("failed/", failed.failed_list, name="failed"),
    path("failed/<int:pk>/retry", failed.failed_retry, name="failed_retry"),
]
