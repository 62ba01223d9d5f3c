import json

import pytest
import torch

from scoring.classifier.artifacts import (
    EVAL_SCORES_NAME,
    artifact_sha256,
    model_card,
    read_eval_rows,
    read_manifest,
    read_metrics,
)
from scoring.classifier.precision import FLOAT32
from scoring.classifier.scorer import Scorer
from scoring.classifier.training import TrainConfig, train, train_and_save
from scoring.constants import CLASS_LABELS
from scoring.errors import TrainingDataError
from tests.support.models import tiny_corpus_rows, tiny_train_config, write_jsonl


@pytest.fixture
def tiny_inputs(tiny_training_inputs):
    """(base encoder, corpus): the session's, read-only."""
    return tiny_training_inputs


def test_training_saves_an_artifact_the_scorer_loads(tiny_model_artifact):
    names = {p.name for p in tiny_model_artifact.iterdir()}

    assert {
        "model.safetensors",
        "config.json",
        "tokenizer.json",
        "claimwatch.json",
        "metrics.json",
        "MODEL_CARD.md",
    } <= names
    scorer = Scorer(tiny_model_artifact, device="cpu", window_tokens=64, stride=32)
    assert scorer.labels == list(CLASS_LABELS)
    assert scorer.threshold == read_manifest(tiny_model_artifact)["threshold"]


def test_the_tiny_model_learns_to_tell_a_claim_from_neutral_text(tiny_model_artifact):
    scorer = Scorer(tiny_model_artifact, device="cpu", window_tokens=64, stride=32)

    claim, neutral = scorer.claim_scores(
        ["We guarantee a 12% annual return on this fund.", "Lunch is at 1 o'clock in the main meeting room."]
    )

    assert claim > neutral


def test_the_manifest_records_what_the_version_needs(tiny_model_artifact):
    manifest = read_manifest(tiny_model_artifact)

    assert manifest["labels"] == list(CLASS_LABELS)
    assert 0.0 <= manifest["threshold"] <= 1.0
    assert "recall >= 0.90" in manifest["threshold_rule"]
    assert (manifest["window_tokens"], manifest["window_stride"]) == (64, 32)
    assert manifest["hyperparameters"]["lr"] == pytest.approx(3e-3)
    assert len(manifest["corpus_sha256"]) == 64
    assert manifest["extra_data"] == []


def test_metrics_report_test_with_and_without_novel_phrasing_and_the_bar(tiny_model_artifact):
    metrics = read_metrics(tiny_model_artifact)

    for key in ("val", "test", "test_in_distribution", "quality_bar", "training", "threshold_rule"):
        assert key in metrics
    assert metrics["training"]["epochs_run"] >= 1
    assert {c["check"] for c in metrics["quality_bar"]} >= {"overall recall", "overall precision"}


def test_stored_eval_scores_match_what_the_saved_model_scores(tiny_model_artifact, tmp_path):
    rows = {r["id"]: r for r in tiny_corpus_rows()}
    stored = [r for r in read_eval_rows(tiny_model_artifact) if r["split"] == "test"]
    # training evaluates in float32 (the serving Scorer re-checks near the threshold in float32)
    scorer = Scorer(tiny_model_artifact, device="cpu", window_tokens=64, stride=32, precision=FLOAT32)

    rescored = scorer.claim_scores([rows[r["id"]]["body"] for r in stored])

    assert rescored == pytest.approx([r["score"] for r in stored], abs=1e-5)
    assert {r["id"] for r in stored} == {i for i, r in rows.items() if r["split"] == "test"}


def test_the_threshold_is_chosen_on_val_by_the_rule(tiny_model_artifact):
    from scoring.classifier.threshold import choose_threshold

    val = [r for r in read_eval_rows(tiny_model_artifact) if r["split"] == "val"]
    manifest = read_manifest(tiny_model_artifact)
    rule = manifest["hyperparameters"]

    assert (rule["target_recall"], rule["type_floor"]) == (0.90, 0.80)
    assert manifest["threshold"] == choose_threshold(
        [r["score"] for r in val],
        [r["label"] for r in val],
        target_recall=0.90,
        claim_types=[r["claim_type"] for r in val],
        type_floor=0.80,
    )


