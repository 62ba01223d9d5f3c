"""The DRF permission classes the API reuses, and the page decorator's read/write split."""

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.test import RequestFactory
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory, force_authenticate
from rest_framework.views import APIView

from core.access import role_required
from core.permissions import HasRole, HasRoleForMethod, ReadOnly
from core.roles import Role
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


class IngestOnly(APIView):
    permission_classes = [HasRole.of(Role.INGEST_SERVICE)]

    def post(self, request):
        return Response({"ok": True})


class AuditRead(APIView):
    permission_classes = [HasRole.of(Role.AUDITOR, Role.COMPLIANCE_ADMIN) & ReadOnly]

    def get(self, request):
        return Response({"ok": True})

    def post(self, request):
        return Response({"ok": True})


class SplitRoles(APIView):
    permission_classes = [HasRoleForMethod]
    read_roles = (Role.REVIEWER, Role.AUDITOR)
    write_roles = (Role.REVIEWER,)

    def get(self, request):
        return Response({"ok": True})

    def post(self, request):
        return Response({"ok": True})


class ViewRoles(APIView):
    permission_classes = [HasRole]
    required_roles = (Role.REVIEWER,)

    def get(self, request):
        return Response({"ok": True})


def call(view, method: str, user) -> int:
    request = getattr(APIRequestFactory(), method)("/x", {}, format="json")
    if user is not None:
        force_authenticate(request, user=user)
    return view.as_view()(request).status_code


@pytest.mark.parametrize(
    ("role", "expected"),
    [(Role.INGEST_SERVICE, 200), (Role.REVIEWER, 403), (Role.COMPLIANCE_ADMIN, 403), (None, 403)],
)
def test_has_role_lets_only_the_named_roles_through(role, expected):
    assert call(IngestOnly, "post", UserFactory(role=role)) == expected


def test_an_anonymous_api_call_is_refused():
    assert call(IngestOnly, "post", None) in (401, 403)


def test_read_only_composition_refuses_every_write_even_for_an_allowed_role():
    auditor = UserFactory(role=Role.AUDITOR)
    assert call(AuditRead, "get", auditor) == 200
    assert call(AuditRead, "post", auditor) == 403


def test_roles_can_differ_between_reads_and_writes():
    auditor, reviewer = UserFactory(role=Role.AUDITOR), UserFactory(role=Role.REVIEWER)
    assert call(SplitRoles, "get", auditor) == 200
    assert call(SplitRoles, "post", auditor) == 403
    assert call(SplitRoles, "post", reviewer) == 200


def test_has_role_can_read_the_roles_from_the_view():
    assert call(ViewRoles, "get", UserFactory(role=Role.REVIEWER)) == 200
    assert call(ViewRoles, "get", UserFactory(role=Role.AUDITOR)) == 403


def test_has_role_needs_at_least_one_role():
    with pytest.raises(ValueError, match="at least one role"):
        HasRole.of()


def test_an_inactive_user_has_no_role():
    user = UserFactory(role=Role.INGEST_SERVICE)
    user.is_active = False
    assert call(IngestOnly, "post", user) == 403


def test_role_required_sends_anonymous_users_to_login_and_refuses_other_roles():
    @role_required(Role.AUDITOR, write_roles=())
    def page(request):
        return HttpResponse("ok")

    factory = RequestFactory()
    anonymous = factory.get("/records/")
    anonymous.user = AnonymousUser()
    response = page(anonymous)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    reader = factory.get("/records/")
    reader.user = UserFactory(role=Role.AUDITOR)
    assert page(reader).status_code == 200
    writer = factory.post("/records/")
    writer.user = reader.user
    assert page(writer).status_code == 405  # read-only (write_roles=()): wrong method for anybody
    other = factory.get("/records/")
    other.user = UserFactory(role=Role.REVIEWER)
    with pytest.raises(PermissionDenied):
        page(other)
