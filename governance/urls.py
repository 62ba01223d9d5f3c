"""The Models pages. They keep their /review/models/ paths and their `reviews:` names (templates,
bookmarks): compliance_site.urls mounts these patterns in the reviews namespace."""

from django.urls import path

from governance import views

urlpatterns = [
    path("models/", views.models_page, name="models"),
    path("models/activate", views.models_activate, name="models_activate"),
    path("models/threshold", views.models_threshold, name="models_threshold"),
    path("models/compare", views.models_compare, name="models_compare"),
    path("models/<int:pk>/", views.model_detail, name="model_detail"),
    path("models/<int:pk>/shadow", views.models_shadow, name="models_shadow"),
    path("models/comparisons/<int:pk>/", views.comparison_detail, name="comparison"),
]
