"""The client's IP address, read the same way by the login lock (django-axes) and the API throttles.

Behind N trusted reverse proxies (TRUSTED_PROXY_COUNT) that each append the address they received
the request from to CLIENT_IP_HEADER (X-Forwarded-For by default), the client is the N-th address
from the right: everything left of it was written by the client and can be anything. With no
trusted proxy (the default) the header is ignored and the socket's address (REMOTE_ADDR) is the
client, so nobody can dodge a lock by sending a header.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.conf import settings
from django.http import HttpRequest


def client_ip_from(meta: Mapping[str, str], *, proxies: int, header: str) -> str | None:
    """The client's address from a request's META, trusting exactly `proxies` proxies. A request
    whose header lists fewer hops than that did not come through them all: its socket address is
    the client's."""
    remote = meta.get("REMOTE_ADDR") or None
    if proxies <= 0:
        return remote
    hops = [hop.strip() for hop in str(meta.get(header, "")).split(",") if hop.strip()]
    if len(hops) < proxies:
        return remote
    return hops[-proxies]


def client_ip(request: HttpRequest) -> str | None:
    """AXES_CLIENT_IP_CALLABLE and the API throttles' identity for anonymous callers."""
    return client_ip_from(
        request.META, proxies=settings.TRUSTED_PROXY_COUNT, header=settings.CLIENT_IP_HEADER
    )
