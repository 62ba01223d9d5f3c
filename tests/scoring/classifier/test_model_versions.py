import shutil

import pytest

from governance.services.model_versions import model_version_activate, model_version_with_threshold
from scoring.errors import ArtifactError, ModelVersionError
from scoring.models import ModelActivation, ModelVersion
from scoring.services.model_versions import model_version_register
from tests.support.models import save_training

pytestmark = pytest.mark.django_db


@pytest.fixture
def artifact_copy(tiny_model_artifact, tmp_path):
    """A private copy of the tiny artifact, registered under the name tiny-copy, that a test
    may damage."""
    copy = shutil.copytree(tiny_model_artifact, tmp_path / "tiny-copy")
    manifest = copy / "claimwatch.json"
    manifest.write_text(manifest.read_text().replace('"tiny-model"', '"tiny-copy"'))
    return copy


def test_registering_records_the_artifact_and_leaves_the_version_inactive(tiny_model_artifact):
    version = model_version_register(artifact_dir=tiny_model_artifact)

    assert version.name == "tiny-model"
    assert len(version.artifact_sha256) == 64
    assert not version.is_active
    assert version.threshold == version.metrics["threshold"]
    assert version.labels[0] == "no_claim"
    assert version.hyperparameters["batch_size"] == 8
    assert "recall" in version.threshold_rule


def test_a_version_name_cannot_be_registered_twice(tiny_model_artifact):
    model_version_register(artifact_dir=tiny_model_artifact)

    with pytest.raises(ModelVersionError, match="already exists"):
        model_version_register(artifact_dir=tiny_model_artifact)


def test_an_incomplete_artifact_cannot_be_registered(artifact_copy):
    (artifact_copy / "model.safetensors").unlink()

    with pytest.raises(ArtifactError, match=r"missing model\.safetensors"):
        model_version_register(artifact_dir=artifact_copy)
    assert not ModelVersion.objects.exists()


def test_activation_needs_a_reason(tiny_model_artifact):
    version = model_version_register(artifact_dir=tiny_model_artifact)

    with pytest.raises(ModelVersionError, match="needs a reason"):
        model_version_activate(version=version, reason="   ")
    version.refresh_from_db()
    assert not version.is_active


def test_activation_replaces_the_active_version_and_records_who_why_and_the_metrics(
    tmp_path, admin_user, tiny_one_epoch_training
):
    one_epoch = tiny_one_epoch_training
    first = model_version_register(artifact_dir=save_training(one_epoch, tmp_path / "a", name="first"))
    second = model_version_register(artifact_dir=save_training(one_epoch, tmp_path / "b", name="second"))
    model_version_activate(version=first, reason="initial")

    activation = model_version_activate(
        version=second, user=admin_user, reason="better recall on new phrasings"
    )

    first.refresh_from_db()
    assert second.is_active and not first.is_active
    assert second.activated_at is not None
    assert activation.previous == first
    assert activation.activated_by == admin_user
    assert activation.reason == "better recall on new phrasings"
    assert activation.metrics["threshold"] == second.threshold
    assert "test_in_distribution" in activation.metrics
    assert ModelVersion.objects.filter(is_active=True).count() == 1


def test_rolling_back_is_an_activation_of_the_older_version(tmp_path, tiny_one_epoch_training):
    one_epoch = tiny_one_epoch_training
    first = model_version_register(artifact_dir=save_training(one_epoch, tmp_path / "a", name="first"))
    second = model_version_register(artifact_dir=save_training(one_epoch, tmp_path / "b", name="second"))
    model_version_activate(version=first, reason="initial")
    model_version_activate(version=second, reason="challenger")

    rollback = model_version_activate(version=first, reason="roll back: precision fell")

    assert rollback.previous == second
    names = ModelActivation.objects.order_by("id").values_list("model_version__name", flat=True)
    assert list(names) == ["first", "second", "first"]


