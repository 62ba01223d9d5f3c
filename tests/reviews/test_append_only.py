"""Recorded decisions cannot be edited or deleted: not through the pages, the admin site, the
ORM (instance or queryset) or raw SQL."""

import pytest
from django.contrib.auth.models import User
from django.db import DatabaseError, connection, transaction
from django.urls import reverse

from reviews.models import ReviewDecision
from tests.factories import ReviewDecisionFactory
from tests.reviews.conftest import signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def decision(reviewer):
    return ReviewDecisionFactory(reviewer=reviewer, note="original")


def unchanged(decision) -> bool:
    stored = ReviewDecision.objects.get(pk=decision.pk)
    return stored.note == "original" and stored.content_hash == decision.content_hash


def test_saving_a_recorded_decision_again_is_refused(decision):
    decision.note = "edited"
    with pytest.raises(PermissionError, match="append-only"):
        decision.save()
    assert unchanged(decision)


def test_deleting_a_decision_instance_is_refused(decision):
    with pytest.raises(PermissionError, match="append-only"):
        decision.delete()
    assert ReviewDecision.objects.filter(pk=decision.pk).exists()


def test_queryset_update_and_delete_are_refused(decision):
    with pytest.raises(PermissionError):
        ReviewDecision.objects.filter(pk=decision.pk).update(note="edited")
    with pytest.raises(PermissionError):
        ReviewDecision.objects.all().delete()
    decision.note = "edited"
    with pytest.raises(PermissionError), transaction.atomic():
        ReviewDecision.objects.bulk_update([decision], ["note"])
    assert ReviewDecision.objects.get(pk=decision.pk).note == "original"


def test_raw_sql_update_is_refused_by_the_database(decision):
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("UPDATE reviews_reviewdecision SET note = 'edited' WHERE id = %s", [decision.pk])
    assert ReviewDecision.objects.get(pk=decision.pk).note == "original"


def test_raw_sql_delete_is_refused_by_the_database(decision):
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("DELETE FROM reviews_reviewdecision WHERE id = %s", [decision.pk])
    assert ReviewDecision.objects.filter(pk=decision.pk).exists()


def test_deleting_the_reviewer_or_the_message_is_refused_while_a_decision_points_at_them(decision):
    from django.db.models import ProtectedError

    with pytest.raises(ProtectedError):
        User.objects.get(pk=decision.reviewer_id).delete()
    with pytest.raises(ProtectedError):
        decision.message.delete()


def test_the_admin_site_offers_no_add_change_or_delete_even_to_a_superuser(decision):
    root = User.objects.create_superuser("root", "root@example.test", "x")
    client = signed_in(root)
    change_url = reverse("admin:reviews_reviewdecision_change", args=[decision.pk])
    page = client.get(change_url)
    assert page.status_code == 200  # readable
    assert 'name="_save"' not in page.content.decode()
    assert client.post(change_url, {"note": "edited"}).status_code == 403
    assert (
        client.post(
            reverse("admin:reviews_reviewdecision_delete", args=[decision.pk]), {"post": "yes"}
        ).status_code
        == 403
    )
    assert client.get(reverse("admin:reviews_reviewdecision_add")).status_code == 403
    changelist = client.post(
        reverse("admin:reviews_reviewdecision_changelist"),
        {"action": "delete_selected", "_selected_action": [decision.pk], "post": "yes"},
    )
    assert changelist.status_code in (200, 302, 403)
    assert unchanged(decision)


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_no_page_edits_or_deletes_a_record_whatever_the_method_or_role(
    decision, auditor, admin_user, reviewer, method
):
    for user in (auditor, admin_user, reviewer):
        client = signed_in(user)
        for url in (reverse("reviews:record", args=[decision.pk]), reverse("reviews:records")):
            response = getattr(client, method)(
                url, {"note": "edited"}, content_type="application/x-www-form-urlencoded"
            )
            assert response.status_code in (403, 405), (user, url, response.status_code)
    assert unchanged(decision)
