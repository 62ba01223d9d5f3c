"""python manage.py revoke_token NAME (--key KEY | --all): end API tokens at once.

KEY is the name printed when the token was issued (its first characters; the token itself is
never stored). Without --key or --all the command lists the account's tokens and revokes nothing."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from reviews.tokens import TokenError, api_tokens_of, api_tokens_revoke


class Command(BaseCommand):
    help = "Revoke an account's API token (--key KEY) or all of them (--all); with neither, list them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--key", help="the token's name, printed when it was issued")
        which.add_argument("--all", action="store_true", help="revoke every token of the account")

    def handle(self, *args, username: str, key: str | None, all: bool, **options) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}; nothing was revoked.")
        if key is None and not all:
            now = timezone.now()
            tokens = list(api_tokens_of(user))
            for token in tokens:
                expiry = token.expiry.isoformat(timespec="seconds") if token.expiry else "never"
                state = "EXPIRED" if token.expiry and token.expiry < now else "valid"
                self.stdout.write(
                    f"{token.token_key}  issued {token.created:%Y-%m-%d %H:%M}  expires {expiry}  {state}"
                )
            self.stdout.write(f"{len(tokens)} token(s); pass --key KEY or --all to revoke.")
            return
        try:
            revoked = api_tokens_revoke(user=user, token_key=key)
        except TokenError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Revoked {revoked} token(s) of {username}.")
