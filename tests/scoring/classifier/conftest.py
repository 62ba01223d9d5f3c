"""Fixtures of the classifier tests: an untrained tiny BERT artifact and its Scorer."""

from __future__ import annotations

import pytest

from scoring.classifier.scorer import Scorer
from tests.support.tiny_model import build_tiny_encoder


@pytest.fixture(scope="session")
def tiny_encoder_dir(tmp_path_factory):
    """A randomly initialised tiny BERT with the MiniLM tokenizer (no claimwatch.json)."""
    return build_tiny_encoder(tmp_path_factory.mktemp("tiny-encoder"))


@pytest.fixture(scope="session")
def tiny_scorer(tiny_encoder_dir):
    """A CPU Scorer over the random tiny BERT with small windows (16 tokens, overlap 6)."""
    return Scorer(tiny_encoder_dir, device="cpu", window_tokens=16, stride=6, token_budget=64, max_chars=5000)
