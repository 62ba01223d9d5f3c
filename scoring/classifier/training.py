"""Fine-tuning the claim classifier: all layers of a pretrained encoder with a 5-way head.

AdamW with linear warm-up and decay (re-planned to fewer epochs when the time budget will not
hold them all: schedule.py), length-bucketed batches with dynamic padding, long messages
trained as the windows they are scored as (data.py), early stopping on the validation split
(keeping the best state), bf16 autocast on GPU, fp32 on CPU, tqdm progress, seeded. The threshold
is chosen on val by the one rule (threshold.py) and the test split is measured at it (metrics.py).
Pure: no Django; the management command passes settings in and registers the version.
"""

from __future__ import annotations

import copy
import logging
import math
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import transformers
from tqdm.auto import tqdm
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from scoring.classifier.artifacts import save_artifact
from scoring.classifier.data import (
    Example,
    bucketed_batches,
    build_message_examples,
    corpus_sha256,
    epoch_examples,
    file_sha256,
    read_rows,
)
from scoring.classifier.metrics import NOVEL, quality_bar, summarize
from scoring.classifier.precision import BFLOAT16, FLOAT32, autocast
from scoring.classifier.schedule import AnnealingPlan, epochs_that_fit
from scoring.classifier.scorer import Scorer, resolve_device
from scoring.classifier.threshold import choose_threshold, describe_rule
from scoring.constants import CLASS_LABELS

logger = logging.getLogger(__name__)
EVAL_CHUNK = 256
MAX_LISTED_ERRORS = 60


@dataclass(frozen=True)
class TrainConfig:
    """Everything a training run depends on. `hyperparameters()` is what the version records."""

    base_model: str
    corpus_path: str
    extra_paths: tuple[str, ...] = ()
    epochs: int = 4
    lr: float = 1e-4
    batch_size: int = 32
    seed: int = 13
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    patience: int = 1
    window_tokens: int = 128
    stride: int = 64
    negatives_per_message: int = 2
    target_recall: float = 0.95
    max_minutes: float | None = 9.0
    device: str = "auto"
    token_budget: int = 8192

    def __post_init__(self) -> None:
        problems = []
        if self.epochs < 1:
            problems.append("epochs must be >= 1")
        if not 0 < self.lr < 1:
            problems.append("lr must be in (0, 1)")
        if self.batch_size < 1:
            problems.append("batch size must be >= 1")
        if not 0 <= self.warmup_ratio < 1:
            problems.append("warm-up ratio must be in [0, 1)")
        if self.max_minutes is not None and self.max_minutes <= 0:
            problems.append("max minutes must be positive")
        if not 0 < self.target_recall <= 1:
            problems.append("target recall must be in (0, 1]")
        if problems:
            raise ValueError("; ".join(problems))

    def hyperparameters(self) -> dict:
        values = asdict(self)
        for key in ("base_model", "corpus_path", "extra_paths", "device", "token_budget", "max_minutes"):
            values.pop(key)
        return values


@dataclass
class TrainResult:
    model: torch.nn.Module
    tokenizer: object
    threshold: float
    manifest: dict
    metrics: dict
    eval_rows: list[dict] = field(default_factory=list)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def load_base(base_model: str):
    """The encoder with a fresh 5-way head (labels from scoring.constants.CLASS_LABELS)."""
    if not Path(base_model).is_dir():
        raise FileNotFoundError(f"Base model directory {base_model} does not exist.")
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    model = AutoModelForSequenceClassification.from_pretrained(
        base_model,
        num_labels=len(CLASS_LABELS),
        id2label=dict(enumerate(CLASS_LABELS)),
        label2id={label: i for i, label in enumerate(CLASS_LABELS)},
        ignore_mismatched_sizes=True,
    )
    return model, tokenizer


