"""The monitoring page (mounted under /monitoring/)."""

from django.urls import path

from monitoring import views

app_name = "monitoring"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
]
