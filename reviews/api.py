"""The message API's detail (GET /api/messages/<id>/): the message with its prediction, rule
matches, explanations and the decisions its reader may see. It is reviews' because it nests review
decisions; the rest of the message API is scoring's (scoring.api)."""

from __future__ import annotations

from rest_framework import generics

from core.permissions import CanReadMessages
from reviews.selectors import messages_for_api_detail
from reviews.serializers import MessageDetailSerializer


class MessageDetailView(generics.RetrieveAPIView):
    """GET one message with its prediction, rule matches, explanations and decisions."""

    permission_classes = [CanReadMessages]
    serializer_class = MessageDetailSerializer

    def get_queryset(self):
        return messages_for_api_detail(self.request.user)
