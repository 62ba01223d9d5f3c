"""API token authentication: django-rest-knox's hashed, expiring tokens, sent as
`Authorization: Token <token>` (the header clients already use)."""

from __future__ import annotations

from drf_spectacular.contrib.knox_auth_token import KnoxTokenScheme
from knox.auth import TokenAuthentication
from rest_framework import exceptions


class HashedTokenAuthentication(TokenAuthentication):
    """knox's TokenAuthentication, refusing a token that is not UTF-8 with a 401 (knox decodes
    the header without catching that, which would be a 500)."""

    def authenticate_credentials(self, token: bytes):
        try:
            token.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise exceptions.AuthenticationFailed("Invalid token.") from exc
        return super().authenticate_credentials(token)


class HashedTokenScheme(KnoxTokenScheme):
    """The schema's security scheme for it: `Authorization: Token <token>`."""

    target_class = HashedTokenAuthentication
