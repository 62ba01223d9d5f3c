"""Who reads which decisions on a message page (issue 17, item 6): a reviewer their own only, so
that nobody reads a colleague's decision before deciding (blind review); auditors and compliance
admins every decision."""

import pytest
from django.urls import reverse

from tests.factories import ReviewDecisionFactory, reviewable_message

pytestmark = pytest.mark.django_db

NOTE = "first look: a guarantee of income, plainly"


def page(client, message) -> str:
    response = client.get(reverse("reviews:message", args=[message.pk]))
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def decided(reviewer):
    message = reviewable_message()
    ReviewDecisionFactory(message=message, reviewer=reviewer, verdict="claim", note=NOTE)
    return message


def test_another_reviewer_does_not_see_a_colleagues_decision_nor_who_made_it(decided, second_reviewer_client):
    html = page(second_reviewer_client, decided)

    assert NOTE not in html
    assert "rita_reviewer" not in html
    assert "Decisions on this message" not in html


def test_a_reviewer_sees_their_own_decision(decided, reviewer_client):
    html = page(reviewer_client, decided)

    assert "Decisions on this message" in html
    assert NOTE in html


@pytest.mark.parametrize("client_fixture", ["auditor_client", "admin_client_"])
def test_auditors_and_admins_see_every_decision_with_its_reviewer(decided, client_fixture, request):
    html = page(request.getfixturevalue(client_fixture), decided)

    assert NOTE in html
    assert "rita_reviewer" in html
