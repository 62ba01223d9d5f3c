from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from compliance_site import views
from governance import urls as governance_urls
from reviews import urls as reviews_urls

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("accounts/", include("reviews.account_urls")),
    # The Models pages (governance) keep their /review/ paths and reviews: names.
    path("review/", include((reviews_urls.urlpatterns + governance_urls.urlpatterns, "reviews"))),
    path("admin/", admin.site.urls),
    path("api/metrics/", include("monitoring.api_urls")),
    path("api/", include("scoring.urls")),
    path("api/", include("reviews.api_urls")),  # the message detail, which nests decisions
    path("explanations/", include("explanations.urls")),
    path("monitoring/", include("monitoring.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # its own template: drf-spectacular's has an inline <style> that the CSP blocks
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api/swagger_ui.html"),
        name="api-docs",
    ),
    re_path(r"^api/", views.api_not_found, name="api-not-found"),  # last: what no endpoint above matched
]
