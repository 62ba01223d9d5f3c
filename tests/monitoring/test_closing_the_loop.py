"""The story of issue 7, end to end, with the real trained classifier:

simulated traffic drifts (risk_free claims in euphemisms the model never saw: it misses about
half of them) -> the disagreement alert fires for risk_free -> reviewers' decisions are
exported -> a challenger is trained with them -> in shadow it catches the new phrasings the
active model misses -> activation with a reason -> on later traffic the disagreement falls back.

The first phase is simulate_traffic's small run (tests/monitoring/test_simulate_traffic.py, SMALL),
through the command, and its report is checked here as that command's end-to-end test. Three
simulated phases (8 days, then 5 and 5), one after the other, each reviewed before the next starts
(the audit chain stays in time order). Everything runs through the real services: ingest,
scoring, explanations (IG with 4 steps, to keep the test to minutes), locks and decisions,
export, training, shadow scoring, activation. To train in about a minute, the challenger is
fine-tuned for one epoch from the active model's weights on a stratified slice of the corpus
plus the exported rows (the product trains from the pretrained encoder on the whole corpus)."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from governance.services.model_versions import model_version_activate
from governance.services.shadow import model_version_set_shadow
from monitoring import selectors
from monitoring.simulation import SimulationConfig, simulate
from reviews.models import ReviewDecision
from reviews.selectors import audit_chain_report
from reviews.training_data import as_jsonl, training_data_export
from scoring.classifier.training import train_and_save
from scoring.corpus.generator import generate_drift_messages, read_jsonl
from scoring.models import Message, ModelActivation, Prediction
from scoring.services.model_versions import model_version_register, train_config_from_settings
from scoring.services.shadow import messages_shadow_score
from tests.monitoring.test_simulate_traffic import SMALL
from tests.monitoring.test_simulate_traffic import run as run_simulate_traffic
from tests.support.models import write_jsonl

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

DRIFTED = "risk_free"
PHASE = {
    "days": 8,
    "per_day": 40,
    "drift_per_day": 30,
    "drift_types": (DRIFTED,),
    "claim_rate": 0.3,
    "qa_rate": 1.0,
    "error_rate": 0.0,
    "reviewers": 2,
}
# The second and third phases: 5 days, drifted from the first (4 x 30 = 120 drifted messages, the
# >= 100 the shadow comparison needs), so they cost what they show and no more.
LATER = {**PHASE, "days": 5, "drift_day": 1}
# (claims, negatives) per split of the corpus slice the challenger is fine-tuned and measured on
SLICE = {"train": (200, 300), "val": (150, 150), "test": (150, 150)}


def corpus_slice(path):
    rows = read_jsonl(django_settings.CORPUS_PATH, validate=False)
    rng = random.Random(0)
    picked = []
    for split, (n_claims, n_negatives) in SLICE.items():
        part = [row for row in rows if row["split"] == split]
        claims = [row for row in part if row["label"] == 1]
        negatives = [row for row in part if row["label"] == 0]
        rng.shuffle(claims)
        rng.shuffle(negatives)
        picked += claims[:n_claims] + negatives[:n_negatives]
    return write_jsonl(path, picked)


def pooled_rate(version, *, since: str = "") -> tuple[int, int]:
    """(disagreements, reviewed) of the drifted type's daily series, from the ISO day `since` on."""
    series = next(
        s
        for s in selectors.disagreement(version=version, period="day")["series"]
        if s["claim_type"] == DRIFTED
    )
    points = [p for p in series["points"] if p["start"] >= since]
    return sum(p["disagreements"] for p in points), sum(p["n"] for p in points)


