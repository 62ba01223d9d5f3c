"""The classifier's architecture: the encoder, masked mean pooling, a linear 5-way head.

all-MiniLM-L6-v2 was trained for sentence similarity on mean-pooled token states: that is where
"the FCA has formally backed the fund" and "the FCA approved this fund" lie close together. The
stock BertForSequenceClassification classifies the [CLS] token through a pooler the sentence
model never trained, so fine-tuning starts from a representation that knows nothing of
paraphrase. Mean pooling over the real tokens (the attention mask excludes padding, so a score
never depends on what else is in the batch) keeps the pretrained geometry under the head.

The class itself lives in scoring.classifier.mean_pooled, imported only when a model is built
or loaded. `load_classifier(path)` loads an artifact with the class its config names (older artifacts are
stock BertForSequenceClassification); torch + transformers only, no Django.
"""

from __future__ import annotations

from pathlib import Path

MEAN = "mean"
CLS = "cls"
POOLINGS = (MEAN, CLS)
MEAN_POOLED_CLASS = "MeanPooledBertForSequenceClassification"


def classifier_class(path: str | Path, pooling: str | None = None):
    """The model class for an artifact or base encoder at `path`: the one its config names when
    that is a Claimwatch class, else by `pooling` (mean -> ours, cls -> transformers' stock one)."""
    from transformers import AutoConfig, AutoModelForSequenceClassification

    config = AutoConfig.from_pretrained(path)
    named = (getattr(config, "architectures", None) or [None])[0]
    if named == MEAN_POOLED_CLASS or pooling == MEAN:
        from scoring.classifier.mean_pooled import MeanPooledBertForSequenceClassification

        return MeanPooledBertForSequenceClassification
    return AutoModelForSequenceClassification


def load_classifier(path: str | Path, **kwargs):
    """An artifact's model, with the class its config names (see classifier_class)."""
    return classifier_class(path).from_pretrained(path, **kwargs)