def test_extra_rows_train_but_leave_the_test_split_untouched(tiny_inputs, tmp_path):
    base, corpus = tiny_inputs
    extra = write_jsonl(
        tmp_path / "reviewed.jsonl",
        [
            {"body": "Your nest egg is bulletproof with us.", "label": 1, "claim_type": "risk_free"},
            {"body": "Bulletproof vests are on sale this week.", "label": 0, "claim_type": "no_claim"},
        ],
    )
    config = tiny_train_config(base, corpus, epochs=1, extra_paths=(str(extra),))

    result = train(config, progress=False)

    [recorded] = result.manifest["extra_data"]
    assert recorded["rows"] == 2 and recorded["path"] == str(extra) and len(recorded["sha256"]) == 64
    test_ids = {r["id"] for r in result.eval_rows if r["split"] == "test"}
    assert test_ids == {r["id"] for r in tiny_corpus_rows() if r["split"] == "test"}
    assert (
        result.metrics["training"]["train_messages"]
        == sum(r["split"] == "train" for r in tiny_corpus_rows()) + 2
    )


def test_the_version_records_the_digest_of_the_data_it_read_not_of_a_file_replaced_since(
    tiny_inputs, tmp_path, monkeypatch
):
    from scoring.classifier import training
    from scoring.classifier.data import file_sha256

    base, corpus = tiny_inputs
    corpus_copy = tmp_path / "corpus.jsonl"
    corpus_copy.write_bytes(corpus.read_bytes())
    extra = write_jsonl(
        tmp_path / "reviewed.jsonl",
        [{"body": "Bulletproof vests are on sale this week.", "label": 0, "claim_type": "no_claim"}],
    )
    read = {corpus_copy: file_sha256(corpus_copy), extra: file_sha256(extra)}
    real_load_base = training.load_base

    def load_base_after_the_files_change(*args, **kwargs):  # the files are read before the base model
        for path in read:
            path.write_bytes(path.read_bytes() + b"\n")
        return real_load_base(*args, **kwargs)

    monkeypatch.setattr(training, "load_base", load_base_after_the_files_change)
    config = tiny_train_config(base, corpus_copy, epochs=1, extra_paths=(str(extra),))

    manifest = train(config, progress=False).manifest

    assert manifest["corpus_sha256"] == read[corpus_copy] != file_sha256(corpus_copy)
    assert manifest["extra_data"][0]["sha256"] == read[extra] != file_sha256(extra)


def test_a_file_that_changes_while_it_is_read_stops_training(tiny_inputs, tmp_path, monkeypatch):
    from scoring.classifier import training

    base, corpus = tiny_inputs
    corpus_copy = tmp_path / "corpus.jsonl"
    corpus_copy.write_bytes(corpus.read_bytes())
    real_read_rows = training.read_rows

    def read_rows_while_it_changes(path, *, corpus):
        rows = real_read_rows(path, corpus=corpus)
        corpus_copy.write_bytes(corpus_copy.read_bytes() + b"\n")
        return rows

    monkeypatch.setattr(training, "read_rows", read_rows_while_it_changes)

    with pytest.raises(TrainingDataError, match="changed while it was being read"):
        train(tiny_train_config(base, corpus_copy, epochs=1), progress=False)


def test_a_bad_extra_file_stops_training_before_anything_is_written(tiny_inputs, tmp_path):
    base, corpus = tiny_inputs
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"body": "x", "label": "yes", "claim_type": "risk_free"}\n')
    config = tiny_train_config(base, corpus, extra_paths=(str(bad),))

    with pytest.raises(TrainingDataError, match=r"bad\.jsonl line 1"):
        train_and_save(config, models_dir=tmp_path / "models", version="never")
    assert not (tmp_path / "models" / "never").exists()


