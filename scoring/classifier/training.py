"""Fine-tuning the claim classifier: a pretrained encoder with a 5-way head.

The plan is fixed by the configuration alone: `epochs` epochs of AdamW with linear warm-up and
decay to zero (schedule.py), early stopping on the validation split (keeping the best state),
seeded shuffles. Nothing depends on how fast the machine is, so the same commit and
configuration train the same model (a model version must be re-creatable); the matrix products
run in bfloat16 under autocast where the device has native bf16 units (a GPU, an AVX512-BF16 or
AMX CPU), in float32 elsewhere, and the artifact records which.

What the model reads is what the Scorer reads: every message cut into its parts (body,
signature, quoted history: scoring.segmentation) and each part into token windows; only parts
that route are trained on (data.py). Length-bucketed batches with dynamic padding.

Keeping what pretraining knew: the embeddings and the lowest `freeze_layers` encoder layers can
be frozen, and `layer_lr_decay` < 1 gives each lower layer a smaller learning rate.

After training: temperature scaling fitted on val and folded into the head (calibration.py), the
threshold chosen by the one rule (threshold.py) on the claims of the hand-written sets named in
`threshold_sets`, scored as served, or on the calibrated val scores without them; the test split
measured at it (metrics.py), and the hand-written sets scored as the system routes them (model
flag or rule hit: evaluation.py). Pure: no Django; the management command passes settings and
the active rules in and registers the version.
"""

from __future__ import annotations

import copy
import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
import transformers
from tqdm.auto import tqdm
from transformers import AutoTokenizer

from scoring.classifier.artifacts import save_artifact
from scoring.classifier.calibration import (
    fit_length_penalty,
    fit_temperature,
    fold_temperature,
    length_discounted,
    message_scores,
    tempered_claim_scores,
)
from scoring.classifier.contrastive import contrastive_stage, draw_pairs
from scoring.classifier.data import (
    Example,
    bucketed_batches,
    build_message_examples,
    corpus_sha256,
    epoch_examples,
    erase_rationales,
    file_sha256,
    read_rows,
)
from scoring.classifier.evaluation import (
    EvaluationSetError,
    read_handwritten,
    reliability,
    score_rows,
    summarize_decisions,
)
from scoring.classifier.frozen import lower_outputs, padded, padded_ids, upper_layers
from scoring.classifier.metrics import NOVEL, quality_bar, summarize
from scoring.classifier.modeling import CLS, POOLINGS, classifier_class
from scoring.classifier.precision import FLOAT32, autocast, resolve_precision
from scoring.classifier.schedule import AnnealingPlan
from scoring.classifier.scorer import Scorer, resolve_device
from scoring.classifier.threshold import (
    DEFAULT_TARGET_RECALL,
    DEFAULT_TYPE_FLOOR,
    choose_threshold,
    describe_rule,
    hand_written_sets_named,
)
from scoring.constants import CLAIM_TYPE_CODES, CLASS_LABELS, ROUTING_RULES_ACTIVE, ROUTING_RULES_NONE
from scoring.errors import TrainingDataError
from scoring.segmentation import SEGMENTATION_VERSION

logger = logging.getLogger(__name__)
EVAL_CHUNK = 256
MAX_LISTED_ERRORS = 60


