"""Fine-tune the claim classifier and register it as a new, inactive model version."""

from __future__ import annotations

from argparse import BooleanOptionalAction
from dataclasses import replace

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from scoring.classifier.metrics import format_report
from scoring.classifier.modeling import POOLINGS
from scoring.classifier.training import TrainConfig
from scoring.classifier.windows import UNITS
from scoring.errors import ScoringError
from scoring.services.model_versions import (
    default_version_name,
    model_version_train,
    train_config_from_settings,
)

DEFAULTS = TrainConfig(base_model="", corpus_path="")


class Command(BaseCommand):
    help = (
        "Fine-tune the base encoder on the labelled corpus and the hand-written training rows (+ --extra "
        "rows, train split only), calibrate on val, choose the threshold on the claims of the "
        "development sets (THRESHOLD_SETS; --threshold-on-val: val's), measure test and the hand-written "
        "evaluation sets, save the artifact under MODELS_DIR and register the version. It is not "
        "activated: use activate_model."
    )

    def add_arguments(self, parser):
        parser.add_argument("--epochs", type=int, default=DEFAULTS.epochs)
        parser.add_argument("--lr", type=float, default=DEFAULTS.lr)
        parser.add_argument("--batch-size", type=int, default=DEFAULTS.batch_size)
        parser.add_argument("--seed", type=int, default=DEFAULTS.seed)
        parser.add_argument("--base-model", default=None, help="HF encoder directory (BASE_MODEL_PATH).")
        parser.add_argument("--corpus", default=None, help="Labelled JSONL corpus (CORPUS_PATH).")
        parser.add_argument(
            "--extra",
            action="append",
            default=[],
            metavar="FILE",
            help="JSONL rows {body, label, claim_type} added to the train split only (repeatable), "
            "after the hand-written training rows of TRAINING_EXTRA_FILES.",
        )
        parser.add_argument(
            "--corpus-only",
            action="store_true",
            help="Leave out the hand-written training rows of TRAINING_EXTRA_FILES (--extra still counts).",
        )
        parser.add_argument("--name", default=None, help="Version name (default claims-<timestamp>).")
        parser.add_argument(
            "--freeze-layers",
            type=int,
            default=DEFAULTS.freeze_layers,
            help="Freeze the embeddings and the lowest N encoder layers (computed once per window).",
        )
        parser.add_argument(
            "--layer-lr-decay",
            type=float,
            default=DEFAULTS.layer_lr_decay,
            help="Encoder layer i trains at lr * decay ** (layers - i) (1 = the same lr everywhere).",
        )
        parser.add_argument(
            "--pooling", choices=POOLINGS, default=DEFAULTS.pooling, help="What the head reads."
        )
        parser.add_argument(
            "--units", choices=UNITS, default=DEFAULTS.units, help="Token windows or sentences (and pairs)."
        )
        parser.add_argument("--label-smoothing", type=float, default=DEFAULTS.label_smoothing)
        parser.add_argument(
            "--negatives-per-message",
            type=int,
            default=DEFAULTS.negatives_per_message,
            help="Neutral windows of a long message drawn per epoch (a large number: all of them).",
        )
        parser.add_argument(
            "--length-calibration",
            action=BooleanOptionalAction,
            default=DEFAULTS.length_calibration,
            help="Also fit on val a length term: log-odds lowered by penalty x ln(routing windows) "
            "(on by default; --no-length-calibration: the best window's score alone).",
        )
        parser.add_argument(
            "--erase-rationales",
            action=BooleanOptionalAction,
            default=DEFAULTS.erase_rationales,
            help="Also train on every claim with its claim phrases deleted, as no_claim (on by default; "
            "--no-erase-rationales: the claims as written only).",
        )
        parser.add_argument(
            "--contrastive-pairs",
            type=int,
            default=DEFAULTS.contrastive_pairs,
            help="A SetFit-style contrastive stage on this many window pairs before the head (0: none).",
        )
        parser.add_argument("--contrastive-lr", type=float, default=DEFAULTS.contrastive_lr)
        parser.add_argument(
            "--no-calibration",
            action="store_true",
            help="No temperature scaling (scores as the model gives).",
        )
        parser.add_argument("--device", default=None, help="auto, cpu or cuda (SCORING_DEVICE).")
        parser.add_argument("--target-recall", type=float, default=None, help="THRESHOLD_TARGET_RECALL.")
        parser.add_argument(
            "--type-floor",
            type=float,
            default=None,
            help="THRESHOLD_TYPE_FLOOR: least recall per claim type.",
        )
        parser.add_argument(
            "--threshold-on-val",
            action="store_true",
            help="The threshold rule reads the val split's claims, not those of THRESHOLD_SETS.",
        )
        parser.add_argument("--no-progress", action="store_true", help="No progress bars.")

    @staticmethod
    def _extra_paths(options) -> tuple[str, ...]:
        written = () if options["corpus_only"] else tuple(str(path) for path in settings.TRAINING_EXTRA_FILES)
        return written + tuple(str(path) for path in options["extra"])

    def handle(self, *args, **options):
        try:
            config = train_config_from_settings(
                base_model=options["base_model"],
                corpus_path=str(options["corpus"]) if options["corpus"] else None,
                extra_paths=self._extra_paths(options),
                epochs=options["epochs"],
                lr=options["lr"],
                batch_size=options["batch_size"],
                seed=options["seed"],
                target_recall=options["target_recall"],
                type_floor=options["type_floor"],
                threshold_sets=() if options["threshold_on_val"] else None,
                device=options["device"],
                freeze_layers=options["freeze_layers"],
                layer_lr_decay=options["layer_lr_decay"],
                pooling=options["pooling"],
                units=options["units"],
                label_smoothing=options["label_smoothing"],
            )
            config = replace(
                config,
                negatives_per_message=options["negatives_per_message"],
                erase_rationales=options["erase_rationales"],
                contrastive_pairs=options["contrastive_pairs"],
                contrastive_lr=options["contrastive_lr"],
            )
            if options["no_calibration"]:
                config = replace(config, calibrate=False)
            config = replace(config, length_calibration=options["length_calibration"])
            version = model_version_train(
                config=config,
                name=options["name"] or default_version_name(),
                models_dir=settings.MODELS_DIR,
                progress=not options["no_progress"],
            )
        except (ScoringError, ValueError, FileNotFoundError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"registered model version {version.name} (inactive) at {version.artifact_path}")
        self.stdout.write(format_report(version.metrics))
        self.stdout.write(f'activate it with: python manage.py activate_model {version.name} --reason "..."')
