import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from scoring.management.commands.train_classifier import Command as TrainClassifier
from scoring.models import ModelActivation, ModelVersion
from scoring.services.model_versions import model_version_register
from tests.support.models import save_training, write_jsonl

pytestmark = pytest.mark.django_db


def run(*args, stdin=None, **options):
    out = io.StringIO()
    if stdin is not None:
        options["stdin"] = stdin
    call_command(*args, stdout=out, stderr=io.StringIO(), **options)
    return out.getvalue()


@pytest.fixture
def tiny_training_settings(settings, tmp_path, tiny_training_inputs):
    """Point the default training configuration at the tiny encoder and corpus (shared, read-only);
    models are written under the test's own folder."""
    base, corpus = tiny_training_inputs
    settings.BASE_MODEL_PATH = str(base)
    settings.CORPUS_PATH = corpus
    settings.MODELS_DIR = tmp_path / "models"
    settings.SCORING_DEVICE = "cpu"
    # the tiny corpus alone, its threshold on its own val split (the real rows and sets are the
    # real model's; the two tests below put tiny ones in their place)
    settings.TRAINING_EXTRA_FILES = ()
    settings.THRESHOLD_SETS = ()
    return settings


def test_score_prints_one_json_line_per_row_in_input_order(tiny_model_version, tmp_path):
    rows = [
        {"id": "a", "body": "We guarantee a 12% annual return on this fund."},
        {"id": 2, "body": "Lunch is at 1 o'clock in the main meeting room."},
    ]
    path = write_jsonl(tmp_path / "in.jsonl", rows)

    lines = [json.loads(line) for line in run("score", input=str(path)).splitlines()]

    assert [line["id"] for line in lines] == ["a", 2]
    for line in lines:
        assert set(line) == {
            "id",
            "score",
            "flagged",
            "rule_hits",
            "routed",
            "claim_type",
            "driving_part",
            "model_version",
            "threshold",
        }
        assert line["model_version"] == tiny_model_version.name
        assert line["threshold"] == tiny_model_version.threshold
        assert line["flagged"] == (line["score"] >= tiny_model_version.threshold)
        assert line["routed"] == (line["flagged"] or bool(line["rule_hits"]))
    assert lines[0]["score"] > lines[1]["score"]


def test_score_reports_the_rule_hits_and_the_pipelines_routing_beside_the_models_flag(tiny_model_version):
    # given a claim the rules catch, the same words quoted under a warning, and a neutral line
    stdin = io.StringIO(
        "\n".join(
            json.dumps(row)
            for row in [
                {"id": "claim", "body": "Don't worry, your returns are guaranteed."},
                {"id": "answer", "body": "No, returns are guaranteed."},
                {
                    "id": "quoted",
                    "body": "Please ignore this.\n\nOn Mon, 3 Feb 2025, Promo <p@x.example> wrote:\n"
                    "> Your returns are guaranteed!",
                },
                {"id": "lunch", "body": "Lunch is at 1 o'clock in the main meeting room."},
            ]
        )
        + "\n"
    )

    # when
    lines = {line["id"]: line for line in map(json.loads, run("score", input="-", stdin=stdin).splitlines())}

    # then a rule hit routes even where the model alone does not flag; quoted history routes nothing
    for key in ("claim", "answer"):
        assert [hit["rule"] for hit in lines[key]["rule_hits"]] == ["GR-002"], lines[key]
        assert lines[key]["routed"] is True
    assert lines["quoted"]["rule_hits"] == []
    assert lines["lunch"]["rule_hits"] == [] and lines["lunch"]["routed"] == lines["lunch"]["flagged"]
    assert lines["quoted"]["driving_part"] == "body"


