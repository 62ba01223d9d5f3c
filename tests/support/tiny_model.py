"""A tiny, randomly initialised BERT with the packaged MiniLM tokenizer, built in code.

Fast unit tests use it in place of the real encoder: same tokenizer, same architecture
family, a few thousand times fewer weights."""

from __future__ import annotations

from pathlib import Path

import torch
from django.conf import settings
from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

from scoring.constants import CLASS_LABELS


def build_tiny_encoder(
    path: Path, *, seed: int = 0, layers: int = 2, heads: int = 2, hidden: int = 32
) -> Path:
    """Save a tiny BERT sequence classifier (5 labels) and the MiniLM tokenizer under `path`."""
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(settings.BASE_MODEL_PATH)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=hidden * 2,
        max_position_embeddings=512,
        num_labels=len(CLASS_LABELS),
        id2label=dict(enumerate(CLASS_LABELS)),
        label2id={label: i for i, label in enumerate(CLASS_LABELS)},
    )
    model = BertForSequenceClassification(config)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
