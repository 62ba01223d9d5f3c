"""API tokens of service accounts: issue and revoke (writes), list (read).

Tokens are django-rest-knox's: the database keeps a SHA-512 digest of each token and its first
characters (`token_key`, to find it and to name it), never the token itself, so the token is
shown once, when it is issued. Each token expires API_TOKEN_TTL_DAYS after issue; a service may
hold several at once, so a new one can be deployed before the old one is revoked.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet
from knox.models import AuthToken

from reviews.errors import ReviewError


class TokenError(ReviewError):
    """A token request that cannot be carried out (unknown token, inactive account)."""


@dataclass(frozen=True)
class IssuedToken:
    """A new token: `token` is the secret, shown once and stored nowhere."""

    token: str
    token_key: str
    expiry: datetime | None


def api_token_issue(*, user: AbstractBaseUser) -> IssuedToken:
    """Issue a new API token for an active account, expiring after API_TOKEN_TTL_DAYS. Only its
    digest is stored; the returned secret cannot be read back later."""
    if not user.is_active:
        raise TokenError(f"{user.get_username()} is inactive; no token was issued.")
    with transaction.atomic():
        instance, token = AuthToken.objects.create(user=user)
    return IssuedToken(token=token, token_key=instance.token_key, expiry=instance.expiry)


def api_tokens_of(user: AbstractBaseUser) -> QuerySet[AuthToken]:
    """The account's tokens (expired ones included until they are used or revoked), newest first."""
    return AuthToken.objects.filter(user=user).order_by("-created")


def api_tokens_revoke(*, user: AbstractBaseUser, token_key: str | None = None) -> int:
    """Revoke the account's token whose first characters are `token_key`, or every token of the
    account when `token_key` is None. Returns how many were revoked; raises TokenError when
    `token_key` names none of the account's tokens (nothing is revoked then)."""
    with transaction.atomic():
        tokens = AuthToken.objects.filter(user=user)
        if token_key is not None:
            tokens = tokens.filter(token_key=token_key)
            if not tokens.exists():
                raise TokenError(f"{user.get_username()} has no token {token_key!r}; nothing was revoked.")
        revoked, _ = tokens.delete()
    return revoked
