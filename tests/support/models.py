"""Model fixtures for every test suite.

- `tiny_model_artifact` (session): a tiny BERT (tests/support/tiny_model.py) fine-tuned for a
  few epochs on a small hand-written corpus by the real training code, saved as a real artifact
  (threshold chosen by the real rule). Seconds to build; scores "guaranteed returns" text above
  neutral text, but it is a toy: use it to exercise plumbing, not to judge quality.
- `tiny_model_version` (function): that artifact registered and ACTIVE in the test's database.
- `tiny_training_inputs` (session): the tiny base encoder and the tiny corpus, read-only inputs
  of the trainings that tests run themselves.
- `tiny_one_epoch_training` (session): one epoch of the tiny training (a TrainResult), trained
  once a run; tests that need two versions write it under their names (`save_training`).
- `trained_model_artifact` (session): the real classifier, trained with the default
  configuration on the real corpus, cached under var/test-cache/<hash of everything that shapes
  it: corpus and hand-written training rows, hyper-parameters (the fixed plan), base model files,
  the sets that choose the threshold and those measured, code, library versions, resolved device
  and precision>/ so reruns are fast (CI trains it from scratch).
- `trained_model_version` (function): that artifact registered and ACTIVE.

The artifacts are session-scoped (built once); the ModelVersion rows are function-scoped,
because rows must live inside each test's transaction (or survive a transactional test's flush).
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest
from django.conf import settings
from filelock import FileLock

from scoring.classifier.artifacts import save_artifact
from scoring.classifier.training import TrainConfig, TrainResult, train, train_and_save
from tests.support.tiny_model import build_tiny_encoder

CLAIMS = {
    "guaranteed_returns": [
        "Your returns are guaranteed at {n} percent every year.",
        "We guarantee a {n}% annual return on this fund.",
        "This bond pays a guaranteed {n} percent yield, no matter what.",
        "Profits of {n}% are certain with our plan.",
    ],
    "risk_free": [
        "This investment is completely risk-free.",
        "There is zero risk to your capital with this product.",
        "Your principal is totally safe, you cannot lose money.",
        "A risk-free way to grow your savings by {n}%.",
    ],
    "performance_forecast": [
        "This stock will double by March.",
        "Expect the shares to rise {n}% before the summer.",
        "The fund will gain {n} percent next quarter.",
        "Our pick is going to triple in value this year.",
    ],
    "regulatory_endorsement": [
        "The SEC approved this fund for all investors.",
        "This product is endorsed by the FCA.",
        "Regulators have backed this investment.",
        "The fund carries the SEC's seal of approval.",
    ],
}
NEGATIVES = [
    "Guaranteed delivery within {n} days for all orders.",
    "Please see the returns policy attached to the invoice.",
    "Start your risk-free {n}-day trial of the newsletter.",
    "The SEC filing is attached for your records.",
    "We cannot guarantee returns; past performance is no guide.",
    "Lunch is at {n} o'clock in the main meeting room.",
    "Please review the quarterly statement and call me back.",
    "The office will be closed on Monday for maintenance.",
]
FILLER = (
    "The meeting notes from the quarterly review are attached and the agenda covers staffing, "
    "the office move, holiday cover and the new printer on the third floor. "
)


def tiny_corpus_rows(seed: int = 0) -> list[dict]:
    """A small labelled corpus in the corpus schema, with rationales, slices and long rows."""
    rng = random.Random(seed)
    rows: list[dict] = []

    def add(body: str, label: int, claim_type: str, spans: list, slices: list) -> None:
        split = ("train", "train", "train", "val", "test")[len(rows) % 5]
        rows.append(
            {
                "id": f"tiny-{len(rows):04d}",
                "body": body,
                "label": label,
                "claim_type": claim_type,
                "rationales": spans,
                "split": split,
                "slices": slices,
            }
        )

    for round_ in range(4):
        for code, templates in CLAIMS.items():
            for template in templates:
                claim = template.format(n=rng.randint(5, 40))
                if round_ == 3:  # padded: the claim buried in neutral text
                    before = FILLER * rng.randint(3, 5)
                    body = before + claim + " " + FILLER * 2
                    add(body, 1, code, [[len(before), len(before) + len(claim)]], ["padded"])
                else:
                    add(claim, 1, code, [[0, len(claim)]], [])
        for template in NEGATIVES:
            body = template.format(n=rng.randint(2, 30))
            if round_ == 3:
                body = FILLER * 4 + body
            slices = ["hard_negative"] if NEGATIVES.index(template) < 4 else []
            add(body, 0, "no_claim", [], slices + (["padded"] if round_ == 3 else []))
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def tiny_train_config(base_model: Path, corpus: Path, **overrides) -> TrainConfig:
    values = {
        "base_model": str(base_model),
        "corpus_path": str(corpus),
        # From scratch on 92 examples an epoch: 40 epochs, the plan run to its end (early stopping
        # on val NLL stops a model this small after its first epoch, still at the class prior).
        "epochs": 40,
        "lr": 3e-3,
        "batch_size": 8,
        "seed": 0,
        "patience": None,
        "window_tokens": 64,
        "stride": 32,
        "device": "cpu",
        # The tiny model separates its classes by little; temperature scaling would squeeze its
        # scores together (tests of explanations need a score gap). Calibration has its own test.
        "calibrate": False,
        # Two layers only: the real model's frozen lower layers would leave it nothing to train.
        "freeze_layers": 0,
        # Its claims are their own rationales: erased, most leave nothing, the rest filler. The
        # toy keeps the plan the tests of other things were written against.
        "erase_rationales": False,
    }
    values.update(overrides)
    return TrainConfig(**values)


def build_tiny_artifact(root: Path, *, name: str = "tiny-model", **overrides) -> Path:
    """Train the tiny BERT on the tiny corpus with the real training code; return the artifact."""
    base = build_tiny_encoder(root / "tiny-base")
    corpus = write_jsonl(root / "tiny-corpus.jsonl", tiny_corpus_rows())
    config = tiny_train_config(base, corpus, **overrides)
    return train_and_save(config, models_dir=root / "models", version=name, progress=False)


def save_training(result: TrainResult, root: Path, *, name: str) -> Path:
    """Write a training's result as the artifact root/models/<name>/, as `train_and_save` (and so
    `build_tiny_artifact(root, name=name)`) writes it: the same files, the manifest naming `name`."""
    target = root / "models" / name
    save_artifact(
        target,
        model=result.model,
        tokenizer=result.tokenizer,
        manifest={**result.manifest, "version": name},
        metrics=result.metrics,
        eval_rows=result.eval_rows,
    )
    return target


# The code a trained model depends on: every module of the classifier package (training, its
# data, windows, schedule, precision, scorer and metrics, the artifact writer), how messages are
# segmented and the labels. A change to any of them retrains the cache.
TRAINING_CODE = ("scoring/classifier/*.py", "scoring/segmentation.py", "scoring/constants.py")
# The libraries whose versions shape the weights, the tokenisation or the saved files.
TRAINING_LIBRARIES = ("torch", "transformers", "tokenizers", "safetensors", "numpy")


def _digest_files(paths) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(str(path.name).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _code_digest() -> str:
    base = Path(settings.BASE_DIR)
    return _digest_files(path for pattern in TRAINING_CODE for path in base.glob(pattern))


def _library_versions() -> dict:
    from importlib.metadata import version

    return {name: version(name) for name in TRAINING_LIBRARIES}


def _resolved_run(config: TrainConfig) -> dict:
    """Where and in what number format the run computes: "auto" resolves per machine (a bf16 CPU
    trains under bf16 autocast, an AVX2-only one in float32), and the two do not train the same
    weights."""
    from scoring.classifier.device_check import resolve_device
    from scoring.classifier.precision import resolve_precision

    device = resolve_device(config.device)
    return {"device": device.type, "precision": resolve_precision(config.precision, device)}


def default_train_config() -> TrainConfig:
    """The configuration `train_classifier` uses with no options (the quality bar's subject)."""
    from scoring.services.model_versions import train_config_from_settings

    return train_config_from_settings()


def trained_cache_dir(config: TrainConfig) -> Path:
    """var/test-cache/<key>/: the key covers everything that shapes the artifact. The plan is
    fixed (TrainConfig.epochs, no time budget: test_the_plan_does_not_depend_on_how_fast_the_
    machine_is), so the hyper-parameters (epochs, seed, schedule, precision asked for) name the
    run; with them the corpus and the hand-written training rows, the base model's files (not only
    its folder name), the sets that choose the threshold, the evaluation sets metrics.json reports
    on, the code, the library versions, and the resolved device and precision."""
    from scoring.classifier.data import corpus_sha256

    key = json.dumps(
        {
            "corpus": corpus_sha256(config.corpus_path),
            # in the order read: the rows' order shapes the seeded epochs
            "extra_data": [_digest_files([Path(p)]) for p in config.extra_paths],
            "hyperparameters": config.hyperparameters(),
            "base_model": Path(config.base_model).name,
            "base_model_files": _digest_files(p for p in Path(config.base_model).rglob("*") if p.is_file()),
            "threshold_sets": _digest_files(Path(p) for p in config.threshold_sets),
            "evaluation_sets": _digest_files(Path(p) for p in config.evaluation_sets if Path(p).is_file()),
            "code": _code_digest(),
            "libraries": _library_versions(),
            "run": _resolved_run(config),
        },
        sort_keys=True,
    )
    return Path(settings.VAR_DIR) / "test-cache" / hashlib.sha256(key.encode()).hexdigest()[:16]


def build_trained_artifact() -> Path:
    """The real trained model, from the cache or trained now (<= 10 min on the CI CPU)."""
    config = default_train_config()
    if not Path(config.corpus_path).is_file():
        pytest.fail(f"The labelled corpus {config.corpus_path} is missing: the real model cannot be trained.")
    cache = trained_cache_dir(config)
    artifact = cache / "trained-claims"
    cache.mkdir(parents=True, exist_ok=True)
    # `make test` runs the suite in two processes (pytest-xdist): the one that takes the lock
    # trains; another that needs the model meanwhile waits for it and then reads the cache.
    with FileLock(str(cache) + ".lock"):
        if not artifact.is_dir():
            train_and_save(config, models_dir=cache, version="trained-claims", progress=True)
    return artifact


def _register_active(artifact: Path, reason: str):
    from governance.services.model_versions import model_version_activate
    from scoring.models import ModelVersion
    from scoring.services.model_versions import model_version_register

    existing = ModelVersion.objects.filter(artifact_path=str(artifact.resolve()), parent=None).first()
    version = existing or model_version_register(artifact_dir=artifact)
    if not version.is_active:
        model_version_activate(version=version, reason=reason)
        version.refresh_from_db()
    return version


@pytest.fixture(scope="session")
def tiny_model_artifact(tmp_path_factory) -> Path:
    return build_tiny_artifact(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def tiny_training_inputs(tmp_path_factory) -> tuple[Path, Path]:
    """(base encoder, corpus) of the tiny training: trainings read them and write elsewhere."""
    root = tmp_path_factory.mktemp("tiny-inputs")
    return build_tiny_encoder(root / "base"), write_jsonl(root / "corpus.jsonl", tiny_corpus_rows())


@pytest.fixture(scope="session")
def tiny_one_epoch_training(tiny_training_inputs) -> TrainResult:
    """`tiny_train_config(..., epochs=1)` trained once a run. The same configuration and seed train
    the same model (test_training_is_reproducible_with_the_same_seed), so the tests that need two
    versions of it save this one result under two names instead of training twice. Read-only."""
    base, corpus = tiny_training_inputs
    return train(tiny_train_config(base, corpus, epochs=1), progress=False)


@pytest.fixture
def tiny_model_version(db, tiny_model_artifact):
    """A registered, active ModelVersion whose artifact is the tiny trained BERT."""
    return _register_active(tiny_model_artifact, "tiny model for tests")


@pytest.fixture(scope="session")
def trained_model_artifact() -> Path:
    return build_trained_artifact()


@pytest.fixture
def trained_model_version(db, trained_model_artifact):
    """A registered, active ModelVersion of the real trained classifier."""
    return _register_active(trained_model_artifact, "trained model for tests")
