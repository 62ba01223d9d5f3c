from django.urls import path

from scoring import api

urlpatterns = [
    path("messages/", api.MessageListIngestView.as_view(), name="api-messages"),
    path("messages/bulk/", api.MessageBulkIngestView.as_view(), name="api-messages-bulk"),
    path("messages/raw/", api.MessageRawIngestView.as_view(), name="api-messages-raw"),
    path("messages/<int:pk>/", api.MessageDetailView.as_view(), name="api-message-detail"),
]