def test_training_is_reproducible_with_the_same_seed(tiny_inputs):
    base, corpus = tiny_inputs
    config = tiny_train_config(base, corpus, epochs=1)

    first, second = train(config, progress=False), train(config, progress=False)

    assert first.threshold == second.threshold
    assert [r["score"] for r in first.eval_rows] == pytest.approx(
        [r["score"] for r in second.eval_rows], abs=1e-6
    )


def test_the_plan_does_not_depend_on_how_fast_the_machine_is(tiny_inputs, monkeypatch):
    # given a clock on which every step takes an hour
    from scoring.classifier import training

    base, corpus = tiny_inputs
    config = tiny_train_config(base, corpus, epochs=2, patience=None)
    normal = train(config, progress=False)
    ticks = iter(range(0, 10**9, 3600))
    monkeypatch.setattr(training.time, "monotonic", lambda: float(next(ticks)))

    # when
    slow = train(config, progress=False)

    # then the same epochs ran and the same model came out
    assert slow.metrics["training"]["epochs_run"] == normal.metrics["training"]["epochs_run"] == 2
    assert slow.metrics["training"]["stopped_because"] == "ran the planned 2 epochs"
    assert [r["score"] for r in slow.eval_rows] == pytest.approx(
        [r["score"] for r in normal.eval_rows], abs=1e-6
    )


def test_frozen_layers_keep_their_pretrained_weights_and_the_upper_ones_train(tiny_inputs):
    from transformers import AutoModelForSequenceClassification

    base, corpus = tiny_inputs
    pretrained = AutoModelForSequenceClassification.from_pretrained(base).state_dict()
    config = tiny_train_config(base, corpus, epochs=2, freeze_layers=1)

    result = train(config, progress=False)

    trained = result.model.state_dict()
    frozen = [k for k in trained if k.startswith(("bert.embeddings.", "bert.encoder.layer.0."))]
    upper = [k for k in trained if k.startswith("bert.encoder.layer.1.")]
    assert frozen and upper
    assert all(trained[k].equal(pretrained[k]) for k in frozen)
    assert not all(trained[k].equal(pretrained[k]) for k in upper)
    assert result.metrics["training"]["frozen_layers_cached_windows"] > 0


def test_calibration_is_fitted_on_val_and_folded_into_the_model(tiny_inputs):
    base, corpus = tiny_inputs
    plain = train(tiny_train_config(base, corpus, epochs=3), progress=False)
    calibrated = train(
        tiny_train_config(base, corpus, epochs=3, calibrate=True, length_calibration=True), progress=False
    )

    manifest, metrics = calibrated.manifest, calibrated.metrics
    temperature = metrics["calibration"]["temperature"]
    assert manifest["temperature"] == pytest.approx(temperature) and plain.manifest["temperature"] == 1.0
    assert metrics["calibration"]["val_log_loss_after"] <= metrics["calibration"]["val_log_loss_before"]
    # then the length term, fitted on the same val messages, is recorded and lowers their log loss
    assert manifest["length_penalty"] == metrics["calibration"]["length_penalty"] >= 0.0
    assert plain.manifest["length_penalty"] == 0.0
    calibration = metrics["calibration"]
    assert calibration["val_log_loss_after_length"] <= calibration["val_log_loss_before_length"]
    assert metrics["calibration"]["val"]["n"] == metrics["val"]["overall"]["n"]
    assert 0.0 <= metrics["calibration"]["val"]["ece"] <= 1.0
    # folded into the head: the same training (same seed) with the head divided by T
    assert torch.allclose(calibrated.model.classifier.weight, plain.model.classifier.weight / temperature)
    assert torch.allclose(calibrated.model.classifier.bias, plain.model.classifier.bias / temperature)
    assert plain.metrics["calibration"]["method"] == "none"


def test_early_stopping_stops_when_val_stops_improving(tiny_inputs):
    base, corpus = tiny_inputs
    config = tiny_train_config(base, corpus, epochs=30, patience=0, lr=5e-2)

    result = train(config, progress=False)

    training = result.metrics["training"]
    assert "early stopping" in training["stopped_because"]
    assert training["best_epoch"] == training["epochs_run"] - 1


