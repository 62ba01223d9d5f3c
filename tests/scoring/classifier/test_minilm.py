"""The packaged all-MiniLM-L6-v2 loads offline and the Scorer runs it on real text."""

import pytest
from django.conf import settings

from scoring.classifier.scorer import Scorer
from scoring.classifier.training import load_base
from scoring.constants import CLASS_LABELS


@pytest.fixture(scope="module")
def minilm_artifact(tmp_path_factory):
    """MiniLM with a fresh (untrained) 5-way head, saved as a loadable folder."""
    model, tokenizer = load_base(settings.BASE_MODEL_PATH)
    path = tmp_path_factory.mktemp("minilm")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_the_packaged_minilm_scores_real_text_with_windows(minilm_artifact):
    scorer = Scorer(minilm_artifact, device="cpu")
    long_email = (
        "Hi Sam, thanks for the call yesterday. As discussed I have attached the onboarding pack, "
        "the fee schedule and the quarterly letter. "
        * 12
        + "Between us, this fund is guaranteed to return 12% a year, you cannot lose. "
        + "Let me know if the meeting on Thursday still works for you. " * 8
    )

    short, long_ = scorer.score(["The SEC approved this fund.", long_email])

    assert scorer.labels == list(CLASS_LABELS)
    assert scorer.model.config.hidden_size == 384 and scorer.model.config.num_hidden_layers == 6
    assert len(short.windows) == 1 and len(long_.windows) > 3
    assert long_.windows[0].start == 0 and long_.windows[-1].end == len(long_email.rstrip())
    for result in (short, long_):
        assert 0.0 <= result.score <= 1.0
        assert result.score == max(w.score for w in result.windows)
