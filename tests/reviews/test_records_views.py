import csv
import io
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.http import StreamingHttpResponse
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from scoring.models import Message
from tests.factories import ModelVersionFactory, ReviewDecisionFactory, claim_type, reviewable_message

pytestmark = pytest.mark.django_db
RECORDS = "/review/records/"
CSV_URL = "/review/records/export.csv"


def sequences(response) -> list[int]:
    return [
        int(s)
        for s in re.findall(
            r'<td class="mono"><a href="/review/records/\d+/">(\d+)</a>', response.content.decode()
        )
    ]


def csv_rows(response) -> list[dict]:
    assert isinstance(response, StreamingHttpResponse)
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_records_are_listed_newest_first(auditor_client, reviewer):
    decisions = [ReviewDecisionFactory(reviewer=reviewer) for _ in range(3)]
    assert sequences(auditor_client.get(RECORDS)) == [d.sequence for d in reversed(decisions)]


def test_search_finds_an_external_id_or_words_in_the_message_or_the_note(auditor_client, reviewer):
    by_id = ReviewDecisionFactory(reviewer=reviewer, message=reviewable_message(external_id="MSG-4471"))
    by_body = ReviewDecisionFactory(
        reviewer=reviewer, message=reviewable_message(body="The SEC approved this fund.")
    )
    by_note = ReviewDecisionFactory(reviewer=reviewer, note="Mentions a bulletproof principal")
    assert sequences(auditor_client.get(RECORDS, {"q": "MSG-4471"})) == [by_id.sequence]
    assert sequences(auditor_client.get(RECORDS, {"q": "sec approved"})) == [by_body.sequence]
    assert sequences(auditor_client.get(RECORDS, {"q": "bulletproof"})) == [by_note.sequence]


def test_records_filter_by_reviewer_date_claim_type_agreement_and_model_version(
    auditor_client, reviewer, second_reviewer
):
    version = ModelVersionFactory()
    a = ReviewDecisionFactory(reviewer=reviewer, verdict="claim", claim_type=claim_type("risk_free"))
    b = ReviewDecisionFactory(reviewer=second_reviewer, verdict="no_claim")
    c = ReviewDecisionFactory(
        reviewer=reviewer, verdict="escalate", message=reviewable_message(model_version=version)
    )
    today = timezone.now().date()
    assert sequences(auditor_client.get(RECORDS, {"reviewer": "rob_reviewer"})) == [b.sequence]
    assert sequences(auditor_client.get(RECORDS, {"claim_type": "risk_free"})) == [a.sequence]
    assert sequences(auditor_client.get(RECORDS, {"agreement": "agree"})) == [a.sequence]
    assert sequences(auditor_client.get(RECORDS, {"agreement": "disagree"})) == [b.sequence]
    assert sequences(auditor_client.get(RECORDS, {"agreement": "escalated"})) == [c.sequence]
    assert sequences(auditor_client.get(RECORDS, {"model_version": version.pk})) == [c.sequence]
    assert len(sequences(auditor_client.get(RECORDS, {"date_from": today, "date_to": today}))) == 3
    assert sequences(auditor_client.get(RECORDS, {"date_to": today - timedelta(days=1)})) == []


def test_a_date_range_that_ends_before_it_starts_is_a_clear_400(auditor_client):
    response = auditor_client.get(RECORDS, {"date_from": "2026-02-02", "date_to": "2026-02-01"})
    assert response.status_code == 400
    assert "start date is after the end date" in response.content.decode()


@pytest.mark.parametrize("query", [{"date_to": "9999-12-31"}, {"date_from": "0001-01-01"}])
@pytest.mark.parametrize("page", ["reviews:records", "reviews:records_csv"])
def test_a_day_at_the_ends_of_the_calendar_is_a_clear_400_not_an_overflow(auditor_client, page, query):
    response = auditor_client.get(reverse(page), query)

    assert response.status_code == 400
    assert "Choose a day from 1900-01-01 to 2999-12-31." in response.content.decode()


def test_an_over_long_cursor_is_a_400_that_says_so(auditor_client):
    response = auditor_client.get(RECORDS, {"cursor": "x" * 500})

    assert response.status_code == 400
    assert "The page cursor is not valid" in response.content.decode()


