"""A SetFit-style contrastive stage before the classification head trains (Tunstall et al.
2022, "Efficient Few-Shot Learning Without Prompts").

SetFit fine-tunes a sentence encoder on pairs of labelled texts before any head exists: a pair
of the same class should embed close together (cosine similarity 1), a pair of different classes
apart (0), with the mean-pooled token states as the embedding and a squared-error loss on the
cosine (sentence-transformers' CosineSimilarityLoss). A head is then fitted on the embeddings.
Here the pairs are training windows (the units the Scorer scores), the five classes are
no_claim and the four claim types, the stage trains the same encoder layers the classifier
trains (the frozen lower layers read from the same cache: frozen.py), and the head is then the
ordinary classification stage of training.py, which starts from the contrasted encoder.

Pairs are drawn the way SetFit draws them: every anchor in turn (seeded order) with one partner
of its own class and one of another class, so half the pairs are positive, until `n_pairs`.
Bags (several windows of one unaligned claim) have no single unit and are left out. Pure: torch
only, no Django.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm

from scoring.classifier.data import Example
from scoring.classifier.frozen import padded, padded_ids, upper_layers
from scoring.classifier.precision import autocast
from scoring.classifier.schedule import AnnealingPlan


@dataclass(frozen=True)
class Pair:
    first: tuple[int, ...]
    second: tuple[int, ...]
    similar: float  # 1.0: same class, 0.0: different classes


def draw_pairs(examples: Sequence[Example], n_pairs: int, rng: random.Random) -> list[Pair]:
    """`n_pairs` pairs of single-window examples, alternately of the same class and of different
    classes, anchors taken in a seeded order. Empty when there is nothing to contrast (fewer
    than two classes, or n_pairs 0)."""
    by_class: dict[int, list[tuple[int, ...]]] = defaultdict(list)
    for example in examples:
        if len(example.windows) == 1:
            by_class[example.target].append(example.windows[0])
    classes = sorted(by_class)
    if n_pairs <= 0 or len(classes) < 2:
        return []
    anchors = [(target, window) for target in classes for window in by_class[target]]
    pairs: list[Pair] = []
    while len(pairs) < n_pairs:
        rng.shuffle(anchors)
        for target, window in anchors:
            if len(pairs) >= n_pairs:
                break
            if len(pairs) % 2 == 0:
                pairs.append(Pair(window, rng.choice(by_class[target]), 1.0))
            else:
                other = rng.choice([c for c in classes if c != target])
                pairs.append(Pair(window, rng.choice(by_class[other]), 0.0))
    return pairs


def embed(
    model, windows: Sequence[tuple[int, ...]], device, pad_id: int, *, lower=None, frozen: int = 0
) -> torch.Tensor:
    """Mean-pooled last hidden states of `windows` ([n, hidden]); with `lower` (the frozen
    layers' cached outputs), only encoder layers `frozen`.. run."""
    base = getattr(model, model.base_model_prefix)
    if lower is None:
        ids, mask = padded_ids(windows, pad_id, device)
        states = base(input_ids=ids, attention_mask=mask).last_hidden_state
    else:
        hidden, mask = padded([lower[tuple(w)] for w in windows], device)
        with upper_layers(model, frozen):
            states = base(inputs_embeds=hidden, attention_mask=mask).last_hidden_state
    weights = mask.to(states.dtype).unsqueeze(-1)
    return (states * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)


def contrastive_stage(
    model,
    pairs: Sequence[Pair],
    *,
    parameter_groups: list[dict],
    device,
    pad_id: int,
    precision: str,
    batch_size: int,
    warmup_ratio: float,
    lower=None,
    frozen: int = 0,
    progress: bool = True,
) -> dict:
    """One pass over `pairs` (in the order given) with AdamW on `parameter_groups`, linear
    warm-up and decay; returns what the run records: pairs, steps, seconds, the mean loss of the
    first and last tenth of the steps."""
    started = time.monotonic()
    batches = [pairs[i : i + batch_size] for i in range(0, len(pairs), batch_size)]
    optimizer = torch.optim.AdamW(parameter_groups)
    plan = AnnealingPlan(warmup_steps=int(warmup_ratio * len(batches)), total_steps=len(batches))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, plan.factor)
    trainable = [p for group in parameter_groups for p in group["params"]]
    losses = []
    model.train()
    for batch in tqdm(batches, desc="contrastive pairs", disable=not progress, leave=False):
        windows = [p.first for p in batch] + [p.second for p in batch]
        with autocast(device, precision):
            vectors = embed(model, windows, device, pad_id, lower=lower, frozen=frozen).float()
        first, second = vectors[: len(batch)], vectors[len(batch) :]
        cosine = torch.nn.functional.cosine_similarity(first, second)
        target = torch.tensor([p.similar for p in batch], device=cosine.device)
        loss = torch.nn.functional.mse_loss(cosine, target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
    tenth = max(1, len(losses) // 10)
    return {
        "pairs": len(pairs),
        "positive_pairs": sum(1 for p in pairs if p.similar == 1.0),
        "steps": len(losses),
        "seconds": round(time.monotonic() - started, 1),
        "loss_first_tenth": float(np.mean(losses[:tenth])) if losses else None,
        "loss_last_tenth": float(np.mean(losses[-tenth:])) if losses else None,
    }
