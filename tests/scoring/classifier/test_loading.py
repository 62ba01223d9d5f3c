import shutil
import subprocess
import sys

import pytest
from django.conf import settings

from governance.services.model_versions import model_version_with_threshold
from scoring.classifier import loading
from scoring.classifier.loading import clear_scorers, get_scorer
from scoring.errors import ModelNotReady
from scoring.services.model_versions import model_version_register

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_cache():
    clear_scorers()
    yield
    clear_scorers()


def test_a_version_is_loaded_once_per_process(tiny_model_version):
    first = get_scorer(tiny_model_version)

    assert get_scorer(tiny_model_version) is first
    assert len(loading._scorers) == 1


def test_threshold_variants_share_the_loaded_artifact(tiny_model_version):
    variant = model_version_with_threshold(version=tiny_model_version, threshold=0.42, reason="test")

    assert get_scorer(variant) is get_scorer(tiny_model_version)


def test_every_version_scored_through_a_shared_scorer_has_its_threshold_rechecked(tiny_model_version):
    variant = model_version_with_threshold(version=tiny_model_version, threshold=0.42, reason="test")

    scorer = get_scorer(tiny_model_version)
    get_scorer(variant)

    assert {tiny_model_version.threshold, 0.42} <= set(scorer.decision_thresholds)


def test_the_scorer_follows_the_scoring_settings(tiny_model_version, settings):
    settings.WINDOW_TOKENS = 32
    settings.WINDOW_STRIDE = 8
    settings.SCORING_DEVICE = "cpu"
    settings.SCORING_PRECISION = "float32"

    scorer = get_scorer(tiny_model_version)

    assert (scorer.window_tokens, scorer.stride, str(scorer.device)) == (32, 8, "cpu")
    assert scorer.precision == "float32"
    assert scorer.max_chars == settings.MAX_BODY_CHARS


def test_a_corrupt_artifact_is_not_loaded(tiny_model_artifact, tmp_path):
    copy = shutil.copytree(tiny_model_artifact, tmp_path / "copy")
    manifest = copy / "claimwatch.json"
    manifest.write_text(manifest.read_text().replace('"tiny-model"', '"copy"'))
    version = model_version_register(artifact_dir=copy)
    (copy / "MODEL_CARD.md").write_text("tampered")

    with pytest.raises(ModelNotReady, match="changed or is corrupt"):
        get_scorer(version)
    assert loading._scorers == {}


def test_importing_the_scoring_code_loads_no_model():
    # Celery forks workers from a parent: nothing may be loaded before the first get_scorer().
    code = (
        "import gc, django; django.setup();"
        "import torch, scoring.classifier.loading, scoring.services.model_versions;"
        "import scoring.management.commands.score, governance.management.commands.ensure_model;"
        "print(sum(isinstance(o, torch.nn.Module) for o in gc.get_objects()),"
        " len(scoring.classifier.loading._scorers))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=settings.BASE_DIR,
        env={
            "DJANGO_SETTINGS_MODULE": "compliance_site.settings",
            "DEBUG": "1",
            "PATH": "/usr/bin:/bin",
            "HOME": "/tmp",
        },
        timeout=120,
        check=True,
    )
    assert result.stdout.split() == ["0", "0"]