def _batch_loss(model, batch: Sequence[Example], device: torch.device, pad_id: int) -> torch.Tensor:
    """Cross-entropy over a batch; a bag contributes the logits of its highest-scoring window."""
    flat = [ids for example in batch for ids in example.windows]
    longest = max(len(ids) for ids in flat)
    input_ids = torch.full((len(flat), longest), pad_id, dtype=torch.long)
    mask = torch.zeros_like(input_ids)
    for row, ids in enumerate(flat):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        mask[row, : len(ids)] = 1
    with autocast(device, BFLOAT16 if device.type == "cuda" else FLOAT32):
        logits = model(input_ids=input_ids.to(device), attention_mask=mask.to(device)).logits.float()
    chosen, offset = [], 0
    for example in batch:
        n = len(example.windows)
        if n == 1:
            chosen.append(offset)
        else:
            claim = 1 - torch.softmax(logits[offset : offset + n].detach(), dim=-1)[:, 0]
            chosen.append(offset + int(torch.argmax(claim)))
        offset += n
    targets = torch.tensor([e.target for e in batch], device=device)
    return torch.nn.functional.cross_entropy(logits[chosen], targets)


def evaluate(scorer: Scorer, rows: Sequence[dict], *, desc: str, progress: bool) -> list[dict]:
    """Score rows the way production scores them; returns rows with score and predicted type."""
    out = []
    for first in tqdm(range(0, len(rows), EVAL_CHUNK), desc=desc, disable=not progress, leave=False):
        chunk = rows[first : first + EVAL_CHUNK]
        for row, result in zip(chunk, scorer.score([r["body"] for r in chunk]), strict=True):
            truth = row["claim_type"] if row["label"] == 1 else CLASS_LABELS[0]
            out.append(
                {
                    "id": row["id"],
                    "split": row["split"],
                    "label": row["label"],
                    "claim_type": row["claim_type"],
                    "slices": row["slices"],
                    "score": result.score,
                    "predicted_type": result.claim_type,
                    # message-level log loss of the true class in the deciding window
                    "nll": -math.log(max(result.probabilities[truth], 1e-12)),
                }
            )
    return out


def _rule_threshold(val_rows: Sequence[dict], target_recall: float) -> float:
    return choose_threshold(
        [r["score"] for r in val_rows],
        [r["label"] for r in val_rows],
        target_recall=target_recall,
        claim_types=[r["claim_type"] for r in val_rows],
    )


def selection_key(val_rows: Sequence[dict], target_recall: float) -> tuple[float, float]:
    """How early stopping compares epochs: precision on val at the threshold the rule would
    choose (what the product lives with), then mean message log loss as the tie-breaker."""
    threshold = _rule_threshold(val_rows, target_recall)
    precision = summarize(val_rows, threshold)["overall"]["precision"] or 0.0
    return precision, -float(np.mean([r["nll"] for r in val_rows]))


def _listed_errors(rows: Sequence[dict], bodies: dict[str, str], threshold: float) -> list[dict]:
    wrong = [r for r in rows if (r["score"] >= threshold) != (r["label"] == 1)]
    wrong.sort(key=lambda r: -abs(r["score"] - threshold))
    return [
        {
            "id": r["id"],
            "kind": "false_negative" if r["label"] == 1 else "false_positive",
            "claim_type": r["claim_type"],
            "predicted_type": r["predicted_type"],
            "slices": r["slices"],
            "score": round(r["score"], 5),
            "body": bodies[r["id"]][:300],
        }
        for r in wrong[:MAX_LISTED_ERRORS]
    ]