def test_activating_the_active_version_again_is_refused(tiny_model_artifact):
    version = model_version_register(artifact_dir=tiny_model_artifact)
    model_version_activate(version=version, reason="initial")

    with pytest.raises(ModelVersionError, match="already the active one"):
        model_version_activate(version=version, reason="again")
    assert ModelActivation.objects.count() == 1


def test_a_corrupt_artifact_is_refused_at_activation_and_nothing_changes(artifact_copy, tiny_model_artifact):
    good = model_version_register(artifact_dir=tiny_model_artifact)
    model_version_activate(version=good, reason="initial")
    copy = model_version_register(artifact_dir=artifact_copy)
    with (artifact_copy / "model.safetensors").open("r+b") as handle:
        handle.seek(-8, 2)
        handle.write(b"\x00" * 8)

    with pytest.raises(ArtifactError, match="changed or is corrupt"):
        model_version_activate(version=copy, reason="try the copy")

    good.refresh_from_db()
    copy.refresh_from_db()
    assert good.is_active and not copy.is_active
    assert ModelActivation.objects.count() == 1


def test_a_missing_artifact_is_refused_at_activation(artifact_copy):
    version = model_version_register(artifact_dir=artifact_copy)
    shutil.rmtree(artifact_copy)

    with pytest.raises(ArtifactError, match="does not exist"):
        model_version_activate(version=version, reason="go")


def test_a_shadow_version_stops_being_shadow_when_activated(tiny_model_artifact):
    version = model_version_register(artifact_dir=tiny_model_artifact)
    ModelVersion.objects.filter(pk=version.pk).update(is_shadow=True)
    version.refresh_from_db()

    model_version_activate(version=version, reason="promote the challenger")

    version.refresh_from_db()
    assert version.is_active and not version.is_shadow


def test_a_new_threshold_is_a_new_version_sharing_the_artifact(tiny_model_artifact):
    version = model_version_register(artifact_dir=tiny_model_artifact)
    model_version_activate(version=version, reason="initial")

    variant = model_version_with_threshold(
        version=version, threshold=0.99, reason="fewer flags while we hire"
    )

    version.refresh_from_db()
    assert variant.pk != version.pk
    assert variant.parent == version
    assert variant.threshold == 0.99 and version.threshold != 0.99
    assert (variant.artifact_path, variant.artifact_sha256) == (
        version.artifact_path,
        version.artifact_sha256,
    )
    assert not variant.is_active and version.is_active
    assert "fewer flags while we hire" in variant.threshold_rule
    assert variant.metrics["threshold"] == 0.99
    assert variant.metrics["threshold_change"]["from"] == version.threshold
    assert variant.metrics["test"]["threshold"] == 0.99


def test_metrics_of_a_threshold_variant_are_recomputed_at_its_threshold(tiny_model_artifact):
    version = model_version_register(artifact_dir=tiny_model_artifact)

    flag_all = model_version_with_threshold(version=version, threshold=0.0, reason="flag everything")

    assert flag_all.metrics["test"]["overall"]["recall"] == 1.0
    assert flag_all.metrics["test"]["overall"]["false_positive_rate"] == 1.0


@pytest.mark.parametrize(
    ("threshold", "reason", "message"),
    [(0.5, "", "needs a reason"), (1.5, "why", "within"), ("high", "why", "not a number")],
)
def test_a_bad_threshold_change_is_refused(tiny_model_artifact, threshold, reason, message):
    version = model_version_register(artifact_dir=tiny_model_artifact)

    with pytest.raises(ModelVersionError, match=message):
        model_version_with_threshold(version=version, threshold=threshold, reason=reason)
    assert ModelVersion.objects.count() == 1


def test_the_same_threshold_is_not_a_new_version(tiny_model_artifact):
    version = model_version_register(artifact_dir=tiny_model_artifact)

    with pytest.raises(ModelVersionError, match="already uses"):
        model_version_with_threshold(version=version, threshold=version.threshold, reason="no change")
