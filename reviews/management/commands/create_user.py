"""python manage.py create_user NAME --role ROLE [--email E] [--password-stdin]

Creates a user in one role. People get a password (read from stdin with --password-stdin, or
prompted for twice on a terminal) checked by the password validators; compliance admins also
get the admin site. An ingest_service account gets no password and an API token, printed once
(only its digest is stored; it expires after API_TOKEN_TTL_DAYS: `manage.py issue_token` gives the
account a new one, `manage.py revoke_token` ends one).
"""

from __future__ import annotations

import getpass
import sys

from django.contrib.auth.models import Group, User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.validators import validate_email
from django.db import transaction

from core.roles import Role
from reviews.tokens import IssuedToken, api_token_issue


class Command(BaseCommand):
    help = "Create a user with one role (reviewer, auditor, compliance_admin, ingest_service)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=[role.value for role in Role])
        parser.add_argument("--email", default="")
        parser.add_argument(
            "--password-stdin", action="store_true", help="Read the password from the first line of stdin."
        )

    def _password(self, options: dict, user: User) -> str:
        if options["password_stdin"]:
            password = sys.stdin.readline().rstrip("\r\n")
        elif sys.stdin.isatty():
            password = getpass.getpass("Password: ")
            if getpass.getpass("Password (again): ") != password:
                raise CommandError("The passwords do not match; nothing was created.")
        else:
            raise CommandError("No terminal to ask for a password: pass --password-stdin and pipe it in.")
        if not password:
            raise CommandError("The password is empty; nothing was created.")
        try:
            validate_password(password, user=user)
        except ValidationError as exc:
            raise CommandError("Password refused: " + " ".join(exc.messages)) from exc
        return password

    def handle(self, *args, **options) -> None:
        username: str = options["username"]
        role = Role(options["role"])
        email: str = options["email"]
        user = User(username=username, email=email)
        try:
            User._meta.get_field("username").run_validators(username)
            if email:
                validate_email(email)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from exc
        if User.objects.filter(username=username).exists():
            raise CommandError(f"User {username!r} already exists; nothing was changed.")
        if role == Role.INGEST_SERVICE:
            if options["password_stdin"]:
                raise CommandError(
                    "An ingest_service account signs in with its API token only, not a password."
                )
            password = None
        else:
            password = self._password(options, user)
        try:
            group = Group.objects.get(name=role.value)
        except Group.DoesNotExist as exc:
            raise CommandError(f"The {role.value} group is missing: run `manage.py migrate` first.") from exc
        with transaction.atomic():
            if password is None:
                user.set_unusable_password()
            else:
                user.set_password(password)
            user.is_staff = role == Role.COMPLIANCE_ADMIN
            user.save()
            user.groups.add(group)
            token = api_token_issue(user=user) if role == Role.INGEST_SERVICE else None
        self.stdout.write(f"Created {role.value} {username}.")
        if token is not None:
            write_token(self.stdout, token)


def write_token(stdout, token: IssuedToken) -> None:
    """Print a new token once, with its name and expiry (shared with issue_token)."""
    expiry = token.expiry.isoformat(timespec="seconds") if token.expiry else "never"
    stdout.write(f"API token (shown once, keep it secret): {token.token}")
    stdout.write(f"Its name is {token.token_key} (for revoke_token); it expires {expiry}.")