@pytest.mark.parametrize(
    "bad",
    [
        {"epochs": 0},
        {"lr": 0},
        {"batch_size": 0},
        {"target_recall": 1.5},
        {"freeze_layers": -1},
        {"layer_lr_decay": 0},
        {"label_smoothing": 1},
        {"pooling": "max"},
    ],
)
def test_nonsense_hyper_parameters_are_refused(bad):
    with pytest.raises(ValueError):
        TrainConfig(base_model="x", corpus_path="y", **bad)


def test_an_artifact_is_never_overwritten(tiny_model_artifact):
    with pytest.raises(FileExistsError):
        train_and_save(
            TrainConfig(base_model="x", corpus_path="y"),
            models_dir=tiny_model_artifact.parent,
            version=tiny_model_artifact.name,
        )


def test_the_artifact_digest_covers_every_file(tiny_model_artifact, tmp_path):
    import shutil

    copy = shutil.copytree(tiny_model_artifact, tmp_path / "copy")
    before = artifact_sha256(copy)
    with (copy / EVAL_SCORES_NAME).open("a") as handle:
        handle.write(json.dumps({"id": "x"}) + "\n")

    assert artifact_sha256(copy) != before
    assert artifact_sha256(tiny_model_artifact) == artifact_sha256(
        shutil.copytree(tiny_model_artifact, tmp_path / "again")
    )


def test_the_model_card_states_scope_limits_and_measured_figures(tiny_model_artifact):
    card = (tiny_model_artifact / "MODEL_CARD.md").read_text()

    assert "synthetic" in card
    assert "Threshold" in card and "recall" in card
    assert "In-distribution test split" in card
    # the tiny model trains on its claims as written (tests/support/models.py), the default does not
    assert "- erased claims: none (the claims as written only)" in card


def test_the_model_card_says_when_the_claims_were_also_trained_erased(tiny_model_artifact):
    manifest = read_manifest(tiny_model_artifact)
    metrics = json.loads((tiny_model_artifact / "metrics.json").read_text())
    erased = {**manifest, "hyperparameters": {**manifest["hyperparameters"], "erase_rationales": True}}

    card = model_card(erased, metrics)

    assert "- erased claims: every training claim also seen with its claim phrases" in card
    assert "erase_rationales=True" in card


def _hand_written_set(path, claims: list[tuple[str, str]], innocent: list[str]):
    rows = [
        {"id": f"c{i}", "body": body, "label": 1, "claim_type": code, "kind": "plain"}
        for i, (code, body) in enumerate(claims)
    ] + [
        {"id": f"n{i}", "body": body, "label": 0, "claim_type": "no_claim", "kind": "plain"}
        for i, body in enumerate(innocent)
    ]
    return write_jsonl(path, rows)


