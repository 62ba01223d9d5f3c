"""Fixtures of the explanation tests: Scorers over the trained tiny BERT and over a model whose
answer is known (it reads one word)."""

from __future__ import annotations

import pytest

from scoring.classifier.scorer import Scorer
from tests.explanations.toy_models import one_word_scorer


@pytest.fixture(scope="session")
def tiny_scorer(tiny_model_artifact):
    """The tiny BERT fine-tuned on the tiny corpus (tests/support/models.py), on the CPU."""
    return Scorer(tiny_model_artifact, device="cpu", window_tokens=128, stride=64, token_budget=4096)


@pytest.fixture(scope="session")
def one_word():
    """A Scorer whose model reads only the word 'guaranteed' (short windows: 16 tokens)."""
    return one_word_scorer("guaranteed", window_tokens=16, stride=6, token_budget=256)


@pytest.fixture
def eager_celery():
    """Tasks published by the code under test run at once, in this process."""
    from compliance_site.celery import app

    saved = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved
