"""Pages of the review workflow (mounted under /review/)."""

from django.urls import path

from reviews.views import message, queue, records, training_data

app_name = "reviews"

urlpatterns = [
    path("queue/", queue.queue, name="queue"),
    path("queue/next", queue.queue_next, name="next"),
    path("messages/<int:pk>/", message.message_page, name="message"),
    path("messages/<int:pk>/attention.json", message.message_attention, name="attention"),
    path("messages/<int:pk>/claim", message.message_claim, name="claim"),
    path("messages/<int:pk>/release", message.message_release, name="release"),
    path("messages/<int:pk>/decide", message.message_decide, name="decide"),
    path("messages/<int:pk>/second-level", message.message_second_level, name="second_level"),
    path("messages/<int:pk>/correct", message.message_correct, name="correct"),
    path("conversations/<int:pk>/", message.conversation_page, name="conversation"),
    path("escalations/", records.escalations, name="escalations"),
    path("records/", records.records, name="records"),
    path("records/export.csv", records.records_csv, name="records_csv"),
    path("records/<int:pk>/", records.record_detail, name="record"),
    path("audit/chain/", records.audit_chain, name="audit_chain"),
    path("training-data/", training_data.training_data, name="training_data"),
]
