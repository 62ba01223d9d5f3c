from django.urls import path

from scoring import api

urlpatterns = [
    path("messages/", api.MessageListIngestView.as_view(), name="api-messages"),
    path("messages/bulk/", api.MessageBulkIngestView.as_view(), name="api-messages-bulk"),
    path("messages/status/", api.MessageStatusListView.as_view(), name="api-message-statuses"),
    path("messages/raw/", api.MessageRawIngestView.as_view(), name="api-messages-raw"),
    path("messages/<int:pk>/status/", api.MessageStatusView.as_view(), name="api-message-status"),
]