def test_record_pages_are_keyset_paginated(auditor_client, reviewer):
    for _ in range(53):
        ReviewDecisionFactory(reviewer=reviewer, message=reviewable_message(explanation=False))
    first = auditor_client.get(RECORDS)
    assert sequences(first) == list(range(53, 3, -1))
    link = re.search(r'href="(\?[^"]*)" rel="next"', first.content.decode()).group(1).replace("&amp;", "&")
    assert sequences(auditor_client.get(RECORDS + link)) == [3, 2, 1]


def test_the_records_page_makes_the_same_number_of_queries_for_2_or_20_records(
    auditor_client, reviewer, admin_user
):
    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            auditor_client.get(RECORDS)
        return len(ctx.captured_queries)

    for _ in range(2):
        ReviewDecisionFactory(reviewer=reviewer)
    small = count()
    for i in range(9):
        first = ReviewDecisionFactory(
            reviewer=reviewer, message=reviewable_message(model_version=ModelVersionFactory())
        )
        if i % 2:
            ReviewDecisionFactory(
                reviewer=admin_user,
                message=first.message,
                verdict="no_claim",
                supersedes=first,
                supersede_reason="r",
            )
        else:
            ReviewDecisionFactory(reviewer=reviewer, verdict="escalate")
    assert count() == small


def test_one_record_shows_its_snapshot_the_explanation_it_saw_and_its_chain_hashes(auditor_client, reviewer):
    decision = ReviewDecisionFactory(reviewer=reviewer, note="Clear guarantee.")
    html = auditor_client.get(reverse("reviews:record", args=[decision.pk])).content.decode()
    assert decision.content_hash in html
    assert decision.previous_hash in html
    assert "matches</strong>" in html
    assert "faithfulness check <strong>passed</strong>" in html
    assert decision.snapshot["prediction"]["model_version"]["name"] in html
    assert "Clear guarantee." in html
    assert 'class="rule heat-p5"' in html


def test_the_csv_export_streams_every_filtered_record(auditor_client, reviewer, second_reviewer):
    mine = [ReviewDecisionFactory(reviewer=reviewer) for _ in range(3)]
    ReviewDecisionFactory(reviewer=second_reviewer)
    response = auditor_client.get(CSV_URL, {"reviewer": "rita_reviewer"})
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert "attachment;" in response["Content-Disposition"]
    rows = csv_rows(response)
    assert [int(r["sequence"]) for r in rows] == [d.sequence for d in reversed(mine)]
    assert rows[0]["content_hash"] == mine[-1].content_hash
    assert rows[0]["rule_codes"].startswith("GR-")
    assert rows[0]["explanation_passed"] == "True"


def test_the_csv_export_neutralises_spreadsheet_formulas(auditor_client, reviewer):
    ReviewDecisionFactory(reviewer=reviewer, note='=HYPERLINK("http://evil.test","click")')
    rows = csv_rows(auditor_client.get(CSV_URL))
    assert rows[0]["note"].startswith("'=HYPERLINK")


def test_the_csv_export_does_not_query_per_row(auditor_client, reviewer):
    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            csv_rows(auditor_client.get(CSV_URL))
        return len(ctx.captured_queries)

    ReviewDecisionFactory(reviewer=reviewer)
    small = count()
    for _ in range(15):
        ReviewDecisionFactory(
            reviewer=reviewer, message=reviewable_message(model_version=ModelVersionFactory())
        )
    assert count() == small


def test_a_record_says_why_its_message_was_routed_on_its_page_and_in_the_csv(auditor_client, reviewer):
    message = reviewable_message(score=0.2, rule_phrase=None, explanation=False)
    Message.objects.filter(pk=message.pk).update(route_reason="unread_part")  # as scoring routes it
    unread = ReviewDecisionFactory(reviewer=reviewer, verdict="no_claim", message=message)
    flagged = ReviewDecisionFactory(reviewer=reviewer)

    rows = {int(r["sequence"]): r for r in csv_rows(auditor_client.get(CSV_URL))}
    assert rows[unread.sequence]["route_reason"] == "unread_part"
    assert rows[flagged.sequence]["route_reason"] == "model_and_rule"
    page = auditor_client.get(f"{RECORDS}{unread.pk}/").content.decode()
    assert "<dt>Routed because</dt><dd>Below threshold, but a part of it could not be read</dd>" in page