def train(config: TrainConfig, *, progress: bool = True) -> TrainResult:
    """Fine-tune on the corpus's train split (+ extra rows), early-stop on val, choose the
    threshold on val, measure val and test at it. Returns the best model and its metrics."""
    started = time.monotonic()
    deadline = started + 60 * config.max_minutes if config.max_minutes else math.inf
    seed_everything(config.seed)
    rng = random.Random(config.seed)
    device = resolve_device(config.device)

    corpus = read_rows(config.corpus_path, corpus=True)
    extras = [(Path(p), read_rows(p, corpus=False)) for p in config.extra_paths]
    train_rows = [r for r in corpus if r["split"] == "train"] + [r for _, rows in extras for r in rows]
    val_rows = [r for r in corpus if r["split"] == "val"]
    test_rows = [r for r in corpus if r["split"] == "test"]

    model, tokenizer = load_base(config.base_model)
    model.to(device)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    messages = build_message_examples(
        tokenizer, train_rows, window_tokens=config.window_tokens, stride=config.stride
    )
    per_epoch = len(
        epoch_examples(messages, negatives_per_message=config.negatives_per_message, rng=random.Random(0))
    )
    steps_per_epoch = math.ceil(per_epoch / config.batch_size)
    total_steps = steps_per_epoch * config.epochs

    no_decay = ("bias", "LayerNorm.weight", "LayerNorm.bias")
    groups = [
        {
            "params": [p for n, p in model.named_parameters() if not any(k in n for k in no_decay)],
            "weight_decay": config.weight_decay,
        },
        {
            "params": [p for n, p in model.named_parameters() if any(k in n for k in no_decay)],
            "weight_decay": 0.0,
        },
    ]
    optimizer = torch.optim.AdamW(groups, lr=config.lr)
    plan = AnnealingPlan(warmup_steps=int(config.warmup_ratio * total_steps), total_steps=total_steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, plan.factor)

    def make_scorer(threshold: float | None = None) -> Scorer:
        return Scorer.from_model(
            model,
            tokenizer,
            labels=CLASS_LABELS,
            device=device,
            window_tokens=config.window_tokens,
            stride=config.stride,
            token_budget=config.token_budget,
            threshold=threshold,
            precision=FLOAT32,  # metrics and the threshold are float32's (serving re-checks near it)
        )

    history: list[dict] = []
    best_key, best_state, best_epoch, stale = None, None, 0, 0
    stopped_because = ""
    replanned: list[dict] = []
    eval_seconds = 0.0
    seen_examples = 0
    train_seconds = 0.0
    planned_epochs = config.epochs
    epochs = tqdm(total=config.epochs, desc="epochs", disable=not progress)
    epoch = 0
    while epoch < planned_epochs:
        epoch += 1
        examples = epoch_examples(messages, negatives_per_message=config.negatives_per_message, rng=rng)
        batches = bucketed_batches(examples, batch_size=config.batch_size, rng=rng)
        # Leave time for one validation pass, the test pass (about as long) and saving.
        # Before the first evaluation its cost is unknown: assume 90 s.
        reserve = 2.2 * eval_seconds + 20 if eval_seconds else 90.0
        model.train()
        epoch_start, losses = time.monotonic(), []
        steps = tqdm(batches, desc=f"epoch {epoch}", disable=not progress, leave=False)
        for batch in steps:
            if time.monotonic() + reserve > deadline and losses:
                stopped_because = f"time budget of {config.max_minutes} min reached in epoch {epoch}"
                break
            loss = _batch_loss(model, batch, device, pad_id)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(float(loss.detach()))
            seen_examples += len(batch)
            steps.set_postfix(loss=f"{np.mean(losses[-20:]):.4f}")
        train_seconds += time.monotonic() - epoch_start
        eval_start = time.monotonic()
        val_scored = evaluate(make_scorer(), val_rows, desc=f"val {epoch}", progress=progress)
        eval_seconds = time.monotonic() - eval_start
        key = selection_key(val_scored, config.target_recall)
        history.append(
            {
                "epoch": epoch,
                "steps": len(losses),
                "train_loss": float(np.mean(losses)) if losses else None,
                "val_precision_at_target_recall": key[0],
                "val_nll": -key[1],
                "seconds": round(time.monotonic() - epoch_start, 1),
            }
        )
        epochs.update()
        epochs.set_postfix(val_precision=f"{key[0]:.3f}", val_nll=f"{-key[1]:.4f}")
        if best_key is None or key > best_key:
            best_key, best_epoch, stale = key, epoch, 0
            best_state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
        else:
            stale += 1
        if stopped_because:
            break
        if stale > config.patience:
            stopped_because = f"no val improvement for {stale} epochs (early stopping)"
            break
        if epoch < planned_epochs and deadline < math.inf:
            # Leave time for the final validation and test passes and saving; re-plan to the
            # whole epochs that still fit, so the learning rate anneals by the last of them.
            seconds_left = deadline - time.monotonic() - (2.2 * eval_seconds + 20)
            fits = epochs_that_fit(seconds_left=seconds_left, epoch_seconds=history[-1]["seconds"])
            if fits == 0:
                stopped_because = f"another epoch would pass the time budget of {config.max_minutes} min"
                break
            if plan.shorten(at_step=scheduler.last_epoch, total_steps=(epoch + fits) * steps_per_epoch):
                planned_epochs = epoch + fits
                replanned.append({"after_epoch": epoch, "epochs": planned_epochs})
                logger.info("Re-planned to %d epochs to fit the time budget.", planned_epochs)
    epochs.close()
    if replanned and not stopped_because:
        stopped_because = (
            f"planned {config.epochs} epochs, ran {planned_epochs}: no more fitted the time budget "
            f"of {config.max_minutes} min (the learning rate was re-planned to anneal by then)"
        )

    model.load_state_dict(copy.deepcopy(best_state) if best_state is not None else model.state_dict())
    model.eval()
    val_scored = evaluate(make_scorer(), val_rows, desc="val (best)", progress=progress)
    threshold = _rule_threshold(val_scored, config.target_recall)
    test_scored = evaluate(make_scorer(threshold), test_rows, desc="test", progress=progress)
    for row in val_scored + test_scored:
        row.pop("nll")
    in_distribution = [r for r in test_scored if NOVEL not in r["slices"]]
    novel = [r for r in test_scored if NOVEL in r["slices"]]
    test_in_distribution = summarize(in_distribution, threshold)
    rule = describe_rule(config.target_recall)
    extra_data = [
        {"path": str(path), "sha256": file_sha256(path), "rows": len(rows)} for path, rows in extras
    ]
    seconds = time.monotonic() - started
    metrics = {
        "threshold": threshold,
        "threshold_rule": rule,
        "val": summarize(val_scored, threshold),
        "test": summarize(test_scored, threshold),
        "test_in_distribution": test_in_distribution,
        "test_novel_phrasing": summarize(novel, threshold) if novel else None,
        "notes": {
            "test": "whole test split, novel_phrasing included",
            "test_in_distribution": "test split without the novel_phrasing slice: the quality bar applies",
            "test_novel_phrasing": "templates absent from training: generalisation, reported as measured",
        },
        "quality_bar": quality_bar(test_in_distribution),
        "test_errors": _listed_errors(test_scored, {r["id"]: r["body"] for r in test_rows}, threshold),
        "training": {
            "device": str(device),
            "epochs_run": len(history),
            "epochs_planned": config.epochs,
            "replanned_to_fit_budget": replanned,
            "best_epoch": best_epoch,
            "history": history,
            "stopped_because": stopped_because,
            "seconds": round(seconds, 1),
            "train_seconds": round(train_seconds, 1),
            "train_examples_per_s": round(seen_examples / train_seconds, 2) if train_seconds else None,
            "train_messages": len(train_rows),
            "train_examples_per_epoch": per_epoch,
            "torch_threads": torch.get_num_threads(),
        },
    }
    manifest = {
        "labels": list(CLASS_LABELS),
        "threshold": threshold,
        "threshold_rule": rule,
        "target_recall": config.target_recall,
        "window_tokens": config.window_tokens,
        "window_stride": config.stride,
        "hyperparameters": config.hyperparameters(),
        "base_model": config.base_model,
        "corpus_path": str(config.corpus_path),
        "corpus_sha256": corpus_sha256(config.corpus_path),
        "corpus_rows": len(corpus),
        "extra_data": extra_data,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
    }
    return TrainResult(model, tokenizer, threshold, manifest, metrics, val_scored + test_scored)


def train_and_save(
    config: TrainConfig, *, models_dir: str | Path, version: str, progress: bool = True
) -> Path:
    """Train, then write the artifact to models_dir/<version>/ (nothing is written on failure)."""
    target = Path(models_dir) / version
    if target.exists():
        raise FileExistsError(f"{target} already exists: choose another version name.")
    result = train(config, progress=progress)
    manifest = {**result.manifest, "version": version}
    save_artifact(
        target,
        model=result.model,
        tokenizer=result.tokenizer,
        manifest=manifest,
        metrics=result.metrics,
        eval_rows=result.eval_rows,
    )
    return target
