from django.urls import path

from reviews import api

urlpatterns = [
    path("messages/<int:pk>/", api.MessageDetailView.as_view(), name="api-message-detail"),
]