@dataclass(frozen=True)
class TrainConfig:
    """Everything a training run depends on. `hyperparameters()` is what the version records
    (and what shapes the model: the evaluation sets and the device do not)."""

    base_model: str
    corpus_path: str
    extra_paths: tuple[str, ...] = ()
    epochs: int = 3
    lr: float = 1e-4
    batch_size: int = 32
    seed: int = 13
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    patience: int | None = (
        None  # early stopping on val after every epoch; None: run the plan, no per-epoch val
    )
    window_tokens: int = 128
    stride: int = 64
    negatives_per_message: int = 2
    # also train on each claim with its claim phrases deleted, as no_claim. On since 2026-12-06
    # (seventh session; README "Erasing the claim phrases"): over three seeds the model's top words
    # carry its flag (IG canary pass rate 0.88-0.94 against 0.65-0.73) and it recalls more hand-written
    # claims, for about a fifth more training.
    erase_rationales: bool = True
    target_recall: float = DEFAULT_TARGET_RECALL
    type_floor: float = DEFAULT_TYPE_FLOOR  # each claim type's val recall at the threshold
    freeze_layers: int = 3  # embeddings and the lowest N encoder layers frozen (0: none, full fine-tuning)
    cache_frozen: bool = True  # compute the frozen layers once per window (frozen.py)
    layer_lr_decay: float = 1.0  # encoder layer i trains at lr * decay ** (layers - i)
    label_smoothing: float = 0.0
    contrastive_pairs: int = 0  # a SetFit-style stage on this many window pairs before the head (0: none)
    contrastive_lr: float = 2e-5
    calibrate: bool = True  # temperature scaling fitted on val, folded into the head
    # and, after it, the message score's length term fitted on val (calibration.py; needs calibrate).
    # On since 2026-12-06 (README "The length term"): with the lead-in corpus's model it routes
    # fewer innocent development-set messages at the same recall, and calibrates val and the
    # development sets better.
    length_calibration: bool = True
    segmented: bool = True  # read message parts apart (scoring.segmentation)
    units: str = "windows"  # what is scored: token windows of each part, or its sentences and pairs
    pooling: str = CLS  # the head reads [CLS] through the pooler (stock BERT) or the mean of the token states
    precision: str = "auto"  # training autocast: bfloat16 where the device has native bf16
    device: str = "auto"
    token_budget: int = 8192
    evaluation_sets: tuple[str, ...] = ()  # hand-written JSONL sets measured, never trained on
    # hand-written JSONL sets whose claims the threshold rule reads instead of the val split's
    # (never trained on, never an evaluation set); empty: the val split (threshold.py, "Where").
    # Early stopping (patience, off by default) still compares epochs at val's rule threshold.
    threshold_sets: tuple[str, ...] = ()

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
        if not 0 < self.target_recall <= 1:
            problems.append("target recall must be in (0, 1]")
        if not 0 < self.type_floor <= self.target_recall:
            problems.append("type floor must be in (0, target recall]")
        if self.freeze_layers < 0:
            problems.append("freeze_layers must be >= 0")
        if not 0 < self.layer_lr_decay <= 1:
            problems.append("layer_lr_decay must be in (0, 1]")
        if not 0 <= self.label_smoothing < 1:
            problems.append("label_smoothing must be in [0, 1)")
        if self.contrastive_pairs < 0:
            problems.append("contrastive_pairs must be >= 0")
        if not 0 < self.contrastive_lr < 1:
            problems.append("contrastive_lr must be in (0, 1)")
        if self.pooling not in POOLINGS:
            problems.append(f"pooling must be one of {', '.join(POOLINGS)}")
        choosing = {Path(p).resolve() for p in self.threshold_sets}
        for other, what in ((self.evaluation_sets, "an evaluation set"), (self.extra_paths, "training data")):
            shared = choosing & {Path(p).resolve() for p in other}
            if shared:
                problems.append(
                    f"a set that chooses the threshold cannot also be {what}: "
                    + ", ".join(sorted(p.name for p in shared))
                )
        if problems:
            raise ValueError("; ".join(problems))

    def hyperparameters(self) -> dict:
        values = asdict(self)
        for key in (
            "base_model",
            "corpus_path",
            "extra_paths",
            "device",
            "token_budget",
            "evaluation_sets",
            "threshold_sets",
        ):
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


def load_base(base_model: str, pooling: str = CLS):
    """The encoder with a 5-way head (labels from scoring.constants.CLASS_LABELS): a fresh one
    over `pooling` (modeling.py), or the model and head of `base_model` when it is already a
    Claimwatch classifier (its own class and pooling)."""
    if not Path(base_model).is_dir():
        raise FileNotFoundError(f"Base model directory {base_model} does not exist.")
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    model = classifier_class(base_model, pooling).from_pretrained(
        base_model,
        num_labels=len(CLASS_LABELS),
        id2label=dict(enumerate(CLASS_LABELS)),
        label2id={label: i for i, label in enumerate(CLASS_LABELS)},
        ignore_mismatched_sizes=True,
    )
    return model, tokenizer


