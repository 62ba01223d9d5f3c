"""API rate limits: one throttle, two scopes. Writes (ingest) count against API_THROTTLE_INGEST,
reads against API_THROTTLE_READ, per account (per client address for anonymous callers, read
behind trusted proxies by core.client_ip). The rates are read from the settings at each
request, so a deployment (or a test) changes them without a restart of DRF's settings."""

from __future__ import annotations

from django.conf import settings
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from core.client_ip import client_ip

INGEST_SCOPE = "ingest"
READ_SCOPE = "read"


class IngestOrReadThrottle(SimpleRateThrottle):
    """DRF's sliding-window throttle in the cache, with the scope chosen by the method."""

    rate = None  # chosen per request in allow_request

    def __init__(self) -> None:  # the rate depends on the request: nothing to parse yet
        pass

    def allow_request(self, request: Request, view: object) -> bool:
        self.scope = READ_SCOPE if request.method in SAFE_METHODS else INGEST_SCOPE
        self.rate = settings.API_THROTTLE_READ if self.scope == READ_SCOPE else settings.API_THROTTLE_INGEST
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)

    def get_ident(self, request: Request) -> str:
        return client_ip(request) or "unknown"

    def get_cache_key(self, request: Request, view: object) -> str:
        user = request.user
        ident = f"user-{user.pk}" if user is not None and user.is_authenticated else self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}