def test_drift_is_caught_learned_from_and_fixed_by_a_new_version(
    trained_model_version, trained_model_artifact, settings, tmp_path
):
    # The story is drift and retraining, not attribution quality: 4 IG steps, never refined. With
    # IG_REFINE_DOUBLINGS' default every batch ran again at 8 and 16 steps: IG took 177 s of a
    # 500 s profiled run of this test. Refinement is tested in tests/explanations.
    settings.IG_N_STEPS = 4
    settings.IG_REFINE_DOUBLINGS = 0
    settings.CANARY_ON_ACTIVATION = False
    settings.MONITORING_REFERENCE_DAYS = 3
    # The reference (3 days, extended until it holds 20 reviewed risk_free messages) ends before
    # the drift starts on day 4.
    settings.MONITORING_REFERENCE_MIN_REVIEWED = 20
    today = timezone.now().date()
    active = trained_model_version

    # 1. Traffic drifts from day 4 of the first phase: the alert fires for the drifted type. The
    #    phase runs through the simulate_traffic command (its small run: test_simulate_traffic's
    #    SMALL, the same configuration and seed), whose report and effects are checked here too:
    #    the whole pipeline ran and the drift shows up as a rise and an alert.
    first = run_simulate_traffic(**SMALL, days_ago=18)
    assert SimulationConfig(**{**first["config"], "drift_types": tuple(first["config"]["drift_types"])}) == (
        SimulationConfig(**PHASE, drift_day=4, seed=3)
    )
    assert first["last_day"] == (today - timedelta(days=19)).isoformat()
    assert first["messages"] == 8 * 40 + 4 * 30 == Message.objects.count()
    assert first["drift_messages"] == 120
    assert first["decided"] > 0 and first["decided"] == ReviewDecision.objects.count()
    assert first["explained"] > 0
    effect = first["drift_effect"]["per_claim_type"][DRIFTED]
    assert effect["drifted"] is True
    assert effect["after"]["rate"] > effect["before"]["rate"]
    assert any(a["claim_type"] == DRIFTED for a in first["drift_effect"]["alerts"]["day"])
    listed = selectors.alerts(period="day")
    assert any(a["claim_type"] == DRIFTED and a["start"] >= first["drift_day"] for a in listed)
    # the replayed decisions keep the audit chain valid and in time order
    assert audit_chain_report().intact
    times = list(ReviewDecision.objects.order_by("sequence").values_list("created_at", flat=True))
    assert times == sorted(times)
    alerts = [a for a in selectors.alerts(period="day", version=active) if a["claim_type"] == DRIFTED]
    assert alerts, "the disagreement alert must fire for the drifted claim type"
    assert all(a["start"] >= first["drift_day"] for a in alerts)

    # 2. Reviewers' decisions become labelled data, the drift phrasings among them.
    rows, summary = training_data_export()
    extra = tmp_path / "reviewed.jsonl"
    extra.write_text("".join(as_jsonl(rows)))
    assert summary.by_label.get(DRIFTED, 0) >= 100

    # 3. A challenger is trained with them (train_classifier's configuration, see the docstring:
    #    its threshold read on the development sets as the default's is; the reviewed rows are its
    #    only extra rows, in place of the hand-written ones, to keep the one-epoch story short).
    config = train_config_from_settings(
        base_model=str(trained_model_artifact),
        corpus_path=str(corpus_slice(tmp_path / "corpus.jsonl")),
        extra_paths=(str(extra),),
        epochs=1,
        lr=5e-5,
        device="cpu",
        # the story reads the shadow comparison, not the hand-written sets' report (the quality
        # tests read it for the real model)
        evaluation_sets=(),
    )
    challenger = model_version_register(
        artifact_dir=train_and_save(
            config, models_dir=tmp_path / "models", version="challenger", progress=False
        )
    )
    assert challenger.extra_data[0]["rows"] == len(rows)

    # 4. In shadow, on a second phase of drifted traffic (the simulation scores it with the
    #    challenger too), it flags the new phrasings the active model misses; it routes nothing.
    model_version_set_shadow(version=challenger, enabled=True)
    second = simulate(SimulationConfig(seed=12, **LATER), today=today - timedelta(days=6))
    phase_two = list(
        Message.objects.filter(received_at__date__gte=second.first_day).values_list("id", flat=True)
    )
    assert second.shadow_scored == len(phase_two) == second.messages
    assert messages_shadow_score(message_ids=phase_two, version_id=challenger.pk) == 0  # nothing twice
    drift_bodies = {row["body"] for row in generate_drift_messages(seed=12, n=4 * 30, claim_types=[DRIFTED])}
    drift_ids = set(
        Message.objects.filter(id__in=phase_two, body__in=drift_bodies).values_list("id", flat=True)
    )
    assert len(drift_ids) >= 100
    caught = {
        version.name: Prediction.objects.filter(
            message_id__in=drift_ids, model_version=version, flagged=True
        ).count()
        for version in (active, challenger)
    }
    assert caught[challenger.name] > caught[active.name], caught
    assert not Message.objects.filter(routing_prediction__model_version=challenger).exists()

    # 5. Activation with a reason; on the third phase the drifted type's disagreement falls back.
    activation = model_version_activate(
        version=challenger, reason="catches the risk_free euphemisms reviewers labelled"
    )
    assert activation.previous == active and ModelActivation.objects.latest() == activation
    third = simulate(SimulationConfig(seed=13, **LATER), today=today)
    before_x, before_n = pooled_rate(active, since=first["drift_day"])
    after_x, after_n = pooled_rate(challenger)
    assert before_n and after_n and third.decided
    assert after_x / after_n < before_x / before_n, (after_x, after_n, before_x, before_n)
    assert not [a for a in selectors.alerts(period="day", version=challenger) if a["claim_type"] == DRIFTED]