def test_the_threshold_rule_reads_the_hand_written_threshold_sets_when_named(tiny_inputs, tmp_path):
    from scoring.classifier.threshold import choose_threshold

    base, corpus = tiny_inputs
    first = _hand_written_set(
        tmp_path / "devset.jsonl",
        [
            ("guaranteed_returns", "You will get 9% a year from us, guaranteed."),
            ("risk_free", "Your capital cannot fall in value with this plan."),
        ],
        ["The meeting is moved to Thursday.", "Guaranteed parking for visitors."],
    )
    second = _hand_written_set(
        tmp_path / "devchat.jsonl",
        [
            ("performance_forecast", "this one doubles by march"),
            ("regulatory_endorsement", "The FCA backs it."),
        ],
        ["see you at lunch"],
    )
    config = tiny_train_config(base, corpus, epochs=1, threshold_sets=(str(first), str(second)))

    result = train(config, progress=False)

    rows = [json.loads(line) for path in (first, second) for line in path.read_text().splitlines()]
    scorer = Scorer.from_model(
        result.model,
        result.tokenizer,
        labels=CLASS_LABELS,
        device="cpu",
        window_tokens=64,
        stride=32,
        precision=FLOAT32,
        length_penalty=result.manifest["length_penalty"],
    )
    scores = scorer.claim_scores([r["body"] for r in rows])
    assert result.threshold == choose_threshold(
        scores,
        [r["label"] for r in rows],
        target_recall=0.90,
        claim_types=[r["claim_type"] for r in rows],
        type_floor=0.80,
    )
    assert "the hand-written development sets (devset, devchat)" in result.manifest["threshold_rule"]
    assert [(s["rows"], s["claims"]) for s in result.manifest["threshold_sets"]] == [(4, 2), (3, 2)]
    val = [r for r in result.eval_rows if r["split"] == "val"]
    assert result.metrics["val_rule_threshold"] == choose_threshold(
        [r["score"] for r in val],
        [r["label"] for r in val],
        target_recall=0.90,
        claim_types=[r["claim_type"] for r in val],
        type_floor=0.80,
    )
    assert result.metrics["threshold"] == result.threshold
    card = model_card(result.manifest, result.metrics)
    assert "read from `devset.jsonl`" in card and "4 messages, 2 claims" in card
    assert f"the validation split would give {result.metrics['val_rule_threshold']:.4f}" in card


def test_a_threshold_set_without_claims_or_unreadable_stops_training_before_it_starts(
    tiny_inputs, tmp_path, monkeypatch
):
    from scoring.classifier import training

    base, corpus = tiny_inputs
    innocent = _hand_written_set(tmp_path / "innocent.jsonl", [], ["Lunch at one."])
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "x", "body": "no label"}\n')
    monkeypatch.setattr(training, "load_base", lambda *a, **k: pytest.fail("training started"))

    with pytest.raises(TrainingDataError, match="hold no claim"):
        train(tiny_train_config(base, corpus, threshold_sets=(str(innocent),)), progress=False)
    with pytest.raises(
        TrainingDataError,
        match=r"A threshold set \(settings THRESHOLD_SETS\): .*broken\.jsonl.*--threshold-on-val",
    ):
        train(tiny_train_config(base, corpus, threshold_sets=(str(broken),)), progress=False)


def test_a_set_cannot_both_choose_the_threshold_and_be_measured_or_trained_on(tiny_inputs, tmp_path):
    base, corpus = tiny_inputs
    path = _hand_written_set(tmp_path / "eval.jsonl", [("risk_free", "It cannot lose.")], ["Hello."])

    with pytest.raises(ValueError, match=r"cannot also be an evaluation set: eval\.jsonl"):
        tiny_train_config(base, corpus, threshold_sets=(str(path),), evaluation_sets=(str(path),))
    with pytest.raises(ValueError, match=r"cannot also be training data: eval\.jsonl"):
        tiny_train_config(base, corpus, threshold_sets=(str(path),), extra_paths=(str(path),))


def test_threshold_sets_must_hold_every_claim_type_and_no_other(tiny_inputs, tmp_path, monkeypatch):
    from scoring.classifier import training

    base, corpus = tiny_inputs
    partial = _hand_written_set(tmp_path / "partial.jsonl", [("risk_free", "It cannot lose.")], ["Hi."])
    monkeypatch.setattr(training, "load_base", lambda *a, **k: pytest.fail("training started"))

    with pytest.raises(TrainingDataError, match=r"missing \['guaranteed_returns', 'performance_forecast'"):
        train(tiny_train_config(base, corpus, threshold_sets=(str(partial),)), progress=False)


def test_the_default_configuration_chooses_the_threshold_on_the_development_sets():
    from django.conf import settings

    from scoring.services.model_versions import train_config_from_settings

    config = train_config_from_settings()

    assert [p.rsplit("/", 1)[-1] for p in config.threshold_sets] == ["dev.jsonl", "dev_mixed.jsonl"]
    assert set(settings.THRESHOLD_SETS).isdisjoint(settings.EVALUATION_SETS)
    assert train_config_from_settings(threshold_sets=()).threshold_sets == ()
