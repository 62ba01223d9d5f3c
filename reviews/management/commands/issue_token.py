"""python manage.py issue_token NAME: a new API token for an ingest_service account, printed once.

Tokens expire after API_TOKEN_TTL_DAYS; a service can hold several, so deploy the new one, then
revoke the old one (`manage.py revoke_token NAME --key KEY`)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.roles import Role, has_role
from reviews.management.commands.create_user import write_token
from reviews.tokens import TokenError, api_token_issue


class Command(BaseCommand):
    help = "Issue a new API token for an ingest_service account (printed once, stored as a digest)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def handle(self, *args, username: str, **options) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}; nothing was issued.")
        if not has_role(user, Role.INGEST_SERVICE):
            raise CommandError(
                f"{username} is not an ingest_service account: people sign in, services use tokens. "
                "Nothing was issued."
            )
        try:
            token = api_token_issue(user=user)
        except TokenError as exc:
            raise CommandError(str(exc)) from exc
        write_token(self.stdout, token)