def test_score_turns_bad_rows_into_error_lines_and_scores_the_rest(tiny_model_version):
    stdin = io.StringIO(
        "\n".join(
            [
                '{"id": "ok1", "body": "Returns are guaranteed."}',
                "{broken json",
                '{"body": "no id here"}',
                '{"id": "empty", "body": "   "}',
                '{"id": "ctrl", "body": "\\u0000\\u0001"}',
                '{"id": "nobody"}',
                '["not", "an", "object"]',
                '{"id": "ok2", "body": "See you at lunch."}',
            ]
        )
        + "\n"
    )

    lines = [json.loads(line) for line in run("score", input="-", stdin=stdin).splitlines()]

    assert len(lines) == 8
    assert [line.get("id") for line in lines] == ["ok1", None, None, "empty", "ctrl", "nobody", None, "ok2"]
    errors = [line for line in lines if "error" in line]
    assert len(errors) == 6
    assert "line 2" in errors[0]["error"] and "not valid JSON" in errors[0]["error"]
    assert "needs an 'id'" in errors[1]["error"]
    assert "nothing to score" in errors[2]["error"]
    assert "score" in lines[0] and "score" in lines[-1]


def test_score_without_an_active_version_says_what_to_do(db, tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", [{"id": 1, "body": "hi"}])

    with pytest.raises(CommandError, match="No model version is active"):
        run("score", input=str(path))


def test_activate_model_records_the_reason(tiny_model_artifact, admin_user):
    version = model_version_register(artifact_dir=tiny_model_artifact)

    output = run("activate_model", version.name, reason="first model", user=admin_user.username)

    version.refresh_from_db()
    assert version.is_active
    assert "activated tiny-model" in output
    activation = ModelActivation.objects.get()
    assert (activation.reason, activation.activated_by) == ("first model", admin_user)


def test_activate_model_refuses_an_empty_reason_and_an_unknown_version(tiny_model_artifact):
    model_version_register(artifact_dir=tiny_model_artifact)

    with pytest.raises(CommandError, match="needs a reason"):
        run("activate_model", "tiny-model", reason=" ")
    with pytest.raises(CommandError, match="No model version named"):
        run("activate_model", "nope", reason="why")
    assert not ModelVersion.objects.filter(is_active=True).exists()


def test_train_classifier_registers_an_inactive_version_and_prints_test_metrics(
    tiny_training_settings, tmp_path
):
    written = write_jsonl(
        tmp_path / "written" / "chat.jsonl",
        [
            {"body": "ur money cant go down, its backed", "label": 1, "claim_type": "risk_free"},
            {"body": "bid 99.20 for 5mm, who has an offer", "label": 0, "claim_type": ""},
        ],
    )
    tiny_training_settings.TRAINING_EXTRA_FILES = (written,)
    extra = write_jsonl(
        tmp_path / "reviewed.jsonl",
        [{"body": "Your nest egg is bulletproof.", "label": 1, "claim_type": "risk_free"}],
    )

    output = run(
        "train_classifier",
        epochs=1,
        name="cmd-model",
        extra=[str(extra)],
        no_progress=True,
    )

    version = ModelVersion.objects.get(name="cmd-model")
    assert not version.is_active
    manifest = json.loads((tiny_training_settings.MODELS_DIR / "cmd-model" / "claimwatch.json").read_text())
    # the length term is fitted by default (--no-length-calibration leaves it out)
    assert manifest["hyperparameters"]["length_calibration"] is True and manifest["length_penalty"] >= 0.0
    assert (tiny_training_settings.MODELS_DIR / "cmd-model" / "model.safetensors").is_file()
    # the hand-written training rows of settings first, then --extra
    assert [(Path(e["path"]).name, e["rows"]) for e in version.extra_data] == [
        ("chat.jsonl", 2),
        ("reviewed.jsonl", 1),
    ]
    assert "registered model version cmd-model" in output
    assert "test split without novel_phrasing" in output
    assert "bar: overall recall" in output


def test_train_classifier_fits_the_length_term_unless_told_not_to():
    parser = TrainClassifier().create_parser("manage.py", "train_classifier")

    assert parser.parse_args([]).length_calibration is True
    assert parser.parse_args(["--length-calibration"]).length_calibration is True
    assert parser.parse_args(["--no-length-calibration"]).length_calibration is False


def test_train_classifier_with_a_bad_extra_file_changes_nothing(tiny_training_settings, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"body": "x", "label": 1, "claim_type": "made_up"}\n')

    with pytest.raises(CommandError, match=r"bad\.jsonl line 1"):
        run("train_classifier", epochs=1, name="never", extra=[str(bad)], no_progress=True)
    assert not ModelVersion.objects.exists()
    assert not (tiny_training_settings.MODELS_DIR / "never").exists()


def test_train_classifier_refuses_a_taken_name_before_training(tiny_training_settings, tiny_model_artifact):
    model_version_register(artifact_dir=tiny_model_artifact)

    with pytest.raises(CommandError, match="already exists"):
        run("train_classifier", name="tiny-model", no_progress=True)


def test_ensure_model_does_nothing_when_a_version_is_active(tiny_model_version):
    output = run("ensure_model")

    assert "tiny-model is active" in output
    assert ModelActivation.objects.count() == 1


def test_ensure_model_activates_the_newest_intact_trained_version(
    tiny_training_settings, tmp_path, tiny_one_epoch_training
):
    one_epoch = tiny_one_epoch_training
    older = model_version_register(artifact_dir=save_training(one_epoch, tmp_path / "a", name="older"))
    newer = model_version_register(artifact_dir=save_training(one_epoch, tmp_path / "b", name="newer"))
    (tmp_path / "b" / "models" / "newer" / "metrics.json").write_text("{}")  # damaged: skipped

    run("ensure_model")

    older.refresh_from_db()
    newer.refresh_from_db()
    assert older.is_active and not newer.is_active
    assert "make run" in ModelActivation.objects.get().reason


def test_ensure_model_trains_and_activates_a_model_when_there_is_none(tiny_training_settings):
    output = run("ensure_model")

    version = ModelVersion.objects.get()
    assert version.is_active
    assert ModelActivation.objects.get().reason == "initial model trained by make run"
    assert f"activated {version.name}" in output


def test_train_classifier_corpus_only_and_threshold_on_val_leave_out_what_settings_add(
    tiny_training_settings, tmp_path
):
    written = write_jsonl(
        tmp_path / "written.jsonl",
        [{"body": "it will double by june", "label": 1, "claim_type": "performance_forecast"}],
    )
    claims = {
        "guaranteed_returns": "We guarantee 9% a year.",
        "risk_free": "Your capital cannot fall.",
        "performance_forecast": "It doubles by March.",
        "regulatory_endorsement": "The SEC approved it.",
    }
    development = write_jsonl(
        tmp_path / "handwritten" / "devset.jsonl",
        [
            {"id": code, "body": body, "label": 1, "claim_type": code, "kind": "plain"}
            for code, body in claims.items()
        ]
        + [{"id": "n", "body": "Lunch is at one.", "label": 0, "claim_type": "no_claim", "kind": "plain"}],
    )
    tiny_training_settings.TRAINING_EXTRA_FILES = (written,)
    tiny_training_settings.EVALUATION_SETS_DIR = development.parent
    tiny_training_settings.THRESHOLD_SETS = ("devset",)
    tiny_training_settings.EVALUATION_SETS = ()

    run("train_classifier", epochs=1, name="on-dev", no_progress=True)
    run(
        "train_classifier", epochs=1, name="on-val", corpus_only=True, threshold_on_val=True, no_progress=True
    )

    on_dev, on_val = ModelVersion.objects.get(name="on-dev"), ModelVersion.objects.get(name="on-val")
    assert [e["rows"] for e in on_dev.extra_data] == [1] and on_val.extra_data == []
    assert "the hand-written development sets (devset)" in on_dev.threshold_rule
    assert "on the validation split" in on_val.threshold_rule
