import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from reviews.models import ReviewLock
from reviews.pagination import encode_cursor
from scoring.models import Message
from tests.factories import ModelVersionFactory, reviewable_message

pytestmark = pytest.mark.django_db
QUEUE = "/review/queue/"


def listed_ids(response) -> list[int]:
    return [int(pk) for pk in re.findall(r'data-message-id="(\d+)"', response.content.decode())]


def facet_count(response, facet_label: str) -> int:
    html = response.content.decode()
    match = re.search(re.escape(facet_label) + r' <span class="count">(\d+)</span>', html)
    assert match, f"facet {facet_label!r} not on the page"
    return int(match.group(1))


def test_the_queue_lists_messages_in_review_by_score_then_age(reviewer_client):
    now = timezone.now()
    low = reviewable_message(score=0.55)
    newer = reviewable_message(score=0.9, received_at=now - timedelta(hours=1))
    older = reviewable_message(score=0.9, received_at=now - timedelta(hours=9))
    top = reviewable_message(score=0.99)
    reviewable_message(score=0.95, status="decided")
    response = reviewer_client.get(QUEUE)
    assert response.status_code == 200
    assert listed_ids(response) == [top.pk, older.pk, newer.pk, low.pk]


def test_the_queue_filters_by_claim_type_rule_hit_qa_sample_model_version_and_date(reviewer_client):
    version = ModelVersionFactory()
    risk = reviewable_message(
        claim_code="risk_free", body="Capital is risk-free, no rule here.", rule_phrase=None
    )
    qa = reviewable_message(score=0.2, qa_sample=True, model_version=version)
    old = reviewable_message(received_at=timezone.now() - timedelta(days=45))
    assert listed_ids(reviewer_client.get(QUEUE, {"claim_type": "risk_free"})) == [risk.pk]
    assert set(listed_ids(reviewer_client.get(QUEUE, {"rule_hit": "no"}))) == {risk.pk}
    assert listed_ids(reviewer_client.get(QUEUE, {"qa_sample": "yes"})) == [qa.pk]
    assert listed_ids(reviewer_client.get(QUEUE, {"model_version": version.pk})) == [qa.pk]
    assert listed_ids(reviewer_client.get(QUEUE, {"received": "older"})) == [old.pk]
    assert old.pk not in listed_ids(reviewer_client.get(QUEUE, {"received": "week"}))


def test_each_filter_value_shows_its_count_with_the_other_filters_applied(reviewer_client):
    reviewable_message(claim_code="risk_free", body="Capital is risk-free.", rule_phrase=None)
    reviewable_message(claim_code="risk_free")
    reviewable_message()
    reviewable_message(score=0.2, qa_sample=True)
    response = reviewer_client.get(QUEUE)
    assert facet_count(response, "Risk-free") == 2
    assert facet_count(response, "Guaranteed returns") == 2
    assert facet_count(response, "Rule hit") == 3
    assert facet_count(response, "No rule hit") == 1
    assert facet_count(response, "QA sample") == 1
    assert facet_count(response, "Last 24 hours") == 4
    filtered = reviewer_client.get(QUEUE, {"rule_hit": "yes"})
    assert facet_count(filtered, "Risk-free") == 1
    assert facet_count(filtered, "No rule hit") == 1  # its own facet ignores its own filter
    assert "4 messages in review, 3 match the filters" in filtered.content.decode()


def test_the_claim_type_facet_says_it_counts_closest_types_of_unflagged_messages_too(reviewer_client):
    """A QA sample or a rule hit below the threshold is in review with the model's closest type:
    the facet counts it, so its title must not call every count a prediction."""
    reviewable_message(score=0.2, qa_sample=True, rule_phrase=None)
    html = reviewer_client.get(QUEUE).content.decode()

    assert "<h2>Claim type (predicted, or closest when not flagged)</h2>" in html
    assert facet_count(reviewer_client.get(QUEUE), "Guaranteed returns") == 1
    assert "Not a QA sample" in html and "Flagged (not QA)" not in html
    assert '<th scope="col">Claim type</th>' in html


def test_keyset_pages_follow_on_without_overlap(reviewer_client):
    now = timezone.now()
    for i in range(57):
        reviewable_message(
            score=0.5 + (i % 7) / 10, received_at=now - timedelta(minutes=i), explanation=False
        )
    first = reviewer_client.get(QUEUE)
    first_ids = listed_ids(first)
    assert len(first_ids) == 50
    next_link = re.search(r'href="(\?[^"]*cursor=[^"]+)" rel="next"', first.content.decode()).group(1)
    second = reviewer_client.get(QUEUE + next_link.replace("&amp;", "&"))
    second_ids = listed_ids(second)
    assert len(second_ids) == 7
    assert not set(first_ids) & set(second_ids)
    assert 'rel="next"' not in second.content.decode()