def _encoder_layer(name: str) -> int | None:
    """The encoder layer a parameter belongs to (None for the head and the pooler; -1 for the
    embeddings)."""
    parts = name.split(".")
    if "embeddings" in parts:
        return -1
    if "layer" in parts:
        index = parts.index("layer")
        if index + 1 < len(parts) and parts[index + 1].isdigit():
            return int(parts[index + 1])
    return None


def _with_frozen_layers_that_fit(config: TrainConfig, layers: int) -> TrainConfig:
    """At most half of the encoder's layers are frozen: the default 3 is half of MiniLM-L6's 6; a
    smaller encoder (BASE_MODEL_PATH, the tests' 2-layer one) gets half of its own. The config the
    run records is the one it used."""
    if config.freeze_layers <= layers // 2:
        return config
    logger.info(
        "freeze_layers %d > half of %d layers: freezing %d", config.freeze_layers, layers, layers // 2
    )
    return replace(config, freeze_layers=layers // 2)


def parameter_groups(model, config: TrainConfig) -> list[dict]:
    """AdamW groups: frozen parameters left out; weight decay except on biases and LayerNorm;
    layer-wise learning rates (the head and pooler at lr, encoder layer i at lr * decay **
    (layers - i), the embeddings one step below the lowest layer)."""
    layers = getattr(model.config, "num_hidden_layers", 0)
    no_decay = ("bias", "LayerNorm.weight", "LayerNorm.bias")
    groups: dict[tuple[float, float], list] = {}
    for name, parameter in model.named_parameters():
        layer = _encoder_layer(name)
        if layer is not None and layer < config.freeze_layers:
            parameter.requires_grad_(False)
            continue
        depth = 0 if layer is None else layers - layer
        lr = config.lr * config.layer_lr_decay**depth
        decay = 0.0 if any(k in name for k in no_decay) else config.weight_decay
        groups.setdefault((lr, decay), []).append(parameter)
    return [{"params": params, "lr": lr, "weight_decay": decay} for (lr, decay), params in groups.items()]


def _batch_logits(model, flat: Sequence[tuple[int, ...]], device: torch.device, pad_id: int) -> torch.Tensor:
    input_ids, mask = padded_ids(flat, pad_id, device)
    return model(input_ids=input_ids, attention_mask=mask).logits


def _batch_loss(
    model,
    batch: Sequence[Example],
    device: torch.device,
    pad_id: int,
    *,
    precision: str,
    smoothing: float,
    lower: dict | None = None,
    frozen: int = 0,
) -> torch.Tensor:
    """Cross-entropy over a batch; a bag contributes the logits of its highest-scoring window.
    With `lower` (frozen.lower_outputs of every window), only encoder layers `frozen`.. run."""
    flat = [ids for example in batch for ids in example.windows]
    with autocast(device, precision):
        if lower is None:
            logits = _batch_logits(model, flat, device, pad_id).float()
        else:
            hidden, mask = padded([lower[tuple(ids)] for ids in flat], device)
            with upper_layers(model, frozen):
                logits = model(inputs_embeds=hidden, attention_mask=mask).logits.float()
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
    return torch.nn.functional.cross_entropy(logits[chosen], targets, label_smoothing=smoothing)


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


def routing_window_probabilities(scorer: Scorer, rows: Sequence[dict]) -> tuple[np.ndarray, list[int]]:
    """Class probabilities of every routing window of `rows` and the cumulative window counts
    per message (what calibration fits)."""
    per_text = scorer.windows([r["body"] for r in rows])
    routing = [[w for w in windows if w.routes] for windows in per_text]
    flat = [w.input_ids for windows in routing for w in windows]
    offsets = [0, *np.cumsum([len(windows) for windows in routing]).tolist()]
    return scorer.window_probabilities(flat), offsets


def scored_from_windows(
    rows: Sequence[dict],
    probabilities: np.ndarray,
    offsets: Sequence[int],
    temperature: float,
    length_penalty: float = 0.0,
) -> list[dict]:
    """What `evaluate` returns for `rows`, from their routing windows' probabilities
    (routing_window_probabilities) with the logits divided by `temperature` and the message
    score discounted by `length_penalty` for its routing windows (as the Scorer does)."""
    tempered = np.log(np.maximum(probabilities.astype(np.float64), 1e-30)) / temperature
    tempered = np.exp(tempered - tempered.max(axis=1, keepdims=True))
    tempered /= tempered.sum(axis=1, keepdims=True)
    claim = tempered[:, 1:].sum(axis=1)
    out = []
    for i, row in enumerate(rows):
        first, last = offsets[i], offsets[i + 1]
        best = first + int(np.argmax(claim[first:last]))
        probs = tempered[best]
        truth = CLASS_LABELS.index(row["claim_type"]) if row["label"] == 1 else 0
        out.append(
            {
                "id": row["id"],
                "split": row["split"],
                "label": row["label"],
                "claim_type": row["claim_type"],
                "slices": row["slices"],
                "score": float(length_discounted([claim[best]], [last - first], length_penalty)[0]),
                "predicted_type": CLASS_LABELS[1 + int(np.argmax(probs[1:]))],
                "nll": -math.log(max(float(probs[truth]), 1e-12)),
            }
        )
    return out


def _rule_threshold(val_rows: Sequence[dict], target_recall: float, type_floor: float) -> float:
    return choose_threshold(
        [r["score"] for r in val_rows],
        [r["label"] for r in val_rows],
        target_recall=target_recall,
        claim_types=[r["claim_type"] for r in val_rows],
        type_floor=type_floor,
    )


def selection_key(val_rows: Sequence[dict], target_recall: float, type_floor: float) -> tuple[float, float]:
    """How early stopping compares epochs: precision on val at the threshold the rule would
    choose (what the product lives with), then mean message log loss as the tie-breaker."""
    threshold = _rule_threshold(val_rows, target_recall, type_floor)
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


def evaluation_report(scorer: Scorer, paths: Sequence[str], *, threshold: float, rules) -> dict:
    """Each hand-written set scored as the system routes it: {set name: {"path", "sha256",
    "decisions" (summarize_decisions), "calibration" (reliability)}}."""
    report = {}
    for path in paths:
        rows = read_handwritten(path)
        scored = score_rows(scorer, rows, threshold=threshold, rules=rules)
        report[Path(path).stem] = {
            "path": str(path),
            "sha256": file_sha256(path),
            "decisions": summarize_decisions(scored),
            "calibration": reliability([r["score"] for r in scored], [r["label"] for r in scored]),
        }
    return report


def _threshold_rows(paths: Sequence[str]) -> tuple[list[dict], list[dict]]:
    """The rows of the sets that choose the threshold, and what the version records of them."""
    rows, record = [], []
    for path in paths:
        read, before = _read_pinned(path, read=_read_threshold_set, digest=file_sha256)
        rows += read
        claims = sum(r["label"] == 1 for r in read)
        record.append({"path": str(path), "sha256": before, "rows": len(read), "claims": claims})
    if paths and not any(r["label"] == 1 for r in rows):
        raise TrainingDataError("The sets that choose the threshold hold no claim.")
    types = {r["claim_type"] for r in rows if r["label"] == 1}
    if paths and types != set(CLAIM_TYPE_CODES):
        raise TrainingDataError(
            "The sets that choose the threshold must hold claims of every type and no other (the "
            f"rule keeps a floor per type): missing {sorted(set(CLAIM_TYPE_CODES) - types)}, "
            f"unknown {sorted(types - set(CLAIM_TYPE_CODES))}."
        )
    return rows, record


def _read_threshold_set(path) -> list[dict]:
    try:
        return read_handwritten(path)
    except EvaluationSetError as exc:
        raise TrainingDataError(
            f"A threshold set (settings THRESHOLD_SETS): {exc}. THRESHOLD_SETS=none or "
            "train_classifier --threshold-on-val chooses the threshold on the val split."
        ) from exc


def _read_pinned(
    path, *, read: Callable[[str | Path], list[dict]], digest: Callable[[str | Path], str]
) -> tuple[list[dict], str]:
    """The rows `read` gives of a JSONL file and the digest of the bytes they were read from. The
    digest is taken before and after reading, so a file replaced while it is read is refused, and
    one replaced during the minutes of training does not change what the version records."""
    before = digest(path) if Path(path).is_file() else None
    rows = read(path)  # refuses a missing file with a clear error
    if digest(path) != before:
        raise TrainingDataError(f"{path} changed while it was being read; nothing was trained.")
    return rows, before


def train(config: TrainConfig, *, progress: bool = True, rules=None) -> TrainResult:
    """Fine-tune on the corpus's train split (+ extra rows), early-stop on val, calibrate on val,
    choose the threshold on the threshold sets' claims (or val's), measure val, test and the
    evaluation sets (routing with `rules`, compiled rules, or the model alone when None). Returns
    the best model and its metrics."""
    started = time.monotonic()
    seed_everything(config.seed)
    rng = random.Random(config.seed)
    device = resolve_device(config.device)
    precision = resolve_precision(config.precision, device)

    corpus, corpus_digest = _read_pinned(
        config.corpus_path, read=lambda p: read_rows(p, corpus=True), digest=corpus_sha256
    )
    extras = [
        (Path(p), *_read_pinned(p, read=lambda p: read_rows(p, corpus=False), digest=file_sha256))
        for p in config.extra_paths
    ]
    threshold_rows, threshold_sets = _threshold_rows(config.threshold_sets)
    train_rows = [r for r in corpus if r["split"] == "train"] + [r for _, rows, _ in extras for r in rows]
    val_rows = [r for r in corpus if r["split"] == "val"]
    test_rows = [r for r in corpus if r["split"] == "test"]

    model, tokenizer = load_base(config.base_model, config.pooling)
    config = _with_frozen_layers_that_fit(config, model.config.num_hidden_layers)
    model.to(device)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    if config.erase_rationales:
        train_rows = train_rows + [e for r in train_rows if (e := erase_rationales(r)) is not None]
    messages = build_message_examples(
        tokenizer,
        train_rows,
        window_tokens=config.window_tokens,
        stride=config.stride,
        segmented=config.segmented,
        units=config.units,
    )
    unaligned = sum(1 for m in messages if m.unaligned)
    per_epoch = len(
        epoch_examples(messages, negatives_per_message=config.negatives_per_message, rng=random.Random(0))
    )
    steps_per_epoch = math.ceil(per_epoch / config.batch_size)
    total_steps = steps_per_epoch * config.epochs

    optimizer = torch.optim.AdamW(parameter_groups(model, config), lr=config.lr)
    plan = AnnealingPlan(warmup_steps=int(config.warmup_ratio * total_steps), total_steps=total_steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, plan.factor)

    length_penalty = 0.0  # fitted on val after training (calibration.py); read when a scorer is made

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
            segmented=config.segmented,
            units=config.units,
            length_penalty=length_penalty,
        )

    # Every epoch's examples and batch order, drawn up front (seeded): the plan is fixed before
    # the first step, and the frozen layers are computed only for windows some epoch uses.
    plans = []
    for _ in range(config.epochs):
        examples = epoch_examples(messages, negatives_per_message=config.negatives_per_message, rng=rng)
        plans.append(bucketed_batches(examples, batch_size=config.batch_size, rng=rng))
    lower = None
    cache_seconds = 0.0
    if config.freeze_layers and config.cache_frozen:
        cache_start = time.monotonic()
        windows = [w for batches in plans for batch in batches for e in batch for w in e.windows]
        lower = lower_outputs(
            model,
            windows,
            k=config.freeze_layers,
            device=device,
            pad_id=pad_id,
            token_budget=config.token_budget,
        )
        cache_seconds = time.monotonic() - cache_start
    contrastive = None
    if config.contrastive_pairs:
        pairs = draw_pairs([e for batch in plans[0] for e in batch], config.contrastive_pairs, rng)
        contrastive = contrastive_stage(
            model,
            pairs,
            parameter_groups=parameter_groups(model, replace(config, lr=config.contrastive_lr)),
            device=device,
            pad_id=pad_id,
            precision=precision,
            batch_size=config.batch_size,
            warmup_ratio=config.warmup_ratio,
            lower=lower,
            frozen=config.freeze_layers,
            progress=progress,
        )

    history: list[dict] = []
    best_key, best_state, best_epoch, stale = None, None, 0, 0
    stopped_because = f"ran the planned {config.epochs} epochs"
    seen_examples = 0
    seen_tokens = 0
    train_seconds = 0.0
    epochs = tqdm(total=config.epochs, desc="epochs", disable=not progress)
    for epoch, batches in enumerate(plans, start=1):
        model.train()
        epoch_start, losses = time.monotonic(), []
        steps = tqdm(batches, desc=f"epoch {epoch}", disable=not progress, leave=False)
        for batch in steps:
            loss = _batch_loss(
                model,
                batch,
                device,
                pad_id,
                precision=precision,
                smoothing=config.label_smoothing,
                lower=lower,
                frozen=config.freeze_layers,
            )
            loss.backward()
            torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(float(loss.detach()))
            seen_examples += len(batch)
            seen_tokens += sum(len(w) for e in batch for w in e.windows)
            steps.set_postfix(loss=f"{np.mean(losses[-20:]):.4f}")
        train_seconds += time.monotonic() - epoch_start
        record = {
            "epoch": epoch,
            "steps": len(losses),
            "train_loss": float(np.mean(losses)) if losses else None,
        }
        epochs.update()
        if config.patience is None:  # the plan decides: the last epoch, annealed to lr 0, is kept
            history.append({**record, "seconds": round(time.monotonic() - epoch_start, 1)})
            best_epoch = epoch
            continue
        val_scored = evaluate(make_scorer(), val_rows, desc=f"val {epoch}", progress=progress)
        key = selection_key(val_scored, config.target_recall, config.type_floor)
        history.append(
            {
                **record,
                "val_precision_at_target_recall": key[0],
                "val_nll": -key[1],
                "seconds": round(time.monotonic() - epoch_start, 1),
            }
        )
        epochs.set_postfix(val_precision=f"{key[0]:.3f}", val_nll=f"{-key[1]:.4f}")
        if best_key is None or key > best_key:
            best_key, best_epoch, stale = key, epoch, 0
            best_state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
        else:
            stale += 1
        if stale > (config.patience or 0):
            stopped_because = f"no val improvement for {stale} epochs (early stopping)"
            break
    epochs.close()

    if best_state is not None:
        model.load_state_dict(copy.deepcopy(best_state))
    model.eval()
    calibration = None
    probabilities, offsets = routing_window_probabilities(make_scorer(), val_rows)
    temperature = 1.0
    if config.calibrate:
        temperature, calibration = fit_temperature(probabilities, offsets, [r["label"] for r in val_rows])
        fold_temperature(model, temperature)
        if config.length_calibration:
            best = message_scores(tempered_claim_scores(probabilities, temperature), offsets)
            length_penalty, length_report = fit_length_penalty(
                best, np.diff(offsets), [r["label"] for r in val_rows]
            )
            calibration = {**calibration, **length_report}
    # The calibrated val scores from the same window probabilities (a second pass would give the
    # same numbers: folding T into the head divides the logits by T).
    val_scored = scored_from_windows(val_rows, probabilities, offsets, temperature, length_penalty)
    val_threshold = _rule_threshold(val_scored, config.target_recall, config.type_floor)
    threshold = val_threshold
    if threshold_rows:  # the same rule on hand-written claims, scored as served (calibrated)
        scores = make_scorer().claim_scores([r["body"] for r in threshold_rows])
        threshold = _rule_threshold(
            [{**r, "score": s} for r, s in zip(threshold_rows, scores, strict=True)],
            config.target_recall,
            config.type_floor,
        )
    scorer = make_scorer(threshold)
    test_scored = evaluate(scorer, test_rows, desc="test", progress=progress)
    for row in val_scored + test_scored:
        row.pop("nll")
    in_distribution = [r for r in test_scored if NOVEL not in r["slices"]]
    novel = [r for r in test_scored if NOVEL in r["slices"]]
    test_in_distribution = summarize(in_distribution, threshold)
    rule = describe_rule(
        config.target_recall,
        config.type_floor,
        on=hand_written_sets_named([Path(p).stem for p in config.threshold_sets]) if threshold_rows else None,
    )
    extra_data = [{"path": str(path), "sha256": sha, "rows": len(rows)} for path, rows, sha in extras]
    evaluation = evaluation_report(scorer, config.evaluation_sets, threshold=threshold, rules=rules)
    seconds = time.monotonic() - started
    metrics = {
        "threshold": threshold,
        "threshold_rule": rule,
        "threshold_sets": threshold_sets,
        "val_rule_threshold": val_threshold,
        "val": summarize(val_scored, threshold),
        "test": summarize(test_scored, threshold),
        "test_in_distribution": test_in_distribution,
        "test_novel_phrasing": summarize(novel, threshold) if novel else None,
        "calibration": {
            "method": (
                "none"
                if not calibration
                else "temperature scaling on val, folded into the head"
                + (", and the message score's length term fitted on val" if length_penalty else "")
            ),
            **(calibration or {}),
            "val": reliability([r["score"] for r in val_scored], [r["label"] for r in val_scored]),
            "test": reliability([r["score"] for r in test_scored], [r["label"] for r in test_scored]),
        },
        "evaluation_sets": evaluation,
        "routing_rules": ROUTING_RULES_ACTIVE if rules is not None else ROUTING_RULES_NONE,
        "notes": {
            "test": "whole test split (family-disjoint from train and val), novel_phrasing included",
            "test_in_distribution": "test split without the novel_phrasing slice: the quality bar applies",
            "test_novel_phrasing": "templates and vocabulary absent from train and val",
            "val_rule_threshold": "what the threshold rule gives on the val split (the threshold itself "
            "where no threshold set is named)",
            "evaluation_sets": "hand-written, never trained on, never used for the threshold; "
            "'routed' = model flag or rule hit, what the pipeline does",
        },
        "quality_bar": quality_bar(test_in_distribution),
        "test_errors": _listed_errors(test_scored, {r["id"]: r["body"] for r in test_rows}, threshold),
        "training": {
            "device": str(device),
            "precision": precision,
            "epochs_run": len(history),
            "epochs_planned": config.epochs,
            "best_epoch": best_epoch,
            "history": history,
            "stopped_because": stopped_because,
            "seconds": round(seconds, 1),
            "train_seconds": round(train_seconds, 1),
            "frozen_layers_cache_seconds": round(cache_seconds, 1),
            "frozen_layers_cached_windows": len(lower) if lower is not None else 0,
            "contrastive_stage": contrastive,
            "train_examples_per_s": round(seen_examples / train_seconds, 2) if train_seconds else None,
            "train_tokens_per_s": round(seen_tokens / train_seconds, 1) if train_seconds else None,
            "train_messages": len(train_rows),
            "train_examples_per_epoch": per_epoch,
            "claims_without_routing_window": unaligned,
            "torch_threads": torch.get_num_threads(),
        },
    }
    manifest = {
        "labels": list(CLASS_LABELS),
        "threshold": threshold,
        "threshold_rule": rule,
        "threshold_sets": threshold_sets,
        "target_recall": config.target_recall,
        "window_tokens": config.window_tokens,
        "window_stride": config.stride,
        "segmentation": SEGMENTATION_VERSION if config.segmented else 0,
        "units": config.units,
        "temperature": calibration["temperature"] if calibration else 1.0,
        "length_penalty": length_penalty,
        "training_precision": precision,
        "hyperparameters": config.hyperparameters(),
        "base_model": config.base_model,
        "corpus_path": str(config.corpus_path),
        "corpus_sha256": corpus_digest,
        "corpus_rows": len(corpus),
        "extra_data": extra_data,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
    }
    return TrainResult(model, tokenizer, threshold, manifest, metrics, val_scored + test_scored)


def train_and_save(
    config: TrainConfig, *, models_dir: str | Path, version: str, progress: bool = True, rules=None
) -> Path:
    """Train, then write the artifact to models_dir/<version>/ (nothing is written on failure)."""
    target = Path(models_dir) / version
    if target.exists():
        raise FileExistsError(f"{target} already exists: choose another version name.")
    result = train(config, progress=progress, rules=rules)
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