def test_a_forged_cursor_is_a_clear_400(reviewer_client):
    response = reviewer_client.get(QUEUE, {"cursor": encode_cursor(["x", 1, 2])})
    assert response.status_code == 400
    assert "cursor is not valid" in response.content.decode()


@pytest.mark.parametrize(
    "moment", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "2026-01-01T00:00:00"]
)
def test_a_cursor_time_at_the_ends_of_the_calendar_or_without_a_zone_is_a_clear_400(reviewer_client, moment):
    response = reviewer_client.get(QUEUE, {"cursor": encode_cursor([0.5, moment, 1])})
    assert response.status_code == 400
    assert "cursor is not valid" in response.content.decode()


def test_an_unknown_filter_value_is_a_clear_400(reviewer_client):
    response = reviewer_client.get(QUEUE, {"claim_type": "made_up"})
    assert response.status_code == 400
    assert "not valid" in response.content.decode()


def test_the_queue_page_makes_the_same_number_of_queries_for_3_or_30_messages(
    reviewer_client, second_reviewer
):
    def count_queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert reviewer_client.get(QUEUE).status_code == 200
        return len(ctx.captured_queries)

    for _ in range(3):
        reviewable_message(explanation=False)
    small = count_queries()
    for i in range(27):
        message = reviewable_message(
            explanation=False, model_version=ModelVersionFactory() if i % 3 else None
        )
        if i % 4 == 0:
            ReviewLock.objects.create(message=message, reviewer=second_reviewer, expires_at=timezone.now())
    assert count_queries() == small


def test_a_locked_message_shows_who_holds_it(reviewer_client, second_reviewer):
    message = reviewable_message()
    ReviewLock.objects.create(
        message=message, reviewer=second_reviewer, expires_at=timezone.now() + timedelta(minutes=5)
    )
    assert "claimed by rob_reviewer" in reviewer_client.get(QUEUE).content.decode()


def test_review_next_opens_the_claimed_message(reviewer_client):
    message = reviewable_message()
    response = reviewer_client.post(reverse("reviews:next"))
    assert response.status_code == 302
    assert response["Location"] == reverse("reviews:message", args=[message.pk])


def test_review_next_on_an_empty_queue_says_so(reviewer_client):
    response = reviewer_client.post(reverse("reviews:next"), follow=True)
    assert "Nothing to review" in response.content.decode()


def test_the_queue_lists_the_keyboard_shortcuts(reviewer_client):
    html = reviewer_client.get(QUEUE).content.decode()
    assert "Keyboard shortcuts" in html
    assert "<kbd>n</kbd>" in html


def test_the_preview_ends_in_an_ellipsis_only_when_the_body_is_longer_than_the_preview(reviewer_client):
    from reviews.constants import BODY_PREVIEW_CHARS

    head = "Our fund offers guaranteed returns. "
    exact = reviewable_message(body=(head + "x" * BODY_PREVIEW_CHARS)[:BODY_PREVIEW_CHARS])
    longer = reviewable_message(body=head + "y" * BODY_PREVIEW_CHARS)
    html = reviewer_client.get(QUEUE).content.decode()
    previews = dict(re.findall(r'data-message-id="(\d+)".*?<span class="preview">(.*?)</span>', html, re.S))
    assert not previews[str(exact.pk)].endswith("…")
    assert previews[str(longer.pk)].endswith("y…")


def test_a_message_routed_for_a_part_not_read_says_so_in_the_queue_and_on_its_page(reviewer_client):
    unread = reviewable_message(
        score=0.2,
        rule_phrase=None,
        attachments=[
            {
                "name": "terms.zip/terms.txt",
                "content_type": "text/plain",
                "size": 40,
                "scored": False,
                "note": "not scored: the zip is password-protected",
                "unreadable": True,
            }
        ],
    )
    Message.objects.filter(pk=unread.pk).update(route_reason="unread_part")  # as scoring routes it
    sampled = reviewable_message(score=0.2, qa_sample=True, rule_phrase=None)
    # a flagged message with a part not read is marked too: the reviewer should know it
    flagged = reviewable_message(attachments=unread.attachments)

    html = reviewer_client.get(QUEUE).content.decode()
    rows = dict(re.findall(r'<tr data-message-id="(\d+)">(.*?)</tr>', html, re.DOTALL))
    assert "part not read" in rows[str(unread.pk)] and "part not read" not in rows[str(sampled.pk)]
    assert "part not read" in rows[str(flagged.pk)]
    page = reviewer_client.get(f"/review/messages/{unread.pk}/").content.decode()
    assert "routed because: Below threshold, but a part of it could not be read" in page
    assert "its text was not read, so nothing in it was checked" in page
